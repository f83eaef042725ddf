/* SPDX-License-Identifier: MIT */
/*
 * The writer's internals, shared by its files (writer.h is what others call):
 *   thread.c      the drain thread: when a cycle runs; sync, fork, the hooks
 *   drain.c       one cycle: backends flushed, rings read, each record to its writer
 *   flows.c       launches remembered; device spans held for theirs; ac2g arrows
 *   events.c      Chrome Trace JSON of events, rows (metadata) and args
 *   checkpoint.c  the file: opened, checkpointed with its trailer, closed; the summary
 *   place.c       where a slice goes on its row: the ts/dur written, its arrow point
 * and below them json.c (JSON numbers and strings), output.c (the kill-safe
 * file), summary.c (the summary's tables).
 *
 * All writer state is in W. It belongs to the drain cycle (the drain thread,
 * or the caller of writer__cycle when none runs): nothing here is locked
 * but the cycle itself, and producers only ever touch their rings.
 */
#ifndef GPUTRACE_WRITER_INTERNAL_H
#define GPUTRACE_WRITER_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "inject/config.h"
#include "inject/event.h"
#include "inject/state.h"
#include "json.h"
#include "summary.h"
#include "output.h"

/* The user ranges open at a launch (ranges.c), outermost first: the
 * process's, then the launching thread's (the last nthread). Shared and
 * reference-counted. At most RCTX_MAX (deeper ones are left out): room for
 * every level a thread's stack keeps (GT_RANGE_DEPTH) and more; annotate.c
 * draws every thread level a context holds. */
#define RCTX_MAX 64
struct urange;
struct rctx {
	uint32_t refs;
	uint16_t n, nthread;
	struct urange *r[];
};

/* A launch, for the device work that links to it (flows.c). */
struct corr_entry {
	uint64_t corr;
	uint64_t point_ns; /* where the arrow starts inside the launch (place.c) */
	uint32_t tid;
	bool foreign;      /* recorded on another thread's ring (a plug-in's) */
	bool completed;    /* ctx completed once its rings were read (ranges.c) */
	bool after_end;    /* not in the trace: it ended after the process began to end */
	uint64_t start_ns;
	struct rctx *ctx; /* the ranges open at it, or NULL */
};

/* flows.c's table of launches, by correlation id: made at a file's first launch,
 * CORR_FIRST_BITS of it (a flight recorder's whole), doubled in place as launches need,
 * up to CORR_TABLE_BITS; its first CORR_SMALL_BITS in 4 KiB pages */
#define CORR_TABLE_BITS  17
#define CORR_FIRST_BITS  10
#define CORR_SMALL_BITS  12
#define CORR_TABLE_BYTES (sizeof(struct corr_entry) << CORR_TABLE_BITS)

/* Rows of the ranges that need not nest with their thread's (ranges.c, lanes):
 * tids above any Linux tid (4194304 at most), lane k (from 1) RANGE_LANE_TID + k */
#define RANGE_LANES    32
#define RANGE_LANE_TID 0x7fff0000u

/* ranges.c's state: ranges by id, threads' stacks, the process's ranges. */
struct tstack;
struct range_lane;
struct user_ranges {
	struct urange **map;
	size_t map_mask, nmap;
	struct tstack **threads;
	size_t threads_mask;
	struct urange **process; /* open or recently ended, by start */
	size_t nprocess, process_cap;
	uint64_t pversion, cycle;
	/* device work waits a cycle (its launches' contexts are completed then):
	 * a range was handed over whole, or a process range was seen */
	bool any_timed, any_process;
	struct range_lane *lanes[RANGE_LANES];
	/* ranges ended by id whose end was read before their begin, kept a few cycles */
	struct urange **early;
	size_t nearly, early_cap;
};

struct arow;

struct row_cursor;

/* A device span waiting for its launch to be written (flows.c). */
struct pending {
	struct gt_event ev;
	struct gt_arg args[GT_ARGS_MAX];
	unsigned age;
};

/* A thread that has exited, for the trailer (drain.c frees its ring). */
#define SUM_BATCHES 64

