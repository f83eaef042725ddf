/* SPDX-License-Identifier: MIT */
/*
 * Chrome Trace JSON of what the drain reads: host and device events, the
 * rows they sit on (process and thread names, sort order: "M" metadata
 * events), their args, and the two ends of an ac2g arrow. Everything is
 * appended to W.buf, placed for the paged file (events__fit); names and
 * event heads come from caches, so an event mostly copies bytes.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "inject/config.h"
#include "inject/registry.h"
#include "inject/ring.h"
#include "inject/stacks.h"
#include "internal.h"
#include "summary.h"
#include "inject/tables.h"

/* ---- small JSON helpers ---- */

/* Keys and names repeat in every event: the quoted, escaped form of each
 * string id is kept (direct-mapped by id; the drain thread's own), so an
 * event copies bytes instead of escaping them again. */
#define SID_CACHE     512
#define SID_CACHE_MAX 64

struct sid_json {
	char text[SID_CACHE_MAX];
	uint32_t id;
	uint8_t len;
};
GT_TABLE(struct sid_json, sid_cache, SID_CACHE);

/* Out of a cache: whole 32-byte blocks, fixed-size copies the compiler turns
 * into vector moves (a variable-length copy becomes "rep movs", slower to
 * start than these strings take); the slack past len is in the buffer's
 * spare capacity and overwritten next. */
static inline void put_cached(struct jbuf *b, const char *text, size_t len)
{
	size_t blocks = (len + 31) & ~(size_t)31;
	char *d;

	if (gt_unlikely(b->len + blocks > b->cap) && jbuf__reserve(b, blocks))
		return;
	d = b->p + b->len;
	for (size_t i = 0; i < blocks; i += 32)
		memcpy(d + i, text + i, 32);
	b->len += len;
}

/* The same through a cursor, into room reserved before. */
static inline char *cur_cached(char *p, const char *text, size_t len)
{
	for (size_t i = 0; i < len; i += 32)
		memcpy(p + i, text + i, 32);
	return p + len;
}

static __attribute__((noinline)) void put_sid_slow(struct jbuf *b, uint32_t id)
{
	struct sid_json *c = &sid_cache[id & (SID_CACHE - 1)];
	size_t n, start = b->len;
	const char *s = gt_str_get(id, &n);

	json__str(b, s, n);
	if (!b->oom && b->len - start <= SID_CACHE_MAX) {
		c->id = id;
		c->len = (uint8_t)(b->len - start);
		memcpy(c->text, b->p + start, c->len);
	}
}

static inline void put_sid(struct jbuf *b, uint32_t id)
{
	const struct sid_json *c = &sid_cache[id & (SID_CACHE - 1)];

	if (gt_likely(c->id == id && c->len))
		put_cached(b, c->text, c->len);
	else
		put_sid_slow(b, id);
}

/*
 * In the paged file layout no event may straddle a page boundary of the
 * file (see writer/output.h): the one just formatted is moved to the next
 * page, spaces before it, if it would. Events longer than a page stay.
 */
static __attribute__((noinline)) void fit_move(size_t s, size_t e, uint64_t fs)
{
	size_t pad = OUT_PAGE - fs % OUT_PAGE;

	if (jbuf__reserve(&W.buf, pad))
		return;
	memmove(W.buf.p + s + pad, W.buf.p + s, e - s);
	memset(W.buf.p + s, ' ', pad);
	W.buf.len += pad;
}

/* (Inline in begin_event: a call for each event was ~35 of a flow end's ~200
 * instructions; the move, about one event in twenty, is out of line.) */
static inline __attribute__((always_inline)) void fit(void)
{
	size_t s = W.ev_start, e = W.buf.len;
	uint64_t fs = W.buf_at + s;

	_Static_assert((OUT_PAGE & (OUT_PAGE - 1)) == 0, "pages: a power of two");
	/* first and last byte on different pages: their bits above the page's differ;
	 * tested first, as it is false for all but one event in ~20 (the other tests hold
	 * for nearly every event: tested first, all four were made each time) */
	if (gt_unlikely((fs ^ (W.buf_at + e - 1)) >= OUT_PAGE && W.paged && e > s &&
			e - s <= OUT_PAGE))
		fit_move(s, e, fs);
}

void events__fit(void)
{
	fit();
}

static inline __attribute__((always_inline)) void begin_event(struct jbuf *b)
{
	if (b == &W.buf) {
		fit();
		W.ev_start = W.buf.len;
	}
	if (W.any_event)
		jbuf__lit(b, ",\n");
	W.any_event = true;
}

/* begin_event for an event written through a cursor: its ",\n" into the room taken
 * for it (room, and 2 more), not checked and counted on its own (~5 instructions an
 * event, six events a launch). NULL: no memory (the file is cut there, b->oom). */
static inline __attribute__((always_inline)) char *begin_event_cur(size_t room)
{
	bool comma = W.any_event;
	char *p;

	fit();
	W.ev_start = W.buf.len;
	W.any_event = true;
	if (gt_unlikely(W.buf.len + room + 2 > W.buf.cap) && jbuf__reserve(&W.buf, room + 2))
		return NULL;
	p = W.buf.p + W.buf.len;
	if (comma) {
		memcpy(p, ",\n", 2);
		p += 2;
	}
	return p;
}

const char *events__next(const char **q, const char *end, size_t *n)
{
	while (*q < end) {
		const char *nl = memchr(*q, '\n', (size_t)(end - *q)), *stop = nl ? nl : end;
		const char *ev = *q;

		*q = stop + 1;
		while (ev < stop && *ev == ' ')
			ev++;
		*n = (size_t)(stop - ev);
		if (*n && ev[*n - 1] == ',')
			(*n)--;
		if (*n)
			return ev;
	}
	return NULL;
}

void events__put_formatted(const char *ev, size_t n)
{
	begin_event(&W.buf);
	jbuf__put(&W.buf, ev, n);
}

void events__meta(struct jbuf *b, const char *what, uint32_t pid, uint32_t tid,
		  const char *key, const char *sval, size_t slen, long long ival)
{
	begin_event(b);
	jbuf__lit(b, "{\"ph\":\"M\",\"name\":\"");
	jbuf__put(b, what, strlen(what));
	jbuf__lit(b, "\",\"pid\":");
	json__u64(b, pid);
	jbuf__lit(b, ",\"tid\":");
	json__u64(b, tid);
	jbuf__lit(b, ",\"args\":{\"");
	jbuf__put(b, key, strlen(key));
	jbuf__lit(b, "\":");
	if (sval)
		json__str(b, sval, slen);
	else
		json__i64(b, ival);
	jbuf__lit(b, "}}");
}

/* The capture window this file holds (what: "window"), or the span a
 * flight recorder's dump holds (what: "dump"), a slice on a row of its own
 * above the process's threads (tid 0, no thread's): it stays visible, and
 * tells them apart, once a run merges the files of every window or dump. */
