# gputrace-tool: run, capture, merge, summary and metrics for the gputrace
# command (scripts/gputrace). It links the same summary aggregator as the
# library (writer/summary.c) and its configuration parser (inject/config.c),
# so options are checked and summed up exactly as the library does; `capture`
# finds traced processes in the same run directory (inject/rundir.c).
# `metrics` dlopens the Level Zero loader and NVML, and needs the Level Zero
# headers to list Level Zero devices.
TOOL_SRCS := $(wildcard scripts/tool/*.c) writer/summary.c inject/config.c \
	     inject/rundir.c
TOOL_OBJS := $(patsubst %.c,$(BUILD)/obj/tool/%.o,$(TOOL_SRCS))
TOOL      := $(BUILD)/gputrace-tool

$(BUILD)/obj/tool/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -I. -MMD -MP -c $< -o $@

ifeq ($(HAVE_ZE),1)
$(BUILD)/obj/tool/scripts/tool/metrics.o: BASEFLAGS += -DGT_HAVE_ZE=1
endif

$(TOOL): $(TOOL_OBJS)
	$(CC) $(CFLAGS) $(SANFLAGS) -o $@ $^ -lz -lm

-include $(TOOL_OBJS:.o=.d)

TOOLS += $(TOOL)
