# Plug-in tests: an example plug-in and broken ones, built against the
# header as `make install` installs it (an include dir holding nothing but
# gputrace/gputrace_plugin.h), with the strict flags a vendor might use.
PLUGINS_OUT   := $(BUILD)/test/plugins
PLUGINS_INC   := $(PLUGINS_OUT)/prefix/include
PLUGINS_HDR   := $(PLUGINS_INC)/gputrace/gputrace_plugin.h
PLUGIN_CFLAGS := -std=c99 -D_POSIX_C_SOURCE=200809L -pedantic -Wall -Wextra -Werror \
		 -fPIC -fvisibility=hidden -O2 -g $(SANFLAGS) -I$(PLUGINS_INC)
PLUGINS_BROKEN := bad_abi no_symbol create_fails start_fails flush_fails final_hangs flush_hangs \
		  flush_calls_ze flush_waits stop_hangs flush_streams destroy_hangs start_hangs \
		  no_kinds flush_crashes bad_name stop_crashes

# The same line as the install target's, into a private prefix.
$(PLUGINS_HDR): backends/plugins/gputrace_plugin.h
	install -d $(dir $@)
	install -m 644 $< $@

$(PLUGINS_OUT)/good/libsimaccel.so: test/plugins/simaccel.c $(PLUGINS_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(PLUGIN_CFLAGS) -shared -o $@ $< -pthread

$(PLUGINS_OUT)/broken/%.so: test/plugins/broken.c $(PLUGINS_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(PLUGIN_CFLAGS) -DBROKEN_VARIANT=\"$*\" -DBROKEN_$* -shared -o $@ $< -pthread

$(PLUGINS_OUT)/host_app: test/plugins/host_app.c test/arg.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -o $@ $<

# A wall clock slewed under the traced process (preloaded after gputrace).
$(PLUGINS_OUT)/wall_slew.so: test/plugins/wall_slew.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -Wall -Wextra -Werror -fPIC -shared -o $@ $< -ldl

TEST_BUILD += $(PLUGINS_HDR) $(PLUGINS_OUT)/good/libsimaccel.so $(PLUGINS_OUT)/host_app \
	      $(PLUGINS_OUT)/wall_slew.so \
	      $(patsubst %,$(PLUGINS_OUT)/broken/%.so,$(PLUGINS_BROKEN))

# Unit tests of backends/plugins/ against recording stand-ins of the core;
# capture.so hands its builder to them.
$(PLUGINS_OUT)/capture/capture.so: test/plugins/capture.c $(PLUGINS_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(PLUGIN_CFLAGS) -shared -o $@ $<

CHECK_PLUGINS_OBJS := $(filter $(BUILD)/obj/backends/plugins/%,$(LIB_OBJS)) $(BUILD)/obj/inject/clock.o \
		      $(BUILD)/obj/inject/extcorr.o $(BUILD)/obj/inject/tables.o

$(BUILD)/test/check_plugins: test/plugins/check_plugins.c $(CHECK_PLUGINS_OBJS) \
			     $(PLUGINS_OUT)/capture/capture.so $(PLUGINS_OUT)/good/libsimaccel.so \
			     $(patsubst %,$(PLUGINS_OUT)/broken/%.so,$(PLUGINS_BROKEN))
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -I. -o $@ $< $(CHECK_PLUGINS_OBJS) \
	  -lcheck -lsubunit -lm -lrt -lpthread -ldl

TEST_BUILD += $(PLUGINS_OUT)/capture/capture.so $(BUILD)/test/check_plugins

# Kineto's dynamic plug-ins (kineto_sim.cc): C++, built as a vendor builds
# them against Kineto's header, here gputrace's declarations of it under
# that header's name; one shared object per behaviour and per breakage.
KINETO_INC      := $(PLUGINS_OUT)/kineto_inc
KINETO_HDR      := $(KINETO_INC)/KinetoDynamicPluginInterface.h
KINETO_SIMS     := npu late_info corr threads rev1 newer register_fails create_fails \
		   start_fails process_fails push_fails wrong_size no_stop null_handle bad_json \
		   bad_calls crash process_hangs start_hangs late_call \
		   destroy_hangs
KINETO_CXXFLAGS := -std=c++17 -pedantic -Wall -Wextra -Werror -fPIC -fvisibility=hidden -O2 -g \
		   $(SANFLAGS) -I$(KINETO_INC)

$(KINETO_HDR): backends/plugins/kineto_plugin.h
	install -d $(dir $@)
	install -m 644 $< $@

$(PLUGINS_OUT)/kineto/%.so: test/plugins/kineto_sim.cc $(KINETO_HDR)
	@mkdir -p $(dir $@)
	$(CXX) $(KINETO_CXXFLAGS) -DKSIM_$* -shared -o $@ $< -pthread

TEST_BUILD += $(patsubst %,$(PLUGINS_OUT)/kineto/%.so,$(KINETO_SIMS))
$(BUILD)/test/check_plugins: $(PLUGINS_OUT)/kineto/npu.so
