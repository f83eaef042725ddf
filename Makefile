# gputrace — see README.md. `make`, `make test`, `make demo`, `make bench`,
# `make install`, `make deps`. SANITIZE=address|undefined|thread builds into
# build/san-<name> and runs the suite there; METRICS=0 builds the library
# without metrics support into <build>/no-metrics (`make METRICS=0 lib`).
CC        ?= gcc
CXX       ?= g++
PREFIX    ?= /usr/local
CUDA_HOME ?= /usr/local/cuda
PYTHON    ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)
VERSION   := 0.1.0

ifeq ($(SANITIZE),)
BUILD     ?= build
SANFLAGS  :=
SAN_RT    :=
else ifeq ($(SANITIZE),address)
BUILD     ?= build/san-address
SANFLAGS  := -fsanitize=address -fno-omit-frame-pointer
SAN_RT    := $(shell $(CC) -print-file-name=libasan.so)
else ifeq ($(SANITIZE),undefined)
BUILD     ?= build/san-undefined
SANFLAGS  := -fsanitize=undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
SAN_RT    := $(shell $(CC) -print-file-name=libubsan.so)
else ifeq ($(SANITIZE),thread)
BUILD     ?= build/san-thread
SANFLAGS  := -fsanitize=thread
SAN_RT    := $(shell $(CC) -print-file-name=libtsan.so)
else
$(error SANITIZE must be address, undefined or thread, not '$(SANITIZE)')
endif

# METRICS=0: hardware metrics and telemetry compiled out (-DGT_NO_METRICS: no test of
# them on the call and launch paths, no metric queries' pointer in a command), built
# into its own folder: the build `make bench` row 8n compares the default one with.
ifeq ($(METRICS),0)
override BUILD := $(BUILD)/no-metrics
METRICS_FLAGS := -DGT_NO_METRICS
else ifneq ($(filter-out 1,$(METRICS)),)
$(error METRICS must be 0 or 1, not '$(METRICS)')
endif

WARN      := -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers
CFLAGS    ?= -O2 -g
BASEFLAGS = -std=gnu11 -pthread -fPIC $(WARN) $(SANFLAGS) $(METRICS_FLAGS) -DGPUTRACE_VERSION=\"$(VERSION)\" $(GT_ISAL_CFLAGS)
# -fexceptions: a wrapper's cleanup runs when pthread_cancel() unwinds the
# thread through it (backends/levelzero/backend.c, ze__unwound).
LIBFLAGS  = $(BASEFLAGS) -fvisibility=hidden -ftls-model=initial-exec -fexceptions -I.
LDLIBS    := -ldl -lpthread

# Optional parts: each is built when its headers are here, else left out with one line.
HAVE_ZE    := $(shell test -f /usr/include/level_zero/ze_api.h && echo 1)
HAVE_CUPTI := $(shell test -f $(CUDA_HOME)/include/cupti.h && echo 1)
HAVE_CHECK := $(shell test -f /usr/include/check.h && echo 1)
HAVE_NVCC  := $(shell test -x $(CUDA_HOME)/bin/nvcc && echo 1)
HAVE_ISAL  := $(shell test -f /usr/include/isa-l/igzip_lib.h && echo 1)