struct thread_stat {
	uint32_t tid;
	uint32_t serial;
	uint64_t events;
	uint64_t lost;
	char name[16]; /* its ring's, as it exited (or at its first event); may be empty */
};

/* The thread that writes the file (outq.c). */
struct outq {
	pthread_t thread;
	bool started, no_thread;
	pthread_mutex_t lock;
	pthread_cond_t wake, done;
	bool busy, final; /* a job in flight; it ends the file */
	int err;          /* the last job's result */
	struct jbuf ev, trailer; /* the job: swapped with W.buf and W.trailer */
};

struct writer {
	struct out out;    /* the output thread's while a job is in flight */
	struct outq q;
	bool paged;        /* W.out.paged, for the drain */
	uint64_t buf_at;   /* where W.buf will start in a paged file */
	char path[PATH_MAX]; /* the output template, expanded */
	int name_suffix;     /* the first file's ".N" plus one (out.suffix), for its windows' */
	bool listed;         /* named in the run's list of traces (GPUTRACE_RUN_STATE) */
	bool opened, failed;
	bool any_event; /* the JSON array has an element */
	size_t ev_start; /* where the event being formatted starts in buf */
	struct ring *draining; /* the ring drain.c reads now, for its thread's name */
	/* the last drain_rings left a ring's older records unread (a visit's bound, a
	 * fork): the device work waiting for its launch is not given up on (flows.c);
	 * behind_now: the one under way did so far */
	bool rings_behind, behind_now;
	struct jbuf buf, trailer;
	uint64_t recorded;

	struct corr_entry *corr;
	uint32_t corr_mask; /* flows.c: the table's slots in use, less one */
	bool corr_made; /* flows.c: those slots' pages are written (none read the zero page) */
	uint64_t next_flow_id;
	struct pending *pend;
	size_t npend, pend_cap, pend_map; /* pend_map: gt_grow's */
	size_t pend_kept; /* what waited on after the last pass over them */
	/* flows.c: the most that waited since W.pend's pages past them were given
	 * back, and in this cycle */
	size_t pend_peak, pend_cycle_peak;
	/* flows.c: the order a pass writes them in (time order), and its room */
	struct pend_order *pend_order;
	size_t pend_order_cap;
	/* flows.c: plug-ins' device spans written before their launch, waiting
	 * for it (NULL until one is); those given up, for the trailer */
	struct late_end *late;
	uint32_t nlate;
	uint64_t late_lost;

	struct row_cursor *cursors; /* place.c: one per row, open addressing */
	size_t cursors_mask, ncursors;
	/* the row written last, found without a lookup: a thread's spans come
	 * in runs (a ring is drained at once); NULL when the table moves */
	struct row_cursor *last_cursor;

	uint32_t devices_named, tracks_named, names_gen;
	uint32_t *tids; /* host tids given a thread_name, open addressing */
	size_t tids_mask, ntids;
	uint32_t tid_named_last; /* in tids: no lookup (0: none) */
	struct thread_stat *dead;  /* threads exited in this file, for its last trailer's list */
	size_t ndead, dead_cap;
	uint64_t dead_threads;     /* their count: O(1) per checkpoint */
	/* the losses and --lossless waits of every exited thread since the
	 * process started (a window's file does not reset them) */
	uint64_t dead_lost, dead_waits, dead_wait_ns;

	struct gt_rank rank; /* read when the file is opened */

	struct user_ranges ur;
	struct arow **arows; /* annotate.c: by device track */
	size_t narows;
	bool window_ending; /* a capture window's file is being ended */
	/* a request to end: the host's events are in the file, under a trailer
	 * that says the device's last read is still to come (drain.c host_pass) */
	bool device_flush_pending;
	_Atomic bool host_written_before_device;
	uint32_t files; /* files ended so far (capture windows) */

	struct summary *sum;
	int sum_process; /* this process's row in sum */
	/* host calls gathered by name before they reach sum (events.c) */
	struct sum_batch {
		uint32_t name, cat; /* 0: empty */
		uint64_t n, total_ns, min_ns, max_ns, first_ns, last_end_ns;
	} sum_batch[SUM_BATCHES];
	uint64_t last_checkpoint_ns, last_dlopen_poll_ns;

