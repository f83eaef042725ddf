# CUDA backend tests (test/cuda/test_*.py, check_cupti). None needs a GPU:
# - a fake libcudart (plain C) for interposition and CUDA-event timing,
# - check_cupti feeds real CUPTI records (toolkit headers) through the backend,
# - nvcc programs (static and shared cudart) when nvcc exists,
# - an NVTX program (nvtx3 headers from the toolkit).
CUDA_OUT  := $(BUILD)/test/cuda
FAKE_RT   := $(CUDA_OUT)/fake/libcudart.so.13
NVCC      := $(CUDA_HOME)/bin/nvcc
# the programs stay uninstrumented: they are the user's, not ours
NVCCFLAGS := -O2

# versioned as NVIDIA's (cudaMalloc@libcudart.so.13): gputrace wraps each runtime by version
$(FAKE_RT): test/cuda/fake_cudart.c test/cuda/rules.mk
	@mkdir -p $(dir $@)
	printf 'libcudart.so.13 { global: *; };\n' > $@.map
	$(CC) $(CFLAGS) $(BASEFLAGS) -shared -fvisibility=hidden -Wl,-soname,libcudart.so.13 \
	  -Wl,--version-script=$@.map -o $@ $< -ldl -lpthread
	ln -sf libcudart.so.13 $(dir $@)libcudart.so

# -rdynamic: the fake's cudaFuncGetName names kernels with dladdr
$(CUDA_OUT)/fake_app: test/cuda/fake_app.c $(FAKE_RT)
	$(CC) $(CFLAGS) $(BASEFLAGS) -rdynamic -o $@ $< -L$(dir $(FAKE_RT)) -lcudart \
	  -Wl,-rpath,$(abspath $(dir $(FAKE_RT)))

# CUDA loaded late, RTLD_LOCAL: a library linking libcudart, or libcudart itself
$(CUDA_OUT)/libfake_late_lib.so: test/cuda/fake_late_lib.c $(FAKE_RT)
	$(CC) $(CFLAGS) $(BASEFLAGS) -shared -o $@ $< -L$(dir $(FAKE_RT)) -lcudart \
	  -Wl,-rpath,$(abspath $(dir $(FAKE_RT)))
$(CUDA_OUT)/fake_late: test/cuda/fake_late.c $(CUDA_OUT)/libfake_late_lib.so
	$(CC) $(CFLAGS) $(BASEFLAGS) -o $@ $< -ldl

TEST_BUILD += $(CUDA_OUT)/fake_app $(CUDA_OUT)/fake_late

# NVML telemetry without a GPU: a fake libnvidia-ml.so.1 (found through
# LD_LIBRARY_PATH) and a program that never touches CUDA.
FAKE_NVML := $(CUDA_OUT)/nvml/libnvidia-ml.so.1
$(FAKE_NVML): test/cuda/fake_nvml.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -shared -fvisibility=hidden -Wl,-soname,libnvidia-ml.so.1 \
	  -o $@ $< -lpthread
$(CUDA_OUT)/idle_app: test/cuda/idle_app.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -o $@ $<

TEST_BUILD += $(FAKE_NVML) $(CUDA_OUT)/idle_app

ifeq ($(HAVE_CUPTI),1)
CUDA_CORE_OBJS := $(filter-out $(BUILD)/obj/backends/%,$(LIB_OBJS))
CUPTI_OBJS     := $(filter $(BUILD)/obj/backends/cuda/%,$(LIB_OBJS))

$(CUDA_OUT)/nvtx_app: test/cuda/nvtx_app.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -I$(CUDA_HOME)/include -o $@ $< -ldl -lpthread

TEST_BUILD += $(CUDA_OUT)/nvtx_app

# NVTX ranges around launches on the fake libcudart (-rdynamic: kernel names)
$(CUDA_OUT)/nvtx_ranges: test/cuda/nvtx_ranges.c $(FAKE_RT)
	$(CC) $(CFLAGS) $(BASEFLAGS) -I$(CUDA_HOME)/include -rdynamic -o $@ $< \
	  -L$(dir $(FAKE_RT)) -lcudart -Wl,-rpath,$(abspath $(dir $(FAKE_RT))) -ldl -lpthread

TEST_BUILD += $(CUDA_OUT)/nvtx_ranges

$(CUDA_OUT)/nvtx_steps: test/cuda/nvtx_steps.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -I$(CUDA_HOME)/include -o $@ $< -ldl -lpthread

TEST_BUILD += $(CUDA_OUT)/nvtx_steps

ifeq ($(HAVE_CHECK),1)
# Linked with the fake libcudart: the wrappers' "one source per call" is
# checked against simulated CUPTI callbacks.
$(BUILD)/test/check_cupti: test/cuda/check_cupti.c $(CUDA_CORE_OBJS) $(CUPTI_OBJS) $(FAKE_RT) \
			   backends/cuda/internal.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -I. $(CUPTI_CFLAGS) -o $@ $< $(CUDA_CORE_OBJS) $(CUPTI_OBJS) \
	  -L$(dir $(FAKE_RT)) -lcudart -Wl,-rpath,$(abspath $(dir $(FAKE_RT))) \
	  -lcheck -lsubunit -lm -lrt -lpthread -ldl -lz -ljson-c

