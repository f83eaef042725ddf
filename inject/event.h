/* SPDX-License-Identifier: MIT */
/*
 * The internal event API: everything that produces trace data (interposed
 * calls, backends, plug-ins) hands it over through these functions.
 *
 * An event is a fixed-size 64-byte record written into the producing
 * thread's lock-free ring; up to GT_ARGS_MAX typed key/value arguments ride
 * along in continuation slots. Names, categories and argument keys are
 * string ids (gt_str_intern), so records hold no pointers the drain thread
 * could find dangling.
 */
#ifndef GPUTRACE_EVENT_H
#define GPUTRACE_EVENT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GT_HIDDEN __attribute__((visibility("hidden")))
#define GT_EXPORT __attribute__((visibility("default")))
#define GT_TLS    __attribute__((tls_model("initial-exec"))) __thread
/* State that every process touches at start and exit, whether it records or
 * not: kept together in .data, a page the loader writes anyway (the GOT's
 * neighbour), so a process that records nothing (a shell, a compiler under
 * gputrace run) faults in no page of .bss for it. Small variables only. */
#define GT_STARTUP_STATE __attribute__((section(".data.gt_startup")))
/* Larger zero state every process writes at start (the process's identity,
 * the configuration, the capture's phase): inject/startup.ld puts it first
 * after .data, on that same page, where it fits (test_cli_quiet.py checks);
 * in .bss, each of these would be a page of its own, ~15 us in every
 * process on a VM. _LAST: for a structure with a cold tail (the
 * configuration's path pool), whose head still lands on that page. */
#define GT_STARTUP_BSS      __attribute__((section(".bss.gt_startup.0")))
#define GT_STARTUP_BSS_LAST __attribute__((section(".bss.gt_startup.9")))
/* Code every process runs at start and exit, whether it records or not, then
 * the constants it reads, the start-up code few processes run, and the code
 * a fork child runs, in one stretch of this library's text (these sections'
 * names give the order): the linker's default script sorts
 * .text.sorted.* by name and puts it right after .text.startup (where the
 * compiler puts constructors). On some VMs every page of text a process
 * runs costs its first touch (~15 us), even one the kernel mapped around an
 * earlier fault, so a process that records nothing runs three pages of this
 * library (shim.c aligns the start), not a page in each file it passes. */
#define GT_STARTUP_CODE __attribute__((section(".text.sorted.gt_1startup")))
/* Constants that code reads there (the names of variables it looks for):
 * beside it, not in .rodata, a stretch of pages of its own that every
 * process would fault in for a few bytes. A string literal in code goes to
 * .rodata whatever its function's section, so these are named arrays. */
#define GT_STARTUP_CONST __attribute__((section(".text.sorted.gt_2const")))
/* Start-up code a process runs only where one of our variables is set (as
 * gputrace run sets some) or it claims an injection variable: after the
 * constants, so that what every process runs stays on the fewest pages. */
#define GT_STARTUP_SELDOM __attribute__((section(".text.sorted.gt_3seldom")))
/* Code a fork child runs (its atfork handler, the backends' forgetting): a
 * child's first touch of a page of text is a page fault of its own (the
 * kernel does not copy file pages' entries at fork), and a shell that forks
 * for every command pays them in every child. After the start-up code,
 * which the child runs as well. */
#define GT_FORK_CODE __attribute__((section(".text.sorted.gt_4fork")))

/* The drain thread looks at the rings (and at what a backend's sample() asked
 * for) this often; a source not started yet is looked for as often. */
#define GT_DRAIN_POLL_MS 10
#define gt_likely(x)   __builtin_expect(!!(x), 1)
#define gt_unlikely(x) __builtin_expect(!!(x), 0)
/* A hot path's test of a metrics or telemetry flag. A METRICS=0 build
 * (-DGT_NO_METRICS) makes it a constant false, so nothing on the call and
 * launch paths tests for metrics: the build `make bench` row 8n compares with. */
#ifdef GT_NO_METRICS
#define gt_metrics_on(x) ((void)sizeof(x), 0)
#else
#define gt_metrics_on(x) gt_unlikely(x)
#endif

