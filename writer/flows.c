/* SPDX-License-Identifier: MIT */
/*
 * Device work linked to the host call that caused it. A launch (a host
 * event with GT_EVF_LAUNCH) is remembered by its correlation id; a device
 * span waits, a few cycles at most, until the launch it names has been
 * written, and is then written with an ac2g arrow from each launch it
 * names (corr, corr2) to its start, and the user ranges open at its
 * launch (ranges.c). A host span that ends a plug-in's flow
 * (GT_EVF_FLOW_END) waits the same way for the launch in its corr2. The
 * table keeps launches of the last 2^17 correlation ids: older device work
 * keeps its args.correlation, without arrow or ranges. A plug-in's device
 * span written before its launch is remembered (late_wait): the launch,
 * written later, draws the arrow to it.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "inject/pages.h"
#include "internal.h"

#define PENDING_MAX_AGE  3    /* cycles a device event waits for its host span (and
			       * on, while the rings are read behind) */

/* Plug-ins' device spans written before their launch: 4096 of them (128 KiB,
 * made at the first), 4 slots tried for each. */
#define LATE_BITS   12
#define LATE_SLOTS  (1u << LATE_BITS)
#define LATE_PROBES 4

struct late_end {
	uint64_t corr; /* 0: a free slot */
	uint64_t point;
	uint32_t pid, tid;
	bool fwdbwd;
};

/* By the id's low bits: ids come from per-thread blocks of consecutive ones, so a
 * thread's launches fill neighbouring slots, written and read back in the order they
 * come (a hash scattered them over the table's 5 MiB: a cache and TLB miss each way, 40%
 * of the drain's time on back-to-back launches), and gputrace's own ids less than 2^17
 * apart never collide. The bits above 32 (a foreign id's namespace, a Kineto flow's
 * batch and type) move the run to a place of its own: ids alike in their low bits from
 * two namespaces or batches do not take each other's slots. */
static struct corr_entry *corr_slot(uint64_t corr)
{
	uint64_t offset = ((corr >> 32) * 0x9e3779b97f4a7c15ull) >> 32;

	return &W.corr[(corr + offset) & W.corr_mask];
}

/*
 * The table's slots in use are written before their first launch:
 * - a slot read first (its old ranges) mapped the shared zero page, and the
 *   write after it copied that page and flushed the other CPU's TLB by an
 *   interrupt, 17% of the drain's time on 100k launches back to back on this VM.
 * It starts at CORR_FIRST_BITS and doubles whenever a launch would take a slot another
 * launch holds: no launch is pushed out before the table has its full 2^17, so arrows
 * are those a table made whole would draw, and a process of a few launches writes 40
 * KiB of it, not 5 MiB (three 2 MiB pages the kernel clears: 1 to 4 ms of a process of
 * 64 launches on this VM, more than all else the library added to it). A flight
 * recorder's is made whole at once: made as launches filled it, the table grew the
 * process by 5 MiB over its first 131072 launches, and a flight recorder's memory is to
 * stay flat (512 KiB a second at 16k launches a second).
 * Until it is made, it holds no launch, and a lookup does not read it.
 */
static void corr_write(uint32_t from, uint32_t to)
{
	/* Written, a fault a page (a 2 MiB one where the kernel can), not
	 * MADV_POPULATE_WRITE: its one call held the address space's lock for the whole
	 * table (8 ms on the CI VM), and a program's thread whose malloc moved the heap
	 * (brk) waited as long, in the middle of a launch. A fault takes the lock of its
	 * own mapping only (Linux 6.4 on). */
	memset(W.corr + from, 0, (to - from) * sizeof(*W.corr));
}

