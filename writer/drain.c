/* SPDX-License-Identifier: MIT */
/*
 * The drain cycle: new libraries told to the backends, the backends'
 * vendor records flushed into events, then every thread's ring read and
 * each record handed to its writer (events.c, or flows.c for device spans
 * that wait for their launch), and a checkpoint of the file. thread.c
 * decides when a cycle runs. All writer state belongs to the cycle (the
 * drain thread, or the caller of writer__cycle when none runs), so none of
 * it is locked; producers only ever touch their rings.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "inject/capture.h"
#include "inject/clock.h"
#include "inject/ring.h"
#include "inject/shim.h"
#include "internal.h"
#include "writer.h"

#define HIGH_WATER_DIV   4    /* a ring a quarter full is drained now */
#define DLOPEN_POLL_NS   100000000ull

GT_HIDDEN struct writer W = { .cycle_lock = PTHREAD_MUTEX_INITIALIZER };

/* A host event on its thread's row (or the track it names); a launch is
 * remembered for the device work that will link to it. */
static void write_host(const struct gt_event *ev, const struct gt_arg *args, unsigned nargs,
		       uint32_t ring_tid)
{
	uint32_t tid = ev->track ? ev->track : ring_tid;
	uint64_t point;

	if ((ev->flags & GT_EVF_FLOW_END) && ev->corr2 && ev->type == GT_EV_HOST_SPAN) {
		struct gt_event end = *ev;

		end.track = tid;
		flows__defer(&end, args, nargs); /* after the flow's start */
		return;
	}
	/* a range that need not nest with its thread's slices: on a lane */
	if ((ev->flags & (GT_EVF_RANGE | GT_EVF_TIMED)) == GT_EVF_RANGE &&
	    (ev->flags & (GT_EVF_PROCESS | GT_EVF_BY_ID)))
		point = ranges__draw_lane(ev, args, nargs, tid);
	else
		point = events__host(ev, args, nargs, tid);
	if ((ev->flags & GT_EVF_LAUNCH) && ev->corr)
		flows__launch(ev, tid, point, ev->track && ev->track != ring_tid);
	if (ev->flags & GT_EVF_TIMED)
		ranges__timed(ev, tid);
	else if (ev->flags & GT_EVF_RANGE)
		ranges__end(ev, ring_tid);
}

/* With capture windows: true while a window is open or being ended. */
static bool writing_window(void)
{
	return !gt_cap.controlled || W.window_ending ||
	       atomic_load_explicit(&gt_cap.close_ns, memory_order_relaxed) == UINT64_MAX ||
	       capture__unended();
}

/* Outside the window being written: not recorded. A call or device
 * record of an earlier window that reached its ring after that window's
 * file was ended is counted lost. */
static bool outside_window(const struct gt_event *ev)
{
	if (writing_window() && capture__inside(ev->start_ns, ev->end_ns))
		return false;
	if (capture__in_closed_window(ev->start_ns, ev->end_ns))
		gt_lost_add(GT_S_LOST_WINDOW_LATE, 1);
	return true;
}

/* A host call another thread had not returned from when the process began to
 * end (exit, a fatal signal), or made later: after the trace's end. The
 * device's last read is taken from then on, and a launch then may not be
 * followed any more (the backend closed): its device work is left out too.
 * What the ending thread, a thread making a plug-in's call for it, and the
 * drain thread record at the end (the backends' last events, folded counts)
 * is the trace's own, as is what a plug-in hands over (its threads' last
 * records, whole, at its stop: accepted, they were dropped uncounted). */
static bool after_the_end(const struct gt_event *ev, const struct ring *r)
{
	/* acquire: the ending thread's tid, stored before, is seen with it */
	uint64_t end = atomic_load_explicit(&gt_st.host_end_ns, memory_order_acquire);

	if (gt_likely(!end) || (ev->flags & GT_EVF_HANDED) ||
	    (int)r->tid == atomic_load(&gt_st.host_end_tid) ||
	    (int)r->tid == atomic_load(&gt_st.host_end_helper_tid) ||
	    (int)r->tid == atomic_load(&W.drain_tid))
		return false;
	if (ev->type == GT_EV_HOST_SPAN && ev->end_ns > end) {
		if ((ev->flags & GT_EVF_LAUNCH) && ev->corr)
			flows__launch_after_end(ev);
		return true;
	}
	return ev->start_ns > end && (ev->type == GT_EV_RANGE_BEGIN ||
				      (ev->type == GT_EV_INSTANT && !(ev->flags & GT_EVF_DEVICE)));
}