enum gt_ev_type {
	GT_EV_HOST_SPAN = 1, /* "X" on a host thread row */
	GT_EV_DEVICE_SPAN,   /* "X" on a device queue row, flows from corr/corr2 */
	GT_EV_INSTANT,       /* "i" on a host thread (track 0/tid) or device row */
	GT_EV_COUNTER,       /* "C" on a device row: each arg is one series */
	GT_EV_EXT,           /* continuation slot holding more args */
	GT_EV_RANGE_BEGIN,   /* a user range opened (inject/ranges.h): corr2 is its id */
};

enum gt_arg_type {
	GT_ARG_I64 = 1,
	GT_ARG_U64,
	GT_ARG_HEX, /* written as a "0x..." string: handles, pointers */
	GT_ARG_F64,
	GT_ARG_STR, /* value is a string id */
	GT_ARG_DIM3, /* [x, y, z]: x in the low 32 bits, then y and z, 16 bits each */
	GT_ARG_JSON, /* value is a string id holding one valid JSON value, written as it is */
	GT_ARG_METRIC, /* a hardware metric (double): written in the span's "metrics" object */
};

struct gt_arg {
	uint32_t key;  /* string id */
	uint32_t type; /* enum gt_arg_type */
	union {
		int64_t i;
		uint64_t u;
		double f;
	} v;
};
/* key and type fill the first word, no padding (writer/events.c compares args as words) */
_Static_assert(sizeof(struct gt_arg) == 16 && offsetof(struct gt_arg, v) == 8, "gt_arg layout");

/* A grid or block size as one arg; false when y or z does not fit 16 bits. */
static inline bool gt_arg_dim3(struct gt_arg *a, uint32_t key, uint32_t x, uint32_t y, uint32_t z)
{
	if (y > 0xffff || z > 0xffff)
		return false;
	a->key = key;
	a->type = GT_ARG_DIM3;
	a->v.u = (uint64_t)x | (uint64_t)y << 32 | (uint64_t)z << 48;
	return true;
}

#define GT_ARGS_INLINE  1
#define GT_ARGS_PER_EXT 4
/* Four continuation slots: a kernel's own args and its hardware metrics fit. */
#define GT_ARGS_MAX     (GT_ARGS_INLINE + 4 * GT_ARGS_PER_EXT)

/* Event flags. */
#define GT_EVF_LAUNCH 0x1 /* host span that put work on a device: keep for flows */
#define GT_EVF_DEVICE 0x2 /* instant on a device row: track is a queue/device track */
/* Host span that ends an arrow from the launch whose correlation is corr2
 * (a plug-in's host-to-host flow); written once that launch is. */
#define GT_EVF_FLOW_END 0x4
#define GT_EVF_FWDBWD   0x8 /* the arrows ending at this event are "fwdbwd", not "ac2g" */
#define GT_EVF_NOFLOW   0x10 /* device event: written in turn with the row's work, no arrow */
#define GT_EVF_RANGE    0x20 /* host span that ends a user range: corr2 is its id */
#define GT_EVF_PROCESS  0x40 /* that range (and its begin) belongs to the process, not the thread */
#define GT_EVF_TIMED    0x80 /* a range handed over whole (a plug-in's annotation): no begin record */
#define GT_EVF_FAILED   0x100 /* host span of a call that failed: an arg GT_S_ARG_ERROR names it */
/* Handed over whole by a plug-in, its own times on a row it names: its last records,
 * handed over as it stops at exit, are the trace's as the ending thread's are */
#define GT_EVF_HANDED   0x200
/* That range (and its begin) ends by id, in any order (ITT overlapped tasks, regions): it
 * need not nest with its thread's ranges and calls, as process ranges need not */
#define GT_EVF_BY_ID    0x400
/* Device work of a recorded list run later (a Level Zero regular list): corr is the call
 * that ran it, corr2 the append that recorded it. Its ranges are the append's (none if
 * it had none), the run's are its exec ranges: never taken for its own */
#define GT_EVF_EXECUTED 0x800
/* Device work read while the call that launched it had not returned (CUDA: CUPTI's record
 * before the call's exit): should that call end after the trace's end, its span is never
 * read, and the work is left out with it (at the last read, its launch not written) */
#define GT_EVF_UNRETURNED 0x1000

