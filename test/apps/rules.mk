# Sample Level Zero programs (plain C, unmodified L0 API users) run on the simulated device.
ifeq ($(HAVE_ZE),1)
ZE_APPS := ze_basic ze_hammer ze_threads ze_lists ze_shared_engine ze_behind_lead ze_multiqueue ze_errors ze_window
# Equivalents of third-party programs (the loader's, PTI-GPU's, level-zero-tests'), written
# here; some use declarations of later specs (backends/levelzero/ze_newer.h).
ZE_APPS += ze_info ze_sysman ze_event_reset ze_counterbased ze_bandwidth ze_peak ze_pingpong ze_flight
# Kernels each signaling an event of the program's own (fresh, or one reset), waited from the host.
ZE_APPS += ze_own_events
# SYCL graphs (mutable lists) and Intel's zex functions, from zeDriverGetExtensionFunctionAddress.
ZE_APPS += ze_graph
# Contexts destroyed right after their launches (while gputrace may grow its pools in them).
ZE_APPS += ze_contexts
# Waits on a kernel that waits on an event nobody signals (the --watchdog tests).
ZE_APPS += ze_hang
# Copies of 2D and 3D regions, a cooperative kernel.
ZE_APPS += ze_shapes
# Indirect launches (group counts written after the append), a copy from another context.
ZE_APPS += ze_indirect
# A regular list replayed back to back on an in-order immediate list, timed by the program's event.
ZE_APPS += ze_replay
# One regular list executed by many threads at once (runs of it overlap on the device).
ZE_APPS += ze_rerun
# A run on a second queue, queued behind other work, overwriting the events of the same list's run on
# the first (waited for by its queue's synchronize or by its fence).
ZE_APPS += ze_rerun_late
ZE_APP_BINS := $(patsubst %,$(BUILD)/test/apps/%,$(ZE_APPS))

$(ZE_APP_BINS): $(BUILD)/test/apps/%: test/apps/%.c test/apps/ze_app.h test/arg.h backends/levelzero/ze_newer.h \
		backends/levelzero/ze_intel_ext.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -I. -o $@ $< -lze_loader -lpthread -ldl

# An ITT user, through the suite's static ITT part (as Intel's libittnotify.a).
$(BUILD)/test/apps/ze_itt: test/apps/ze_itt.c test/apps/ze_app.h \
			   test/annotations/itt_static.c test/annotations/itt_static.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -o $@ $< test/annotations/itt_static.c -lze_loader -ldl \
	  -lpthread

# Resolves every Level Zero function with dlsym: no link-time dependency on the loader.
$(BUILD)/test/apps/ze_dlopen: test/apps/ze_dlopen.c test/apps/ze_app.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -o $@ $< -ldl

# Asks the process for zeInitDrivers with dlsym: runs on any loader.
$(BUILD)/test/apps/ze_hello: test/apps/ze_hello.c test/apps/ze_app.h backends/levelzero/ze_newer.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -I. -o $@ $< -lze_loader -ldl

# Linked against a newer loader's entry points: runs with test/levelzero/newloader first
# in LD_LIBRARY_PATH (without, it stops as the dynamic linker makes it).
$(BUILD)/test/apps/ze_modern: test/apps/ze_modern.c test/apps/ze_app.h \
		backends/levelzero/ze_newer.h $(BUILD)/test/levelzero/newloader/libze_loader.so
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -I. -o $@ $< -L$(BUILD)/test/levelzero/newloader -lze_loader

TEST_BUILD += $(ZE_APP_BINS) $(BUILD)/test/apps/ze_dlopen $(BUILD)/test/apps/ze_hello \
	      $(BUILD)/test/apps/ze_modern $(BUILD)/test/apps/ze_itt

# ze_window that marks one NVTX range before it runs (NVTX is header-only: the toolkit's
# headers, no CUDA library)
ifneq ($(wildcard $(CUDA_HOME)/include/nvtx3/nvToolsExt.h),)
$(BUILD)/test/apps/ze_window_nvtx: test/apps/ze_window.c test/apps/ze_app.h test/arg.h \
		backends/levelzero/ze_newer.h backends/levelzero/ze_intel_ext.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -I. -I$(CUDA_HOME)/include -DZE_WINDOW_NVTX -o $@ $< \
	  -lze_loader -lpthread -ldl

TEST_BUILD += $(BUILD)/test/apps/ze_window_nvtx

# ze_flight with each iteration in NVTX ranges (a flight recorder's dump while device work
# waits for them)
$(BUILD)/test/apps/ze_flight_nvtx: test/apps/ze_flight.c test/apps/ze_app.h \
		backends/levelzero/ze_newer.h backends/levelzero/ze_intel_ext.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -I. -I$(CUDA_HOME)/include -DZE_FLIGHT_NVTX -o $@ $< \
	  -lze_loader -lpthread -ldl

TEST_BUILD += $(BUILD)/test/apps/ze_flight_nvtx
endif
endif
