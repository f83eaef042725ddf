# libFuzzer harnesses (clang): the config/template parser and the JSON string
# escaper. `make test` runs each for a few seconds (test/fuzz/test_fuzz.py);
# run one longer by hand: build/test/fuzz/fuzz_json -max_total_time=300 /tmp/c test/fuzz/corpus/json
FUZZ_CC := $(firstword $(foreach c,clang-14 clang,$(shell command -v $(c) 2>/dev/null)))
ifneq ($(FUZZ_CC),)
HAVE_FUZZ := $(shell echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' | \
	$(FUZZ_CC) -x c -fsanitize=fuzzer -o /dev/null - 2>/dev/null && echo 1)
endif
ifeq ($(HAVE_FUZZ),1)
FUZZ_FLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I.
FUZZ_BINS := $(BUILD)/test/fuzz/fuzz_config $(BUILD)/test/fuzz/fuzz_template $(BUILD)/test/fuzz/fuzz_json \
	     $(BUILD)/test/fuzz/fuzz_expr

$(BUILD)/test/fuzz/fuzz_config $(BUILD)/test/fuzz/fuzz_template: $(BUILD)/test/fuzz/%: test/fuzz/%.c test/fuzz/balloon.h inject/config.c inject/config.h inject/event.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $< inject/config.c

$(BUILD)/test/fuzz/fuzz_json: test/fuzz/fuzz_json.c test/fuzz/balloon.h writer/json.c writer/json.h inject/event.h \
		inject/pages.c inject/pages.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $< writer/json.c inject/pages.c -lm

# The check language of `gputrace check` with the tool's summary reader.
# the tool without main.c, gputrace run (run*.c, supervise.c: the supervisor)
# and gputrace capture (capture.c: signals, the run directory)
FUZZ_EXPR_SRCS := $(filter-out scripts/tool/main.c scripts/tool/run%.c scripts/tool/supervise.c \
		  scripts/tool/capture.c,\
		  $(wildcard scripts/tool/*.c)) writer/summary.c
$(BUILD)/test/fuzz/fuzz_expr: test/fuzz/fuzz_expr.c test/fuzz/balloon.h $(FUZZ_EXPR_SRCS) \
		$(wildcard scripts/tool/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $< $(FUZZ_EXPR_SRCS) -lz -lm

TEST_BUILD += $(FUZZ_BINS)
else
$(info gputrace: no clang with libFuzzer (apt-get install clang-14): the fuzz harnesses are not built)
endif
