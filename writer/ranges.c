/* SPDX-License-Identifier: MIT */
/*
 * User ranges, the writer's side (producers: inject/ranges.h). The drain
 * reads each thread's ring in order, so a thread's open ranges at any
 * launch are exactly those whose begin record came before the launch and
 * whose end did not: the writer keeps each thread's stack as it reads, and
 * gives every launch the list of ranges open when it was made (a context),
 * outermost first: the process's ranges open at the launch's start, then
 * the thread's. Device work takes the context of its launch (flows.c).
 *
 * Contexts are shared: a thread's current one is reused by its launches
 * until its stack or the process's ranges change. Ranges, contexts and
 * the stacks that hold them are reference-counted: a range lives as long
 * as a context, a stack or a device row's annotation (annotate.c) needs
 * it. Process ranges stay known a few cycles after their end: a launch on
 * another thread may be read after it (rings are read one after another).
 *
 * Ranges that need not nest with their thread's calls and ranges (process
 * ranges, ITT ranges ended by id) are drawn on lanes, rows of their own
 * under the process: on their thread's row they crossed its slices, and
 * viewers misdraw a row whose slices do not nest.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inject/ranges.h"
#include "internal.h"

#define PROCESS_KEEP_CYCLES 4 /* cycles an ended process range is kept */
#define TIMED_KEEP_CYCLES   8 /* ... and a timed one (launches are read before it) */
#define TIMED_MAX           1024 /* timed ranges kept per thread */

_Static_assert(RCTX_MAX >= GT_RANGE_DEPTH, "a context holds every level a thread keeps");

struct urange {
	uint64_t id;
	uint64_t start_ns, end_ns; /* end_ns 0: open */
	uint32_t name, tid;
	uint32_t refs;
	bool process;
	bool begun; /* its begin record was read (an end may come first) */
	bool drawn_unended; /* drawn where the trace ended, still open (ranges__draw_unended) */
	bool lane; /* drawn on a lane: a process range, or one ended by id */
	uint64_t ended_cycle;
	struct urange *hnext;
};

struct tstack {
	uint32_t tid;
	uint32_t n, cap;
	struct urange **r;
	uint64_t version; /* changes with the stack */
	struct rctx *cached;
	uint64_t cached_version, cached_pversion;
	struct urange **timed; /* ranges handed over whole, in the order read */
	uint32_t ntimed;
	bool gone; /* the thread ended: kept while its timed ranges are */
	struct tstack *hnext;
};

#define R W.ur

/* ---- ranges ---- */

void ranges__urange_put(struct urange *u)
{
	if (u && !--u->refs)
		free(u);
}

void ranges__urange_get(struct urange *u)
{
	u->refs++;
}

static size_t id_hash(uint64_t id, size_t mask)
{
	return (size_t)((id * 0x9e3779b97f4a7c15ull) >> 20) & mask;
}

static struct urange *map_find(uint64_t id)
{
	if (!R.map)
		return NULL;
	for (struct urange *u = R.map[id_hash(id, R.map_mask)]; u; u = u->hnext)
		if (u->id == id)
			return u;
	return NULL;
}

static bool map_grow(void)
{
	size_t cap = R.map ? (R.map_mask + 1) * 2 : 256;
	struct urange **m = calloc(cap, sizeof(*m));

	if (!m)
		return false;
	for (size_t i = 0; R.map && i <= R.map_mask; i++)
		for (struct urange *u = R.map[i], *next; u; u = next) {
			next = u->hnext;
			u->hnext = m[id_hash(u->id, cap - 1)];
			m[id_hash(u->id, cap - 1)] = u;
		}
	free(R.map);
	R.map = m;
	R.map_mask = cap - 1;
	return true;
}

/* A new range in the map (which holds one reference). */
static struct urange *map_add(uint64_t id)
{
	struct urange *u;

	if ((!R.map || R.nmap * 2 > R.map_mask) && !map_grow() && !R.map)
		return NULL;
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->id = id;
	u->refs = 1;
	u->hnext = R.map[id_hash(id, R.map_mask)];
	R.map[id_hash(id, R.map_mask)] = u;
	R.nmap++;
	return u;
}

