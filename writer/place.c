/* SPDX-License-Identifier: MIT */
/*
 * Where a slice goes on its row, as the viewers will read it: the ts and
 * dur to write (writer/times.h) and the point where an ac2g arrow binds.
 *
 * Viewers bind an arrow end ("s", and "f" with "bp":"e") to the innermost
 * slice holding its timestamp, bounds included; the legacy catapult viewer
 * prefers the earlier of two slices that touch. So an arrow end never sits
 * on a boundary another slice of the row shares:
 *  - a slice of 3 ns or more: its start + 1 ns, strictly inside whatever
 *    touches it on either side;
 *  - a shorter one: its start, and the row keeps that point free: the slice
 *    moves 1 ns later when the previous slice ends exactly there, and the
 *    next slice of the row starts 1 ns after it at the earliest.
 * Rows are followed in the order slices are written; a slice that starts
 * before the previous one written (a parent written after its children) is
 * written as it is and leaves the row's state alone.
 */
#include <stdlib.h>

#include "internal.h"
#include "times.h"

struct row_cursor {
	uint64_t key; /* pid << 32 | tid, 0: free */
	uint64_t last_start, last_end;
	uint64_t reserved; /* a short slice's arrow point: later slices start after it */
	bool any;
};

static struct row_cursor *cursor(uint32_t pid, uint32_t tid)
{
	uint64_t key = (uint64_t)pid << 32 | tid | 1ull << 63;
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
	}
	h = (key * 0x9e3779b97f4a7c15ull) >> 32 & W.cursors_mask;
	while (W.cursors[h].key && W.cursors[h].key != key)
		h = (h + 1) & W.cursors_mask;
	if (!W.cursors[h].key) {
		W.cursors[h].key = key;
		W.ncursors++;
	}
	return &W.cursors[h];
}

struct placed place__slice(uint32_t pid, uint32_t tid, uint64_t start, uint64_t end, bool arrow)
{
	struct row_cursor *c = cursor(pid, tid);
	uint64_t s = start, e = end > start ? end : start, dur;
	struct placed p;

	if (c && c->any && s >= c->last_start) {
		if (c->reserved && s <= c->reserved) {
			s = c->reserved + 1;
			e = e > s ? e : s;
		}
		if (arrow && e - s < 3 && s == c->last_end) {
			s++;
			e++;
		}
	}
	dur = gt_dur_fit(s, e - s);
	p = (struct placed){ .ts = s, .dur = dur, .point = dur >= 3 ? s + 1 : s };
	if (c && (!c->any || s >= c->last_start)) {
		c->any = true;
		c->last_start = s;
		c->last_end = s + dur;
		if (arrow && dur < 3)
			c->reserved = p.point;
	}
	return p;
}
