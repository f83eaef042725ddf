/* SPDX-License-Identifier: MIT */
/*
 * Where a slice goes on its row, as the viewers will read it: the ts and
 * dur to write and the point where an ac2g arrow binds to it.
 *
 * Rows are followed in the order slices are written, through the slice
 * written last and the row's frontier (the latest end written so far).
 *  - A slice that starts exactly where one of them ends, and that end adds
 *    up past its start (writer/times.h), starts 1 ns later: readers would
 *    see the two overlap.
 *  - Viewers bind an arrow end ("s", and "f" with "bp":"e") to the innermost
 *    slice holding its timestamp, bounds included, and the legacy catapult
 *    viewer prefers the earlier of two slices that touch. So an arrow end
 *    never sits on a boundary that another slice of the row shares: in a
 *    slice of 3 ns or more it is the start + 1 ns; a shorter slice has it at
 *    its start, moves 1 ns later if a slice ends there, and the next slice
 *    of the row starts 1 ns after it at the earliest.
 *  - A slice that starts where the previous one written started (a child
 *    after its parent) moves as that one did, and stays inside it.
 *  - A slice placed with PLACE_OFF_ENDS (a device slice no call caused,
 *    such as a plug-in's own device annotation) starts 1 ns later on an end
 *    whether or not the end adds up past it here: an annotation of ours may
 *    open with it (place__parent), written after its children, where
 *    `gputrace merge`, adding times up at a new magnitude, could move the
 *    slice but not that annotation.
 *  - A parent written after its children (place__parent) opens 1 ns before
 *    the slice it starts with, where the row has room for it; otherwise
 *    that slice starts 1 ns after it.
 *  - Slices recorded from a moved slice's end on start where it ends, as
 *    placed, at the earliest; one recorded inside it (a queue's kernels run
 *    at once, as a plug-in's device reports them) keeps its start.
 *  - On a device's rows, where a queue's earlier work may be read late,
 *    behind another thread's later work, starts and ends are kept, and a
 *    slice in order or not is checked against any of them: one that ends
 *    where a slice written before it starts, adding up past it, ends 1 ns
 *    sooner.
 *  - On a device's rows, slices written behind a later one (work read
 *    late) are placed among themselves by the rules above, as they would
 *    have been in order, from the first not in order with the last.
 * Those are the only changes: a nanosecond, on touching slices. A parent
 * written after its children is written as it is.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "times.h"

/* A row's slices as written one after another: the last one and the latest end. */
struct lane {
	uint64_t last_start; /* as recorded: moving a slice keeps the row in order */
	uint64_t last_ts;    /* ... and as written */
	uint64_t last_dur;
	uint64_t end_ts, end_dur; /* the slice with the latest end written */
	uint64_t min_next; /* later slices start here at the earliest (0: anywhere) */
	uint64_t min_next_from; /* ... those recorded from here on: one recorded
				   before (work that overlapped the moved slice, as
				   concurrent kernels of one queue do) keeps its time */
	bool last_short_arrow; /* the last slice has its arrow end at its start */
	bool any;
};

struct row_cursor {
	uint64_t key; /* pid << 32 | tid | 1 << 63, 0: free */
	struct lane now;
	/* Device rows: work read late, written behind later work, placed
	 * among itself as it would have been in order (a run of zero-length
	 * kernels on one tick and a longer one from the same tick: else drawn
	 * around them). Starts again at each slice earlier than its last. */
	struct lane late;
	uint64_t parent_next; /* the next slice starts here at the earliest: inside a
				 parent opened before it (place__parent; 0: none) */
	bool device; /* a device's row: its starts and ends are kept (seen_add) */
	unsigned seen_bits; /* seen: SEEN_WAYS << seen_bits entries */
	uint64_t *seen;     /* ... or NULL: none kept (a thread's row, or no memory) */
};

