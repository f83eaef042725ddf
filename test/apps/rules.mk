# Sample Level Zero programs (plain C, unmodified L0 API users) run on the simulated device.
ifeq ($(HAVE_ZE),1)
ZE_APPS := $(patsubst test/apps/%.c,%,$(filter-out test/apps/ze_dlopen.c,$(wildcard test/apps/ze_*.c)))
ZE_APP_BINS := $(patsubst %,$(BUILD)/test/apps/%,$(ZE_APPS))

$(ZE_APP_BINS): $(BUILD)/test/apps/%: test/apps/%.c test/apps/ze_app.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -o $@ $< -lze_loader -lpthread

# Resolves every Level Zero function with dlsym: no link-time dependency on the loader.
$(BUILD)/test/apps/ze_dlopen: test/apps/ze_dlopen.c test/apps/ze_app.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -o $@ $< -ldl

TEST_BUILD += $(ZE_APP_BINS) $(if $(wildcard test/apps/ze_dlopen.c),$(BUILD)/test/apps/ze_dlopen)
endif