/* The file ends: the user ranges still open are drawn up to where it ends,
 * the window's close or where the process began to end (later calls of
 * other threads are not in it), and only those begun in the window. */
static bool unended_bounds(uint64_t now, uint64_t *from_ns, uint64_t *end_ns)
{
	uint64_t end = atomic_load_explicit(&gt_st.host_end_ns, memory_order_acquire);
	uint64_t from = 0;

	if (!writing_window())
		return false;
	if (!end || end > now)
		end = now;
	if (gt_cap.controlled) {
		uint64_t close = atomic_load(&gt_cap.close_ns);
		uint64_t stop = atomic_load(&gt_cap.stop_at_ns);

		from = atomic_load(&gt_cap.open_ns);
		if (close < end)
			end = close;
		if (stop && stop < end)
			end = stop;
	}
	*from_ns = from;
	*end_ns = end;
	return true;
}

static void draw_unended_ranges(uint64_t now)
{
	uint64_t from, end;

	if (unended_bounds(now, &from, &end))
		ranges__draw_unended(from, end);
}

/* A thread ended with ranges of its stack open: drawn up to its end, where
 * that is in this file (a thread that outlived the process's end: to that). */
static void draw_thread_unended(const struct ring *r)
{
	uint64_t end = atomic_load_explicit(&r->dead_ns, memory_order_relaxed);
	uint64_t host_end = atomic_load_explicit(&gt_st.host_end_ns, memory_order_acquire);

	if (!end || !writing_window())
		return;
	if (host_end && host_end < end)
		end = host_end;
	if (gt_cap.controlled && !capture__inside(end, end))
		return;
	ranges__draw_thread_unended((uint32_t)r->tid,
				    gt_cap.controlled ? atomic_load(&gt_cap.open_ns) : 0, end);
}

/* Read slots are handed back this often, not once per visit: the producer
 * finds room while the drain formats the rest (a drain that published only
 * at the end kept a fast thread's ring full, and dropping, for the whole
 * batch). */
#define PUBLISH_SLOTS    512

/* One record at slots[at & mask] (its continuation slots after it, wrapping with
 * mask) into the trace: the slots it took. */