static void map_remove(struct urange *u)
{
	struct urange **p = &R.map[id_hash(u->id, R.map_mask)];

	while (*p && *p != u)
		p = &(*p)->hnext;
	if (*p) {
		*p = u->hnext;
		R.nmap--;
		ranges__urange_put(u);
	}
}

/* ---- contexts ---- */

void ranges__ctx_put(struct rctx *c)
{
	if (!c || --c->refs)
		return;
	for (unsigned i = 0; i < c->n; i++)
		ranges__urange_put(c->r[i]);
	free(c);
}

struct rctx *ranges__ctx_get(struct rctx *c)
{
	if (c)
		c->refs++;
	return c;
}

uint32_t ranges__name(const struct urange *u)
{
	return u->name;
}

uint32_t ranges__tid(const struct urange *u)
{
	return u->tid;
}

/* ---- threads ---- */

static size_t tid_hash(uint32_t tid, size_t mask)
{
	return (tid * 2654435761u) & mask;
}

static struct tstack *thread(uint32_t tid, bool create)
{
	struct tstack *t;

	if (!R.threads) {
		if (!create)
			return NULL;
		R.threads = calloc(256, sizeof(*R.threads));
		if (!R.threads)
			return NULL;
		R.threads_mask = 255;
	}
	for (t = R.threads[tid_hash(tid, R.threads_mask)]; t; t = t->hnext)
		if (t->tid == tid) {
			if (create)
				t->gone = false; /* a thread of that id records (again) */
			return t;
		}
	if (!create || !(t = calloc(1, sizeof(*t))))
		return NULL;
	t->tid = tid;
	t->hnext = R.threads[tid_hash(tid, R.threads_mask)];
	R.threads[tid_hash(tid, R.threads_mask)] = t;
	return t;
}

static void stack_push(struct tstack *t, struct urange *u)
{
	if (t->n == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 8;
		struct urange **r = realloc(t->r, cap * sizeof(*r));
		if (!r)
			return;
		t->r = r;
		t->cap = cap;
	}
	u->refs++;
	t->r[t->n++] = u;
	t->version++;
}

static void stack_remove(struct tstack *t, struct urange *u)
{
	for (uint32_t i = t->n; i-- > 0;)
		if (t->r[i] == u) {
			memmove(&t->r[i], &t->r[i + 1], (t->n - i - 1) * sizeof(*t->r));
			t->n--;
			t->version++;
			ranges__urange_put(u);
			return;
		}
}

static void thread_free(struct tstack *t)
{
	for (uint32_t i = 0; i < t->ntimed; i++)
		ranges__urange_put(t->timed[i]);
	free(t->timed);
	free(t->r);
	free(t);
}

void ranges__thread_gone(uint32_t tid)
{
	struct tstack **p, *t;

	if (!R.threads)
		return;
	for (p = &R.threads[tid_hash(tid, R.threads_mask)]; (t = *p); p = &t->hnext)
		if (t->tid == tid)
			break;
	if (!t)
		return;
	/* ranges it never ended stay in the map no longer */
	for (uint32_t i = 0; i < t->n; i++) {
		if (map_find(t->r[i]->id) == t->r[i])
			map_remove(t->r[i]);
		ranges__urange_put(t->r[i]);
	}
	t->n = 0;
	t->version++;
	ranges__ctx_put(t->cached);
	t->cached = NULL;
	/* a plug-in's annotations reach the work launched inside them a cycle after
	 * they are read, when the thread may have ended: they stay as long as any
	 * thread's would (timed_prune frees the rest) */
	if (t->ntimed) {
		t->gone = true;
		return;
	}
	*p = t->hnext;
	thread_free(t);
}

/* ---- process ranges ---- */

static void process_add(struct urange *u)
{
	size_t i;

	if (R.nprocess == R.process_cap) {
		size_t cap = R.process_cap ? R.process_cap * 2 : 16;
		struct urange **p = realloc(R.process, cap * sizeof(*p));
		if (!p)
			return;
		R.process = p;
		R.process_cap = cap;
	}
	for (i = R.nprocess; i > 0 && R.process[i - 1]->start_ns > u->start_ns; i--)
		R.process[i] = R.process[i - 1];
	u->refs++;
	R.process[i] = u;
	R.nprocess++;
	R.pversion++;
}