void events__capture_mark(struct jbuf *b, const char *what, uint32_t n, uint64_t open_ns,
			  uint64_t close_ns)
{
	uint32_t pid = (uint32_t)gt_st.pid;
	char name[48];
	int len = snprintf(name, sizeof(name), "%s %u",
			   strcmp(what, "dump") ? "capture window" : "flight recorder dump", n);

	events__meta(b, "thread_name", pid, 0, "name", "capture windows", 15, 0);
	events__meta(b, "thread_sort_index", pid, 0, "sort_index", NULL, 0, -1);
	begin_event(b);
	jbuf__lit(b, "{\"ph\":\"X\",\"cat\":\"gputrace\",\"name\":");
	json__str(b, name, (size_t)len);
	jbuf__lit(b, ",\"pid\":");
	json__u64(b, pid);
	jbuf__lit(b, ",\"tid\":0,\"ts\":");
	json__us(b, open_ns);
	jbuf__lit(b, ",\"dur\":");
	json__us(b, close_ns > open_ns ? close_ns - open_ns : 0);
	jbuf__lit(b, ",\"args\":{\"");
	jbuf__put(b, what, strlen(what));
	jbuf__lit(b, "\":");
	json__u64(b, n);
	jbuf__lit(b, "}}");
}

void events__put_sid(struct jbuf *b, uint32_t id)
{
	put_sid(b, id);
}

/* ---- host thread names ---- */

static bool tid_seen(uint32_t tid)
{
	if (W.ntids * 2 >= W.tids_mask) {
		size_t cap = W.tids ? (W.tids_mask + 1) * 2 : 256;
		uint32_t *t = calloc(cap, sizeof(*t));
		if (!t)
			return true;
		for (size_t i = 0; W.tids && i <= W.tids_mask; i++) {
			if (!W.tids[i])
				continue;
			size_t h = (W.tids[i] * 2654435761u) & (cap - 1);
			while (t[h])
				h = (h + 1) & (cap - 1);
			t[h] = W.tids[i];
		}
		free(W.tids);
		W.tids = t;
		W.tids_mask = cap - 1;
	}
	size_t h = (tid * 2654435761u) & W.tids_mask;
	while (W.tids[h]) {
		if (W.tids[h] == tid)
			return true;
		h = (h + 1) & W.tids_mask;
	}
	W.tids[h] = tid;
	W.ntids++;
	return false;
}

/* The name of a live thread now, or "". */
static ssize_t proc_comm(uint32_t tid, char *name, size_t len)
{
	char path[64];
	ssize_t n = -1;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%u/comm", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, name, len - 1);
		close(fd);
	}
	while (n > 0 && (name[n - 1] == '\n' || name[n - 1] == 0))
		n--;
	return n;
}

/* A name a ring kept (TASK_COMM_LEN bytes, not terminated when full) into name. */
static ssize_t kept_name(const char kept[16], char *name)
{
	size_t n = strnlen(kept, 16);

	memcpy(name, kept, n);
	return (ssize_t)n;
}

/* The name a dead ring kept as its thread exited (0: none, or alive). */
static ssize_t exit_name(const struct ring *r, char *name)
{
	return atomic_load_explicit(&r->dead, memory_order_acquire) ? kept_name(r->name_exit, name)
								     : 0;
}

/* Threads looked at for a name, the latest to exit first: the work of a thread
 * read after its ring comes soon after (a bound: the cost stays flat however many
 * threads have exited). */
#define DEAD_NAMES 256

/* The name a recently exited thread had, as its ring kept it (0: none). */
static ssize_t dead_thread_name(uint32_t tid, char *name)
{
	for (size_t i = W.ndead, k = 0; i-- > 0 && k < DEAD_NAMES; k++)
		if (W.dead[i].tid == tid)
			return kept_name(W.dead[i].name, name);
	return 0;
}

/* A thread's row is named at its first event: from /proc while it lives,
 * else from what its ring kept (as it exited, or at its first event). */
static __attribute__((noinline)) void name_new_thread(uint32_t tid)
{
	const struct ring *r = W.draining && (uint32_t)W.draining->tid == tid ? W.draining : NULL;
	char name[64];
	long long sort;
	ssize_t n;

	W.tid_named_last = tid;
	if (tid_seen(tid))
		return;
	if (ranges__lane_row(tid, name, sizeof(name), &sort)) {
		events__meta(&W.buf, "thread_name", (uint32_t)gt_st.pid, tid, "name", name,
			     strlen(name), 0);
		events__meta(&W.buf, "thread_sort_index", (uint32_t)gt_st.pid, tid, "sort_index",
			     NULL, 0, sort);
		return;
	}
	n = r ? exit_name(r, name) : 0;
	if (n <= 0)
		n = proc_comm(tid, name, sizeof(name));
	if (n <= 0 && !r) {
		/* gone, its first event in another ring (a CUPTI buffer request's): its
		 * own ring, still listed, or kept of it once freed */
		for (r = atomic_load_explicit(&gt_st.rings, memory_order_acquire); r; r = r->next)
			if ((uint32_t)r->tid == tid)
				break;
		n = r ? exit_name(r, name) : dead_thread_name(tid, name);
	}
	if (n <= 0 && r)
		n = kept_name(r->name_start, name);
	if (n <= 0)
		n = snprintf(name, sizeof(name), "thread %u", tid);
	events__meta(&W.buf, "thread_name", (uint32_t)gt_st.pid, tid, "name", name, (size_t)n, 0);
	/* main thread first, then the lanes (1..RANGE_LANES), then the others by
	 * tid: past the lanes, as a PID namespace's tids are small (pid 1's
	 * threads 2, 3, ...: thread 3 sat with, and above, lane 3) */
	events__meta(&W.buf, "thread_sort_index", (uint32_t)gt_st.pid, tid, "sort_index", NULL, 0,
		     tid == (uint32_t)gt_st.pid ? 0 : (long long)tid + RANGE_LANES);
}

static inline void name_thread(uint32_t tid)
{
	if (tid != W.tid_named_last) /* a ring's events come in a run: no lookup each */
		name_new_thread(tid);
}

void events__name_rows(void)
{
	uint32_t nd = registry__devices(), nt = registry__tracks(), gen = registry__names_gen();

	/* a row was renamed (a plug-in named its device after using it): name
	 * them all again; viewers keep the last name */
	if (gen != W.names_gen) {
		W.names_gen = gen;
		W.devices_named = W.tracks_named = 0;
	}

	for (uint32_t d = W.devices_named + 1; d <= nd; d++) {
		size_t n;
		const char *s;

		if (!registry__device_shown(d))
			continue; /* a fork child's of its parent's, unused here */
		s = gt_str_get(registry__device_name(d), &n);

		events__meta(&W.buf, "process_name", device_pid(d), 0, "name", s, n, 0);
		events__meta(&W.buf, "process_sort_index", device_pid(d), 0, "sort_index", NULL, 0,
		     1000 + d);
	}
	W.devices_named = nd;
	for (uint32_t t = W.tracks_named + 1; t <= nt; t++) {
		const struct gt_row *row = registry__track(t);
		size_t n;
		const char *s;

		if (!row || row->tid == 1 || !registry__track_shown(t))
			continue; /* the device's own row is the process (or a parent's) */
		s = gt_str_get(row->name, &n);
		events__meta(&W.buf, "thread_name", device_pid(row->device), row->tid, "name", s, n, 0);
		events__meta(&W.buf, "thread_sort_index", device_pid(row->device), row->tid, "sort_index",
		     NULL, 0, row->sort);
	}
	W.tracks_named = nt;
}

/* ---- events ---- */

/* What the writer adds to an event's own args. */
struct args_extra {
	uint64_t corr, corr2;  /* the causing calls (0: none) */
	int64_t device, stream; /* Kineto's ints for device work (-1: none) */
	const struct span_ranges *ranges; /* device work: its launches' user ranges */
	bool device_row; /* on a device's row: its ids kept apart from the host calls' */
};