/*
 * The starts and ends written on the devices' rows: a queue's earlier work
 * may be read late, behind another thread's later work, so the slice a new
 * one touches need not be the last or the latest of its row, and may have
 * been written after it, thousands of slices of other rows before (device
 * work waits up to three cycles for its launch: flows.c). So each device
 * row has a table of its own, which no other row's work can push an entry
 * out of (a table shared by every row lost the end of an execute's first
 * kernels before the rest came). Sets of eight (a cache line), keyed by
 * time, so an end and the start that touches it share a set: a slice looks
 * at two sets, its start's and its end's. A full set doubles the table,
 * from 256 bytes up to 256 KiB a row: below that nothing is forgotten;
 * there a full set forgets first an end and a start at one time (slices
 * that touch, both written), which only ever misses a move. An entry is
 * the time's hash with, in its low bits, whether it is a start and whether
 * that end adds up past itself.
 */
#define SEEN_WAYS 8
#define SEEN_MIN_BITS 2  /* 4 sets */
#define SEEN_MAX_BITS 12 /* 4096 sets */
#define SEEN_START 2ull
#define SEEN_PAST 1ull

static uint64_t seen_hash_of(uint64_t t)
{
	uint64_t h = t * 0xff51afd7ed558ccdull;

	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 29;
	return (h & ~3ull) | 4; /* never 0 (empty) */
}

/* A device slice hashes its start and its end twice each (looked up, then put), and a
 * zero-length kernel's are one time: the last time's hash is kept. */
static uint64_t seen_hash(uint64_t t)
{
	static uint64_t last_t, last_h = 4; /* (seen_hash_of(0) is 4) */

	if (t != last_t) {
		last_t = t;
		last_h = seen_hash_of(t);
	}
	return last_h;
}

/* By the hash's top bits: doubling splits set i into 2i and 2i + 1. */
static uint64_t *seen_set(const struct row_cursor *c, uint64_t h)
{
	return &c->seen[(h >> (64 - c->seen_bits)) * SEEN_WAYS];
}

/* The entry for (h, start), or NULL: one that differs from it in SEEN_PAST at most
 * (an empty way, 0, never does: h has bit 2 set). Unrolled, three instructions a way:
 * the loop's ~9 a way were ~190 of the drain's instructions a launch (callgrind). */
static uint64_t *seen_find(uint64_t *set, uint64_t h, bool start)
{
	uint64_t want = h | (start ? SEEN_START : 0);

#pragma GCC unroll 8
	for (unsigned i = 0; i < SEEN_WAYS; i++)
		if ((set[i] ^ want) <= SEEN_PAST)
			return &set[i];
	return NULL;
}

/* The row's table made, or doubled; false at its largest or without memory. */
static bool seen_grow(struct row_cursor *c)
{
	unsigned bits = c->seen ? c->seen_bits + 1 : SEEN_MIN_BITS;
	size_t n = (size_t)SEEN_WAYS << bits;
	uint64_t *t;

	if (bits > SEEN_MAX_BITS)
		return false;
	t = aligned_alloc(SEEN_WAYS * sizeof(*t), n * sizeof(*t));
	if (!t)
		return false;
	memset(t, 0, n * sizeof(*t));
	/* each set's entries, newest first, stay so in the set they move to */
	for (size_t i = 0; c->seen && i < (size_t)SEEN_WAYS << c->seen_bits; i++) {
		uint64_t v = c->seen[i], *set;
		unsigned w = 0;

		if (!v)
			continue;
		set = &t[(v >> (64 - bits)) * SEEN_WAYS];
		while (set[w])
			w++;
		set[w] = v;
	}
	free(c->seen);
	c->seen = t;
	c->seen_bits = bits;
	return true;
}

/*
 * Room in a full set at the table's largest: the oldest end and start at one
 * time go (touching slices, both written: nothing later touches them without
 * overlapping one), else the oldest entry. An end or a start no slice has met
 * yet is what late work touches: it stays longest. v, the entry that needed the
 * room, goes first, as seen_put puts one.
 */