	pthread_t thread;
	_Atomic bool thread_running;
	_Atomic int drain_tid;
	_Atomic uint32_t kick;
	/* a producer's ring passed its wake mark (ring.h): a cycle is due; and
	 * the drain thread is about to sleep (the two sides of the wake-up) */
	_Atomic bool ring_woke, sleeping;
	/* the drain thread is inside a backend's hook (a flush, a window's
	 * start or end, a sample): it may wait for a thread of the backend's
	 * that is waiting for room (--lossless), so none waits meanwhile */
	_Atomic bool in_backend;
	_Atomic uint64_t req_seq, done_seq;
	_Atomic uint32_t done_word; /* futex: bumped when a cycle ends */
	_Atomic uint32_t waiters;   /* threads waiting in sync() */
	/* bumped as the drain hands slots back and as checkpoints are written:
	 * a sync's deadline runs from the last progress, not from its start */
	_Atomic uint64_t progress;
	_Atomic bool req_final;
	_Atomic uint32_t fork_pending; /* fork()s waiting for the cycle to end */
	_Atomic bool used;         /* anything ever done (thread.c, mark_used) */
	const char *_Atomic flight_request; /* a dump asked for (its reason) */
	_Atomic uint64_t flight_request_ns; /* ... when (the first one a cycle takes) */
	const char *flight_asked;           /* ... taken by this cycle, which drains whole */
	uint64_t flight_asked_ns;           /* ... its window ends there */
	_Atomic uint32_t flight_written;    /* dumps written so far */
	char flight_path[PATH_MAX];         /* ... the last one's file (the cycle lock) */
	const struct flight_counts *flight; /* the dump being written, for its trailer */
	pthread_mutex_t cycle_lock;
};

/* The writer's state (drain.c). */
extern GT_HIDDEN struct writer W;

static inline uint32_t device_pid(uint32_t device)
{
	/* unique per process and device, clear of real pids (< 2^22) */
	return GT_DEVICE_PID_BASE | ((uint32_t)gt_st.pid << 6) | (device & 63);
}

/* ---- drain.c ---- */

/* A ring is past its high-water mark: drain now. */
GT_HIDDEN bool drain__rings_high(void);
GT_HIDDEN bool drain__own_ring_full(struct ring *r);

/* ---- place.c ---- */

/* A slice as written: ts and dur (ns), and where an arrow binds to it. */
struct placed {
	uint64_t ts, dur, point;
};

#define PLACE_ARROW    1u /* an arrow starts or ends on it */
#define PLACE_OFF_ENDS 2u /* never starts on an end (a parent may open with it) */
/* Place [start, end] on row (pid, tid), how: PLACE_* flags. */
GT_HIDDEN struct placed place__slice(uint32_t pid, uint32_t tid, uint64_t start, uint64_t end,
				     unsigned how);
/* Where a parent opens that starts with the row's next slice (at start) and
 * is written after its children: its ts. depth: the parents still to open
 * around that slice, this one included (each nested 1 ns inside the one
 * before). They open before the slice where the row has room, so it keeps
 * its start; otherwise it starts 1 ns after the innermost at the earliest,
 * strictly inside them for every viewer. */
GT_HIDDEN uint64_t place__parent(uint32_t pid, uint32_t tid, uint64_t start, unsigned depth);
/* A slice written as it is (that parent, once its end is known). */
GT_HIDDEN void place__as_is(uint32_t pid, uint32_t tid, uint64_t ts, uint64_t dur);
/* The latest end written on a row so far (0: nothing). */
GT_HIDDEN uint64_t place__row_end(uint32_t pid, uint32_t tid);
/* On a device's row, no slice written there ends in [ends_from, ends_to] nor starts in
 * [starts_from, starts_to] (an empty interval: not looked at), as far as the row's kept
 * starts and ends tell. */
GT_HIDDEN bool place__clear(uint32_t pid, uint32_t tid, uint64_t ends_from, uint64_t ends_to,
			    uint64_t starts_from, uint64_t starts_to);

/* ---- flows.c ---- */

/* A launch was written (a host event with GT_EVF_LAUNCH and a correlation),
 * its arrow point at point_ns. */