#define NO_EXTRA(corr) ((struct args_extra){ (corr), 0, -1, -1, NULL })

/* Inlined: the key's length is a constant, its copy a move or two. */
static inline __attribute__((always_inline)) void put_extra(struct jbuf *b, bool *first,
							    const char *key, size_t klen)
{
	if (!*first)
		jbuf__ch(b, ',');
	*first = false;
	jbuf__put(b, key, klen);
}

#define PUT_EXTRA(b, first, key, v) \
	(put_extra((b), (first), "\"" key "\":", sizeof(key) + 2), json__i64((b), (v)))

/* Ids that count up by one (a thread's correlation ids, call after call; the
 * arrows' ids) or repeat (the run that a list's kernels all link to): the digits
 * of the last one written are kept, and the next is a copy of them, or made from
 * them by adding one to the last digit (a carry, one time in ten, formats it
 * anew). */
struct counter_text {
	uint64_t v;
	size_t len; /* 0: none kept */
	char text[32];
};

/* the host calls' ids; device work's "correlation" (its run's or its append's) and
 * "correlation2" (a run's kernel's append), each as a row of their own */
static struct counter_text corr_text, device_corr_text, device_corr2_text;

#define CORR_ROOM 32 /* what cur_counter writes at most, its block's slack included */

static inline char *cur_counter(struct counter_text *t, char *p, uint64_t v)
{
	char *start = p;

	if (gt_likely(v == t->v + 1 && t->len && t->text[t->len - 1] != '9')) {
		char last = (char)(t->text[t->len - 1] + 1);

		/* copied before the kept digit is stored: a block loaded right
		 * after a byte stored into it would wait for the store */
		p = cur_cached(p, t->text, t->len);
		p[-1] = last;
		t->text[t->len - 1] = last;
		t->v = v;
		return p;
	}
	if (v == t->v && t->len)
		return cur_cached(p, t->text, t->len);
	p = json__put_u64(p, v);
	t->v = v;
	t->len = (size_t)(p - start);
	memcpy(t->text, start, t->len);
	return p;
}

static inline void put_counter(struct jbuf *b, struct counter_text *t, uint64_t v)
{
	if (gt_likely(b->len + CORR_ROOM <= b->cap) || !jbuf__reserve(b, CORR_ROOM))
		b->len = (size_t)(cur_counter(t, b->p + b->len, v) - b->p);
}

/* args as JSON members, "key":value,...; true if hardware metrics were left
 * for put_metrics. x: the writer's own device and stream, if it writes them; a
 * backend's value that is not an integer then keeps its place as "device_label"
 * or "stream_label" (a plug-in's "compute", a queue handle). */
static bool put_members(struct jbuf *b, const struct gt_arg *args, unsigned nargs, bool *first,
			const struct args_extra *x)
{
	char stack[4096];
	bool metrics = false;

	for (unsigned i = 0; i < nargs; i++) {
		const struct gt_arg *a = &args[i];

		if (gt_unlikely(a->type == GT_ARG_METRIC)) {
			metrics = true;
			continue;
		}
		if (!*first)
			jbuf__ch(b, ',');
		*first = false;
		if (x && a->key == GT_S_ARG_DEVICE && x->device >= 0)
			jbuf__lit(b, "\"device_label\"");
		else if (x && a->key == GT_S_ARG_STREAM && x->stream >= 0)
			jbuf__lit(b, "\"stream_label\"");
		else
			put_sid(b, a->key);
		jbuf__ch(b, ':');
		if (a->key == GT_S_ARG_STACK && stacks__format(a->v.u, stack, sizeof(stack)) >= 0) {
			json__str(b, stack, strlen(stack));
			continue;
		}
		switch (a->type) {
		case GT_ARG_I64:
			json__i64(b, a->v.i);
			break;
		case GT_ARG_U64:
			json__u64(b, a->v.u);
			break;
		case GT_ARG_F64:
			json__f64(b, a->v.f);
			break;
		case GT_ARG_STR:
			put_sid(b, (uint32_t)a->v.u);
			break;
		case GT_ARG_HEX:
			json__hex(b, a->v.u);
			break;
		case GT_ARG_JSON: { /* checked by whoever made it: copied as it is */
			size_t n, from = b->len;
			const char *s = gt_str_get((uint32_t)a->v.u, &n);

			if (n)
				jbuf__put(b, s, n);
			else
				jbuf__lit(b, "null");
			/* but on one line: begin_event's ",\n" is the only newline in
			 * events (the file's placement and the flight recorder split
			 * events there); in valid JSON a raw one is only whitespace */
			for (size_t i = from; i < b->len; i++)
				if (b->p[i] == '\n' || b->p[i] == '\r')
					b->p[i] = ' ';
			break;
		}
		case GT_ARG_DIM3:
			jbuf__ch(b, '[');
			json__u64(b, (uint32_t)a->v.u);
			jbuf__ch(b, ',');
			json__u64(b, (a->v.u >> 32) & 0xffff);
			jbuf__ch(b, ',');
			json__u64(b, a->v.u >> 48);
			jbuf__ch(b, ']');
			break;
		default:
			jbuf__lit(b, "null");
		}
	}
	return metrics;
}

/* Hardware metrics of a span, one nested object: "metrics":{"GpuBusy %":99.5,...} */
static void put_metrics(struct jbuf *b, const struct gt_arg *args, unsigned nargs, bool *first)
{
	bool any = false;

	for (unsigned i = 0; i < nargs; i++) {
		if (args[i].type != GT_ARG_METRIC)
			continue;
		if (any)
			jbuf__ch(b, ',');
		else if (*first)
			jbuf__lit(b, "\"metrics\":{");
		else
			jbuf__lit(b, ",\"metrics\":{");
		any = true;
		put_sid(b, args[i].key);
		jbuf__ch(b, ':');
		json__f64(b, args[i].v.f);
	}
	if (any) {
		jbuf__ch(b, '}');
		*first = false;
	}
}

/* "range": the innermost range of ctx, "ranges": all of them, outermost
 * first (prefix "exec_" for the ranges of the call that ran it). */
static void put_ranges(struct jbuf *b, bool *first, const struct rctx *c, bool exec)
{
	if (!c || !c->n)
		return;
	if (!*first)
		jbuf__ch(b, ',');
	*first = false;
	if (exec)
		jbuf__lit(b, "\"exec_range\":");
	else
		jbuf__lit(b, "\"range\":");
	put_sid(b, ranges__name(c->r[c->n - 1]));
	if (exec)
		jbuf__lit(b, ",\"exec_ranges\":[");
	else
		jbuf__lit(b, ",\"ranges\":[");
	for (unsigned i = 0; i < c->n; i++) {
		if (i)
			jbuf__ch(b, ',');
		put_sid(b, ranges__name(c->r[i]));
	}
	jbuf__ch(b, ']');
}

/*
 * A span's args up to its correlation ids, kept as text: a program makes the same
 * call, and launches the same kernel with the same sizes onto the same queue, again
 * and again (formatting them was a third of the drain's instructions on launches
 * back to back). Direct-mapped; only args whose text their values decide: no
 * stack (an id of a stack, formatted anew) and no hardware metric.
 */
#define ARGS_MEMO_BITS 6
#define ARGS_MEMO      (1 << ARGS_MEMO_BITS)
#define ARGS_MEMO_ARGS 8
#define ARGS_MEMO_TEXT 192 /* whole 32-byte blocks (put_cached) */