static unsigned drain_record(struct ring *r, const struct gt_event *slots, uint64_t mask,
			     uint64_t at)
{
	struct gt_arg args[GT_ARGS_MAX];
	const struct gt_event *ev = &slots[at & mask];
	unsigned nargs = ev->nargs, nslots = 1;

	if (nargs > GT_ARGS_MAX)
		nargs = GT_ARGS_MAX;
	if (nargs)
		args[0] = ev->args[0];
	/* a continuation slot at a time, whole (a fixed-size copy; its args past nargs are
	 * never read): an arg at a time was ~20 instructions each */
	_Static_assert(sizeof(struct gt_event) == GT_ARGS_PER_EXT * sizeof(struct gt_arg) &&
			       sizeof(args) / sizeof(args[0]) ==
				       GT_ARGS_INLINE + 4 * GT_ARGS_PER_EXT,
		       "continuation slots fill args whole");
	for (unsigned k = 0; GT_ARGS_INLINE + k * GT_ARGS_PER_EXT < nargs; k++)
		memcpy(&args[GT_ARGS_INLINE + k * GT_ARGS_PER_EXT], &slots[(at + 1 + k) & mask],
		       sizeof(struct gt_event));
	if (nargs > GT_ARGS_INLINE)
		nslots += (nargs - GT_ARGS_INLINE + GT_ARGS_PER_EXT - 1) / GT_ARGS_PER_EXT;
	if (gt_unlikely(gt_cap.controlled) && outside_window(ev)) {
		/* not in this file, but a range that began in a window ends here:
		 * off the thread's stack, or later windows' launches carry it */
		if (ev->type == GT_EV_HOST_SPAN &&
		    (ev->flags & (GT_EVF_RANGE | GT_EVF_TIMED)) == GT_EVF_RANGE) {
			uint64_t from, end;

			/* one that began in the window being ended, ended after its close:
			 * drawn never ended (as it would be, had its end come a cycle later;
			 * until 2026-12-06 it was not drawn at all) */
			if (unended_bounds(gt_clock_ns(), &from, &end))
				ranges__draw_ended_after(ev, from, end);
			ranges__end(ev, (uint32_t)r->tid);
		}
		return nslots;
	}
	if (after_the_end(ev, r))
		return nslots;
	/* a capture window's file opens with its first event inside the window,
	 * not with whatever its rings hold: calls the program made after the
	 * window's end, before the drain closed it (a --duration window from the
	 * start whose first call came after its end), are no reason for a file
	 * that holds none of them */
	if (gt_unlikely(!W.opened) && !W.failed)
		checkpoint__open();
	switch (ev->type) {
	case GT_EV_HOST_SPAN:
		write_host(ev, args, nargs, (uint32_t)r->tid);
		break;
	case GT_EV_INSTANT:
		/* a device instant waits its turn with the row's spans: rows are
		 * written in time order (writer/place.c) */
		if (ev->flags & GT_EVF_DEVICE)
			flows__defer(ev, args, nargs);
		else
			write_host(ev, args, nargs, (uint32_t)r->tid);
		break;
	case GT_EV_COUNTER:
		events__device(ev, args, nargs, false, NULL);
		break;
	case GT_EV_DEVICE_SPAN:
		flows__defer(ev, args, nargs);
		break;
	case GT_EV_RANGE_BEGIN:
		ranges__begin(ev, (uint32_t)r->tid);
		break;
	default:
		break;
	}
	/* a begin record is no event of the trace */
	if (ev->type != GT_EV_RANGE_BEGIN) {
		r->recorded++;
		W.recorded++;
	}
	return nslots;
}

/* A fork, an exit or a sync waits for this cycle: what was there when it began,
 * not what keeps coming. */
static bool cycle_wanted_elsewhere(void)
{
	return gt_unlikely(atomic_load_explicit(&W.fork_pending, memory_order_relaxed)) ||
	       atomic_load_explicit(&W.req_seq, memory_order_relaxed) !=
		       atomic_load_explicit(&W.done_seq, memory_order_relaxed);
}

/* A fork waits for the cycle lock: the rest is for the next cycle. Not in a
 * cycle that reads the rings whole (the file ends, a dump): a thread forking
 * flat out had each such cycle read one record a ring, and an exit's last
 * drain gave up after 5 s, the trace at its last checkpoint. */
static bool yield_to_fork(bool whole)
{
	return !whole && gt_unlikely(atomic_load_explicit(&W.fork_pending, memory_order_relaxed));
}

/* The ring's overflow, once the ring's older slots are read (ring_overflow.c), up to
 * budget slots: the slots read. */
static uint64_t drain_overflow(struct ring *r, uint64_t ring_tail, uint64_t budget, bool whole)
{
	struct ring_seg *seg;
	uint64_t at, done = 0, n;

	while (done < budget && (n = ring__overflow_readable(r, ring_tail, &seg, &at))) {
		uint64_t end = at + n, published = at, start = at;

		while (at < end) {
			if (at - published >= PUBLISH_SLOTS) {
				ring__overflow_consume(r, seg, at);
				published = at;
				atomic_fetch_add_explicit(&W.progress, 1, memory_order_relaxed);
			}
			at += drain_record(r, seg->slots, ~0ull, at);
			if (yield_to_fork(whole))
				break;
			checkpoint__write_behind_when_full();
		}
		ring__overflow_consume(r, seg, at);
		done += at - start;
		if (at < end)
			break; /* a fork waits */
	}
	return done;
}

/* Range ends the full ring dropped, their begins written (ring.h, lost_end), up
 * to upto: each ends its range here as its record would have (counted lost, not
 * drawn), or the range was drawn never ended, to the trace's end, though ended. */