/* A range ended by id, its end read first: in the map a few cycles, as an
 * ended process range is (ranges__cycle_end), and so in its thread's launches
 * made inside it (early_at). */
static void early_add(struct urange *u)
{
	if (R.nearly == R.early_cap) {
		size_t cap = R.early_cap ? R.early_cap * 2 : 16;
		struct urange **e = realloc(R.early, cap * sizeof(*e));

		if (!e)
			return; /* left in the map: its begin, read later, is still ignored */
		R.early = e;
		R.early_cap = cap;
	}
	u->refs++;
	R.early[R.nearly++] = u;
}

/* ---- records ---- */

void ranges__begin(const struct gt_event *ev, uint32_t ring_tid)
{
	struct urange *u;

	if (!ev->corr2)
		return;
	u = map_find(ev->corr2);
	if (u && u->begun)
		return;
	if (!u) {
		u = map_add(ev->corr2);
		if (!u)
			return;
	} else if (u->end_ns) {
		/* its end was read first: over already; one ended by id is kept a few
		 * cycles more, for the launches read after this begin that it holds */
		if (!u->process)
			u->ended_cycle = R.cycle;
		return;
	}
	u->begun = true;
	u->start_ns = ev->start_ns;
	u->name = ev->name;
	u->tid = ev->track ? ev->track : ring_tid;
	u->process = ev->flags & GT_EVF_PROCESS;
	u->lane = ev->flags & (GT_EVF_PROCESS | GT_EVF_BY_ID);
	if (u->process) {
		R.any_process = true;
		process_add(u);
	} else {
		struct tstack *t = thread(u->tid, true);
		if (t)
			stack_push(t, u);
	}
}

void ranges__end(const struct gt_event *ev, uint32_t ring_tid)
{
	struct urange *u;

	if (!ev->corr2)
		return;
	u = map_find(ev->corr2);
	if (!u) {
		/* a range ended on a thread read before the one that began it:
		 * remembered, so its late begin is not taken as open */
		if (!(ev->flags & (GT_EVF_PROCESS | GT_EVF_BY_ID)) || !(u = map_add(ev->corr2)))
			return;
		u->lane = true;
		u->start_ns = ev->start_ns;
		u->name = ev->name;
		u->tid = ev->track ? ev->track : ring_tid;
		if (ev->flags & GT_EVF_PROCESS) {
			u->process = true;
			R.any_process = true;
			process_add(u);
		} else {
			early_add(u);
		}
	}
	u->end_ns = ev->end_ns > ev->start_ns ? ev->end_ns : ev->start_ns + 1;
	u->ended_cycle = R.cycle;
	if (u->process) {
		R.pversion++; /* stays in the list and the map a few cycles */
		return;
	}
	if (!u->begun)
		return; /* in the map while early_add keeps it */
	struct tstack *t = thread(u->tid, false);
	if (t)
		stack_remove(t, u);
	map_remove(u);
}

/* The process ranges open at t, and whether they are all the open ones
 * (the list the thread's cached context was built with). */
static unsigned process_at(uint64_t t, struct urange **out, unsigned max, bool *all_open)
{
	unsigned n = 0;
	size_t open = 0, skip;

	*all_open = true;
	for (size_t i = 0; i < R.nprocess; i++) {
		struct urange *u = R.process[i];
		bool open_at = u->start_ns <= t && (!u->end_ns || u->end_ns > t);

		if (open_at != !u->end_ns)
			*all_open = false;
		open += open_at;
	}
	/* more than max: the newest are kept, the innermost */
	skip = open > max ? open - max : 0;
	for (size_t i = 0; i < R.nprocess && n < max; i++) {
		struct urange *u = R.process[i];

		if (u->start_ns <= t && (!u->end_ns || u->end_ns > t) && !(skip && skip--))
			out[n++] = u;
	}
	return n;
}