GT_HIDDEN void flows__launch(const struct gt_event *ev, uint32_t tid, uint64_t point_ns,
			    bool foreign);
/* A device span, or a host span ending a flow (GT_EVF_FLOW_END, its row in
 * track): written once its launches are (or after a few cycles). */
/* A launch left out of the trace (drain.c, after_the_end): its device work is too. */
GT_HIDDEN void flows__launch_after_end(const struct gt_event *ev);
GT_HIDDEN void flows__defer(const struct gt_event *ev, const struct gt_arg *args,
			    unsigned nargs);
/* A new file: launches written to the last one link nothing in it. */
GT_HIDDEN void flows__forget(void);
/* Write the device spans that are ready; final: all of them. */
GT_HIDDEN void flows__pending(bool final);
/* Plug-ins' device spans of this file with no arrow: their launch (a host span
 * of the same correlation) is not written (yet), or came too late to be drawn. */
GT_HIDDEN uint64_t flows__unmatched(void);
/* flows__defer writes the ready ones, too, once this many more wait than after the
 * last pass: in the middle of a cycle, with the rest waiting on. */
#define PENDING_FLUSH 4096

/* ---- ranges.c ---- */

/* A range's begin record, or the span that ends it (GT_EVF_RANGE), read
 * from the ring of thread ring_tid. */
GT_HIDDEN void ranges__begin(const struct gt_event *ev, uint32_t ring_tid);
GT_HIDDEN void ranges__end(const struct gt_event *ev, uint32_t ring_tid);
/* A range handed over whole (a plug-in's annotation) on thread tid. */
GT_HIDDEN void ranges__timed(const struct gt_event *ev, uint32_t tid);
/* The ranges open at a launch of thread tid (a reference), or NULL;
 * foreign: recorded on another ring, so the thread's stack is taken by time. */
GT_HIDDEN struct rctx *ranges__at_launch(const struct gt_event *ev, uint32_t tid, bool foreign);
/* The launch's context completed, once every ring has been read past it:
 * the process's ranges at its start (one may have begun on a thread read
 * before it was recorded), the timed ranges of its thread that hold it.
 * Once per launch; a new reference replaces e->ctx. */
GT_HIDDEN void ranges__complete(struct corr_entry *e);
GT_HIDDEN struct rctx *ranges__ctx_get(struct rctx *c);
GT_HIDDEN void ranges__ctx_put(struct rctx *c);
GT_HIDDEN uint32_t ranges__name(const struct urange *u);
GT_HIDDEN uint32_t ranges__tid(const struct urange *u);
GT_HIDDEN void ranges__urange_get(struct urange *u);
GT_HIDDEN void ranges__urange_put(struct urange *u);
/* A thread's ring is gone: its stack too. */
GT_HIDDEN void ranges__thread_gone(uint32_t tid);
/* The file ends at end_ns (the process began to end, or the capture window
 * closed): every range still open that began at from_ns or later is drawn
 * on its thread's row up to there, args.unended, once. */
GT_HIDDEN void ranges__draw_unended(uint64_t from_ns, uint64_t end_ns);
/* ... and those of thread tid's stack, the thread having ended at end_ns. */
GT_HIDDEN void ranges__draw_thread_unended(uint32_t tid, uint64_t from_ns, uint64_t end_ns);
/* ... and the one the end ev (read after the window's close, outside it) ends, before
 * ranges__end takes it off its stack. */
GT_HIDDEN void ranges__draw_ended_after(const struct gt_event *ev, uint64_t from_ns,
					uint64_t end_ns);
/* End of a drain cycle: ended process ranges age. */
GT_HIDDEN void ranges__cycle_end(void);
/* The span that ends a range which need not nest (a process range, one ended
 * by id), begun on thread tid: on the first lane where it nests, args.tid
 * added. Returns events__host's point. */
GT_HIDDEN uint64_t ranges__draw_lane(const struct gt_event *ev, const struct gt_arg *args,
				     unsigned nargs, uint32_t tid);
/* Whether tid is a lane's row, and its name and sort index. */
GT_HIDDEN bool ranges__lane_row(uint32_t tid, char *name, size_t len, long long *sort);
/* A new file: its lanes start empty. */
GT_HIDDEN void ranges__lanes_forget(void);