struct gt_event {
	uint64_t start_ns; /* host clock (gt_clock_ns), see inject/clock.h */
	uint64_t end_ns;   /* == start_ns for instants and counters */
	uint64_t corr;     /* host: this call's id; device: the causing call's id; 0: none */
	uint64_t corr2;    /* device: a second causing call (the append of a regular list);
			    * host with GT_EVF_FLOW_END: the launch whose arrow ends here
			    * user ranges (GT_EVF_RANGE, GT_EV_RANGE_BEGIN): the range's id */
	uint32_t name;     /* string id */
	uint32_t cat;      /* string id of the category (GT_S_* for the standard ones) */
	uint32_t track;    /* host: OS tid, 0 = the emitting thread; device/counter: queue or device track */
	uint8_t type;      /* enum gt_ev_type */
	uint8_t nargs;     /* total args, inline + continuation */
	uint16_t flags;    /* GT_EVF_* */
	struct gt_arg args[GT_ARGS_INLINE];
};

_Static_assert(sizeof(struct gt_event) == 64, "one ring slot");

/*
 * Emit an event from the calling thread into its ring. ev->args/ev->nargs
 * are ignored; the args come from `args` (at most GT_ARGS_MAX; more are
 * dropped). Lock-free, allocation-free, no system call except on the
 * thread's very first event (its ring is created then). Never blocks: a
 * full ring drops the event and counts it lost; with --lossless, a full
 * ring makes the caller wait for the drain first, each stall bounded
 * (inject/ring_wait.c).
 * Returns 0, or -ENOSPC when dropped, -ECANCELED when tracing is off.
 */
GT_HIDDEN int gt_emit(const struct gt_event *ev, const struct gt_arg *args, unsigned nargs);
/* gt_emit, also while paused between capture windows (not once the process
 * is ending): a record the writer needs for its books whether or not it is
 * in a window (the end of a range whose begin was recorded). */
GT_HIDDEN int gt_emit_paused_too(const struct gt_event *ev, const struct gt_arg *args,
				 unsigned nargs);
/* For producers that may wait (a plug-in handing over a batch, never a
 * wrapper): when the calling thread's ring is over half full, have the drain
 * thread empty it, waiting at most timeout_ms. Not on the drain thread. */
GT_HIDDEN void gt_emit_wait_room(unsigned timeout_ms);
/* The host span of a call a forced unwind (pthread_cancel) ended: from
 * start_ns to now, with args.cancelled = 1 and no result. launch: it may have
 * queued device work before the cancel (a blocking copy): its arrows start here. */
GT_HIDDEN int gt_emit_cancelled(uint64_t start_ns, uint64_t corr, uint32_t name, uint32_t cat,
				bool launch);

/* A fresh correlation id for a host call: unique in the process, never 0,
 * increasing per thread, below 2^48 (JSON-safe). Lock-free. */
GT_HIDDEN uint64_t gt_corr_next(void);

/* Correlation ids a backend gets from elsewhere (CUPTI's, a plug-in's) are
 * moved into their own namespace so they never clash with gt_corr_next. */
#define GT_CORR_NS_SHIFT 48
#define GT_CORR_NS_CUPTI 1
#define GT_CORR_NS_PLUGIN(n) (2 + (n))
static inline uint64_t gt_corr_foreign(unsigned ns, uint64_t id)
{
	return ((uint64_t)ns << GT_CORR_NS_SHIFT) | (id & ((1ull << GT_CORR_NS_SHIFT) - 1));
}

/* Count events lost outside the rings (e.g. CUPTI dropped records), by reason. */
GT_HIDDEN void gt_lost_add(uint32_t reason_str, uint64_t n);

/* Count device times a backend had to correct (a span moved to its launch, a
 * clock step), by reason, keeping the largest correction: the trailer's
 * "adjusted" ({"clamped":{"count":3,"max_ns":1200}}). */
GT_HIDDEN void gt_adjust_add(uint32_t reason_str, uint64_t n, uint64_t correction_ns);

/* A span of time in which a backend records nothing of its device (it
 * handed its vendor interface to the program), from start_ns on the trace
 * clock, for a reason: the trailer's "gaps". Returns the gap's handle for
 * gt_gap_end, or -1 when GT_GAPS_MAX gaps were already opened. A gap never
 * ended is reported open. */
GT_HIDDEN int gt_gap_begin(uint32_t reason_str, uint64_t start_ns);
GT_HIDDEN void gt_gap_end(int gap, uint64_t end_ns);

/* ---- strings ---- */

/* Intern a string; returns its id (>= 1). Takes a lock: not for hot paths,
 * intern once (at kernel creation, at init) and keep the id. Any bytes. */