static struct rctx *ctx_new(struct urange *const *p, unsigned np, struct urange *const *th,
			    unsigned nt)
{
	struct rctx *c;

	/* Too many: the thread's levels are kept (annotate.c draws them, and the
	 * innermost is args.range), the process's outermost left out. Once the
	 * thread's were, and 64 start/end ranges open left launches none. */
	if (nt > RCTX_MAX)
		nt = RCTX_MAX;
	if (np + nt > RCTX_MAX) {
		p += np - (RCTX_MAX - nt);
		np = RCTX_MAX - nt;
	}
	c = malloc(sizeof(*c) + (np + nt) * sizeof(c->r[0]));
	if (!c)
		return NULL;
	c->refs = 1;
	c->n = (uint16_t)(np + nt);
	c->nthread = (uint16_t)nt;
	/* no memcpy of nothing from a null thread stack (memcpy's arguments are nonnull) */
	if (np)
		memcpy(c->r, p, np * sizeof(*p));
	if (nt)
		memcpy(c->r + np, th, nt * sizeof(*th));
	for (unsigned i = 0; i < c->n; i++)
		c->r[i]->refs++;
	return c;
}

/* Outer first: the earlier start, then the later end. */
static bool outer_of(const struct urange *a, const struct urange *b)
{
	return a->start_ns < b->start_ns || (a->start_ns == b->start_ns && a->end_ns > b->end_ns);
}

/* Into th (n of them, outermost first), u where it nests among them. */
static unsigned insert_nested(struct urange **th, unsigned n, struct urange *u)
{
	unsigned k = n;

	if (n == RCTX_MAX)
		return n;
	for (; k > 0 && outer_of(u, th[k - 1]); k--)
		th[k] = th[k - 1];
	th[k] = u;
	return n + 1;
}

/* Of tid's ranges ended by id on a thread read before their begin (early_add): on no
 * stack, but their whole times are known. */
static bool early_holds(const struct urange *u, uint32_t tid, uint64_t t)
{
	return u->tid == tid && u->start_ns <= t && t < u->end_ns;
}

static bool early_any(uint32_t tid, uint64_t t)
{
	for (size_t i = 0; i < R.nearly; i++)
		if (early_holds(R.early[i], tid, t))
			return true;
	return false;
}

/* Into th (n of them), those open at t. */
static unsigned early_at(uint32_t tid, uint64_t t, struct urange **th, unsigned n)
{
	for (size_t i = 0; i < R.nearly; i++)
		if (early_holds(R.early[i], tid, t))
			n = insert_nested(th, n, R.early[i]);
	return n;
}

/* Crossing ranges: a launch read off its thread's ring (foreign) sees its stack now,
 * as far as it was open at the launch (ranges that ended since are not known); with
 * it, the thread's ranges ended early that held it. */
static struct rctx *ctx_crossing(const struct gt_event *ev, uint32_t tid, bool foreign,
				 const struct tstack *t, struct urange *const *p, unsigned np)
{
	struct urange *th[RCTX_MAX];
	unsigned nt = 0;

	for (uint32_t i = 0; t && i < t->n && nt < RCTX_MAX; i++)
		if (!foreign || t->r[i]->start_ns <= ev->start_ns)
			th[nt++] = t->r[i];
	nt = early_at(tid, ev->start_ns, th, nt);
	return np || nt ? ctx_new(p, np, th, nt) : NULL;
}

struct rctx *ranges__at_launch(const struct gt_event *ev, uint32_t tid, bool foreign)
{
	struct urange *p[RCTX_MAX];
	struct tstack *t = R.threads ? thread(tid, false) : NULL;
	bool all_open = true;
	unsigned np = R.nprocess ? process_at(ev->start_ns, p, RCTX_MAX, &all_open) : 0;
	unsigned nt = t ? t->n : 0;
	/* the thread's context is shared while it holds every open range */
	bool shared = t && all_open && !foreign;

	/* (a context of its own: shared ones hold the stack alone) */
	if ((foreign && t) || (R.nearly && early_any(tid, ev->start_ns)))
		return ctx_crossing(ev, tid, foreign, t, p, np);
	if (!np && !nt)
		return NULL;
	if (shared && t->cached && t->cached_version == t->version &&
	    t->cached_pversion == R.pversion)
		return ranges__ctx_get(t->cached);
	struct rctx *c = ctx_new(p, np, t ? t->r : NULL, nt);
	if (c && shared) {
		ranges__ctx_put(t->cached);
		t->cached = ranges__ctx_get(c);
		t->cached_version = t->version;
		t->cached_pversion = R.pversion;
	}
	return c;
}

