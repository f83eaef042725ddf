/* SPDX-License-Identifier: MIT */
/*
 * Configuration from GPUTRACE_* environment variables (gputrace run's
 * options map onto them). A bad value gives one stderr line naming the
 * variable and what is accepted, and the default is kept.
 */
#ifndef GPUTRACE_CONFIG_H
#define GPUTRACE_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "event.h"

/* Generic activity kinds (the plug-in ABI mirrors these values). */
#define GT_KINDS(X)                                                            \
	X(RUNTIME, "runtime")                                                  \
	X(DRIVER, "driver")                                                    \
	X(KERNEL, "kernel")                                                    \
	X(MEMCPY, "memcpy")                                                    \
	X(MEMSET, "memset")                                                    \
	X(SYNC, "sync")                                                        \
	X(ANNOTATION, "annotation")                                            \
	X(COUNTER, "counter")                                                  \
	X(OVERHEAD, "overhead")

enum gt_kind_bit {
#define GT_KIND_BIT(id, str) GT_KIND_BIT_##id,
	GT_KINDS(GT_KIND_BIT)
#undef GT_KIND_BIT
	GT_KIND__COUNT
};
#define GT_KIND(id)     (1u << GT_KIND_BIT_##id)
#define GT_KIND_ALL     ((1u << GT_KIND__COUNT) - 1)

#define GT_BACKEND_CUPTI   0x1
#define GT_BACKEND_ZE      0x2
#define GT_BACKEND_PLUGINS 0x4
#define GT_BACKEND_ALL     0x7
/* Not a GPUTRACE_BACKENDS word: the ITT collector, on with what it records
 * (annotations, a profiler capture range), whatever the GPU backends. */
#define GT_BACKEND_ITT     0x8

#define GT_BUFFER_KB_DEFAULT 4096
#define GT_BUFFER_KB_MIN     4
#define GT_BUFFER_KB_MAX     (1024 * 1024)
/* A full ring's overflow segments, all threads together (ring_overflow.c) */
#define GT_OVERFLOW_MB_DEFAULT 64
#define GT_OVERFLOW_MB_MAX     65536
#define GT_STACKS_MAX_DEPTH  64
/* The flight recorder's memory: MB asked for, else this cap on a SEC window. */
#define GT_FLIGHT_MB_DEFAULT 64
#define GT_FLIGHT_MB_MAX     65536
#define GT_FLIGHT_SEC_MAX    86400
#define GT_STACKS_DEFAULT_DEPTH 16
#define GT_CAPTURE_SIGNAL_DEFAULT 7 /* SIGRTMIN+7 */
/* capture_signal's default, kept as this mark until a number is needed
 * (config__capture_signal): SIGRTMIN is a call into libc, a binding and a
 * page of its text at every start of every process */
#define GT_CAPTURE_SIGNAL_RTMIN_DEFAULT (-1)
#define GT_RANGE_PROFILER 1 /* cudaProfilerStart/Stop, ITT __itt_resume/__itt_pause */
#define GT_RANGE_NVTX     2
#define GT_WATCHDOG_MAX_S       86400
#define GT_LOSSLESS_MS_DEFAULT  1000  /* --lossless: the longest wait for a full ring */
#define GT_LOSSLESS_MS_MAX      60000

/* Hardware metrics (GPUTRACE_METRICS_MODE): off, sampled over time, or per kernel. */
/* nvtx: per NVTX push/pop range (CUDA's range profiler, user ranges) */
enum gt_metrics_mode { GT_METRICS_OFF = 0, GT_METRICS_TIME, GT_METRICS_KERNEL, GT_METRICS_NVTX };
#define GT_METRICS_HZ_DEFAULT   1000
#define GT_METRICS_HZ_MAX       1000000
#define GT_TELEMETRY_HZ_DEFAULT 10
#define GT_TELEMETRY_HZ_MAX     1000

/* The longest NVTX range or domain name kept */
#define GT_CFG_NAME_MAX 255
/* The longest GPUTRACE_METRICS kept: CUPTI's names are 20 to 80 characters, so 255
 * refused six of them (the basic per-kernel set written out and one more) */
#define GT_CFG_METRICS_MAX 1023

/* Numbers first, the pool of paths and names (~17 KiB) last: a process that
 * sets none of them never touches its pages (config_defaults). */