struct args_memo {
	struct gt_arg args[ARGS_MEMO_ARGS];
	int64_t device, stream;
	unsigned nargs;
	size_t len; /* 0: empty */
	char text[ARGS_MEMO_TEXT];
};
GT_TABLE(struct args_memo, args_memo, ARGS_MEMO);

static struct args_memo *args_memo_slot(const struct gt_arg *args, unsigned nargs,
					const struct args_extra *x)
{
	uint64_t k = ((uint64_t)args[0].key << 32 | nargs) * 0x9e3779b97f4a7c15ull +
		     (args[nargs - 1].v.u ^ (uint64_t)x->stream << 20 ^ (uint64_t)x->device << 40) *
			     0xc2b2ae3d27d4eb4full;

	return &args_memo[k >> (64 - ARGS_MEMO_BITS)]; /* the top bits mix every input */
}

static bool args_memo_hit(const struct args_memo *m, const struct gt_arg *args,
			  unsigned nargs, const struct args_extra *x)
{
	uint64_t diff = 0;

	if (m->nargs != nargs || !m->len || m->device != x->device || m->stream != x->stream)
		return false;
	/* key and type as one word, the value as another, every arg without a branch: a
	 * hit (the common case) reads them all anyway (callgrind: ~145 -> ~50 a kernel) */
	for (unsigned i = 0; i < nargs; i++) {
		uint64_t a, b;

		memcpy(&a, &m->args[i], sizeof(a));
		memcpy(&b, &args[i], sizeof(b));
		diff |= (a ^ b) | (m->args[i].v.u ^ args[i].v.u);
	}
	return !diff;
}

static bool args_memo_fits(const struct gt_arg *args, unsigned nargs)
{
	for (unsigned i = 0; i < nargs; i++)
		if (args[i].type == GT_ARG_METRIC || args[i].key == GT_S_ARG_STACK)
			return false;
	return true;
}

/* The members, metrics and Kineto's device and stream: all but the ids and ranges. */
static void put_fixed_args(struct jbuf *b, const struct gt_arg *args, unsigned nargs,
			   bool *first, const struct args_extra *x)
{
	struct args_memo *m = nargs && nargs <= ARGS_MEMO_ARGS ? args_memo_slot(args, nargs, x)
							       : NULL;
	size_t start = b->len;

	if (m && args_memo_hit(m, args, nargs, x)) {
		put_cached(b, m->text, m->len);
		*first = false;
		return;
	}
	if (gt_unlikely(put_members(b, args, nargs, first, x)))
		put_metrics(b, args, nargs, first);
	if (x->device >= 0)
		PUT_EXTRA(b, first, "device", x->device);
	if (x->stream >= 0)
		PUT_EXTRA(b, first, "stream", x->stream);
	if (m && !b->oom && b->len > start && b->len - start <= ARGS_MEMO_TEXT &&
	    args_memo_fits(args, nargs)) {
		memcpy(m->args, args, nargs * sizeof(*args));
		m->nargs = nargs;
		m->device = x->device;
		m->stream = x->stream;
		m->len = b->len - start;
		memcpy(m->text, b->p + start, m->len);
	}
}

/* What put_args_fast writes at most, the blocks' slack included. */
#define ARGS_FAST_ROOM (sizeof(",\"args\":{") + ARGS_MEMO_TEXT + sizeof(",\"correlation\":") + \
			CORR_ROOM + sizeof(",\"correlation2\":") + CORR_ROOM + 1)

/* A range around the span, which its args name (put_ranges) */
static inline bool ranges_open(const struct args_extra *x)
{
	return x->ranges && ((x->ranges->ctx && x->ranges->ctx->n) ||
			     (x->ranges->exec && x->ranges->exec->n));
}

/*
 * The common args, kept formatted (args_memo) and with no ranges around them, written
 * as put_args writes them through one cursor into room taken once (a launch's two
 * events: a check and a length update per piece were ~150 instructions of each
 * put_args, callgrind). args_fast: their memo, or NULL (the general path's case).
 */
static inline const struct args_memo *args_fast(const struct gt_arg *args, unsigned nargs,
						const struct args_extra *x)
{
	const struct args_memo *m;

	if (!nargs || nargs > ARGS_MEMO_ARGS || ranges_open(x))
		return NULL;
	m = args_memo_slot(args, nargs, x);
	return args_memo_hit(m, args, nargs, x) ? m : NULL;
}

/* A span's args from their correlation ids on, closing them, through p (after
 * the args' own text, with room for them there) */
static inline __attribute__((always_inline)) char *cur_args_end(char *p,
								    const struct args_extra *x)
{
	if (x->corr) {
		memcpy(p, ",\"correlation\":", 15);
		p = cur_counter(x->device_row ? &device_corr_text : &corr_text, p + 15, x->corr);
	}
	if (x->corr2 && x->corr2 != x->corr) {
		memcpy(p, ",\"correlation2\":", 16);
		p = cur_counter(&device_corr2_text, p + 16, x->corr2);
	}
	*p++ = '}';
	return p;
}

/* ... through p, with ARGS_FAST_ROOM there */
static inline char *cur_args_fast(char *p, const struct args_memo *m, const struct args_extra *x)
{
	memcpy(p, ",\"args\":{", 9);
	p = cur_cached(p + 9, m->text, m->len); /* (a hit's text is never empty) */
	return cur_args_end(p, x);
}

static inline bool put_args_fast(struct jbuf *b, const struct gt_arg *args, unsigned nargs,
				 const struct args_extra *x)
{
	const struct args_memo *m = args_fast(args, nargs, x);

	if (!m || (gt_unlikely(b->len + ARGS_FAST_ROOM > b->cap) &&
		   jbuf__reserve(b, ARGS_FAST_ROOM)))
		return false;
	b->len = (size_t)(cur_args_fast(b->p + b->len, m, x) - b->p);
	return true;
}

static void put_args(struct jbuf *b, const struct gt_arg *args, unsigned nargs,
		     struct args_extra x)
{
	bool first = true;

	if (!nargs && !x.corr && !x.corr2 && x.device < 0 && x.stream < 0 &&
	    (!x.ranges || (!x.ranges->ctx && !x.ranges->exec)))
		return;
	if (put_args_fast(b, args, nargs, &x))
		return;
	jbuf__lit(b, ",\"args\":{");
	put_fixed_args(b, args, nargs, &first, &x);
	if (x.corr)
		put_extra(b, &first, "\"correlation\":", 14),
			put_counter(b, x.device_row ? &device_corr_text : &corr_text, x.corr);
	if (x.corr2 && x.corr2 != x.corr)
		put_extra(b, &first, "\"correlation2\":", 15),
			put_counter(b, &device_corr2_text, x.corr2);
	if (x.ranges) {
		put_ranges(b, &first, x.ranges->ctx, false);
		put_ranges(b, &first, x.ranges->exec, true);
	}
	jbuf__ch(b, '}');
}

void events__put_props(struct jbuf *b, const struct gt_arg *p, unsigned n, bool comma)
{
	bool first = !comma;

	put_members(b, p, n, &first, NULL);
}

/* A device's ordinal: the "id" its backend gave it, else its place in the
 * trace's device list. Props are only ever appended (registry.c), so the
 * answer for (device, their count) lasts: kept for the last device asked
 * (every kernel asks: ~40 instructions a kernel on the drain, callgrind). */