void ranges__timed(const struct gt_event *ev, uint32_t tid)
{
	struct tstack *t = thread(tid, true);
	struct urange *u;

	if (!t || ev->end_ns <= ev->start_ns)
		return;
	if (!t->timed && !(t->timed = calloc(TIMED_MAX, sizeof(*t->timed))))
		return;
	if (t->ntimed == TIMED_MAX) {
		ranges__urange_put(t->timed[0]);
		memmove(t->timed, t->timed + 1, (TIMED_MAX - 1) * sizeof(*t->timed));
		t->ntimed--;
	}
	if (!(u = calloc(1, sizeof(*u))))
		return;
	*u = (struct urange){ .start_ns = ev->start_ns, .end_ns = ev->end_ns, .name = ev->name,
			      .tid = tid, .refs = 1, .begun = true, .ended_cycle = R.cycle };
	t->timed[t->ntimed++] = u;
	R.any_timed = true;
}

/* The process's ranges at t as far as read by now, with those of the
 * launch's first answer that are no longer kept (ended long ago). */
static unsigned process_again(uint64_t t, const struct rctx *c, struct urange **p)
{
	unsigned n = 0, old = c ? c->n - c->nthread : 0;
	bool all_open;

	n = process_at(t, p, RCTX_MAX, &all_open);
	for (unsigned i = 0; i < old && n < RCTX_MAX; i++) {
		unsigned k;

		for (k = 0; k < R.nprocess && R.process[k] != c->r[i]; k++)
			;
		if (k == R.nprocess)
			p[n++] = c->r[i];
	}
	/* by start, as the list is */
	for (unsigned a = 1; a < n; a++)
		for (unsigned b = a; b > 0 && p[b]->start_ns < p[b - 1]->start_ns; b--) {
			struct urange *x = p[b];
			p[b] = p[b - 1];
			p[b - 1] = x;
		}
	return n;
}

void ranges__complete(struct corr_entry *e)
{
	struct tstack *t = e->completed ? NULL : thread(e->tid, false);
	struct urange *p[RCTX_MAX], *th[RCTX_MAX], *timed[RCTX_MAX];
	const struct rctx *c = e->ctx;
	unsigned np, nt = 0, nb = 0, i = 0, j = 0, old_np = c ? c->n - c->nthread : 0;
	unsigned nstack = c ? c->nthread : 0;

	if (e->completed)
		return;
	e->completed = true;
	np = R.any_process ? process_again(e->start_ns, c, p) : old_np;
	if (!R.any_process && old_np)
		memcpy(p, c->r, old_np * sizeof(*p));
	for (uint32_t k = 0; t && k < t->ntimed && nt < RCTX_MAX; k++) {
		struct urange *u = t->timed[k];

		if (u->start_ns <= e->start_ns && e->start_ns < u->end_ns)
			timed[nt++] = u;
	}
	if (!nt && np == old_np && (!np || !memcmp(p, c->r, np * sizeof(*p))))
		return; /* the launch's own answer stands */
	/* timed ranges nest among themselves and with the stack: by start */
	for (unsigned a = 1; a < nt; a++)
		for (unsigned b = a; b > 0 && outer_of(timed[b], timed[b - 1]); b--) {
			struct urange *x = timed[b];
			timed[b] = timed[b - 1];
			timed[b - 1] = x;
		}
	while ((i < nstack || j < nt) && nb < RCTX_MAX) {
		if (j >= nt || (i < nstack && outer_of(c->r[old_np + i], timed[j])))
			th[nb++] = c->r[old_np + i++];
		else
			th[nb++] = timed[j++];
	}
	struct rctx *n = np + nb ? ctx_new(p, np, th, nb) : NULL;
	if (n || !(np + nb)) {
		ranges__ctx_put(e->ctx);
		e->ctx = n;
	}
}