TEST_BUILD += $(BUILD)/test/check_cupti

# CUDA metrics: the real headers' structs, the real host profiler (no GPU needed).
$(BUILD)/test/check_pm: test/cuda/check_pm.c $(CUDA_CORE_OBJS) $(CUPTI_OBJS) $(FAKE_RT) \
			backends/cuda/internal.h backends/cuda/pm_sampling.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -I. $(CUPTI_CFLAGS) -o $@ $< $(CUDA_CORE_OBJS) $(CUPTI_OBJS) \
	  -L$(dir $(FAKE_RT)) -lcudart -Wl,-rpath,$(abspath $(dir $(FAKE_RT))) \
	  -lcheck -lsubunit -lm -lrt -lpthread -ldl -lz

TEST_BUILD += $(BUILD)/test/check_pm
endif
endif

ifeq ($(HAVE_NVCC),1)
$(CUDA_OUT)/vec_add.o: test/cuda/vec_add.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -c -o $@ $<

# one object, both ways of getting cudart
$(CUDA_OUT)/vec_static: $(CUDA_OUT)/vec_add.o
	$(NVCC) $(NVCCFLAGS) -cudart static -o $@ $<
$(CUDA_OUT)/vec_shared: $(CUDA_OUT)/vec_add.o
	$(NVCC) $(NVCCFLAGS) -cudart shared -Xlinker -rpath -Xlinker $(CUDA_HOME)/lib64 -o $@ $<

TEST_BUILD += $(CUDA_OUT)/vec_static $(CUDA_OUT)/vec_shared
endif

# Programs for the simulated CUDA stack (test/cuda/sim/, built in $(CUDA_SIM)):
# nvcc-built against the toolkit's libcudart/libcupti, run with
# LD_LIBRARY_PATH=$(CUDA_SIM). No rpath: the loader's path decides.
CUDA_SIM := $(BUILD)/cuda-sim
ifeq ($(HAVE_CUPTI),1)
# built for the CUDA 12 runtime: cudaMalloc@libcudart.so.12 ...
$(CUDA_OUT)/librt12.so: test/cuda/rt12_lib.c $(CUDA_SIM)/libcudart.so.12
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -shared -o $@ $< -L$(CUDA_SIM) -l:libcudart.so.12

# another CUPTI tool, injected with CUDA_INJECTION64_PATH
$(CUDA_OUT)/libother_tool.so: test/cuda/other_tool.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -I$(CUDA_HOME)/include -shared -o $@ $< \
	  -L$(CUDA_HOME)/lib64 -lcupti

TEST_BUILD += $(CUDA_OUT)/librt12.so $(CUDA_OUT)/libother_tool.so

# --capture-range cudaProfilerApi: driver API only (as a static cudart), and the shared runtime
$(CUDA_OUT)/profiler_drv: test/cuda/profiler_ranges.c $(CUDA_SIM)/libcuda.so.1
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -I$(CUDA_HOME)/include -o $@ $< -L$(CUDA_SIM) -l:libcuda.so.1 -ldl
$(CUDA_OUT)/profiler_rt: test/cuda/profiler_ranges.c $(CUDA_SIM)/libcudart.so.13
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -DPROFILER_RT -I$(CUDA_HOME)/include -o $@ $< -L$(CUDA_SIM) \
	  -l:libcudart.so.13 -ldl

TEST_BUILD += $(CUDA_OUT)/profiler_drv $(CUDA_OUT)/profiler_rt

# cuInit's span in a program of the driver API alone
$(CUDA_OUT)/drv_init: test/cuda/drv_init.c $(CUDA_SIM)/libcuda.so.1
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -I$(CUDA_HOME)/include -o $@ $< -L$(CUDA_SIM) -l:libcuda.so.1 -ldl

TEST_BUILD += $(CUDA_OUT)/drv_init
endif

ifeq ($(HAVE_NVCC),1)
# -export-dynamic: stacks name the program's functions
$(CUDA_OUT)/sim_app: test/cuda/sim_app.cu test/cuda/check.h
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -cudart shared -Xlinker -export-dynamic -o $@ $< -ldl

$(CUDA_OUT)/cupti_user: test/cuda/cupti_user.cu test/cuda/check.h
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -cudart shared -o $@ $< -L$(CUDA_HOME)/lib64 -lcupti

# a library with a kernel of its own, dlopen()ed and dlclose()d by sim_app
$(CUDA_OUT)/libreload.so: test/cuda/reload_lib.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -cudart shared -shared -Xcompiler -fPIC -o $@ $<

TEST_BUILD += $(CUDA_OUT)/sim_app $(CUDA_OUT)/cupti_user $(CUDA_OUT)/libreload.so
endif