static inline int64_t device_ordinal(uint32_t device)
{
	static uint32_t id_key, memo_device, memo_n = UINT32_MAX;
	static int64_t memo;
	uint32_t n;
	const struct gt_arg *p = registry__device_props(device, &n);
	int64_t v = device ? (int64_t)device - 1 : 0;

	if (gt_likely(device == memo_device && n == memo_n))
		return memo;
	if (!id_key)
		id_key = gt_str_intern("id");
	for (uint32_t i = 0; i < n; i++)
		if (p[i].key == id_key && p[i].type != GT_ARG_STR) {
			v = p[i].v.i;
			break;
		}
	if (id_key) {
		memo_device = device;
		memo_n = n;
		memo = v;
	}
	return v;
}

/* Kernels, copies, fills and syncs carry integer args.device and
 * args.stream, as Kineto writes them (HTA takes stream >= 0 for GPU work):
 * a backend's own, else the device's ordinal and the row's number. */
static struct args_extra device_extra(const struct gt_event *ev, const struct gt_arg *args,
				      unsigned nargs, const struct gt_row *row)
{
	struct args_extra x = { ev->corr, ev->corr2, -1, -1, NULL, true };
	bool work = ev->cat == GT_S_CAT_KERNEL || ev->cat == GT_S_CAT_GPU_MEMCPY ||
		    ev->cat == GT_S_CAT_GPU_MEMSET || ev->cat == GT_S_CAT_GPU_SYNC ||
		    ev->cat == GT_S_CAT_ZE_SYNC;
	/* A backend's own integer device and stream, else ours (Kineto's tools read
	 * them as integers only: a CUDA context-wide sync's stream -1 included); both
	 * keys in one pass, the first arg of a key deciding (1: its own integer) */
	int dev = -1, stream = -1;

	if (!work || !row)
		return x;
	for (unsigned i = 0; i < nargs; i++) {
		uint32_t k = args[i].key;

		/* (one test for both keys on the common path: neither is there) */
		if (gt_likely(k != GT_S_ARG_DEVICE && k != GT_S_ARG_STREAM))
			continue;
		if (k == GT_S_ARG_DEVICE && dev < 0)
			dev = args[i].type == GT_ARG_I64 || args[i].type == GT_ARG_U64;
		else if (k == GT_S_ARG_STREAM && stream < 0)
			stream = args[i].type == GT_ARG_I64 || args[i].type == GT_ARG_U64;
	}
	if (dev <= 0)
		x.device = device_ordinal(row->device);
	if (stream <= 0)
		x.stream = row->tid;
	return x;
}

/* An event's head up to "ts" depends on (ph, cat, name, pid, tid) only, and
 * a program repeats few of them: kept formatted, direct-mapped. Stale
 * entries cannot match after a fork (the pid differs). */
#define HEAD_CACHE_BITS 8
#define HEAD_CACHE     (1 << HEAD_CACHE_BITS)
#define HEAD_CACHE_MAX 224

struct head_json {
	char text[HEAD_CACHE_MAX];
	uint32_t cat, name, pid, tid;
	char ph;
	uint8_t len;
};
GT_TABLE(struct head_json, head_cache, HEAD_CACHE);

static struct head_json *head_slot(char ph, const struct gt_event *ev, uint32_t pid, uint32_t tid)
{
	uint64_t k = (((uint64_t)tid << 32) | ev->name) * 0x9e3779b97f4a7c15ull +
		     (((uint64_t)pid << 32) | ev->cat) * 0xc2b2ae3d27d4eb4full + (uint8_t)ph;

	return &head_cache[k >> (64 - HEAD_CACHE_BITS)]; /* the top bits mix every input */
}

static __attribute__((noinline)) void put_head_slow(struct jbuf *b, const char *ph,
						    const struct gt_event *ev, uint32_t pid,
						    uint32_t tid)
{
	struct head_json *c = head_slot(ph[0], ev, pid, tid);
	size_t start = b->len;

	jbuf__lit(b, "{\"ph\":\"");
	jbuf__put(b, ph, strlen(ph));
	jbuf__lit(b, "\",\"cat\":");
	put_sid(b, ev->cat);
	jbuf__lit(b, ",\"name\":");
	put_sid(b, ev->name);
	jbuf__lit(b, ",\"pid\":");
	json__u64(b, pid);
	jbuf__lit(b, ",\"tid\":");
	json__u64(b, tid);
	jbuf__lit(b, ",\"ts\":");
	if (!b->oom && b->len - start <= HEAD_CACHE_MAX && ph[0] && !ph[1]) {
		*c = (struct head_json){ .cat = ev->cat, .name = ev->name, .pid = pid, .tid = tid,
					 .ph = ph[0], .len = (uint8_t)(b->len - start) };
		memcpy(c->text, b->p + start, c->len);
	}
}

/* The timestamps' leading digits (the cycle's own, as the caches above). */
static struct json_ts_prefix ts_prefix;

static void put_head(struct jbuf *b, const char *ph, const struct gt_event *ev, uint32_t pid,
		     uint32_t tid, uint64_t ts)
{
	const struct head_json *c = head_slot(ph[0], ev, pid, tid);

	begin_event(b);
	if (gt_likely(c->len && c->name == ev->name && c->tid == tid && c->cat == ev->cat &&
		      c->pid == pid && c->ph == ph[0]))
		put_cached(b, c->text, c->len);
	else
		put_head_slow(b, ph, ev, pid, tid);
	json__ts(b, ts, &ts_prefix);
}

/*
 * A span's args whose text put_span_fast writes without put_args: most host calls' one
 * integer arg (the call's result), its key's text cached (sid_cache), where nothing
 * else but the correlation ids follows it (no device or stream of ours, no range).
 * NULL: none such (the args memo's case, args_fast).
 */
static inline const struct sid_json *one_int_arg(const struct gt_arg *a, unsigned nargs,
						 const struct args_extra *x)
{
	const struct sid_json *k;

	if (nargs != 1 || (a->type != GT_ARG_I64 && a->type != GT_ARG_U64) ||
	    a->key == GT_S_ARG_STACK || x->device >= 0 || x->stream >= 0 || ranges_open(x))
		return NULL;
	k = &sid_cache[a->key & (SID_CACHE - 1)];
	return k->id == a->key && k->len ? k : NULL;
}

/* What put_span_fast writes at most, the blocks' slack included: the args as the
 * memo keeps them, or one integer arg (its key's blocks, ':' and the number). */
#define SPAN_FAST_ROOM (HEAD_CACHE_MAX + JSON_NUM_ROOM + 7 + JSON_NUM_ROOM + ARGS_FAST_ROOM + 1)
_Static_assert(SID_CACHE_MAX + 1 + JSON_NUM_ROOM <= ARGS_MEMO_TEXT,
	       "one integer arg fits the room of a memo's args");

/*
 * A span whose head is cached, with args as text (up to their correlation ids; or one
 * arg's key, `one` its integer value): written as put_head, its dur, put_args and the
 * closing brace write it, through one cursor into room taken once (each jbuf helper
 * checked for room and, as its stores may alias W.buf itself, reloaded the buffer's
 * pointer and length). false: nothing written (not begun either).
 */
