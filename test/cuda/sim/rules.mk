# The simulated CUDA stack (see test/cuda/sim/README.md): libcuda.so.1,
# libcudart.so.13 and libcudart.so.12 (one source, two ABIs) and
# libcupti.so.13 in $(CUDA_SIM), to be found through
#   LD_LIBRARY_PATH=$(CUDA_SIM)
# Built from the toolkit's headers only; it never links gputrace.
CUDA_SIM := $(BUILD)/cuda-sim
ifeq ($(HAVE_CUPTI),1)
SIM_DIR  := test/cuda/sim
SIM_HDRS := $(wildcard $(SIM_DIR)/*.h)
# -z nodelete: CUPTI's worker thread and the driver outlive a dlclose at exit
SIM_LINK  = $(CC) $(CFLAGS) $(BASEFLAGS) -fvisibility=hidden -I$(CUDA_HOME)/include -shared \
	    -Wl,-z,nodelete -Wl,--no-undefined

$(CUDA_SIM)/libcuda.so.1: $(wildcard $(SIM_DIR)/drv_*.c) $(SIM_HDRS)
	@mkdir -p $(dir $@)
	$(SIM_LINK) -Wl,-soname,libcuda.so.1 -o $@ $(filter %.c,$^) -ldl -lpthread -lm

# Symbol versions as NVIDIA's: programs built against the toolkit bind
# cudaMalloc@libcudart.so.13, cuptiSubscribe@libcupti.so.13.
$(CUDA_SIM)/libcudart.so.%: $(wildcard $(SIM_DIR)/rt_*.c) $(SIM_HDRS)
	@mkdir -p $(dir $@)
	printf 'libcudart.so.$* { global: cuda*; __cuda*; local: *; };\n' > $@.map
	$(SIM_LINK) -DSIM_RT_MAJOR=$* -Wl,-soname,libcudart.so.$* -Wl,--version-script=$@.map \
	  -o $@ $(filter %.c,$^) -ldl -lpthread

$(CUDA_SIM)/libcupti.so.13: $(wildcard $(SIM_DIR)/cupti_*.c) $(SIM_HDRS)
	@mkdir -p $(dir $@)
	printf 'libcupti.so.13 { global: cupti*; local: *; };\n' > $@.map
	$(SIM_LINK) -Ibackends/cuda/compat -Wl,-soname,libcupti.so.13 -Wl,--version-script=$@.map -o $@ \
	  $(filter %.c,$^) -ldl -lpthread

CUDA_SIM_LIBS := $(CUDA_SIM)/libcuda.so.1 $(CUDA_SIM)/libcudart.so.13 \
		 $(CUDA_SIM)/libcudart.so.12 $(CUDA_SIM)/libcupti.so.13

# The contract checks: a client of the toolkit's libraries (and driver stub),
# run on the simulator by test_cudasim.py.
$(BUILD)/test/cuda/sim/sim_probe: $(SIM_DIR)/sim_probe.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -I$(CUDA_HOME)/include -Ibackends/cuda/compat -o $@ $< \
	  -L$(CUDA_HOME)/lib64 \
	  -L$(CUDA_HOME)/lib64/stubs -lcupti -lcudart -lcuda -lpthread -ldl

TEST_BUILD += $(CUDA_SIM_LIBS) $(BUILD)/test/cuda/sim/sim_probe
endif