static void drain_lost_ends(struct ring *r, uint32_t upto)
{
	uint32_t t = atomic_load_explicit(&r->lost_end_tail, memory_order_relaxed);

	for (; t != upto; t++) {
		const struct gt_event *ev = &r->lost_end[t % RING_LOST_ENDS];

		/* as drain_record takes a range's end (outside the window, but not
		 * counted late: it is counted lost) */
		if (gt_unlikely(gt_cap.controlled) &&
		    !(writing_window() && capture__inside(ev->start_ns, ev->end_ns))) {
			uint64_t from, end;

			if ((ev->flags & (GT_EVF_RANGE | GT_EVF_TIMED)) != GT_EVF_RANGE)
				continue;
			if (unended_bounds(gt_clock_ns(), &from, &end))
				ranges__draw_ended_after(ev, from, end);
		} else if (after_the_end(ev, r)) {
			continue;
		}
		ranges__end(ev, (uint32_t)r->tid);
	}
	atomic_store_explicit(&r->lost_end_tail, t, memory_order_release);
}

/* whole: everything the ring and its overflow hold now is read (the file ends) */
static void drain_ring(struct ring *r, bool release, bool whole)
{
	/* read before the ring: the begins of the ends it notes are in what follows */
	uint32_t lost_ends = atomic_load_explicit(&r->lost_end_head, memory_order_acquire);
	uint64_t tail, n = ring__readable(r, &tail), end = tail + n, published = tail;
	const uint64_t end0 = end;
	/* what a thread adds while it is drained is read in the same visit, up
	 * to two rings' worth: one fast thread does not hold the cycle (other
	 * rings, the backends' records, the checkpoint) for long; its overflow's
	 * backlog (ring_overflow.c) up to two of its segments' worth, or, when the
	 * file ends, what it holds now (a thread still calling flat out would
	 * otherwise keep the last cycle going) */
	uint64_t stop = tail + 2 * (r->mask + 1), read_over = 0;
	uint64_t budget = 2 * ring__seg_slots(r), chunk;

	if (whole) {
		uint64_t held = ring__overflow_used(r);

		budget = held > budget ? held : budget;
	}
	/* a big ring in a last cycle: its pages are given back as they are read */
	release = release && r->mask + 1 >= RING_RELEASE_MIN;
	chunk = release ? RING_RELEASE_SLOTS : PUBLISH_SLOTS;

	W.draining = r;
	for (;;) {
		if (tail >= end) {
			if (release) /* what is left, up to its last 2 MiB page's start */
				ring__release(r, published, tail);
			ring__consume(r, tail);
			published = tail;
			/* the ring read to its end: its overflow, if it has one, comes next
			 * (what was there when the cycle began, as for the ring) */
			if (gt_unlikely(atomic_load_explicit(&r->seg_read, memory_order_relaxed) != NULL)) {
				uint64_t got = drain_overflow(r, tail, budget > read_over ? budget - read_over : 0,
							      whole);

				read_over += got;
				if (got && !yield_to_fork(whole) && read_over < budget) {
					/* back on the ring: the producer may be too */
					end = tail + ring__readable(r, &tail);
					continue;
				}
			}
			if (tail >= stop || cycle_wanted_elsewhere())
				break;
			end = tail + ring__readable(r, &tail);
			if (tail >= end)
				break;
		}
		if (tail - published >= chunk) {
			/* released: up to a (2 MiB) page's start; the rest of it next time */
			published = release ? ring__release(r, published, tail) : tail;
			ring__consume(r, published);
			atomic_fetch_add_explicit(&W.progress, 1, memory_order_relaxed);
		}
		tail += drain_record(r, r->slots, r->mask, tail);
		/* a fork() is waiting for this cycle: the rest is for the next one; or the
		 * events found no memory (the checkpoint ends the trace: checkpoint.c,
		 * out_of_memory), where each failed growth costs glibc's malloc a try at
		 * a new arena: 40000 events held an exit 10 s */
		if (yield_to_fork(whole) || gt_unlikely(W.buf.oom))
			break;
		checkpoint__write_behind_when_full();
	}
	if (release)
		ring__release(r, published, tail);
	ring__consume(r, tail);
	/* once all that the thread recorded before them is read, their begins too */
	if (gt_unlikely(lost_ends != atomic_load_explicit(&r->lost_end_tail, memory_order_relaxed)) &&
	    tail >= end0 && !ring__overflow_used(r))
		drain_lost_ends(r, lost_ends);
	W.draining = NULL;
	/* what it held when the visit began, or an overflow backlog, left for later */
	if (tail < end0 || ring__overflow_used(r))
		W.behind_now = true;
}