static inline __attribute__((always_inline)) bool
put_span_text(const struct gt_event *ev, uint32_t pid, uint32_t tid, struct placed at,
	      const char *text, size_t len, const struct gt_arg *one, const struct args_extra *x)
{
	const struct head_json *h = head_slot('X', ev, pid, tid);
	struct jbuf *b = &W.buf;
	char *p;

	if (!h->len || h->name != ev->name || h->tid != tid || h->cat != ev->cat ||
	    h->pid != pid || h->ph != 'X')
		return false;
	if (!(p = begin_event_cur(SPAN_FAST_ROOM)))
		return true; /* out of memory: the file is cut here (b->oom) */
	p = cur_cached(p, h->text, h->len);
	p = json__put_ts(p, at.ts, &ts_prefix);
	memcpy(p, ",\"dur\":", 7);
	p = json__put_us(p + 7, at.dur);
	memcpy(p, ",\"args\":{", 9);
	p = cur_cached(p + 9, text, len); /* (a memo hit's text is never empty) */
	if (one) {
		*p++ = ':';
		p = one->type == GT_ARG_I64 ? json__put_i64(p, one->v.i) : json__put_u64(p, one->v.u);
	}
	p = cur_args_end(p, x);
	*p++ = '}';
	b->len = (size_t)(p - b->p);
	return true;
}

/*
 * Every span whose head is cached and whose args need no formatting but their
 * numbers, the one way such a span is written: a launch's call and its kernel (their
 * args kept formatted, args_memo), most host calls (one_int_arg). false: nothing
 * written, the general path's case. Inline, the writer too: one function choosing
 * between the two texts at run time was ~10 drain instructions a span slower than
 * the twins it replaced, and a call from events__host ~55 a host call (callgrind);
 * inlined, events__host's NO_EXTRA folds away (no correlation2, the host's ids).
 */
static inline __attribute__((always_inline)) bool
put_span_fast(const struct gt_event *ev, uint32_t pid, uint32_t tid, struct placed at,
	      const struct gt_arg *args, unsigned nargs, const struct args_extra *x)
{
	const struct sid_json *k = one_int_arg(args, nargs, x);
	const struct args_memo *m;

	if (k)
		return put_span_text(ev, pid, tid, at, k->text, k->len, args, x);
	return (m = args_fast(args, nargs, x)) &&
	       put_span_text(ev, pid, tid, at, m->text, m->len, NULL, x);
}

/* Device work's, out of line: events__device's own code stays as small as it was
 * (4 KiB larger with it inlined there, and ~10 drain instructions a launch slower). */
static __attribute__((noinline)) bool put_device_span(const struct gt_event *ev, uint32_t pid,
						      uint32_t tid, struct placed at,
						      const struct gt_arg *args, unsigned nargs,
						      const struct args_extra *x)
{
	return put_span_fast(ev, pid, tid, at, args, nargs, x);
}

static uint64_t arg_u64(const struct gt_arg *args, unsigned nargs, uint32_t key)
{
	for (unsigned i = 0; i < nargs; i++)
		if (args[i].key == key && (args[i].type == GT_ARG_U64 || args[i].type == GT_ARG_I64))
			return args[i].v.u;
	return 0;
}

static const char *arg_str(const struct gt_arg *args, unsigned nargs, uint32_t key)
{
	for (unsigned i = 0; i < nargs; i++)
		if (args[i].type == GT_ARG_STR && args[i].key == key)
			return gt_str_get((uint32_t)args[i].v.u, NULL);
	return NULL;
}

/* The metric args of a span, for the summary's per-kernel and per-range means. */
static unsigned metric_args(const struct gt_arg *args, unsigned nargs,
			    struct summary_metric *out)
{
	unsigned n = 0;

	for (unsigned i = 0; i < nargs; i++) {
		if (args[i].type != GT_ARG_METRIC)
			continue;
		out[n].name = gt_str_get(args[i].key, NULL);
		out[n++].value = args[i].v.f;
	}
	return n;
}

/* The calls gathered in b, into the summary. */
static void summary_batch_flush(struct sum_batch *b)
{
	struct summary_span s = {
		.cat = gt_str_get(b->cat, NULL),
		.name = gt_str_get(b->name, NULL),
		.start_ns = b->first_ns,
		.process = W.sum_process,
		.interned = true,
	};

	if (b->n)
		summary__add_calls(W.sum, &s, &(struct summary_calls){
			.count = b->n, .total_ns = b->total_ns, .min_ns = b->min_ns,
			.max_ns = b->max_ns, .last_end_ns = b->last_end_ns });
	b->name = b->cat = 0;
	b->n = 0;
}

void events__summary_flush(void)
{
	for (unsigned i = 0; W.sum && i < SUM_BATCHES; i++)
		summary_batch_flush(&W.sum_batch[i]);
}

/*
 * A host call, into its batch: the summary's rows are found by name (a
 * string hash and compares), which took a third of the drain's time for a
 * thread calling one API flat out; the batch is found by the name's id.
 * Counts, totals, minima and maxima add up the same in any order.
 */
static __attribute__((noinline)) void summary_batch_start(struct sum_batch *b,
							  const struct gt_event *ev)
{
	summary_batch_flush(b);
	/* every figure anew: a batch's slot is shared by the names it hashes to */
	*b = (struct sum_batch){ .name = ev->name, .cat = ev->cat, .min_ns = UINT64_MAX,
				 .first_ns = UINT64_MAX };
}

static inline bool summarize_call(const struct gt_event *ev, struct placed at)
{
	struct sum_batch *b;
	uint64_t end = at.ts + at.dur;

	if (ev->cat == GT_S_CAT_USER_ANNOTATION || ev->cat == GT_S_CAT_OVERHEAD || !ev->name)
		return false;
	b = &W.sum_batch[(ev->name * 2654435761u) >> 26];
	if (gt_unlikely(b->name != ev->name || b->cat != ev->cat))
		summary_batch_start(b, ev);
	b->n++;
	b->total_ns += at.dur;
	b->min_ns = at.dur < b->min_ns ? at.dur : b->min_ns;
	b->max_ns = at.dur > b->max_ns ? at.dur : b->max_ns;
	b->first_ns = at.ts < b->first_ns ? at.ts : b->first_ns;
	b->last_end_ns = end > b->last_end_ns ? end : b->last_end_ns;
	return true;
}

/*
 * A launch's kernel span, the other span every launch makes: its rows found once per
 * kernel, device and process (summary.h, summary__kernel_rows) and kept here by the
 * name's and device's ids. Not one with ranges or metrics (their rows are by name).
 */
#define KERNEL_SUMS_BITS 6
struct kernel_sum {
	uint32_t name, device_name; /* ids: a device renamed is another row */
	int process;
	struct summary_kernel_rows rows;
};
GT_TABLE(struct kernel_sum, kernel_sums, 1 << KERNEL_SUMS_BITS);

static struct kernel_sum *kernel_sum_slot(uint32_t name, uint32_t device_name)
{
	return &kernel_sums[((name * 0x9e3779b9u) ^ (device_name * 0x85ebca6bu)) >>
			    (32 - KERNEL_SUMS_BITS)];
}

