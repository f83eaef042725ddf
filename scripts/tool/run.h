/* SPDX-License-Identifier: MIT */
/*
 * gputrace run's parts, shared (see run.c for the flow):
 *   run_options.c  the options, the environment read and the command's own
 *   run_files.c    where the traces go, the list the processes keep, the
 *                  run's one trace made of theirs
 *   run.c          the flow: supervise, merge, summary, checks, exit
 */
#ifndef GPUTRACE_TOOL_RUN_H
#define GPUTRACE_TOOL_RUN_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "inject/config.h"
#include "supervise.h"

#define WHO "gputrace"
#define DEFAULT_OUTPUT "gputrace-%e-%t.json"

/* The library variables a run option sets (the rest are run's own). */
#define RUN_VAR_OPTIONS(X)                                                                 \
	X("--backends", "GPUTRACE_BACKENDS", true)                                         \
	X("--activities", "GPUTRACE_ACTIVITIES", true)                                     \
	X("--buffer-kb", "GPUTRACE_BUFFER_KB", true)                                       \
	X("--overflow-mb", "GPUTRACE_OVERFLOW_MB", true)                                   \
	X("--flush-ms", "GPUTRACE_FLUSH_MS", true)                                         \
	X("--plugin-path", "GPUTRACE_PLUGIN_PATH", true)                                   \
	X("--kineto-cycle-ms", "GPUTRACE_KINETO_CYCLE_MS", true)                           \
	X("--log", "GPUTRACE_LOG", true)                                                   \
	X("--stacks-all", "GPUTRACE_STACKS_ALL", false)                                    \
	X("--graph-trace", "GPUTRACE_GRAPH_TRACE", false)                                  \
	X("--no-cupti", "GPUTRACE_DISABLE_CUPTI", false)                                   \
	X("--metrics", "GPUTRACE_METRICS", true)                                           \
	X("--metrics-mode", "GPUTRACE_METRICS_MODE", true)                                 \
	X("--metrics-hz", "GPUTRACE_METRICS_HZ", true)                                     \
	X("--telemetry", "GPUTRACE_TELEMETRY", false)                                      \
	X("--telemetry-hz", "GPUTRACE_TELEMETRY_HZ", true)                                 \
	X("--start", "GPUTRACE_START", true)                                               \
	X("--delay", "GPUTRACE_DELAY", true)                                               \
	X("--duration", "GPUTRACE_DURATION", true)                                         \
	X("--capture-range", "GPUTRACE_CAPTURE_RANGE", true)                               \
	X("--capture-count", "GPUTRACE_CAPTURE_COUNT", true)                               \
	X("--capture-signal", "GPUTRACE_CAPTURE_SIGNAL", true)                             \
	X("--flight-recorder", "GPUTRACE_FLIGHT_RECORDER", true)                           \
	X("--watchdog", "GPUTRACE_WATCHDOG", true)                                         \
	X("--lossless", "GPUTRACE_LOSSLESS", false)

enum {
#define RUN_OPT_COUNT(name, var, value) +1
	NVAR_OPTIONS = 0 RUN_VAR_OPTIONS(RUN_OPT_COUNT)
#undef RUN_OPT_COUNT
};