GT_HIDDEN uint32_t gt_str_intern(const char *s);
GT_HIDDEN uint32_t gt_str_intern_n(const char *s, size_t len);
/* The string of an id; lock-free; valid for the life of the process. */
GT_HIDDEN const char *gt_str_get(uint32_t id, size_t *len);

/* Strings with fixed ids, usable without interning. */
#define GT_STATIC_STRINGS(X)                                                    \
	X(EMPTY, "")                                                            \
	X(CAT_ZE_API, "ze_api")                                                 \
	X(CAT_CUDA_RUNTIME, "cuda_runtime")                                     \
	X(CAT_CUDA_DRIVER, "cuda_driver")                                       \
	X(CAT_USER_ANNOTATION, "user_annotation")                               \
	X(CAT_KERNEL, "kernel")                                                 \
	X(CAT_GPU_MEMCPY, "gpu_memcpy")                                         \
	X(CAT_GPU_MEMSET, "gpu_memset")                                         \
	X(CAT_GPU_SYNC, "cuda_sync")                                            \
	X(CAT_OVERHEAD, "overhead")                                             \
	X(CAT_COUNTER, "counter")                                               \
	X(CAT_TEST, "test_api")                                                 \
	X(CAT_SIGNAL, "gputrace")                                               \
	X(ARG_RESULT, "result")                                                 \
	X(ARG_ERROR, "error")                                                   \
	X(ARG_CORRELATION, "correlation")                                       \
	X(ARG_KERNEL, "kernel")                                                 \
	X(ARG_BYTES, "bytes")                                                   \
	X(ARG_KIND, "kind")                                                     \
	X(ARG_DEVICE, "device")                                                 \
	X(ARG_QUEUE, "queue")                                                   \
	X(ARG_STREAM, "stream")                                                 \
	X(ARG_STACK, "stack")                                                   \
	X(ARG_CANCELLED, "cancelled")                                           \
	X(ARG_DOMAIN, "domain")                                                 \
	X(ARG_SCOPE, "scope")                                                   \
	X(ARG_VALUE, "value")                                                   \
	X(ARG_CLAMPED_NS, "clamped_ns")                                         \
	X(LOST_RING_FULL, "ring_full")                                          \
	X(LOST_CUPTI_DROPPED, "cupti_dropped")                                  \
	X(ADJUST_CLAMPED, "clamped")                                            \
	X(LOST_PLUGIN, "plugin_dropped")                                        \
	X(LOST_REENTRANT, "reentrant")                                          \
	X(LOST_WINDOW_LATE, "window_late")                                      \
	X(LOST_NO_THREAD_RING, "no_thread_ring")                                \
	X(CAT_ZE_SYNC, "gpu_sync")

enum gt_static_string {
	GT_S__NONE = 0,
#define GT_S_ENUM(id, str) GT_S_##id,
	GT_STATIC_STRINGS(GT_S_ENUM)
#undef GT_S_ENUM
	GT_S__COUNT
};

/* A device record moved ns later, to the start of the call that launched it: counted
 * in the trailer's adjusted.clamped, and the record's argument saying so. */
static inline struct gt_arg gt_clamped_arg(uint64_t ns)
{
	gt_adjust_add(GT_S_ADJUST_CLAMPED, 1, ns);
	return (struct gt_arg){ .key = GT_S_ARG_CLAMPED_NS, .type = GT_ARG_U64, .v.u = ns };
}

/* One sample of a counter track (a device row's `track`): each arg is one series. Every
 * counter (memory, metrics, telemetry, plug-ins') takes this one path to the writer. */
static inline int gt_emit_counter(uint32_t track, uint32_t name, uint64_t time_ns,
				  const struct gt_arg *args, unsigned nargs)
{
	struct gt_event ev = {
		.start_ns = time_ns,
		.end_ns = time_ns,
		.name = name,
		.cat = GT_S_CAT_COUNTER,
		.track = track,
		.type = GT_EV_COUNTER,
	};

	return nargs ? gt_emit(&ev, args, nargs) : 0;
}

/* ---- device rows ---- */

#define GT_DEVICES_MAX 64   /* devices of a process */
#define GT_TRACKS_MAX  4096 /* rows of a process: devices' own and queues */
/* Declare (or find, by name) a device: one process row in the trace.
 * Returns a device id >= 1, 0 when the process has no room for another
 * (GT_DEVICES_MAX, GT_TRACKS_MAX). Cold path (takes a lock). */