/* Added without a lookup, or false: the slow way then (summarize_span). */
static inline bool summarize_kernel(const struct gt_event *ev, const struct gt_arg *args,
				    unsigned nargs, uint32_t device, struct placed at,
				    const struct rctx *ctx)
{
	const struct kernel_sum *k;
	uint32_t device_name;
	uint64_t bytes = 0;
	bool has_bytes = false;

	if (ev->cat != GT_S_CAT_KERNEL || (ctx && ctx->n))
		return false;
	device_name = registry__device_name(device);
	k = kernel_sum_slot(ev->name, device_name);
	if (k->name != ev->name || k->device_name != device_name || k->process != W.sum_process ||
	    !summary__kernel_rows_fresh(W.sum, &k->rows))
		return false;
	for (unsigned i = 0; i < nargs; i++) {
		if (args[i].type == GT_ARG_METRIC)
			return false;
		/* the first such arg, as arg_u64 takes it */
		if (!has_bytes && args[i].key == GT_S_ARG_BYTES &&
		    (args[i].type == GT_ARG_U64 || args[i].type == GT_ARG_I64)) {
			bytes = args[i].v.u;
			has_bytes = true;
		}
	}
	summary__add_kernel(W.sum, &k->rows, at.ts, at.dur, bytes);
	return true;
}

/* A span the batches do not take, to the summary itself (out of line: its
 * frame is big, and most spans are host calls, batched). */
static __attribute__((noinline)) void summarize_span(const struct gt_event *ev,
						     const struct gt_arg *args, unsigned nargs,
						     uint32_t device, struct placed at,
						     const struct rctx *ctx)
{
	struct summary_metric metrics[GT_ARGS_MAX];
	const char *names[SUMMARY_RANGES_MAX];
	unsigned nnames = 0;
	uint32_t device_name = device ? registry__device_name(device) : 0;

	for (unsigned i = 0; ctx && i < ctx->n && nnames < SUMMARY_RANGES_MAX; i++)
		names[nnames++] = gt_str_get(ranges__name(ctx->r[i]), NULL);
	struct summary_span s = {
		.ranges = names,
		.nranges = nnames,
		.cat = gt_str_get(ev->cat, NULL),
		.name = gt_str_get(ev->name, NULL),
		.start_ns = at.ts,
		.dur_ns = at.dur,
		.bytes = arg_u64(args, nargs, GT_S_ARG_BYTES),
		.copy_kind = arg_str(args, nargs, GT_S_ARG_KIND),
		.device = device ? gt_str_get(device_name, NULL) : NULL,
		.process = W.sum_process,
		.metrics = metrics,
		.nmetrics = ev->cat == GT_S_CAT_KERNEL || ev->cat == GT_S_CAT_USER_ANNOTATION
				    ? metric_args(args, nargs, metrics)
				    : 0,
		.interned = true,
	};

	summary__add(W.sum, &s);
	/* a kernel's rows, for its next spans (summarize_kernel) */
	if (ev->cat == GT_S_CAT_KERNEL && device && !nnames && !s.nmetrics) {
		struct kernel_sum *k = kernel_sum_slot(ev->name, device_name);

		if (summary__kernel_rows(W.sum, &s, &k->rows)) {
			k->name = ev->name;
			k->device_name = device_name;
			k->process = W.sum_process;
		}
	}
}

/* A failed call's error, counted apart from its time (which its batch takes). */
static __attribute__((noinline)) void summarize_error(const struct gt_event *ev,
						      const struct gt_arg *args, unsigned nargs)
{
	struct summary_span s = {
		.cat = gt_str_get(ev->cat, NULL),
		.name = gt_str_get(ev->name, NULL),
		.process = W.sum_process,
		.error = arg_str(args, nargs, GT_S_ARG_ERROR),
		.interned = true,
	};

	summary__add_error(W.sum, &s);
}

/* With the times as written: `gputrace summary FILE` gives the same numbers. */
static inline void summarize(const struct gt_event *ev, const struct gt_arg *args,
			     unsigned nargs, uint32_t device, struct placed at,
			     const struct rctx *ctx)
{
	if (gt_unlikely(ev->flags & GT_EVF_FAILED) && W.sum && !device)
		summarize_error(ev, args, nargs);
	/* nobody reads the summary (see writer__init): skip its lookups */
	if (!W.sum || (!device && !ctx && summarize_call(ev, at)) ||
	    (device && summarize_kernel(ev, args, nargs, device, at, ctx)))
		return;
	summarize_span(ev, args, nargs, device, at, ctx);
}

/* Every counter sample (ours, the plug-ins', vendors' telemetry): one path,
 * and each numeric series goes to the summary's metrics section. */
static void summarize_counter(const struct gt_event *ev, const struct gt_arg *args,
			      unsigned nargs, uint32_t device)
{
	const char *dev, *name;

	if (!W.sum)
		return;
	dev = device ? gt_str_get(registry__device_name(device), NULL) : "";
	name = gt_str_get(ev->name, NULL);
	for (unsigned i = 0; i < nargs; i++) {
		const struct gt_arg *a = &args[i];
		double v;

		switch (a->type) {
		case GT_ARG_I64:
			v = (double)a->v.i;
			break;
		case GT_ARG_U64:
			v = (double)a->v.u;
			break;
		case GT_ARG_F64:
		case GT_ARG_METRIC:
			v = a->v.f;
			break;
		default:
			continue;
		}
		summary__counter(W.sum, dev, name, gt_str_get(a->key, NULL), v);
	}
}

uint64_t events__host(const struct gt_event *ev, const struct gt_arg *args, unsigned nargs,
		      uint32_t tid)
{
	bool arrow = ((ev->flags & GT_EVF_LAUNCH) && ev->corr) ||
		     ((ev->flags & GT_EVF_FLOW_END) && ev->corr2);
	struct placed at = place__slice((uint32_t)gt_st.pid, tid, ev->start_ns,
					ev->type == GT_EV_INSTANT ? ev->start_ns : ev->end_ns,
					arrow ? PLACE_ARROW : 0);

	name_thread(tid);
	if (ev->type == GT_EV_HOST_SPAN &&
	    put_span_fast(ev, (uint32_t)gt_st.pid, tid, at, args, nargs, &NO_EXTRA(ev->corr))) {
		summarize(ev, args, nargs, 0, at, NULL);
		return at.point;
	}
	if (ev->type == GT_EV_INSTANT) {
		put_head(&W.buf, "i", ev, (uint32_t)gt_st.pid, tid, at.ts);
		jbuf__lit(&W.buf, ",\"s\":\"t\"");
	} else {
		put_head(&W.buf, "X", ev, (uint32_t)gt_st.pid, tid, at.ts);
		jbuf__lit(&W.buf, ",\"dur\":");
		json__us(&W.buf, at.dur);
		summarize(ev, args, nargs, 0, at, NULL);
	}
	put_args(&W.buf, args, nargs, NO_EXTRA(ev->corr));
	jbuf__ch(&W.buf, '}');
	return at.point;
}

/* One end of an arrow's row, as text: ,"pid":P,"tid":T,"ts": (the same row arrow after
 * arrow: a launching thread's, a queue's). */
struct flow_row {
	uint32_t pid, tid;
	size_t len; /* 0: none yet */
	char text[64];
};

/* The row's `,"pid":P,"tid":T,"ts":`, kept formatted while the row stays. */
static const struct flow_row *flow_row_for(struct flow_row *r, uint32_t pid, uint32_t tid)
{
	if (gt_unlikely(!r->len || r->pid != pid || r->tid != tid)) {
		char *p = r->text;

		memcpy(p, ",\"pid\":", 7);
		p = json__put_u64(p + 7, pid);
		memcpy(p, ",\"tid\":", 7);
		p = json__put_u64(p + 7, tid);
		memcpy(p, ",\"ts\":", 6);
		r->len = (size_t)(p + 6 - r->text);
		r->pid = pid;
		r->tid = tid;
	}
	return r;
}

