# Check unit tests of the core: rings, JSON, config, the drain pipeline.
# They link the library's objects directly (hidden symbols are fine in a
# static link) and start the tracer themselves (gt_unit_test).
UNIT_CORE_OBJS := $(filter-out $(BUILD)/obj/backends/%,$(LIB_OBJS))
UNIT_LIBS := -lcheck -lsubunit -lm -lrt -lpthread -ldl -lz -ljson-c

$(BUILD)/test/check_%: test/unit/check_%.c $(UNIT_CORE_OBJS) test/unit/unit.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -I. -o $@ $< $(UNIT_LINK_OBJS) $(UNIT_LIBS)
UNIT_LINK_OBJS = $(UNIT_CORE_OBJS)

# Capture windows: capture.c compiled into the test with a look at each step of a
# window's close (see there); the library's copy stays out.
$(BUILD)/test/check_capture: inject/capture.c
$(BUILD)/test/check_capture: UNIT_LINK_OBJS = \
	$(filter-out $(BUILD)/obj/inject/capture.o,$(UNIT_CORE_OBJS))

TEST_BUILD += $(BUILD)/test/check_capture $(BUILD)/test/check_ring $(BUILD)/test/check_json \
	      $(BUILD)/test/check_config $(BUILD)/test/check_pipeline $(BUILD)/test/check_output
