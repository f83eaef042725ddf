# Simulated Level Zero device (libze_sim.so) and its probe program; see test/levelzero/sim/README.md.
# Needs only the Level Zero headers and loader, never the gputrace library.
ifeq ($(HAVE_ZE),1)
ZE_SIM_SRCS := $(addprefix test/levelzero/sim/,sim_driver.c sim_queue.c sim_objects.c sim_clock.c \
		 sim_metrics.c sim_sysman.c sim_intel.c)

# -z nodelete: the loader dlcloses drivers at exit while worker threads may still run.
$(BUILD)/libze_sim.so: $(ZE_SIM_SRCS) test/levelzero/sim/sim.h test/levelzero/sim/ddi_newer.h \
		backends/levelzero/ze_newer.h backends/levelzero/ze_intel_ext.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -I. -fvisibility=hidden -Werror=incompatible-pointer-types \
	  -shared -Wl,-z,nodelete -Wl,--no-undefined -o $@ $(ZE_SIM_SRCS) -lpthread -lm

$(BUILD)/test/levelzero/sim/sim_probe: test/levelzero/sim/sim_probe.c backends/levelzero/ze_newer.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -I. -o $@ $< -lze_loader

$(BUILD)/test/levelzero/sim/sim_metrics_probe: test/levelzero/sim/sim_metrics_probe.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -o $@ $< -lze_loader

TEST_BUILD += $(BUILD)/libze_sim.so $(BUILD)/test/levelzero/sim/sim_probe \
	      $(BUILD)/test/levelzero/sim/sim_metrics_probe
endif