struct gt_config {
	size_t buffer_kb;            /* GPUTRACE_BUFFER_KB, per-thread ring */
	size_t overflow_mb;          /* GPUTRACE_OVERFLOW_MB, full rings' overflow, per process */
	unsigned backends;           /* GPUTRACE_BACKENDS, GT_BACKEND_* mask */
	bool disable_cupti;          /* GPUTRACE_DISABLE_CUPTI */
	unsigned stacks;             /* GPUTRACE_STACKS: 0 off, else depth */
	bool stacks_all;             /* GPUTRACE_STACKS_ALL: every API call, not launches only */
	bool summary;                /* GPUTRACE_SUMMARY */
	int log_level;               /* GPUTRACE_LOG */
	unsigned kinds;              /* GPUTRACE_ACTIVITIES, GT_KIND mask */
	bool graph_trace;            /* GPUTRACE_GRAPH_TRACE */
	unsigned flush_ms;           /* GPUTRACE_FLUSH_MS: drain/checkpoint interval */
	unsigned kineto_cycle_ms;    /* GPUTRACE_KINETO_CYCLE_MS: 0, or Kineto plug-ins'
				      * stop/processEvents/start period */
	unsigned watchdog_ms;        /* GPUTRACE_WATCHDOG: 0 off, else the hang threshold */
	unsigned lossless_ms;        /* GPUTRACE_LOSSLESS: 0 off (a full ring drops), else the
				      * longest a producer waits for room (ring_wait.c) */
	const char *metrics;         /* GPUTRACE_METRICS: group or metric names, "" = default group */
	unsigned metrics_mode;       /* GPUTRACE_METRICS_MODE: enum gt_metrics_mode */
	unsigned metrics_hz;         /* GPUTRACE_METRICS_HZ: time mode sampling rate */
	bool telemetry;              /* GPUTRACE_TELEMETRY: sampled device telemetry */
	unsigned telemetry_hz;       /* GPUTRACE_TELEMETRY_HZ */
	bool metrics_hz_set, telemetry_hz_set; /* given, and valid: they imply the feature */
	/* given, and valid: what a part implies (above, GPUTRACE_STACKS_ALL's
	 * depth) is not. A refused value is as if not given: its default, and
	 * the part's implication, as under gputrace run (which leaves it out) */
	bool stacks_set, metrics_mode_set, telemetry_set;
	bool start_paused;           /* GPUTRACE_START=paused: record nothing until a window opens */
	uint64_t delay_ns;           /* GPUTRACE_DELAY: the first window opens this long after start */
	uint64_t duration_ns;        /* GPUTRACE_DURATION: windows last this long (0: to the end) */
	int capture_range;           /* GPUTRACE_CAPTURE_RANGE: GT_RANGE_*; 0 none */
	const char *capture_nvtx;    /* nvtx:NAME[@DOMAIN]: NAME */
	const char *capture_nvtx_domain; /* and DOMAIN ("": the default domain) */
	unsigned capture_count;      /* GPUTRACE_CAPTURE_COUNT: ranges recorded, 0 every one */
	bool capture_count_set;      /* given, and valid: it means nothing without a range */
	int capture_signal;          /* GPUTRACE_CAPTURE_SIGNAL: gputrace capture's signal; 0 off;
	                                GT_CAPTURE_SIGNAL_RTMIN_DEFAULT: the default */
	uint64_t flight_ns;          /* GPUTRACE_FLIGHT_RECORDER SEC: the window kept (0: no limit) */
	size_t flight_bytes;         /* ... MB, or the cap of a SEC window; 0: no flight recorder */
	unsigned errors;             /* how many bad values were reported */
	const char *output;          /* GPUTRACE_OUTPUT template */
	const char *plugin_path;     /* GPUTRACE_PLUGIN_PATH; "" when unset, as the next two */
	const char *summary_json;    /* GPUTRACE_SUMMARY_JSON, a template as GPUTRACE_OUTPUT */
	const char *run_state;       /* GPUTRACE_RUN_STATE: set by gputrace run (see config.c) */
	/* The paths and names above, each copied once after the other (the
	 * environment is the program's to change): the few bytes a process is
	 * given follow the fields it writes at start whether it records or not,
	 * on the same page (GT_STARTUP_BSS_LAST) where they fit. */
	size_t paths_used;
	char paths[4 * PATH_MAX + (GT_CFG_METRICS_MAX + 1) + 2 * (GT_CFG_NAME_MAX + 1)];
};

extern GT_HIDDEN struct gt_config gt_cfg;

/* A process of gputrace run (its state folder set; NULL before the
 * configuration is read) */
static inline bool gt_under_run(void)
{
	return gt_cfg.run_state && gt_cfg.run_state[0];
}

/* A setting named as the user gave it: gputrace run's options reach its
 * processes as the variables, so there the option; else the variable, set
 * by hand (under plain LD_PRELOAD there is no option to name). */
static inline const char *gt_setting(const char *option, const char *var)
{
	return gt_under_run() ? option : var;
}

/* Sampled device counters (telemetry, time-based metrics): the drain thread
 * reads them, so it runs from the start when they are asked for. */
static inline bool gt_sampling_wanted(const struct gt_config *cfg)
{
	return cfg->telemetry || cfg->metrics_mode == GT_METRICS_TIME;
}

/* Defaults, then every GPUTRACE_* of envp (NULL-terminated "K=V" list).
 * Bad values and unknown names are reported (one line each) and counted. */
GT_HIDDEN void config__parse(struct gt_config *cfg, char *const *envp);
/* The capture signal's number (0: none). */
GT_HIDDEN int config__capture_signal(const struct gt_config *cfg);

/* One variable's value, checked as config__parse would, without a message:
 * 0; -EINVAL with *accepted set to what is accepted (the text of the
 * message config__parse prints); -ENOENT for a name that is not ours. For
 * gputrace run, which checks its options before running anything; not
 * thread-safe. */
GT_HIDDEN int config__check(const char *var, const char *val, const char **accepted);

/* Parse a kinds list ("kernel,memcpy", "all", vendor aliases such as
 * cuda_runtime, xpu_driver); returns the mask or -1 (with *bad set to the
 * offending word, NUL-terminated into badbuf). */
GT_HIDDEN long config__parse_kinds(const char *s, char *badbuf, size_t badlen);

/* Where this process stands in a distributed job, from the launcher's
 * environment: RANK/WORLD_SIZE (torchrun), OMPI_COMM_WORLD_RANK/SIZE,
 * PMI_RANK/PMI_SIZE, SLURM_PROCID/SLURM_NTASKS, first set first. */
struct gt_rank {
	long rank, world_size; /* -1: not set, or not an integer */
	const char *source;    /* "env", "mpi", "pmi", "slurm"; NULL: no rank */
	const char *var, *text; /* the variable and its text, for messages */
};
GT_HIDDEN struct gt_rank config__rank(void);

/* Expand an output template (%p %e %h %r %t %%). Returns 0 or -ENAMETOOLONG /
 * -EINVAL (unknown %-code, reported once). */
GT_HIDDEN int config__expand_output(const char *tmpl, char *out, size_t outlen, int pid,
				    const char *exe, uint64_t start_realtime_ns);

#endif
