# Benchmark programs (make bench runs test/bench/bench.py over them).
# bench_core links the library's objects statically, as the unit tests do, and
# starts the tracer itself; bench_ze is a plain Level Zero program, traced by
# preloading the library; bench_floor needs nothing.
BENCH_DIR := $(BUILD)/test/bench
BENCH_CORE_OBJS := $(filter-out $(BUILD)/obj/backends/%,$(LIB_OBJS))

$(BENCH_DIR)/bench_floor: test/bench/bench_floor.c test/bench/bench.h inject/clock.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -I. -o $@ $< -lpthread

$(BENCH_DIR)/bench_core: test/bench/bench_core.c test/bench/bench.h $(BENCH_CORE_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -I. -o $@ $< $(BENCH_CORE_OBJS) -lpthread -ldl -lz -lm

$(BENCH_DIR)/bench_spawn: test/bench/bench_spawn.c test/bench/bench.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -o $@ $<

$(BENCH_DIR)/bench_true: test/bench/bench_true.c test/bench/bench.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -o $@ $<

$(BENCH_DIR)/libempty.so: test/bench/empty.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -shared -fPIC -o $@ $<

BENCH_BUILD += $(BENCH_DIR)/bench_floor $(BENCH_DIR)/bench_core $(BENCH_DIR)/bench_spawn \
	       $(BENCH_DIR)/bench_true $(BENCH_DIR)/libempty.so

ifeq ($(HAVE_ZE),1)
$(BENCH_DIR)/bench_ze: test/bench/bench_ze.c test/bench/bench.h test/annotations/itt_static.c \
		       test/annotations/itt_static.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -o $@ $< test/annotations/itt_static.c -lze_loader -ldl \
	  -lpthread
BENCH_BUILD += $(BENCH_DIR)/bench_ze
endif

# CUDA launches, run on the simulated CUDA stack (row 8): the toolkit's headers and
# libcudart to link; LD_LIBRARY_PATH=$(BUILD)/cuda-sim at run time.
ifeq ($(HAVE_CUPTI),1)
$(BENCH_DIR)/bench_cuda: test/bench/bench_cuda.c test/bench/bench.h test/cuda/sim/hand_kernel.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -I$(CUDA_HOME)/include -o $@ $< -L$(CUDA_HOME)/lib64 -lcudart 	  -ldl -lpthread
BENCH_BUILD += $(BENCH_DIR)/bench_cuda
endif

# Row 8n's library without metrics support (METRICS=0): its objects need other flags,
# so a make of its own builds it, whenever the plain build's programs are built.
ifeq ($(SANITIZE)$(METRICS),)
NOMETRICS_LIB := $(BUILD)/no-metrics/libgputrace.so
$(NOMETRICS_LIB): bench-nometrics-always
	+$(MAKE) METRICS=0 lib
.PHONY: bench-nometrics-always
BENCH_BUILD += $(NOMETRICS_LIB)
endif

# The smoke test (test_bench_smoke.py) runs each program once at tiny sizes.
TEST_BUILD += $(BENCH_BUILD)

# The clock the hot path reads (inject/clock.c) against CLOCK_MONOTONIC_RAW.
# It compiles clock.c itself, with a pause put in (see there): the library's
# copy stays out.
$(BUILD)/test/check_clock: test/bench/check_clock.c inject/clock.c inject/clock.h $(BENCH_CORE_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -I. -o $@ $< \
	  $(filter-out $(BUILD)/obj/inject/clock.o,$(BENCH_CORE_OBJS)) -lcheck -lsubunit -lm -lrt \
	  -lpthread -ldl -lz
TEST_BUILD += $(BUILD)/test/check_clock

# The inline hot path (inject/emit.h) against gt_emit's results.
$(BUILD)/test/check_emit: test/bench/check_emit.c $(BENCH_CORE_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -I. -o $@ $< $(BENCH_CORE_OBJS) -lcheck -lsubunit -lm -lrt \
	  -lpthread -ldl -lz -ljson-c
TEST_BUILD += $(BUILD)/test/check_emit