static void seen_evict(uint64_t *set, uint64_t v)
{
	unsigned a = SEEN_WAYS - 1, b = SEEN_WAYS, n = 1;
	uint64_t kept[SEEN_WAYS + 1]; /* (+1: the branchless copy below writes one past) */

	/* At the table's largest every put evicts: on 100k launches back to back, this and
	 * the calls to grow it that could not were ~150 of the drain's instructions a launch
	 * (callgrind). A pair: the entries differ in SEEN_START, and SEEN_PAST at most. */
	for (unsigned i = SEEN_WAYS; i-- > 1 && b == SEEN_WAYS;) {
		uint64_t partner = set[i] ^ SEEN_START;

		/* from i's newer neighbour back: a zero-length kernel's end and start go in
		 * one after the other, so its partner is mostly the next way (a set holds one
		 * entry a time and kind, so which j is found first does not matter) */
		for (unsigned j = i; j-- > 0;)
			if ((set[j] ^ partner) <= SEEN_PAST) {
				a = i;
				b = j;
				break;
			}
	}
	/* the new entry first, then those kept, in their order */
	kept[0] = v;
#pragma GCC unroll 8
	for (unsigned i = 0; i < SEEN_WAYS; i++) {
		kept[n] = set[i];
		n += i != a && i != b;
	}
	while (n < SEEN_WAYS)
		kept[n++] = 0;
	memcpy(set, kept, SEEN_WAYS * sizeof(*kept));
}

/* Inline in seen_add, its only caller: a call each was ~15 instructions of ~120. */
static inline __attribute__((always_inline)) void seen_put(struct row_cursor *c, uint64_t h,
							   bool start, bool past)
{
	uint64_t *set = seen_set(c, h), *at = seen_find(set, h, start);
	uint64_t v = h | (start ? SEEN_START : 0) | (past ? SEEN_PAST : 0);

	if (at) {
		*at = v;
		return;
	}
	/* a set fills from its first way: full, the table doubles while it can */
	while (set[SEEN_WAYS - 1] && c->seen_bits < SEEN_MAX_BITS && seen_grow(c))
		set = seen_set(c, h);
	if (set[SEEN_WAYS - 1]) {
		/* room made and v put first in one pass */
		seen_evict(set, v);
		return;
	}
	/* one way down through a copy the compiler keeps in registers (a loop or memmove
	 * was a libc call for 56 bytes) */
	uint64_t moved[SEEN_WAYS - 1];

	memcpy(moved, set, sizeof(moved));
	memcpy(set + 1, moved, sizeof(moved));
	set[0] = v;
}

static void seen_add(struct row_cursor *c, uint64_t ts, uint64_t dur)
{
	if (!c->seen)
		return;
	seen_put(c, seen_hash(ts + dur), false, gt_ends_after(ts, dur, ts + dur));
	seen_put(c, seen_hash(ts), true, false);
}

static __attribute__((noinline)) int ends_at_seen(const struct row_cursor *c, uint64_t t)
{
	uint64_t h = seen_hash(t), *at = seen_find(seen_set(c, h), h, false);

	return at ? 1 + (int)(*at & SEEN_PAST) : 0;
}

static __attribute__((noinline)) bool starts_at_seen(const struct row_cursor *c, uint64_t t)
{
	uint64_t h = seen_hash(t);

	return seen_find(seen_set(c, h), h, true);
}

/* 0: no slice written on c's row ends at t; 1: one does; 2: and adds up past t.
 * (The test for a table inline: a thread's row has none, and the call each way was
 * ~10 of a host call's ~150 placing instructions.) */
static inline int ends_at(const struct row_cursor *c, uint64_t t)
{
	return c->seen ? ends_at_seen(c, t) : 0;
}

static inline bool starts_at(const struct row_cursor *c, uint64_t t)
{
	return c->seen && starts_at_seen(c, t);
}

static struct row_cursor *cursor_find(uint64_t key)
{
	size_t h;

	if (W.ncursors * 2 >= W.cursors_mask) {
		size_t cap = W.cursors ? (W.cursors_mask + 1) * 2 : 64;
		struct row_cursor *t = calloc(cap, sizeof(*t));

		if (!t)
			return NULL;
		for (size_t i = 0; W.cursors && i <= W.cursors_mask; i++) {
			if (!W.cursors[i].key)
				continue;
			h = (W.cursors[i].key * 0x9e3779b97f4a7c15ull) >> 32 & (cap - 1);
			while (t[h].key)
				h = (h + 1) & (cap - 1);
			t[h] = W.cursors[i];
		}
		free(W.cursors);
		W.cursors = t;
		W.cursors_mask = cap - 1;
		W.last_cursor = NULL;
	}
	h = (key * 0x9e3779b97f4a7c15ull) >> 32 & W.cursors_mask;
	while (W.cursors[h].key && W.cursors[h].key != key)
		h = (h + 1) & W.cursors_mask;
	if (!W.cursors[h].key) {
		W.cursors[h].key = key;
		W.ncursors++;
	}
	return W.last_cursor = &W.cursors[h];
}