static void corr_make(void)
{
	uint32_t first = gt_cfg.flight_bytes ? 1u << CORR_TABLE_BITS : 1u << CORR_FIRST_BITS;

	if (!W.corr) {
		size_t map_bytes; /* kept for the process's life: never unmapped */
		void *t = gt_pages_map(0, CORR_TABLE_BYTES,
				       sizeof(struct corr_entry) << CORR_SMALL_BITS, &map_bytes);

		if (!t)
			return;
		W.corr = t;
	}
	corr_write(0, first);
	W.corr_mask = first - 1;
	W.corr_made = true;
}

/* Twice the slots, in place: a launch in slot i stays there or moves to i + n, which
 * no other one can take (the slot is the id's low bits). */
static void corr_grow(void)
{
	uint32_t n = W.corr_mask + 1;

	corr_write(n, 2 * n);
	W.corr_mask = 2 * n - 1;
	for (uint32_t i = 0; i < n; i++) {
		struct corr_entry *e = &W.corr[i], *to;

		if (!e->corr)
			continue;
		to = corr_slot(e->corr);
		if (to != e) {
			*to = *e;
			*e = (struct corr_entry){ 0 };
		}
	}
}

/* The slot for a launch: another launch's only once the table is whole. */
static struct corr_entry *corr_room(uint64_t corr)
{
	struct corr_entry *e = corr_slot(corr);

	while (e->corr && e->corr != corr && W.corr_mask + 1 < 1u << CORR_TABLE_BITS) {
		corr_grow();
		e = corr_slot(corr);
	}
	return e;
}

/*
 * A plug-in hands records over as they complete, from any thread: its device
 * span may come many cycles before the host span that launched it (a collector
 * reads the device's buffer first). Its row waits for no launch past
 * PENDING_MAX_AGE cycles: the span is written, placed as an arrow's end, and
 * its end kept here until its launch is written, which draws the arrow to it.
 * One pushed out by another, or still here, has no arrow: counted in the trailer.
 */
static bool plugin_corr(uint64_t corr)
{
	return corr >> GT_CORR_NS_SHIFT >= GT_CORR_NS_PLUGIN(0);
}

static struct late_end *late_slot(uint64_t corr, unsigned probe)
{
	uint32_t h = (uint32_t)((corr * 0x9e3779b97f4a7c15ull) >> (64 - LATE_BITS));

	return &W.late[(h + probe) & (LATE_SLOTS - 1)];
}

static void late_wait(const struct gt_event *ev, struct device_row row)
{
	struct late_end *e = NULL;

	if (!W.late && !(W.late = calloc(LATE_SLOTS, sizeof(*W.late)))) {
		W.late_lost++;
		return;
	}
	for (unsigned i = 0; i < LATE_PROBES && !e; i++)
		if (!late_slot(ev->corr, i)->corr)
			e = late_slot(ev->corr, i);
	if (e) {
		W.nlate++;
	} else {
		/* full around it: the one in its first slot gives its arrow up */
		e = late_slot(ev->corr, 0);
		W.late_lost++;
	}
	*e = (struct late_end){ .corr = ev->corr, .point = row.point, .pid = row.pid,
				.tid = row.tid, .fwdbwd = ev->flags & GT_EVF_FWDBWD };
}

/* A launch written: the arrows to its device spans written before it. */
static void late_draw(const struct corr_entry *launch)
{
	for (unsigned i = 0; i < LATE_PROBES; i++) {
		struct late_end *e = late_slot(launch->corr, i);

		if (e->corr != launch->corr)
			continue;
		events__flow(++W.next_flow_id, launch, e->pid, e->tid, e->point, e->fwdbwd);
		e->corr = 0;
		W.nlate--;
	}
}

uint64_t flows__unmatched(void)
{
	return W.late_lost + W.nlate;
}

void flows__launch(const struct gt_event *ev, uint32_t tid, uint64_t point_ns, bool foreign)
{
	if (gt_unlikely(!W.corr_made))
		corr_make();
	if (W.corr_made) {
		struct corr_entry *e = corr_room(ev->corr);

		ranges__ctx_put(e->ctx);
		*e = (struct corr_entry){ .corr = ev->corr, .point_ns = point_ns, .tid = tid,
					  .foreign = foreign, .start_ns = ev->start_ns,
					  .ctx = ranges__at_launch(ev, tid, foreign) };
		if (gt_unlikely(W.nlate))
			late_draw(e);
	}
}