GT_HIDDEN uint32_t gt_device_row(const char *name);
/* A vendor backend's GPU that gt_device_row refused: one line, the first
 * time *said is false, and `what` of it ("work", "telemetry") is not drawn:
 * never on another device's row. */
GT_HIDDEN void gt_device_row_refused(bool *said, const char *backend, const char *name,
				     const char *what);
/* Declare (or find, by device and name) a queue/stream row on a device.
 * Returns a track id >= 1 for GT_EV_DEVICE_SPAN/INSTANT.track, 0 for an
 * unknown device or when the process has no room (GT_TRACKS_MAX).
 * sort: rows are ordered by it within the device. Cold path. */
GT_HIDDEN uint32_t gt_queue_row(uint32_t device, const char *name, int sort);
/* The device row's own track (for counters): */
GT_HIDDEN uint32_t gt_device_track(uint32_t device);
/* A property of a device for the trace's "deviceProperties", under the keys
 * Kineto writes ("id": the ordinal device events' args.device carry, "name",
 * "totalGlobalMem", "numSms", "maxComputeUnits", ...). The first value of a
 * key stays; at most GT_DEVICE_PROPS_MAX per device. Cold path. */
#define GT_DEVICE_PROPS_MAX 16
GT_HIDDEN void gt_device_prop(uint32_t device, struct gt_arg prop);
/* A new name for a device, or for a queue row (and its sort), when its owner
 * learns it after using the row (a Kineto plug-in's addDeviceInfo). The
 * trace names the row again; lookups by name find the new name. Cold path. */
GT_HIDDEN void gt_device_rename(uint32_t device, const char *name);
GT_HIDDEN void gt_queue_rename(uint32_t track, const char *name, int sort);

/* ---- state ---- */

enum gt_phase {
	GT_PHASE_OFF = 0,   /* before init, or after an output error */
	GT_PHASE_RUNNING,   /* recording */
	GT_PHASE_FINISHING, /* final drain under way: new events are not recorded */
	GT_PHASE_DONE,      /* trace closed */
	GT_PHASE_PAUSED,    /* between capture windows (capture.h): nothing recorded */
};
extern GT_HIDDEN _Atomic int gt_phase;
/* Change the phase and wake whoever waits for it to change. */
GT_HIDDEN void gt_phase_set(int phase);
/* Wait (futex, at most timeout_ms) until the trace is closed (DONE) or
 * tracing stopped (OFF); true when that happened in time. Async-signal-safe. */
GT_HIDDEN bool gt_phase_wait_done(unsigned timeout_ms);
/* Start the writer's thread if it is not running yet: the first event of
 * the process does (emit_slow), and a backend that records on its own
 * (a plug-in, CUPTI) calls it when it begins. Cheap once started. */
GT_HIDDEN void gt_start_writer(void);
/* The same while paused between capture windows: a backend that must act
 * when a window opens (plug-ins) needs the drain thread before any event. */
GT_HIDDEN void gt_start_writer_paused(void);

/* True while events are being recorded (after init, before the final drain).
 * Inline: every wrapper asks, on every call. */
static inline bool gt_tracing(void)
{
	return atomic_load_explicit(&gt_phase, memory_order_relaxed) == GT_PHASE_RUNNING;
}

/* Per-thread reentrancy guard: wrappers call the real function directly
 * when gt_guard_enter() returns false (we are inside our own code).
 * gt_guard_sp is the frame that took it: a wrapper frame that is gone
 * (the thread was cancelled inside the call, or longjmp()ed out of a signal
 * handler) must not keep the thread's later calls out of the trace.
 * Always inlined: the frame is the wrapper's, and the wrappers' hot path makes no call
 * for it (gcc stops inlining it in a unit as large as the Level Zero wrappers'). */
extern GT_HIDDEN GT_TLS int gt_in_tracer;
extern GT_HIDDEN GT_TLS uintptr_t gt_guard_sp;
GT_HIDDEN bool gt_guard_stale(uintptr_t sp);
/* The guard without the count: for callers that count what they lose
 * themselves (user ranges: once per range, not per call). */