LIB_SRCS := $(wildcard inject/*.c writer/*.c backends/plugins/*.c backends/itt/*.c)
ifeq ($(HAVE_ZE),1)
LIB_SRCS += $(wildcard backends/levelzero/*.c)
else
$(info gputrace: Level Zero headers (libze-dev) not found: building without the Level Zero backend)
endif
ifeq ($(HAVE_CUPTI),1)
LIB_SRCS += $(wildcard backends/cuda/*.c)
CUPTI_CFLAGS := -I$(CUDA_HOME)/include -Ibackends/cuda/compat -DGT_CUDA_HOME=\"$(CUDA_HOME)\"
else
$(info gputrace: CUPTI headers not found under CUDA_HOME=$(CUDA_HOME): building without the CUDA backend)
endif
ifneq ($(HAVE_ISAL),1)
$(info gputrace: ISA-L headers (libisal-dev) not found: .gz traces are compressed with zlib only)
LIB_EXCLUDE += writer/isal.c
GT_ISAL_CFLAGS := -DGT_NO_ISAL
endif
# A sanitizer runtime loads libgcc_s itself: the unwinder stubs that spare a
# plain build loading it (inject/unwind.c) stay out.
ifneq ($(SANITIZE),)
LIB_EXCLUDE += inject/unwind.c
endif
LIB_SRCS := $(sort $(filter-out $(LIB_EXCLUDE),$(wildcard $(LIB_SRCS))))
LIB_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(LIB_SRCS))
LIB      := $(BUILD)/libgputrace.so

# What tests preload: the sanitizer runtime must come first.
GT_PRELOAD := $(strip $(SAN_RT) $(abspath $(LIB)))

all: $(LIB) tools test-build
lib: $(LIB)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LIBFLAGS) $(if $(filter backends/cuda/%,$<),$(CUPTI_CFLAGS)) -MMD -MP -c $< -o $@

# Sanitizer runtimes resolve their interceptors with dlsym(RTLD_NEXT) and set
# up signal handling before they are initialized; our dlsym and sigaction
# wrappers run then, so they must not be instrumented.
$(BUILD)/obj/inject/dlsym.o $(BUILD)/obj/inject/lifecycle.o: SANFLAGS :=

# noseparate-code: headers, text and read-only data in one mapping, not three:
# two mmaps fewer and a page fault fewer in every process the library is
# preloaded into, GPU or not (10 us of ~80 per /bin/true, make bench row 7s);
# read-only data becomes executable, as it was before binutils 2.31.
$(LIB): $(LIB_OBJS) inject/exports.map inject/startup.ld
	$(CC) $(CFLAGS) $(SANFLAGS) -shared -o $@ $(filter %.o,$^) $(LDLIBS) -Wl,-z,nodelete \
	  -Wl,--version-script=inject/exports.map -Wl,-fini=gt_fini -Wl,-z,noseparate-code \
	  -Wl,-T,inject/startup.ld

-include $(LIB_OBJS:.o=.d)

# Each area adds its own rules (test programs, tools, suites) here.
TEST_BUILD :=
TOOLS      :=
BENCH_BUILD :=
-include $(sort $(wildcard scripts/rules.mk test/*/rules.mk test/*/*/rules.mk))

tools: $(TOOLS)
test-build: $(TEST_BUILD)

# --- packages -----------------------------------------------------------
DEB_PKGS := gcc g++ make libze1 libze-dev check libunwind-dev zlib1g-dev libisal-dev python3 python3-pytest \
	    pkg-config jq uftrace ltrace libjson-c-dev binutils clang-14 libclang-rt-14-dev \
	    chromium python3-jsonschema libdnnl-dev strace cmark-gfm valgrind
deps:
	@missing=""; for p in $(DEB_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -z "$$missing" ]; then echo "gputrace: all packages present"; exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "gputrace: installing:$$missing"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null) \
	    || { echo "gputrace: apt-get failed; install by hand:$$missing"; exit 1; }; \
	else echo "gputrace: missing packages; install them with: apt-get install$$missing"; exit 1; fi

# --- test, demo, bench, install -----------------------------------------
test: deps
	$(MAKE) all
	BUILD=$(BUILD) GT_PRELOAD="$(GT_PRELOAD)" SANITIZE="$(SANITIZE)" PYTHON=$(PYTHON) \
	  CUDA_HOME=$(CUDA_HOME) sh test/run.sh

demo: deps
	$(MAKE) all
	sh test/demo.sh $(BUILD)

bench: deps
	$(MAKE) all $(BENCH_BUILD)
	BUILD=$(BUILD) PYTHON=$(PYTHON) $(PYTHON) test/bench/bench.py

install: $(LIB) tools
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/include/gputrace \
	  $(DESTDIR)$(PREFIX)/libexec/gputrace $(DESTDIR)$(PREFIX)/share/gputrace
	install -m 755 $(LIB) $(DESTDIR)$(PREFIX)/lib/libgputrace.so
	install -m 644 backends/plugins/gputrace_plugin.h $(DESTDIR)$(PREFIX)/include/gputrace/gputrace_plugin.h
	install -m 644 backends/plugins/kineto_plugin.h $(DESTDIR)$(PREFIX)/include/gputrace/kineto_plugin.h
	install -m 755 scripts/gputrace $(DESTDIR)$(PREFIX)/bin/gputrace
	install -m 644 scripts/summary.schema.json $(DESTDIR)$(PREFIX)/share/gputrace/summary.schema.json
	for t in $(TOOLS); do install -m 755 $$t $(DESTDIR)$(PREFIX)/libexec/gputrace/; done

clean:
	rm -rf build

.PHONY: all lib tools test-build deps test demo bench install clean