void flows__launch_after_end(const struct gt_event *ev)
{
	if (gt_unlikely(!W.corr_made))
		corr_make();
	if (W.corr_made) {
		struct corr_entry *e = corr_room(ev->corr);

		ranges__ctx_put(e->ctx);
		*e = (struct corr_entry){ .corr = ev->corr, .after_end = true };
	}
}

void flows__forget(void)
{
	/* the next file holds none of their spans */
	if (W.late)
		memset(W.late, 0, LATE_SLOTS * sizeof(*W.late));
	W.nlate = 0;
	W.late_lost = 0;
	/* given back: the next file's first launch makes it again */
	if (W.corr && !madvise(W.corr, CORR_TABLE_BYTES, MADV_DONTNEED))
		W.corr_made = false;
	else if (W.corr)
		corr_write(0, W.corr_mask + 1);
}

static struct corr_entry *corr_find(uint64_t corr)
{
	struct corr_entry *e;

	if (!corr || !W.corr_made)
		return NULL;
	e = corr_slot(corr);
	return e->corr == corr ? e : NULL;
}

/* A host span ends arrows only from the launch in corr2 (corr is its own);
 * device instants and spans wait for their launches alike (rows stay in
 * time order) but only spans without GT_EVF_NOFLOW get arrows. */
static bool host_end(const struct gt_event *ev)
{
	return ev->type != GT_EV_DEVICE_SPAN &&
	       !(ev->type == GT_EV_INSTANT && (ev->flags & GT_EVF_DEVICE));
}

static bool arrows_in(const struct gt_event *ev)
{
	return host_end(ev) || (ev->type == GT_EV_DEVICE_SPAN && !(ev->flags & GT_EVF_NOFLOW));
}

/* The ranges device work carries: those of the call that recorded it, and those of
 * the one that ran it beside them where they differ. A regular list's work
 * (GT_EVF_EXECUTED) takes its append's, also where there were none: taken for its
 * own, its execute's counted work appended outside them as launched inside them. Other
 * work with two causing calls (CUDA's runtime and driver call, a plug-in's external id
 * and flow) takes corr2's, else corr's. */
static struct span_ranges device_ranges(const struct gt_event *ev, const struct corr_entry *h1,
					const struct corr_entry *h2)
{
	struct span_ranges r = { NULL, NULL };

	if (ev->flags & GT_EVF_EXECUTED)
		r.ctx = h2 ? h2->ctx : NULL;
	else if (h2 && h2->ctx)
		r.ctx = h2->ctx;
	else
		return (struct span_ranges){ h1 ? h1->ctx : NULL, NULL };
	if (h1 && h1->ctx != r.ctx)
		r.exec = h1->ctx;
	return r;
}

/* The launches an event names: h[0] its corr's (not a host span's: its own), h[1] its
 * corr2's (NULL: not in the table). */
static void linked_calls(const struct gt_event *ev, struct corr_entry *h[2])
{
	h[0] = host_end(ev) ? NULL : corr_find(ev->corr);
	h[1] = corr_find(ev->corr2);
}

/* The span, then its arrows: after both slices exist, so viewers bind them;
 * each end strictly inside its own slice (place.c). h: linked_calls's (found once
 * for this and launched_after_the_end: ~25 drain instructions a launch). */
static void write_linked(const struct gt_event *ev, const struct gt_arg *args, unsigned nargs,
			 struct corr_entry *const h[2])
{
	/* calls found whether or not arrows are drawn: work without arrows
	 * (Level Zero's waits on events) still carries their ranges */
	bool arrows = arrows_in(ev);
	struct corr_entry *h1 = h[0], *h2 = h[1];
	bool fwdbwd = ev->flags & GT_EVF_FWDBWD;
	struct device_row row;