/* Set while this thread runs a cycle (the drain thread, or a thread
 * syncing before the writer's thread runs). */
static __thread bool in_cycle;

bool drain__own_ring_full(struct ring *r)
{
	/* not in the middle of another ring's drain: one at a time */
	if (!in_cycle || W.draining)
		return false;
	if (!W.opened && !W.failed && writing_window())
		checkpoint__open();
	drain_ring(r, false, false);
	return true;
}

/* An exited thread's counts. Its losses and the count of threads are
 * kept apart from the list, so a checkpoint costs the same however many
 * threads have exited, and a list that cannot grow loses no count. */
static void remember_dead(struct ring *r)
{
	uint64_t lost = atomic_load(&r->lost);

	W.dead_threads++;
	W.dead_lost += lost;
	W.dead_waits += atomic_load(&r->waits);
	W.dead_wait_ns += atomic_load(&r->wait_ns);
	if (W.ndead == W.dead_cap) {
		size_t cap = W.dead_cap ? W.dead_cap * 2 : 64;
		struct thread_stat *d = realloc(W.dead, cap * sizeof(*d));
		if (!d)
			return;
		W.dead = d;
		W.dead_cap = cap;
	}
	W.dead[W.ndead] = (struct thread_stat){
		.tid = (uint32_t)r->tid,
		.serial = r->serial,
		.events = r->recorded,
		.lost = lost,
	};
	/* for its row, should its first event come later, off its ring (CUPTI's records) */
	memcpy(W.dead[W.ndead++].name, r->name_exit[0] ? r->name_exit : r->name_start,
	       sizeof(W.dead[0].name));
}

/* populate: busy threads' rings are faulted in ahead of them (not in a last cycle);
 * release: the process is ending, the pages read are given back as they are read;
 * whole: the file ends, everything recorded is read. */
static void drain_rings(bool populate, bool release, bool whole)
{
	struct ring *prev = NULL, *r = atomic_load_explicit(&gt_st.rings, memory_order_acquire);
	/* Our own first: what a backend read here, at the cycle's start, came before
	 * what a program's thread reads of the same row from now on (a row's device
	 * spans are written in the order read: a tie at one time keeps that order). */
	struct ring *own = shim__thread_ring_made();

	W.behind_now = false;
	if (own)
		drain_ring(own, release, whole);
	while (r) {
		struct ring *next = r->next;
		uint64_t tail;

		/* dead is read before the last drain: nothing can follow it */
		bool dead = atomic_load_explicit(&r->dead, memory_order_acquire);
		if (populate && !dead)
			ring__populate(r);
		if (r != own)
			drain_ring(r, release, whole);
		if (dead && !ring__readable(r, &tail) && !ring__overflow_used(r)) {
			struct ring *expect = r;

			remember_dead(r);
			draw_thread_unended(r);
			ranges__thread_gone((uint32_t)r->tid);
			if (prev) {
				prev->next = next;
			} else if (!atomic_compare_exchange_strong(&gt_st.rings, &expect, next)) {
				/* new rings were pushed in front: find our predecessor */
				struct ring *p = atomic_load(&gt_st.rings);
				while (p && p->next != r)
					p = p->next;
				if (p)
					p->next = next;
				/* the next dead ring unlinks after p without a new walk:
				 * walking from the head for each one was quadratic */
				prev = p;
			}
			ring__free(r);
		} else {
			prev = r;
		}
		r = next;
	}
	/* (so far, the last pass's: work read mid-pass is not given up on before it is
	 * known) */
	W.rings_behind = W.behind_now;
}

static bool rings_have_data(void)
{
	uint64_t tail;

	for (struct ring *r = atomic_load_explicit(&gt_st.rings, memory_order_acquire); r;
	     r = r->next)
		if (ring__readable(r, &tail) || ring__overflow_used(r))
			return true;
	return false;
}

