# Sample Level Zero programs (plain C, unmodified L0 API users) run on the simulated device.
ifeq ($(HAVE_ZE),1)
ZE_APPS := ze_basic ze_hammer ze_threads ze_multiqueue ze_errors
ZE_APP_BINS := $(patsubst %,$(BUILD)/test/apps/%,$(ZE_APPS))

$(ZE_APP_BINS): $(BUILD)/test/apps/%: test/apps/%.c test/apps/ze_app.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -o $@ $< -lze_loader -lpthread

# Resolves every Level Zero function with dlsym: no link-time dependency on the loader.
$(BUILD)/test/apps/ze_dlopen: test/apps/ze_dlopen.c test/apps/ze_app.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -o $@ $< -ldl

TEST_BUILD += $(ZE_APP_BINS) $(BUILD)/test/apps/ze_dlopen
endif