	if (W.ur.any_timed || W.ur.any_process) {
		if (h1)
			ranges__complete(h1);
		if (h2)
			ranges__complete(h2);
	}

	if (host_end(ev)) {
		row = (struct device_row){ (uint32_t)gt_st.pid, ev->track, 0 };
		row.point = events__host(ev, args, nargs, ev->track);
		/* a plug-in's span, recorded off its thread's ring */
		if ((ev->flags & GT_EVF_LAUNCH) && ev->corr) {
			flows__launch(ev, ev->track, row.point, true);
			h2 = corr_find(ev->corr2); /* (the table may have grown: moved) */
		}
		if (ev->flags & GT_EVF_TIMED)
			ranges__timed(ev, ev->track);
	} else {
		struct span_ranges r = device_ranges(ev, h1, h2);

		/* a plug-in's launch may yet come: its arrow will end here */
		bool late = arrows && !h1 && plugin_corr(ev->corr);

		row = events__device(ev, args, nargs, arrows && (h1 || h2 || late), &r);
		if (late)
			late_wait(ev, row);
	}
	if (!arrows)
		return;
	if (h1)
		events__flow(++W.next_flow_id, h1, row.pid, row.tid, row.point, fwdbwd);
	if (h2 && h2 != h1)
		events__flow(++W.next_flow_id, h2, row.pid, row.tid, row.point, fwdbwd);
}

/* h: linked_calls's for p, found once for this, launch_never_returned and the write
 * (~6 to ~17 drain instructions a launch) */
static bool device_ready(const struct pending *p, bool final, struct corr_entry *const h[2])
{
	/* Not given up on in a cycle that left records unread (a thread launching faster
	 * than the drain reads, its launches in its overflow): the launch of work read
	 * from the device at the cycle's start may be among them. Given up on after 3
	 * such cycles, a drain behind a dozen threads launching flat out drew 2 kernels in
	 * 3 without their arrow, and at the exit kernels of launches left out of the trace
	 * (after its end) without them, uncounted. */
	if (final)
		return true;
	/* Once the process began to end, not before the last read: a launch made then
	 * may be one left out of the trace (after its end), its span read only then,
	 * and its work with it (given up on meanwhile, drawn without it, uncounted) */
	if (p->age >= PENDING_MAX_AGE && !W.rings_behind &&
	    !atomic_load_explicit(&gt_st.host_end_ns, memory_order_relaxed))
		return true;
	/* a plug-in hands its annotations over after the work inside them, a
	 * process range may begin on a ring read after the launch's: a cycle
	 * later, they are read */
	if ((W.ur.any_timed || W.ur.any_process) && !p->age && !host_end(&p->ev))
		return false;
	return (host_end(&p->ev) || !p->ev.corr || h[0]) && (!p->ev.corr2 || h[1]);
}

/* Device work of a launch left out of the trace (it returned after the
 * process began to end): left out with it. */
static bool launched_after_the_end(struct corr_entry *const h[2])
{
	return (h[0] && h[0]->after_end) || (h[1] && h[1]->after_end);
}

/* Device work read while its launch had not returned (GT_EVF_UNRETURNED: nor has one
 * that returned once the process began to end, records.c), at the last read of a process
 * that began to end, its launch not written: that call returned after the end (or not at
 * all), left out of the trace, and its work goes with it. CUDA's
 * CUPTI hands a launch's kernel over at the exit's flush while the call may still run on
 * another thread: drawn without its launch, uncounted (1 or 2 kernels or fills in 4 or 5
 * runs in 6 of 4 threads launching flat out as main returns). */