bool drain__rings_high(void)
{
	for (struct ring *r = atomic_load_explicit(&gt_st.rings, memory_order_acquire); r;
	     r = r->next)
		if (ring__used(r) > (r->mask + 1) / HIGH_WATER_DIV || ring__overflow_used(r))
			return true;
	return false;
}

/* A backends' hook from the drain thread (see W.in_backend). */
void drain__backends_call(enum gt_backend_hook hook)
{
	atomic_store(&W.in_backend, true);
	shim__backends_call(hook, NULL, NULL);
	atomic_store(&W.in_backend, false);
}

/* This cycle is the last before an exec replaces the image. */
static bool is_exec(void)
{
	const char *why = atomic_load(&gt_end_reason);

	return why && !strcmp(why, "exec");
}

/* The file exists before anything is formatted: events are placed for their
 * offsets in it. Between capture windows there is none, and a process that
 * recorded nothing gets none. */
static void open_when_due(bool final)
{
	/* (a capture window's: with its first event inside it, drain_record) */
	if (!W.opened && !W.failed && writing_window() &&
	    ((!gt_cap.controlled && rings_have_data()) || checkpoint__anything(final)))
		checkpoint__open();
}

/*
 * The handler of a fatal signal (a request to end or a crash) runs on a
 * program thread, which may hold the driver's own lock (or sit in a
 * condition wait whose broadcaster holds it): the device's last read,
 * through that driver, then waits for a thread that waits for us. So what
 * the host recorded goes to the file first, under a trailer that says the
 * device's last read is still to come; if that read never returns (or
 * faults, on memory a crash corrupted: lifecycle.c), the handler gives up
 * and this is the trace.
 */
static void host_pass(void)
{
	/* a flight recorder writes its dump in the last cycle, as before */
	if (gt_cfg.flight_bytes)
		return;
	open_when_due(true);
	if (!W.opened || W.failed)
		return;
	events__name_rows();
	drain_rings(false, false, true);
	flows__pending(false); /* device records waiting for their launch stay */
	annotate__close_all();
	draw_unended_ranges(gt_clock_ns());
	events__name_rows();
	W.device_flush_pending = true;
	checkpoint__write(false);
	checkpoint__settle();
	W.device_flush_pending = false;
	atomic_store(&W.host_written_before_device, true);
	writer__wake_waiters();
}

/* No file is no failure: said, for a user who expected one (GPUTRACE_LOG=info) */
static void say_window_held_nothing(void)
{
	pr_info("capture window %u held no complete GPU call (one running across its "
		"edge, as a long wait, is not recorded): no file written", W.files + 1);
}

/* One cycle; closing: the file is ended (final: for good, the process is
 * ending; else a capture window ended and the next one gets a new file). */
