/* SPDX-License-Identifier: MIT */
/*
 * The summary: top kernels, API calls, copies, device busy time, lost
 * events. One aggregator serves both the in-process summary at exit (fed
 * by the writer, event by event) and `gputrace summary FILE` (fed by a
 * JSON reader), so both print the same numbers the same way.
 */
#ifndef GPUTRACE_SUMMARY_H
#define GPUTRACE_SUMMARY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct summary;

/* The pids of the writer's device rows start here (writer/internal.h device_pid),
 * clear of real pids (< 2^22): a reader of a trace without its trailer tells a
 * process's rows from a device's by them. */
#define GT_DEVICE_PID_BASE 0x40000000u

/* A hardware metric measured for one span (a kernel's args.metrics). */
struct summary_metric {
	const char *name; /* with its unit: "GpuBusy %" */
	double value;
};

/* One span as the trace shows it. Strings are borrowed for the call. */
struct summary_span {
	const char *cat;       /* "kernel", "gpu_memcpy", "ze_api", ... */
	const char *name;
	uint64_t start_ns;
	uint64_t dur_ns;
	uint64_t bytes;        /* copies and fills; 0 if unknown */
	const char *copy_kind; /* "HtoD", "DtoH", ...: the "kind" arg of copies, or NULL */
	const char *device;    /* device row name for device spans, NULL for host spans */
	int process;           /* from summary__process(); 0: not known */
	const struct summary_metric *metrics; /* kernels: their metrics, or NULL */
	unsigned nmetrics;
	/* device spans: the user ranges open at their launch (args.ranges) */
	const char *const *ranges;
	unsigned nranges;
	bool interned; /* name and device: addresses that hold their text to the end */
	const char *error; /* host calls that failed: the result's name (args.error), or NULL */
};

/* A traced process, for the per-process rows (devices by process). Strings
 * are copied; NULL when not known. */
struct summary_process {
	int64_t pid;
	const char *exe;
	const char *host;
	const char *rank;
	uint64_t lost;         /* events it lost */
};

/* What the printed summary tells its reader to use: the option or variable
 * that gives every row (more: "--json"), and the buffer setting to raise
 * when events were lost (buffer: "--buffer-kb ", buffer_kb the current size
 * in KiB, 0 if not known). */
struct summary_hints {
	const char *more;
	const char *buffer;
	unsigned long buffer_kb;
	const char *overflow;      /* the overflow's knob, spelled as buffer's is */
	unsigned long overflow_mb; /* its setting: 0, off */
};

/* Ranges of one span counted (deeper ones are not). */
#define SUMMARY_RANGES_MAX 64

struct summary *summary__new(void);
void summary__free(struct summary *s);
void summary__add(struct summary *s, const struct summary_span *span);
/* A device span that is a wait (CUDA's cuda_sync, Level Zero's gpu_sync
 * spans), not work: no busy time, no span of its device. */
bool summary__is_wait(const struct summary_span *span);
/* Host calls of one name, added at once (sp: the first's start, its name,
 * category and process; the rest from c): as many summary__add calls. */
struct summary_calls {
	uint64_t count, total_ns, min_ns, max_ns, last_end_ns;
};
void summary__add_calls(struct summary *s, const struct summary_span *sp,
			const struct summary_calls *c);
/* A kernel's rows (its device's, the process's device's, its own), found once by
 * summary__kernel_rows for a span of it without ranges or metrics, so that later spans
 * of that kernel on that device in that process add up without finding them again
 * (summary__add_kernel, which summary__add calls for such a span): the lookups were most
 * of a launch's ~700 summary instructions on the drain. Stale once any table of s grows
 * (its rows move): summary__kernel_rows_fresh says so. */
struct summary_kernel_rows {
	uint64_t moves; /* s's summary__kernel_rows_fresh stamp; 0: none */
	struct proc *proc;
	struct row *proc_device, *device, *kernel;
};
/* false when a row could not be made (out of memory): k stays unusable */
bool summary__kernel_rows(struct summary *s, const struct summary_span *sp,
			  struct summary_kernel_rows *k);
bool summary__kernel_rows_fresh(const struct summary *s, const struct summary_kernel_rows *k);
void summary__add_kernel(struct summary *s, const struct summary_kernel_rows *k,
			 uint64_t start_ns, uint64_t dur_ns, uint64_t bytes);
/* A host call that failed (span->error set; its time is added apart): counted per
 * call and error name, if it is a CUDA or Level Zero call and the error neither says
 * "not ready" (a poll's answer) nor is a warning. */