static void timed_prune(void)
{
	for (size_t h = 0; R.threads && h <= R.threads_mask; h++)
		for (struct tstack **p = &R.threads[h], *t; (t = *p);) {
			uint32_t drop = 0;

			while (drop < t->ntimed &&
			       R.cycle - t->timed[drop]->ended_cycle > TIMED_KEEP_CYCLES)
				ranges__urange_put(t->timed[drop++]);
			if (drop) {
				memmove(t->timed, t->timed + drop,
					(t->ntimed - drop) * sizeof(*t->timed));
				t->ntimed -= drop;
			}
			if (t->gone && !t->ntimed) {
				*p = t->hnext;
				thread_free(t);
			} else {
				p = &t->hnext;
			}
		}
}

static uint32_t lane_for(uint64_t start, uint64_t end);

/* One range still open where the file ends, on its thread's row (or a lane):
 * it holds the calls made inside it, so it ends no sooner than the row's last. */
static void draw_unended(struct urange *u, uint64_t from_ns, uint64_t end_ns)
{
	static uint32_t key, yes;
	uint64_t row_end;

	if (u->drawn_unended || !u->begun || u->start_ns < from_ns)
		return;
	if (!key) {
		key = gt_str_intern("unended");
		yes = gt_str_intern("true");
	}
	struct gt_arg arg = { .key = key, .type = GT_ARG_JSON, .v.u = yes };
	row_end = place__row_end((uint32_t)gt_st.pid, u->tid);
	if (row_end > end_ns)
		end_ns = row_end;
	struct gt_event ev = { .start_ns = u->start_ns,
			       .end_ns = end_ns > u->start_ns ? end_ns : u->start_ns,
			       .name = u->name, .cat = GT_S_CAT_USER_ANNOTATION,
			       .type = GT_EV_HOST_SPAN };
	events__host(&ev, &arg, 1, u->lane ? lane_for(ev.start_ns, ev.end_ns) : u->tid);
	u->drawn_unended = true;
}

/* innermost first, as their ends would have come */
static void draw_stack_unended(struct tstack *t, uint64_t from_ns, uint64_t end_ns)
{
	for (uint32_t i = t->n; i-- > 0;)
		draw_unended(t->r[i], from_ns, end_ns);
}

void ranges__draw_thread_unended(uint32_t tid, uint64_t from_ns, uint64_t end_ns)
{
	struct tstack *t = R.threads ? thread(tid, false) : NULL;

	if (t)
		draw_stack_unended(t, from_ns, end_ns);
}

void ranges__draw_ended_after(const struct gt_event *ev, uint64_t from_ns, uint64_t end_ns)
{
	struct urange *u = ev->corr2 ? map_find(ev->corr2) : NULL;

	if (u && !u->end_ns && u->start_ns <= end_ns)
		draw_unended(u, from_ns, end_ns);
}

void ranges__draw_unended(uint64_t from_ns, uint64_t end_ns)
{
	for (size_t h = 0; R.threads && h <= R.threads_mask; h++)
		for (struct tstack *t = R.threads[h]; t; t = t->hnext)
			draw_stack_unended(t, from_ns, end_ns);
	for (size_t i = R.nprocess; i-- > 0;)
		if (!R.process[i]->end_ns)
			draw_unended(R.process[i], from_ns, end_ns);
}

void ranges__cycle_end(void)
{
	size_t keep = 0;

	R.cycle++;
	if (R.any_timed)
		timed_prune();
	for (size_t i = 0; i < R.nprocess; i++) {
		struct urange *u = R.process[i];

		if (u->end_ns && R.cycle - u->ended_cycle > PROCESS_KEEP_CYCLES) {
			if (map_find(u->id) == u)
				map_remove(u);
			ranges__urange_put(u);
			R.pversion++;
		} else {
			R.process[keep++] = u;
		}
	}
	R.nprocess = keep;
	keep = 0;
	for (size_t i = 0; i < R.nearly; i++) {
		struct urange *u = R.early[i];

		if (R.cycle - u->ended_cycle > PROCESS_KEEP_CYCLES) {
			if (map_find(u->id) == u)
				map_remove(u);
			ranges__urange_put(u);
		} else {
			R.early[keep++] = u;
		}
	}
	R.nearly = keep;
}

/* ---- lanes ---- */