struct run {
	bool unreachable;            /* CMD preload cannot reach: said before it ran */
	/* what was asked */
	const char *tmpl;            /* -o */
	bool tmpl_from_env;          /* ... given as GPUTRACE_OUTPUT, not -o */
	const char *keep_dir;        /* --per-process */
	const char *summary_json;    /* --summary-json */
	bool summary_json_from_env;  /* ... given as GPUTRACE_SUMMARY_JSON */
	const char *stacks;          /* --stacks depth, "on" or "off" */
	bool no_summary;
	const char *var_value[NVAR_OPTIONS];
	const struct gt_config *settings; /* the processes' settings (run__read_env) */
	char **checks;               /* --check, each one check */
	size_t nchecks;
	const char **checks_files;   /* --checks, each file (repeatable, as check's -f:
				      * a second one replaced the first, whose checks were
				      * then never evaluated) */
	size_t nchecks_files;
	size_t *checks_before;       /* ... each: how many --check came before it: the
				      * checks run in the order given (every file's ran
				      * before every --check) */
	char (*checks_copies)[32];   /* ... each read once: /proc/self/fd/N, N a memfd */
	const char *junit, *markdown;
	char **cmd;
	/* where things go */
	bool per_process;            /* -o has %p: the files are the result */
	char out[PATH_MAX];          /* the trace to make (not per_process) */
	bool out_special;            /* OUT is a device or a pipe: written, not renamed */
	char parts[PATH_MAX];        /* the processes' own traces */
	bool parts_made;             /* we made that folder: it goes at the end */
	char child_output[PATH_MAX]; /* GPUTRACE_OUTPUT for the processes */
	char state[1024];            /* private: the list of traces, said messages */
	/* what came of it */
	struct supervisor sup;
	char **traces;               /* the run's traces (listed by its processes) */
	size_t ntraces;
	bool window_opened;          /* a process with capture windows opened one */
	size_t unwritten;            /* processes that recorded and died before any file */
	size_t unwritable;           /* ... that recorded, ended, and could not write it */
	size_t write_failed;         /* traces that stop where a write of theirs failed */
	char write_error[256];       /* the first one's reason */
	char no_window[1024];        /* why a process's never opened ("" none said) */
	char no_telemetry[1024];     /* --telemetry: why none was recorded ("" some was) */
	char trace[PATH_MAX];        /* the run's one trace, once made ("" if none) */
	char summary_path[PATH_MAX]; /* the run's summary JSON, once written */
	char check_path[PATH_MAX];   /* the one the checks read ("" summary_path) */
	struct summary *sum;
};

/* gputrace's own messages: config.c's through gt_log, at this level; while
 * the run's settings are parsed, at the level they set (run__log_from): the
 * line a setting of theirs says is said at their GPUTRACE_LOG (--log) */
extern int run__log_level;
extern const struct gt_config *run__log_from;
/* One line, "Try 'gputrace --help'.", exit 2. */
__attribute__((format(printf, 1, 2), noreturn)) void run__usage_error(const char *fmt, ...);
/* The same for a value from an option ("-o"), or without the second line for
 * one from a variable of the environment ("GPUTRACE_OUTPUT", "GPUTRACE_OUTPUT="). */
__attribute__((format(printf, 2, 3), noreturn)) void run__value_error(const char *from,
									const char *fmt, ...);

/* run_options.c */
void run__parse_options(struct run *r, int argc, char **argv);
/* The processes' settings into env, as the library will read them: our
 * environment's GPUTRACE_* under the run's options; a bad one said once. */
void run__read_env(struct run *r, struct gt_config *env);
/* The run's defaults from the environment (-o, --no-summary, ...). */
void run__env_defaults(struct run *r, const struct gt_config *env);
/* CMD's environment: ours, the run's settings, LD_PRELOAD with lib. */
char **run__command_env(struct run *r, const char *lib);
/* The per-thread buffer the processes have, in KiB. */
unsigned long run__buffer_kb(const struct run *r);
/* ... and the overflow all their threads share, in MiB (0: off). */
unsigned long run__overflow_mb(const struct run *r);
/* A flight recorder was asked for (and is valid): processes write only on dumps. */
bool run__flight_recorder(const struct run *r);
/* A GPUTRACE_* setting of the run (an option, or our environment's), or NULL. */
const char *run__setting(const struct run *r, const char *var);
/* Whether run__setting's value is the run's option (else the environment's). */
bool run__setting_is_option(const struct run *r, const char *var);

/* run_files.c */
/* -o (and --per-process, --summary-json): checked, planned; exit 2 if bad. */
void run__plan_outputs(struct run *r);
/* The state folder and the processes' folder. */
void run__make_folders(struct run *r);
void run__remove_state(struct run *r);
void run__wait_for_stragglers(struct run *r);
void run__collect_traces(struct run *r);
/* The run's trace at OUT: 0 or -errno (-EIO: the merge said why). */
int run__make_trace(struct run *r);
int run__deliver_trace(struct run *r);
/* The lines processes could not print (their stderr closed), printed here. */
void run__print_unsaid(struct run *r);
void run__remove_parts(struct run *r);

#endif