static inline __attribute__((always_inline)) bool gt_guard_try(void)
{
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);

	/* gt_guard_sp alone marks a wrapper between its two stores below: a
	 * signal handler's call there is nested too */
	if ((gt_in_tracer || gt_guard_sp) && !gt_guard_stale(sp))
		return false;
	/* the order of these stores is what a signal handler sees: fences,
	 * not just program order, keep the compiler from swapping them */
	gt_guard_sp = sp;
	atomic_signal_fence(memory_order_seq_cst);
	gt_in_tracer = 1;
	atomic_signal_fence(memory_order_seq_cst);
	return true;
}
static inline __attribute__((always_inline)) bool gt_guard_enter(void)
{
	if (gt_guard_try())
		return true;
	/* a call of the program nested in a wrapper (its signal handler): the
	 * ring may be mid-write, and the backend may hold its lock; it is not
	 * recorded, but counted (signal-safe) */
	if (gt_guard_sp && gt_tracing())
		gt_lost_add(GT_S_LOST_REENTRANT, 1);
	return false;
}
static inline __attribute__((always_inline)) void gt_guard_leave(void)
{
	atomic_signal_fence(memory_order_seq_cst);
	gt_in_tracer = 0;
	atomic_signal_fence(memory_order_seq_cst);
	gt_guard_sp = 0;
}

/* In a wrapper's cleanup run by a forced unwind (pthread_cancel): the
 * unwound frames below never ran their epilogues, so AddressSanitizer still
 * marks their redzones where the cleanup's own callees now run. Clear the
 * shadow of the stack below this frame (only the shadow is written). Not
 * __asan_handle_no_return(): it reads a local of its own through an
 * interceptor before clearing, and trips on that very poison. */
#if defined(__SANITIZE_ADDRESS__)
void __asan_unpoison_memory_region(void const volatile *addr, size_t size);
#define GT_UNWOUND_STACK_BYTES (64u << 10)
#define gt_unwound_stack()                                                                 \
	__asan_unpoison_memory_region((char *)__builtin_frame_address(0) -                 \
					      GT_UNWOUND_STACK_BYTES,                      \
				      GT_UNWOUND_STACK_BYTES)
#else
#define gt_unwound_stack() ((void)0)
#endif

/* Logging to stderr, one line, prefixed "gputrace: ". Level from GPUTRACE_LOG. */
enum gt_log_level { GT_LOG_ERROR = 0, GT_LOG_WARN, GT_LOG_INFO, GT_LOG_DEBUG };
GT_HIDDEN void gt_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define pr_err(...)  gt_log(GT_LOG_ERROR, __VA_ARGS__)
#define pr_warn(...) gt_log(GT_LOG_WARN, __VA_ARGS__)
#define pr_info(...) gt_log(GT_LOG_INFO, __VA_ARGS__)
#define pr_dbg(...)  gt_log(GT_LOG_DEBUG, __VA_ARGS__)
/* Under gputrace run a warning is printed once per run (the first process to
 * say it); a line that reports an event of this process (a flight recorder
 * dump) is printed every time, even when its text repeats. */
#define GT_LOG_EACH 0x100
#define pr_warn_each(...) gt_log(GT_LOG_WARN | GT_LOG_EACH, __VA_ARGS__)

/* Under gputrace run (GPUTRACE_RUN_STATE): a line of the run's list; 0
 * (also when not under it) or -errno. */
GT_HIDDEN int gt_run_note(char what, const char *text);

/* Does a file of `size` bytes pass the file size limit (ulimit -f)? A write
 * that would start at or past it raises SIGXFSZ, sent to the process: on a
 * program's thread (announcements, the run's list) that ended the program,
 * which untraced runs on. Asked before such writes: they are left out. */
GT_HIDDEN bool gt_fsize_allows(uint64_t size);

/*
 * A lock of the run's (a flock on <run state>/NAME), held by one process of
 * it at a time: telemetry is the machine's, so one process samples each GPU
 * and the run's trace has one series of it, not one per process. Its holder
 * lets it go when it stops sampling (a crash lets go too); the others ask
 * again each period. Not under gputrace run, every process holds it.
 */
struct gt_run_lock {
	int fd; /* -1: not held */
	unsigned long long dev, ino; /* the descriptor's file, for the drop */
};
#define GT_RUN_LOCK_FREE { .fd = -1 }
/* true: this process holds it now (or is not under gputrace run, or could not
 * open the lock's file: the series twice rather than none). */
GT_HIDDEN bool gt_run_lock_hold(struct gt_run_lock *l, const char *name);
/* Let it go: our descriptor closed, unless the program closed it and has
 * another there. In a fork child: the parent's, shared, stays the parent's. */
GT_HIDDEN void gt_run_lock_drop(struct gt_run_lock *l);

#endif