/* ---- annotate.c: gpu_user_annotation spans on device rows ---- */

/* A device span of row (pid, tid, track) starting at start, with the
 * ranges of its launch: annotations that end before it are written, those
 * it opens are begun (call before placing it). */
GT_HIDDEN void annotate__before(uint32_t track, uint32_t pid, uint32_t tid, uint64_t start,
				const struct rctx *ctx);
/* ... and where it was written (arrow: an arrow ends on it): its row's
 * open annotations cover it. */
GT_HIDDEN void annotate__after(uint32_t track, struct placed p, bool arrow);
/* Write every open annotation (the process ends). */
GT_HIDDEN void annotate__close_all(void);

/* ---- events.c: Chrome Trace JSON into W.buf ---- */

/* Where a device event was drawn, and its arrow point. */
struct device_row {
	uint32_t pid, tid;
	uint64_t point;
};

/* A host span or instant on row tid of the process; returns its arrow point
 * (it has one if it is a launch, or ends a flow: GT_EVF_FLOW_END). */
GT_HIDDEN /* A backends' hook called from the drain thread's cycle (drain.c). */
void drain__backends_call(enum gt_backend_hook hook);
/* The host calls gathered for the summary, into it (before it is read). */
void events__summary_flush(void);
uint64_t events__host(const struct gt_event *ev, const struct gt_arg *args,
				unsigned nargs, uint32_t tid);
/* The ranges of a device span's causing calls: ctx from the call that
 * recorded it (an append), exec from the one that ran it when it differs. */
struct span_ranges {
	const struct rctx *ctx, *exec;
};

/* A device span, instant or counter on its device's row; arrow: arrows will
 * end on it; ranges: its launches' (NULL: none). */
GT_HIDDEN struct device_row events__device(const struct gt_event *ev,
					   const struct gt_arg *args, unsigned nargs, bool arrow,
					   const struct span_ranges *ranges);
/* A gpu_user_annotation span on a device row, written as it is. */
GT_HIDDEN void events__annotation(uint32_t pid, uint32_t tid, uint32_t device, uint64_t ts,
				  uint64_t end, uint32_t name, uint32_t spans, uint32_t range_tid);
/* Arrow id: from the launch (host) to (pid, tid) at ts; "fwdbwd" or "ac2g". */
GT_HIDDEN void events__flow(uint64_t id, const struct corr_entry *host, uint32_t pid,
			    uint32_t tid, uint64_t ts, bool fwdbwd);
/* Names and sort order of the device rows registered since the last call. */
GT_HIDDEN void events__name_rows(void);
/* A slice marking capture window n on its own row (written as it ends). */
GT_HIDDEN void events__capture_mark(struct jbuf *b, const char *what, uint32_t n,
				     uint64_t open_ns, uint64_t close_ns);
/* A metadata ("M") event: sval (slen bytes), or ival when sval is NULL. */
GT_HIDDEN void events__meta(struct jbuf *b, const char *what, uint32_t pid, uint32_t tid,
			    const char *key, const char *sval, size_t slen, long long ival);
/* Properties as JSON members ("key":value,...), a comma first if comma. */
GT_HIDDEN void events__put_props(struct jbuf *b, const struct gt_arg *p, unsigned n, bool comma);
/* The quoted JSON of a string id. */
GT_HIDDEN void events__put_sid(struct jbuf *b, uint32_t id);
/* Move the event just formatted to the next page of a paged file if it
 * would straddle a page boundary (see output.h). */
GT_HIDDEN void events__fit(void);
/* The next event of a formatted buffer at *q (NULL at end): its line, less the ","
 * between events and the spaces a paged file pads with (begin_event's ",\n" is the
 * only newline in events: strings escape theirs, JSON args have theirs made spaces). */
GT_HIDDEN const char *events__next(const char **q, const char *end, size_t *n);
/* One event formatted elsewhere (events__next's), into W.buf as events are written:
 * after its separator, placed for its offset in the file. */
GT_HIDDEN void events__put_formatted(const char *ev, size_t n);