static inline struct row_cursor *cursor(uint32_t pid, uint32_t tid)
{
	uint64_t key = (uint64_t)pid << 32 | tid | 1ull << 63;

	if (gt_likely(W.last_cursor && W.last_cursor->key == key))
		return W.last_cursor;
	return cursor_find(key);
}

/* The frontier follows every slice, parents written late included; of two
 * that end together, the one whose end adds up past it. */
static inline __attribute__((always_inline)) void follow_frontier(struct lane *l, uint64_t s,
								  uint64_t dur)
{
	uint64_t e = s + dur, frontier = l->any ? l->end_ts + l->end_dur : 0;

	if (!l->any || e > frontier ||
	    (e == frontier && gt_ends_after(s, dur, e) && !gt_ends_after(l->end_ts, l->end_dur, e))) {
		l->end_ts = s;
		l->end_dur = dur;
	}
	l->any = true;
}

/*
 * Where a slice recorded at start may begin on its lane, after a moved one:
 * one recorded from the moved slice's end on starts at its end as placed
 * (a moved slice may end later than recorded: it is not overlapped); one
 * recorded before that end overlapped it as the device reported it (kernels
 * run concurrently on one queue): it keeps its start, only never before the
 * moved slice's (the row stays in order). Pushed to the moved slice's end it
 * was drawn microseconds late and shortened, to no length at all.
 */
static uint64_t lane_floor(const struct lane *l, uint64_t start)
{
	if (start >= l->min_next_from)
		return start < l->min_next ? l->min_next : start;
	return start < l->last_ts ? l->last_ts : start;
}

struct placed place__slice(uint32_t pid, uint32_t tid, uint64_t start, uint64_t end, unsigned how)
{
	struct row_cursor *c = cursor(pid, tid);
	bool arrow = how & PLACE_ARROW;
	uint64_t s = start, e = end > start ? end : start, frontier;
	struct lane *l = NULL;
	struct placed p;
	int touch;

	if (c && !c->device && pid != (uint32_t)gt_st.pid) {
		/* a device's row (a thread's are written in order, but for the
		 * ranges written at their end, around their calls) */
		c->device = true;
		seen_grow(c);
	}
	if (c) {
		if (!c->now.any || s >= c->now.last_start) {
			l = &c->now;
		} else if (c->device) {
			l = &c->late;
			if (l->any && s < l->last_start)
				*l = (struct lane){ 0 };
		}
	}
	if (l && l->any) {
		/* in order on its lane */
		frontier = l->end_ts + l->end_dur;
		if (s == l->last_start && l->last_ts != s && !l->last_short_arrow) {
			/* a child after its parent, from the same start: moved alike
			 * (a short arrow target holds no child: its start is its
			 * arrow's, and a kernel of the same tick after a run of
			 * zero-length ones would start on the last of them) */
			s = l->last_ts;
		} else {
			s = lane_floor(l, s);
		}
		if (s < c->parent_next)
			s = c->parent_next;
		e = e > s ? e : s;
		touch = ends_at(c, s);
		/* Perfetto sorts a slice before a shorter one of the same start and
		 * binds an arrow end to the slice begun last: a zero-length one (an
		 * instant) written just before, from this start, would take the
		 * arrow, so the slice starts 1 ns after it */
		bool after_zero = arrow && e > s && l->last_dur == 0 && l->last_ts == s;
		if ((s == frontier || s == l->last_ts + l->last_dur || touch) &&
		    ((arrow && e - s < 3) || (how & PLACE_OFF_ENDS) || touch == 2 || after_zero ||
		     (s == frontier && gt_ends_after(l->end_ts, l->end_dur, s)) ||
		     (s == l->last_ts + l->last_dur && gt_ends_after(l->last_ts, l->last_dur, s)))) {
			/* a short arrow target moves whole; a longer slice loses 1 ns */
			e = arrow && e - s < 3 ? e + 1 : (e > s + 1 ? e : s + 1);
			s++;
		}
	} else if (c && c->now.any && (touch = ends_at(c, s)) &&
		   ((arrow && e - s < 3) || (how & PLACE_OFF_ENDS) || touch == 2)) {
		e = arrow && e - s < 3 ? e + 1 : (e > s + 1 ? e : s + 1);
		s++;
	}
	if (c && c->now.any && e - s > (arrow ? 3u : 1u) && starts_at(c, e) &&
	    gt_ends_after(s, e - s, e)) {
		/* the slice after it was written first: this one ends 1 ns
		 * sooner instead (its start, and its arrow, stay) */
		e--;
	}
	p = (struct placed){ .ts = s, .dur = e - s, .point = e - s >= 3 ? s + 1 : s };
	if (!c)
		return p;
	c->parent_next = 0;
	seen_add(c, s, p.dur);
	if (l) {
		l->last_start = start;
		l->last_ts = s;
		l->last_dur = p.dur;
		/* keep a short arrow target's point, and a moved slice's end, free */
		l->last_short_arrow = arrow && p.dur < 3;
		if (l->last_short_arrow) {
			l->min_next = s + (p.dur ? p.dur : 1);
			l->min_next_from = 0;
		} else if (s != start) {
			l->min_next = s + p.dur;
			l->min_next_from = end > start ? end : start;
		}
		follow_frontier(l, s, p.dur);
	}
	if (l != &c->now)
		follow_frontier(&c->now, s, p.dur);
	return p;
}