static bool launch_never_returned(const struct pending *p, bool final,
				  struct corr_entry *const h[2])
{
	/* (a host span's h[0] is none: its corr is its own) */
	return final && (p->ev.flags & GT_EVF_UNRETURNED) &&
	       atomic_load_explicit(&gt_st.host_end_ns, memory_order_relaxed) &&
	       !(host_end(&p->ev) ? corr_find(p->ev.corr) : h[0]) && !h[1];
}

struct pend_order {
	uint64_t key; /* host spans (plug-ins' flow ends, launches) first, then by start */
	size_t i;     /* its place in W.pend: ties keep the order read */
};

static int pend_order_cmp(const void *a, const void *b)
{
	const struct pend_order *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/*
 * The order a pass writes the waiting work in: by start. CUDA 13's CUPTI hands
 * each thread's records over in a buffer of its own, so threads that take turns on
 * one stream come in thread by thread: written so, a row's work went out of order
 * (a gpu_user_annotation stayed open over the other thread's kernels in between,
 * and those read late got none). Host spans go first: a plug-in's launch before
 * the device spans that wait for it. NULL: the order read (already in it, or no
 * memory).
 */
static const struct pend_order *pending_order(void)
{
	/* each row's work in order already (one stream a thread, the usual case): as read,
	 * unsorted. Rows by their track's low bits; two tracks on one slot: sorted. */
	struct {
		uint32_t track;
		bool used;
		uint64_t last;
	} rows[64];
	bool sorted = true;

	if (W.npend < 2)
		return NULL;
	memset(rows, 0, sizeof(rows));
	for (size_t i = 0; i < W.npend && sorted; i++) {
		const struct gt_event *ev = &W.pend[i].ev;
		unsigned slot = ev->track & 63;

		if (host_end(ev))
			continue;
		if (rows[slot].used && (rows[slot].track != ev->track || ev->start_ns < rows[slot].last))
			sorted = false;
		rows[slot].used = true;
		rows[slot].track = ev->track;
		rows[slot].last = ev->start_ns;
	}
	if (sorted)
		return NULL;
	if (W.npend > W.pend_order_cap) {
		size_t cap = W.pend_order_cap ? W.pend_order_cap : 64;
		struct pend_order *o;

		while (cap < W.npend)
			cap *= 2;
		o = realloc(W.pend_order, cap * sizeof(*o));
		if (!o)
			return NULL;
		W.pend_order = o;
		W.pend_order_cap = cap;
	}
	for (size_t i = 0; i < W.npend; i++) {
		const struct gt_event *ev = &W.pend[i].ev;

		W.pend_order[i] = (struct pend_order){ host_end(ev) ? 0 : ev->start_ns | 1ull << 63, i };
	}
	qsort(W.pend_order, W.npend, sizeof(*W.pend_order), pend_order_cmp);
	return W.pend_order;
}

/*
 * A drain held back (a loaded machine) lets a thousand launches or more wait at once:
 * W.pend grows into 2 MiB pages (gt_grow), and kept them for good, so a flight
 * recorder's process grew by 2 MiB after a busy moment (a CI run of
 * test_flight_recorder_dumps_on_the_trigger_from_another_process). Once a whole
 * cycle needed under a quarter of what was touched, the pages past what it needed go
 * back to the system; a steady backlog keeps its pages (no fault a cycle).
 * The mapping is advised out of 2 MiB pages first: khugepaged makes a whole 2 MiB page
 * of any range with one 4 KiB page in it (max_ptes_none 511, the default), and filled
 * the pages given back again within seconds. A backlog that fits the mapping again
 * faults 4 KiB pages (512 a 2 MiB, once); a bigger one gets a new mapping (gt_grow),
 * in 2 MiB pages.
 */
static void pending_give_back(void)
{
	size_t need = W.pend_cycle_peak > W.npend ? W.pend_cycle_peak : W.npend;

	W.pend_cycle_peak = W.npend;
	if (!W.pend_map || need * 4 >= W.pend_peak)
		return;

	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t from = (need * sizeof(*W.pend) + page - 1) / page * page;
	/* to the mapping's end: a 2 MiB page is resident whole from its first write, past
	 * what ever waited (up to 2 MiB less what did stayed: 1584 KiB of a flight
	 * recorder's, late in a run); pages never written cost nothing to give back */
	size_t to = W.pend_map;

	if (to > from) {
		/* first: khugepaged cannot fill the range between the two calls */
		madvise(W.pend, W.pend_map, MADV_NOHUGEPAGE);
		madvise((char *)W.pend + from, to - from, MADV_DONTNEED);
	}
	W.pend_peak = need;
}

/* age: a cycle's end, the waiting grow older. The file is written as the JSON
 * grows (a ring's worth of kernels, written at once, grew the buffer to 16 MiB). */
static void pending_pass(bool final, bool age)
{
	const struct pend_order *order = pending_order();
	size_t keep = 0;

	if (W.npend > W.pend_cycle_peak)
		W.pend_cycle_peak = W.npend;
	if (W.npend > W.pend_peak)
		W.pend_peak = W.npend;

	for (size_t n = 0; n < W.npend; n++) {
		struct pending *p = &W.pend[order ? order[n].i : n];
		struct corr_entry *h[2];

		/* (after the writes before it: a plug-in's launch among them may have grown
		 * the table, moving its entries) */
		linked_calls(&p->ev, h);
		if (device_ready(p, final, h)) {
			if (!launched_after_the_end(h) && !launch_never_returned(p, final, h))
				write_linked(&p->ev, p->args, p->ev.nargs, h);
			checkpoint__write_behind_when_full();
			p->age = UINT_MAX; /* written */
		} else {
			p->age += age;
		}
	}
	/* those that wait on, in the order read (the next pass sorts them again) */
	for (size_t i = 0; i < W.npend; i++) {
		if (W.pend[i].age == UINT_MAX)
			continue;
		if (keep != i)
			W.pend[keep] = W.pend[i];
		keep++;
	}
	W.npend = W.pend_kept = keep;
	if (age)
		pending_give_back();
}

void flows__pending(bool final)
{
	pending_pass(final, true);
}

/* The work waiting whose launches are written, in the middle of a cycle: the rest
 * waits on, its age unchanged. Timed or process ranges are complete only once every
 * ring of the cycle was read (ranges.c): then the work waits for the cycle's end. */
static void pending_ready(void)
{
	if (!W.ur.any_timed && !W.ur.any_process)
		pending_pass(false, false);
	W.pend_kept = W.npend; /* the next pass when as many more wait */
}

void flows__defer(const struct gt_event *ev, const struct gt_arg *args, unsigned nargs)
{
	if (W.npend == W.pend_cap) {
		/* from 64: 1024 were 2 MiB at once, a page the kernel clears (~1 ms here) in
		 * a process that launches a few kernels */
		size_t bytes = (W.pend_cap ? W.pend_cap * 2 : 64) * sizeof(struct pending);
		/* in 2 MiB pages once big (inject/pages.c): 100k launches back to back kept
		 * ~1 MiB of them waiting */
		struct pending *p = gt_grow(W.pend, W.npend * sizeof(*p), &bytes, &W.pend_map,
					    GT_GROW_BIG);
		if (!p) {
			struct corr_entry *h[2];

			linked_calls(ev, h);
			write_linked(ev, args, nargs, h); /* no memory: no waiting, no loss */
			return;
		}
		W.pend = p;
		W.pend_cap = bytes / sizeof(*p);
	}
	struct pending *p = &W.pend[W.npend++];
	p->ev = *ev;
	p->ev.nargs = (uint8_t)nargs;
	memcpy(p->args, args, nargs * sizeof(*args));
	p->age = 0;
	/* a ring's device work is written as it piles up, not all at the cycle's end */
	if (gt_unlikely(W.npend >= W.pend_kept + PENDING_FLUSH))
		pending_ready();
}