/* ---- flight.c: the flight recorder (GPUTRACE_FLIGHT_RECORDER) ---- */

/* What a dump holds and what the recorder let go (events: not metadata,
 * not arrows; arrows counted apart). */
struct flight_counts {
	const char *reason;
	uint64_t kept_events, aged_events, kept_flows, aged_flows;
	uint64_t earlier_events, earlier_flows; /* in an earlier dump (gputrace run) */
	uint64_t waiting; /* read, not yet in the recorder: device work waiting for its
			   * launch or ranges (flows.c), in the next dump */
	uint64_t from_ns; /* the span it holds starts here (a byte budget's: its first event) */
	uint32_t dump;    /* its number, from 1 */
};

/* Formatted events (as W.buf holds them) into the recorder at time now;
 * what the window before hold (now, or a dump's request still to be written)
 * or the memory bound has passed is dropped. */
GT_HIDDEN void flight__add(const char *p, size_t len, uint64_t now, uint64_t hold);
/* The window at time as_of (when the dump was asked for; <= now, when it is
 * written), as a trace's events (row names first) into out. */
GT_HIDDEN void flight__dump(struct jbuf *out, uint64_t now, uint64_t as_of,
			    struct flight_counts *c);
/* ,"flight_recorder":{...} for the trailer of a dump. */
GT_HIDDEN void flight__trailer(struct jbuf *b, const struct flight_counts *c);
GT_HIDDEN void flight__free(void);
/* In a fork child: start with an empty recorder. */
GT_HIDDEN void flight__forget(void);

/* ---- outq.c: the file written on its own thread ---- */

/* Write ev and trailer (swapped for empty buffers) after the job in flight;
 * behind: on the output thread, the caller goes on; else here, now.
 * final: out__finish. 0 or -errno (of the job in flight, or of this one
 * when written here). */
GT_HIDDEN int outq__submit(struct jbuf *ev, struct jbuf *trailer, bool final, bool behind);
/* Wait until the file is written; the result of the last job. */
GT_HIDDEN int outq__wait(void);

/* ---- checkpoint.c ---- */

/* Open the file now (head and trailer written). false: it cannot be. */
GT_HIDDEN bool checkpoint__open(void);
/* Anything to write: events recorded or waiting (final: or lost). */
GT_HIDDEN bool checkpoint__anything(bool final);
/* Append what W.buf holds and rewrite the trailer; final: close the JSON. */
GT_HIDDEN void checkpoint__write(bool final);
/* The same in the middle of a cycle: written behind the drain's back. */
GT_HIDDEN void checkpoint__write_behind(void);

#define FLUSH_BYTES (1 << 20)

/* That, once W.buf holds FLUSH_BYTES: a cycle's JSON is written as it grows,
 * with its trailer (a file cut here by SIGKILL is still complete JSON). */
static inline void checkpoint__write_behind_when_full(void)
{
	if (gt_unlikely(W.buf.len > FLUSH_BYTES) && W.opened && !W.failed)
		checkpoint__write_behind();
}
/* Wait for the checkpoint in flight: the file is complete (or failed). */
GT_HIDDEN void checkpoint__settle(void);
/* After a settled checkpoint: the file as its last cycle leaves it, still
 * open (an exec ends the image without one). */
GT_HIDDEN void checkpoint__compact(void);
/* A line of the list of a gputrace run (GPUTRACE_RUN_STATE): '*' recording,
 * '+' with the trace's path, '=' recording over, '-' over with nothing to
 * write by design. Nothing outside a run. */
GT_HIDDEN void checkpoint__list(char what, const char *path);
/* Recording over: '=', or '-' for a flight recorder that ended well. */
GT_HIDDEN void checkpoint__list_end(void);
/* The summary at the end: on stderr and/or as JSON. */
/* The closed trace's file removed while the process ran (its name unlinked,
 * the folder deleted): one line, and no summary names it. */
GT_HIDDEN void checkpoint__check_removed(void);
GT_HIDDEN void checkpoint__summary(void);
/* After a capture window's file was ended: the next one starts afresh
 * (its own name, rows named again, its own summary). */
GT_HIDDEN void checkpoint__forget_file(void);

#endif