static void cycle(bool final, bool closing)
{
	uint64_t now = gt_clock_ns();

	gt_in_tracer++;
	in_cycle = true;
	if (now - W.last_dlopen_poll_ns > DLOPEN_POLL_NS) {
		W.last_dlopen_poll_ns = now;
		lifecycle__poll_dlopen();
	}
	/* After a crash too the device's finished work is read, here, not in
	 * the handler: the host's part is in the file before (host_pass), as
	 * a crashed thread may hold a lock the read needs. A window's end is
	 * no final flush (that ends plug-ins for good): they were stopped by
	 * the window hook (writer__window_end). */
	if (final && (gt_ending_on_signal() || atomic_load(&gt_exit_in_call)))
		host_pass();
	/* a flight recorder writes its dump in this cycle only, after the read:
	 * after a crash, or a fatal signal that landed in a traced call, the
	 * read is left out (its trailer says so), or a read that waits for a
	 * lock the signalled thread holds would leave no dump at all (a SIGINT
	 * inside a synchronize: 3 s, then none) */
	if (final && gt_cfg.flight_bytes &&
	    (atomic_load(&gt_st.crashing) || atomic_load(&gt_signal_in_call) ||
	     atomic_load(&gt_exit_in_call)))
		W.device_flush_pending = true;
	else
		drain__backends_call(final ? GT_HOOK_FLUSH_FINAL : GT_HOOK_FLUSH);
	if (final)
		atomic_store(&gt_phase, GT_PHASE_FINISHING);
	if (atomic_load(&gt_phase) == GT_PHASE_OFF) {
		in_cycle = false;
		gt_in_tracer--;
		return;
	}
	/* A flight recorder's dump holds what was recorded up to its request:
	 * this cycle reads the rings whole. A cycle reads a thread's overflow
	 * backlog two segments at a time, so a drain behind a program calling
	 * flat out dumped at the end of a cycle that had not reached the
	 * request (a 1 s window's dump held 0 events of a busy program; the
	 * requests made meanwhile were lost to the final dump). A request made
	 * during the cycle is the next one's. */
	if (gt_cfg.flight_bytes && !W.flight_asked) {
		W.flight_asked = atomic_exchange(&W.flight_request, NULL);
		if (W.flight_asked)
			W.flight_asked_ns = atomic_exchange(&W.flight_request_ns, 0);
	}
	open_when_due(final);
	if (W.opened)
		events__name_rows();
	/* an exec's cycles read the rings whole too: what a thread's overflow
	 * still holds goes with the image, uncounted (its cycles read two
	 * segments of a backlog each, as a running process's do) */
	drain_rings(!closing, final, closing || W.flight_asked || is_exec());
	flows__pending(closing);
	/* the process ends (exit, exec, a signal), or the window's file does:
	 * open annotations are over (in this file) */
	if (closing || atomic_load(&gt_end_reason))
		annotate__close_all();
	if (closing)
		draw_unended_ranges(now);
	ranges__cycle_end();
	/* what this cycle drained may be the file's first events (a window's, read only
	 * in its closing cycle): the file opens now, so its rows and its window's mark go
	 * into it (checkpoint__write would open it after them) */
	open_when_due(final);
	if (W.opened)
		events__name_rows();
	if (closing && W.opened && gt_cap.controlled) {
		/* a window still open (UINT64_MAX) ends with the process */
		uint64_t close = atomic_load(&gt_cap.close_ns);

		events__capture_mark(&W.buf, "window", W.files + 1, atomic_load(&gt_cap.open_ns),
				     close < now ? close : now);
	}
	if (W.opened || writing_window())
		checkpoint__write(closing);
	checkpoint__settle(); /* the file complete after every cycle */
	/* an exec ends the image with no final cycle: its file loses the
	 * whitespace reserved ahead of the events here, as at exit (each of
	 * the exec's cycles: a failed exec's next commit makes room again) */
	if (!closing && is_exec())
		checkpoint__compact();
	W.last_checkpoint_ns = now;
	if (final || is_exec())
		checkpoint__list_end(); /* a run need not wait for us now */
	if (closing && W.opened) {
		checkpoint__check_removed();
		checkpoint__summary();
		out__close(&W.out);
	}
	/* a window the process outlived by less than its grace (a loaded machine: the drain's
	 * first look came after the exit), or still open at the exit, ends here: without a
	 * file, said as at its end on the drain thread */
	if (final && gt_cap.controlled && !W.opened && !W.failed &&
	    atomic_load(&gt_cap.windows) > W.files)
		say_window_held_nothing();
	if (final) {
		/* the file ended: a plug-in stuck in its destroy costs it nothing */
		atomic_store(&W.in_backend, true);
		shim__backends_release();
		atomic_store(&W.in_backend, false);
		gt_phase_set(GT_PHASE_DONE);
	}
	in_cycle = false;
	gt_in_tracer--;
}

void writer__cycle(bool final)
{
	cycle(final, final);
}

void writer__window_end(void)
{
	/* plug-ins stopped and handed over (waiting for one still doing so on
	 * the thread that closed the window): their events are in this file */
	drain__backends_call(GT_HOOK_WINDOW_CLOSE);
	/* the backends' vendor records of it (CUPTI's buffers): into this file */
	drain__backends_call(GT_HOOK_WINDOW_END);
	W.window_ending = true;
	cycle(false, true);
	W.window_ending = false;
	if (!W.opened && !W.failed)
		say_window_held_nothing();
	checkpoint__forget_file();
	capture__ended();
}
