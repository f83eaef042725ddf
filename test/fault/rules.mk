# The reliability fault suite (issue 8): programs that crash, exit, fork,
# exec, spawn threads and misbehave in every way test_*.py compares traced
# against untraced. See test/README.md.
ifeq ($(HAVE_ZE),1)
FAULT_C_PROGS := fault_crash fault_exit fault_proc fault_threads fault_reent fault_malloc
FAULT_BINS := $(patsubst %,$(BUILD)/test/fault/%,$(FAULT_C_PROGS)) \
	      $(BUILD)/test/fault/fault_cxx $(BUILD)/test/fault/fault_dlopen \
	      $(BUILD)/test/fault/plugin_noregister.so $(BUILD)/test/fault/fault_atfork_dlopen \
	      $(BUILD)/test/fault/atfork_ctor.so $(BUILD)/test/fault/slow_phdr.so

$(patsubst %,$(BUILD)/test/fault/%,$(FAULT_C_PROGS)): $(BUILD)/test/fault/%: test/fault/%.c test/fault/fault.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -o $@ $< -lze_loader -lpthread

# Its own malloc cannot live beside a sanitizer's.
$(BUILD)/test/fault/fault_malloc: BASEFLAGS := $(filter-out $(SANFLAGS),$(BASEFLAGS))

$(BUILD)/test/fault/fault_cxx: test/fault/fault_cxx.cc test/fault/fault.h
	@mkdir -p $(dir $@)
	$(CXX) $(CFLAGS) -std=gnu++17 -pthread $(SANFLAGS) -o $@ $< -lze_loader -lpthread

$(BUILD)/test/fault/fault_dlopen: test/fault/fault_dlopen.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -o $@ $< -ldl

$(BUILD)/test/fault/fault_atfork_dlopen: test/fault/fault_atfork_dlopen.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -o $@ $< -lze_loader -ldl

$(BUILD)/test/fault/atfork_ctor.so: test/fault/atfork_ctor.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -shared -o $@ $< -lpthread

$(BUILD)/test/fault/slow_phdr.so: test/fault/slow_phdr.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -Wall -Wextra -Werror -fPIC -shared -o $@ $< -ldl

# A shared object that is not a gputrace plug-in (no register symbol).
$(BUILD)/test/fault/plugin_noregister.so: test/fault/plugin_noregister.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -shared -o $@ $<

TEST_BUILD += $(FAULT_BINS)
endif