/*
 * A lane is written as ranges end, in no order of start or end, so it keeps
 * its top-level slices (disjoint, by start; LANE_ROOTS at most: the oldest
 * two are then taken as one) and whether each has slices inside it, not
 * which. A range nests on it where it is apart from, around or inside each
 * of them; inside one only where that one holds nothing yet. Taking two as
 * one, or one's inside as full, only ever sends a range on to a later lane:
 * memory stays bounded, and what a lane holds always nests.
 */
#define LANE_ROOTS 64

struct lane_root {
	uint64_t start, end;
	bool parent; /* slices were drawn inside it */
};

struct range_lane {
	unsigned n;
	struct lane_root r[LANE_ROOTS];
};

/* Where [s, e] nests on l: -1 around or apart from every top-level slice,
 * the index of the one it is inside, -2 nowhere. */
static int lane_fit(const struct range_lane *l, uint64_t s, uint64_t e)
{
	int in = -1;

	for (unsigned i = 0; i < l->n; i++) {
		const struct lane_root *r = &l->r[i];

		if (r->end <= s || e <= r->start || (s <= r->start && r->end <= e))
			continue;
		if (r->start <= s && e <= r->end && !r->parent)
			in = (int)i;
		else
			return -2;
	}
	return in;
}

static void lane_add(struct range_lane *l, int in, uint64_t s, uint64_t e)
{
	unsigned k = 0, at;
	bool parent = false;

	if (in >= 0) {
		l->r[in].parent = true;
		return;
	}
	/* those it is around are inside it now (lane_fit: the others are apart) */
	for (unsigned i = 0; i < l->n; i++) {
		if (l->r[i].end <= s || e <= l->r[i].start)
			l->r[k++] = l->r[i];
		else
			parent = true;
	}
	l->n = k;
	if (l->n == LANE_ROOTS) {
		l->r[0].end = l->r[1].end;
		l->r[0].parent = true;
		memmove(&l->r[1], &l->r[2], (l->n - 2) * sizeof(l->r[0]));
		l->n--;
	}
	for (at = l->n; at > 0 && l->r[at - 1].start > s; at--)
		l->r[at] = l->r[at - 1];
	l->r[at] = (struct lane_root){ .start = s, .end = e, .parent = parent };
	l->n++;
}

/* The row of the first lane where [start, end] nests (past RANGE_LANES
 * crossing ones: the last). */
static uint32_t lane_for(uint64_t start, uint64_t end)
{
	unsigned k;

	for (k = 0; k < RANGE_LANES; k++) {
		struct range_lane *l = R.lanes[k];
		int in;

		if (!l && !(l = R.lanes[k] = calloc(1, sizeof(*l))))
			break;
		in = lane_fit(l, start, end);
		if (in == -2)
			continue;
		lane_add(l, in, start, end);
		break;
	}
	return RANGE_LANE_TID + (k < RANGE_LANES ? k + 1 : RANGE_LANES);
}

uint64_t ranges__draw_lane(const struct gt_event *ev, const struct gt_arg *args, unsigned nargs,
			   uint32_t tid)
{
	static uint32_t key;
	struct gt_arg a[GT_ARGS_MAX + 1];
	uint64_t end = ev->end_ns > ev->start_ns ? ev->end_ns : ev->start_ns;

	if (!key)
		key = gt_str_intern("tid");
	if (nargs > GT_ARGS_MAX)
		nargs = GT_ARGS_MAX;
	memcpy(a, args, nargs * sizeof(*a));
	/* off its thread's row: which thread began it */
	a[nargs] = (struct gt_arg){ .key = key, .type = GT_ARG_U64, .v.u = tid };
	return events__host(ev, a, nargs + 1, lane_for(ev->start_ns, end));
}

bool ranges__lane_row(uint32_t tid, char *name, size_t len, long long *sort)
{
	uint32_t k = tid - RANGE_LANE_TID;

	if (tid <= RANGE_LANE_TID || k > RANGE_LANES)
		return false;
	if (k == 1)
		snprintf(name, len, "ranges");
	else
		snprintf(name, len, "ranges %u", k);
	/* right below the main thread (0), above the others (their tids) */
	*sort = k;
	return true;
}

void ranges__lanes_forget(void)
{
	for (unsigned k = 0; k < RANGE_LANES; k++)
		if (R.lanes[k])
			R.lanes[k]->n = 0;
}