uint64_t place__parent(uint32_t pid, uint32_t tid, uint64_t start, unsigned depth)
{
	struct row_cursor *c = cursor(pid, tid);
	uint64_t s = start;

	if (!c)
		return s;
	if (c->parent_next) {
		/* nested in the parent just opened for the same slice */
		s = c->parent_next;
	} else if (!c->now.any) {
		/* the depth parents open 1 ns apart before the slice, which keeps
		 * its start (its exact times) */
		s = start >= depth ? start - depth : s;
	} else if (s >= c->now.last_start) {
		uint64_t frontier = c->now.end_ts + c->now.end_dur, last_end = c->now.last_ts + c->now.last_dur;

		if (s == c->now.last_start) {
			/* around a slice written before from the same start (a
			 * device annotation of the program's): with it, as it was
			 * placed */
			s = c->now.last_ts;
		} else {
			uint64_t lo = frontier > last_end ? frontier : last_end;

			s = lane_floor(&c->now, s);
			/* room before the slice, strictly after every end: it
			 * keeps its start */
			if (s >= depth && s - depth > lo && s - depth >= c->now.min_next)
				s -= depth;
		}
		/* it is written after the slices inside it, where `gputrace
		 * merge` (times re-added at a new magnitude, slices placed in
		 * the order written) no longer knows what ended here: it never
		 * touches an end, whether or not that end adds up past it now */
		if (s == frontier || s == last_end)
			s++;
	}
	/* the next parent, or the slice that opens it, starts 1 ns in at the
	 * earliest */
	c->parent_next = s + 1;
	c->now.any = true;
	return s;
}

void place__as_is(uint32_t pid, uint32_t tid, uint64_t ts, uint64_t dur)
{
	struct row_cursor *c = cursor(pid, tid);

	if (c)
		follow_frontier(&c->now, ts, dur);
}

uint64_t place__row_end(uint32_t pid, uint32_t tid)
{
	struct row_cursor *c = cursor(pid, tid);

	return c && c->now.any ? c->now.end_ts + c->now.end_dur : 0;
}

bool place__clear(uint32_t pid, uint32_t tid, uint64_t ends_from, uint64_t ends_to,
		  uint64_t starts_from, uint64_t starts_to)
{
	struct row_cursor *c = cursor(pid, tid);

	if (!c || !c->seen)
		return false;
	for (uint64_t t = ends_from; t <= ends_to; t++)
		if (ends_at(c, t))
			return false;
	for (uint64_t t = starts_from; t <= starts_to; t++)
		if (starts_at(c, t))
			return false;
	return true;
}