/* An arrow's end: its head, id (idt: CORR_ROOM bytes), row and time, through a cursor
 * into room taken once (a check and a length update per piece were a third of it). */
#define FLOW_END_ROOM 192 /* head 64, id CORR_ROOM, row 64 (its blocks), time, brace */
static inline __attribute__((always_inline)) void
put_flow_end(const char *head, size_t head_len, const char *idt, size_t idn,
	     const struct flow_row *r, uint64_t ts)
{
	char *p;

	if (!(p = begin_event_cur(FLOW_END_ROOM)))
		return;
	memcpy(p, head, head_len);
	p = cur_cached(p + head_len, idt, idn);
	p = cur_cached(p, r->text, r->len);
	p = json__put_ts(p, ts, &ts_prefix);
	*p++ = '}';
	W.buf.len = (size_t)(p - W.buf.p);
}

#define PUT_FLOW_END(head, ...) put_flow_end(head, sizeof(head) - 1, __VA_ARGS__)
_Static_assert(sizeof("{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"fwdbwd\",\"name\":\"fwdbwd\",\"id\":") <=
		       64 && sizeof(((struct flow_row *)0)->text) == 64 && CORR_ROOM == 32 &&
		       JSON_NUM_ROOM + 1 + 64 + 64 + CORR_ROOM <= FLOW_END_ROOM,
	       "an arrow's end fits its room");

void events__flow(uint64_t id, const struct corr_entry *host, uint32_t pid, uint32_t tid,
		  uint64_t ts, bool fwdbwd)
{
	static struct flow_row from, to;
	static struct counter_text ids; /* arrows are numbered one after another */
	char idt[CORR_ROOM];
	size_t idn = (size_t)(cur_counter(&ids, idt, id) - idt); /* once for both ends */
	const struct flow_row *out = flow_row_for(&from, (uint32_t)gt_st.pid, host->tid),
			      *in = flow_row_for(&to, pid, tid);

	/* the end's time: the leading digits as the start's */
	if (fwdbwd) {
		PUT_FLOW_END("{\"ph\":\"s\",\"cat\":\"fwdbwd\",\"name\":\"fwdbwd\",\"id\":", idt,
			     idn, out, host->point_ns);
		PUT_FLOW_END("{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"fwdbwd\",\"name\":\"fwdbwd\","
			     "\"id\":",
			     idt, idn, in, ts);
	} else {
		PUT_FLOW_END("{\"ph\":\"s\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":", idt, idn,
			     out, host->point_ns);
		PUT_FLOW_END("{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"ac2g\",\"name\":\"ac2g\","
			     "\"id\":",
			     idt, idn, in, ts);
	}
}

struct device_row events__device(const struct gt_event *ev, const struct gt_arg *args,
				 unsigned nargs, bool arrow, const struct span_ranges *ranges)
{
	struct args_extra x;
	uint32_t track = ev->track;
	const struct gt_row *row = registry__track(track);
	struct device_row at;
	struct placed p;

	if (!row && !(ev->type == GT_EV_COUNTER && !ev->track))
		row = registry__track(track = gt_device_track(1));
	if (gt_unlikely(row && !registry__track_shown(track)))
		/* a fork child's of its parent's, used without registering it again (a
		 * backend that kept its row ids): named by the cycle's next naming */
		registry__claim_track(track);
	/* a counter of no device row is the process's (ITT counters) */
	at.pid = row ? device_pid(row->device) : ev->track ? device_pid(0) : (uint32_t)gt_st.pid;
	at.tid = row ? row->tid : 0;
	at.point = ev->start_ns;
	if (ev->type == GT_EV_COUNTER) {
		/* a NaN or an infinity is no sample: a viewer's counter track takes
		 * numbers only (JSON's null for it was a broken sample there), and the
		 * summary leaves them out too */
		struct gt_arg kept[GT_ARGS_MAX];
		unsigned n = 0;

		for (unsigned i = 0; i < nargs && n < GT_ARGS_MAX; i++)
			if (!((args[i].type == GT_ARG_F64 || args[i].type == GT_ARG_METRIC) &&
			      !isfinite(args[i].v.f)))
				kept[n++] = args[i];
		summarize_counter(ev, kept, n, row ? row->device : 0);
		if (!n)
			return at;
		begin_event(&W.buf);
		jbuf__lit(&W.buf, "{\"ph\":\"C\",\"name\":");
		put_sid(&W.buf, ev->name);
		jbuf__lit(&W.buf, ",\"pid\":");
		json__u64(&W.buf, at.pid);
		jbuf__lit(&W.buf, ",\"ts\":");
		json__us(&W.buf, ev->start_ns);
		put_args(&W.buf, kept, n, NO_EXTRA(0));
		jbuf__ch(&W.buf, '}');
		return at;
	}
	if (ev->type == GT_EV_INSTANT) {
		p = place__slice(at.pid, at.tid, ev->start_ns, ev->start_ns, arrow ? PLACE_ARROW : 0);
		put_head(&W.buf, "i", ev, at.pid, at.tid, p.ts);
		jbuf__lit(&W.buf, ",\"s\":\"t\"");
		put_args(&W.buf, args, nargs, device_extra(ev, args, nargs, row));
		jbuf__ch(&W.buf, '}');
		at.point = p.point;
		return at;
	}
	annotate__before(ev->track, at.pid, at.tid, ev->start_ns, ranges ? ranges->ctx : NULL);
	/* work no call of ours caused (a plug-in's own device annotation) may
	 * have an annotation of ours open with it */
	p = place__slice(at.pid, at.tid, ev->start_ns, ev->end_ns,
			 arrow ? PLACE_ARROW : !ev->corr && !ev->corr2 ? PLACE_OFF_ENDS : 0);
	x = device_extra(ev, args, nargs, row);
	x.ranges = ranges;
	if (!put_device_span(ev, at.pid, at.tid, p, args, nargs, &x)) {
		put_head(&W.buf, "X", ev, at.pid, at.tid, p.ts);
		jbuf__lit(&W.buf, ",\"dur\":");
		json__us(&W.buf, p.dur);
		put_args(&W.buf, args, nargs, x);
		jbuf__ch(&W.buf, '}');
	}
	annotate__after(ev->track, p, arrow);
	summarize(ev, args, nargs, row ? row->device : 0, p, ranges ? ranges->ctx : NULL);
	at.point = p.point;
	return at;
}

void events__annotation(uint32_t pid, uint32_t tid, uint32_t device, uint64_t ts, uint64_t end,
			uint32_t name, uint32_t spans, uint32_t range_tid)
{
	static uint32_t cat;
	struct gt_event ev = { .name = name };

	if (!cat)
		cat = gt_str_intern("gpu_user_annotation");
	ev.cat = cat;
	place__as_is(pid, tid, ts, end - ts);
	put_head(&W.buf, "X", &ev, pid, tid, ts);
	jbuf__lit(&W.buf, ",\"dur\":");
	json__us(&W.buf, end - ts);
	jbuf__lit(&W.buf, ",\"args\":{\"device\":");
	json__i64(&W.buf, device_ordinal(device));
	jbuf__lit(&W.buf, ",\"spans\":");
	json__u64(&W.buf, spans);
	jbuf__lit(&W.buf, ",\"tid\":");
	json__u64(&W.buf, range_tid);
	jbuf__lit(&W.buf, "}}");
}