void summary__add_error(struct summary *s, const struct summary_span *span);
void summary__lost(struct summary *s, const char *reason, uint64_t n);
/* Device times a backend corrected (the trailer's "adjusted"): n more for
 * reason, the largest correction max_ns (added up over processes; max kept). */
void summary__adjusted(struct summary *s, const char *reason, uint64_t n, uint64_t max_ns);
/* n more traces that were not closed ("complete": false: the process was
 * killed, or still runs; or the file was cut short, as cut of them were; or
 * a write failed, as failed of the others did, the first saying why): their
 * last interval may be missing. */
void summary__incomplete(struct summary *s, uint64_t n, uint64_t cut, uint64_t failed,
			 const char *failed_why);
/* How the trailer's "end" of a trace stopped by a failed write begins (the
 * writer's "write failed: No space left on device"; readers count it apart). */
#define SUMMARY_END_WRITE_FAILED "write failed"
/* n more device spans that name a launch not in their file, so have no arrow
 * from it (the trailer's "flows_unmatched"; added up over files). */
void summary__flows_unmatched(struct summary *s, uint64_t n);
/* n more calls whose call stack was not recorded (the trailer's
 * "stacks": {"dropped"}: the stack table full; added up over files). */
void summary__stacks_dropped(struct summary *s, uint64_t n);
/* --lossless: stalls a full ring made a thread wait, and their total time
 * (added up; the summary says them once any process recorded losslessly). */
void summary__waits(struct summary *s, uint64_t waits, uint64_t wait_ns);
/* A process; returns its number (>= 1) for summary_span.process, or 0
 * without memory. Same pid, host and rank: the same number (an exec'd
 * image is the same process; it takes the newer name). */
int summary__process(struct summary *s, const struct summary_process *p);
void summary__set_hints(struct summary *s, const struct summary_hints *h);
/* One line when events were lost (the summary table is off): how many, why,
 * what to do. Nothing when none were. */
void summary__print_lost_line(struct summary *s, FILE *f, const char *trace_path);
/* One sample of one series of a counter track on a device row ("C" event):
 * the metrics section keeps samples, mean, min and max per series. */
void summary__counter(struct summary *s, const char *device, const char *counter,
		      const char *series, double value);
/* A control character (C0 or DEL) as the summary prints it, so a name
 * cannot break its table's lines: "\n", "\t", "\r", else "\xNN" (out: 5
 * bytes, NUL-terminated). 0 for any other byte, which prints as it is. */
size_t summary__ctl_escape(unsigned char c, char out[5]);
/* s printed with its control characters escaped. */
void summary__put_text(FILE *f, const char *s);
/* s as printed: itself, or escaped into buf (cut short, never inside an
 * escape or a UTF-8 character, when buf is too small). */
const char *summary__text(char *buf, size_t len, const char *s);
/* Columns s takes once printed: one per UTF-8 character, an escaped control
 * character its escape's (tables pad names by it, not by bytes). */
size_t summary__columns(const char *s);
/* name as a table prints it in cols columns: whole (escaped) when it fits, else
 * its first head_cols and its last columns around "...", cut between UTF-8
 * characters (buf: 4 * cols + 8 bytes at least, else name is returned). */
const char *summary__short(char *buf, size_t len, const char *name, size_t cols,
			   size_t head_cols);
/* The table for people (stderr at exit). */
void summary__print(struct summary *s, FILE *f, const char *trace_path, uint64_t trace_bytes);
/* The same as JSON, schema documented in README ("Summary JSON"). 0 or -errno;
 * -EEXIST: path holds a trace, which is never written over (summary__strerror). */
int summary__write_json(struct summary *s, const char *path, const char *trace_path,
			uint64_t trace_bytes);
/* Whether path is a regular file holding a trace (gzip, a JSON array, or an
 * object that starts as traces do): a summary written there would lose it. */
bool summary__holds_trace(const char *path);
/* The descriptor that /dev/stdout, /dev/stderr, /dev/fd/N or /proc/self/fd/N names, else
 * -1. */
int summary__own_fd(const char *path);
/* An output to write, as fopen(path, "w") opens it, but "-" is stdout and a path naming
 * one of our descriptors is written through a copy of it (summary__own_fd). NULL and
 * errno on failure; close with fclose unless stdout. */
FILE *summary__fopen_out(const char *path);
/* summary__write_json's error in words. */
const char *summary__strerror(int err);

#endif
