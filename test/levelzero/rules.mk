# Level Zero backend tests: extra programs for test/levelzero/test_*.py.
LZ_TEST := $(BUILD)/test/levelzero

# dlsym interposer: two libraries defining the same symbol, looked up with RTLD_NEXT.
$(LZ_TEST)/libdlnext_a.so $(LZ_TEST)/libdlnext_b.so: $(LZ_TEST)/libdlnext_%.so: test/levelzero/dlnext_lib.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -shared -DLIBNAME=$* -DLETTER="'$*'" -o $@ $< -ldl

$(LZ_TEST)/dlnext: test/levelzero/dlnext.c $(LZ_TEST)/libdlnext_a.so $(LZ_TEST)/libdlnext_b.so
	$(CC) $(CFLAGS) $(BASEFLAGS) -o $@ $< -L$(LZ_TEST) -ldlnext_a -ldlnext_b \
	  -Wl,-rpath,$(abspath $(LZ_TEST)) -ldl

TEST_BUILD += $(LZ_TEST)/dlnext

# Unit checks: the dlsym interposer, the handle map and the metric reports' clock line,
# linked in directly.
ifeq ($(HAVE_CHECK),1)
$(BUILD)/test/check_levelzero: test/levelzero/check_levelzero.c inject/dlsym.c backends/levelzero/map.c \
		backends/levelzero/map.h backends/levelzero/clockfit.c backends/levelzero/clockfit.h \
		$(LZ_TEST)/libdlnext_a.so $(LZ_TEST)/libdlnext_b.so
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -I. -o $@ test/levelzero/check_levelzero.c inject/dlsym.c \
	  backends/levelzero/map.c backends/levelzero/clockfit.c -L$(LZ_TEST) -ldlnext_a -ldlnext_b -Wl,-rpath,$(abspath $(LZ_TEST)) \
	  -lcheck -lsubunit -lm -lrt -lpthread -ldl

TEST_BUILD += $(BUILD)/test/check_levelzero
endif

ifeq ($(HAVE_ZE),1)
# the Level Zero programs built from one .c file each
LZ_APPS := ze_busy_overlap ze_chain ze_key_dtor ze_ctxgone ze_devices ze_dup ze_end ze_exec ze_exit_late ze_fork ze_load ze_mapped ze_memfree
$(LZ_APPS:%=$(LZ_TEST)/%): \
		$(LZ_TEST)/%: test/levelzero/%.c \
		test/apps/ze_app.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -o $@ $< -lze_loader -lpthread

TEST_BUILD += $(LZ_APPS:%=$(LZ_TEST)/%)

# a library linked to the loader that finds its functions with dlsym(RTLD_DEFAULT)
$(LZ_TEST)/libze_adapter.so: test/levelzero/ze_adapter_lib.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -shared -fPIC -o $@ $< -lze_loader -ldl

TEST_BUILD += $(LZ_TEST)/libze_adapter.so
endif

ifeq ($(HAVE_ZE),1)
$(LZ_TEST)/ze_cost: test/levelzero/ze_cost.c test/apps/ze_app.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -o $@ $< -lze_loader

BENCH_BUILD += $(LZ_TEST)/ze_cost
endif

# A test-only libze_loader.so.1 presenting a newer loader's entry points (see
# test/levelzero/newloader/newloader.c): Debian's loader beside it does the rest.
ifeq ($(HAVE_ZE),1)
ZE_REAL_LOADER := $(shell $(CC) -print-file-name=libze_loader.so.1)
NEWLOADER := $(LZ_TEST)/newloader

$(NEWLOADER)/libze_loader.so.1: test/levelzero/newloader/newloader.c backends/levelzero/api.h \
		backends/levelzero/ze_newer.h test/levelzero/sim/ddi_newer.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -I. -fvisibility=hidden -DREAL_LOADER=\"$(ZE_REAL_LOADER)\" \
	  -shared -Wl,-soname,libze_loader.so.1 -Wl,--no-undefined -o $@ $< -ldl -lpthread

# For linking programs written for a newer loader (-L$(NEWLOADER) -lze_loader).
$(NEWLOADER)/libze_loader.so: $(NEWLOADER)/libze_loader.so.1
	ln -sf libze_loader.so.1 $@

TEST_BUILD += $(NEWLOADER)/libze_loader.so.1 $(NEWLOADER)/libze_loader.so
endif
