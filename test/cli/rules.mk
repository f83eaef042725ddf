# The gputrace command's tests: Check units for the summary aggregator, the
# tool's JSON reader and call stacks; programs and a plug-in for the
# end-to-end tests (test/cli/test_*.py).
CLI_OUT  := $(BUILD)/test/cli
CLI_LIBS := -lcheck -lsubunit -lm -lrt -lpthread

$(BUILD)/test/check_cli_summary: test/cli/check_cli_summary.c writer/summary.c \
		scripts/tool/json.c scripts/tool/json.h scripts/tool/buf.h writer/summary.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -I. -o $@ test/cli/check_cli_summary.c writer/summary.c \
	  scripts/tool/json.c -lz -ljson-c $(CLI_LIBS)

# stacks.c in a shared object of its own (as in libgputrace.so), with a small
# table so the test can fill it (large enough that stacks sharing a home slot
# could crowd one out before it is full).
$(CLI_OUT)/libstackapi.so: inject/stacks.c inject/stacks.h test/cli/stack_api.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LIBFLAGS) -DGT_STACK_KEPT=1024 -DGT_STACK_COUNT_PROBES -DGT_STACK_POOL=32768 -shared -o $@ inject/stacks.c \
	  test/cli/stack_api.c -ldl -lpthread

$(CLI_OUT)/libstackclosed.so: test/cli/stack_closed.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -fPIC -shared -o $@ $<

$(BUILD)/test/check_cli_stacks: test/cli/check_cli_stacks.c $(CLI_OUT)/libstackapi.so \
				 $(CLI_OUT)/libstackclosed.so
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -rdynamic \
	  -DCLOSED_LIB='"$(abspath $(CLI_OUT))/libstackclosed.so"' -o $@ $< -L$(CLI_OUT) \
	  -lstackapi -Wl,-rpath,$(abspath $(CLI_OUT)) $(CLI_LIBS) -ldl

# The plug-in against the header as installed (<gputrace/gputrace_plugin.h>).
$(CLI_OUT)/include/gputrace/gputrace_plugin.h: backends/plugins/gputrace_plugin.h
	@mkdir -p $(dir $@)
	cp $< $@

$(CLI_OUT)/plugin/libclitest.so: test/cli/cliplug.c $(CLI_OUT)/include/gputrace/gputrace_plugin.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -fvisibility=hidden -I$(CLI_OUT)/include -shared -o $@ $<

$(CLI_OUT)/spawn: test/cli/spawn.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -o $@ $<

TEST_BUILD += $(BUILD)/test/check_cli_summary $(BUILD)/test/check_cli_stacks \
	      $(CLI_OUT)/plugin/libclitest.so $(CLI_OUT)/spawn

ifeq ($(SANITIZE),thread)
$(CLI_OUT)/libtsan-start.so: test/cli/tsan_start.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -shared -o $@ $<

TEST_BUILD += $(CLI_OUT)/libtsan-start.so
endif

# Reports reads of libgputrace.so's read-only data (test_cli_quiet.py): x86-64's
# trap flag and registers.
ifeq ($(shell uname -m),x86_64)
$(CLI_OUT)/librodataprobe.so: test/cli/rodata_probe.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -fPIC -shared -o $@ $<

TEST_BUILD += $(CLI_OUT)/librodataprobe.so
endif

ifeq ($(HAVE_ZE),1)
# -rdynamic: dladdr names run_training/run_step; query_version comes from .symtab.
$(CLI_OUT)/stack_app: test/cli/stack_app.c test/apps/ze_app.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -I. -rdynamic -o $@ $< -lze_loader -lpthread

# What a CI job smoke-profiles (test_cli_check.py, test_cli_diff.py, test_cli_report.py).
$(CLI_OUT)/ci_app: test/cli/ci_app.c test/apps/ze_app.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -I. -o $@ $< -lze_loader -lpthread

# Two libraries of the same code, one launch each, loaded in turn at the same
# address (test_cli_stacks.py: a closed library's stacks keep their names).
$(CLI_OUT)/stack_dl: test/cli/stack_dl.c test/apps/ze_app.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -I. -o $@ $< -lze_loader -ldl -lpthread

$(CLI_OUT)/libstackdlA.so: test/cli/stack_dl_lib.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -fPIC -shared -DLAUNCH_FN=alpha_launch -o $@ $< -lze_loader

$(CLI_OUT)/libstackdlB.so: test/cli/stack_dl_lib.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -fPIC -shared -DLAUNCH_FN=beta_launch -o $@ $< -lze_loader

# More distinct launch stacks than the table holds (test_cli_stacks.py).
$(CLI_OUT)/stack_many: test/cli/stack_many.c test/apps/ze_app.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -I. -o $@ $< -lze_loader -lpthread

TEST_BUILD += $(CLI_OUT)/stack_app $(CLI_OUT)/ci_app $(CLI_OUT)/stack_dl $(CLI_OUT)/stack_many \
	      $(CLI_OUT)/libstackdlA.so $(CLI_OUT)/libstackdlB.so
endif

# `make bench`: what a captured stack costs (see test/cli/stack_cost.c).
$(CLI_OUT)/stack_cost: test/cli/stack_cost.c $(CLI_OUT)/libstackapi.so
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -o $@ $< -L$(CLI_OUT) -lstackapi -Wl,-rpath,$(abspath $(CLI_OUT))

BENCH_BUILD += $(CLI_OUT)/stack_cost

# What preload cannot reach: a statically linked program (no sanitizer: those need the
# dynamic linker themselves).
$(CLI_OUT)/static_hello: test/cli/static_hello.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -static -o $@ $<

TEST_BUILD += $(CLI_OUT)/static_hello
