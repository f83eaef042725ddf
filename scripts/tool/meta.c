// SPDX-License-Identifier: MIT
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "meta.h"
#include "writer/summary.h"

static char *dup_str(const char *v, const char *e)
{
	struct buf b = { 0 };

	if (!jv_str(v, e, &b)) {
		buf__free(&b);
		return NULL;
	}
	return b.p;
}

void meta__add_host_pid(struct trace_meta *m, int64_t pid)
{
	if (pidmap__has(&m->host_set, pid))
		return;
	if (m->nhost_pids == m->host_cap) {
		size_t cap = m->host_cap ? m->host_cap * 2 : 16;
		int64_t *np = realloc(m->host_pids, cap * sizeof(*np));

		if (!np)
			return;
		m->host_pids = np;
		m->host_cap = cap;
	}
	pidmap__add(&m->host_set, pid);
	m->host_pids[m->nhost_pids++] = pid;
}

bool meta__is_device_cat(const char *cat)
{
	return !strcmp(cat, "kernel") || !strcmp(cat, "gpu_memcpy") || !strcmp(cat, "gpu_memset");
}

/* Does the trailer (a "gputrace" object [v, e)) say its process stopped
 * writing because a write failed (a full disk)? Its "end" then says so, and
 * goes into why where why is given. */
static bool write_failed(const char *v, const char *e, struct buf *why)
{
	static const char lead[] = "\"" SUMMARY_END_WRITE_FAILED;
	const char *cv, *ce, *ev, *ee;

	if (!jv_get(v, e, "complete", &cv, &ce) || ce - cv != 5 || memcmp(cv, "false", 5) ||
	    !jv_get(v, e, "end", &ev, &ee) || (size_t)(ee - ev) <= sizeof(lead) - 1 ||
	    memcmp(ev, lead, sizeof(lead) - 1))
		return false;
	if (why)
		jv_str(ev, ee, why);
	return true;
}

/* A merge's inputs (of "gputrace" object [v, e)) whose files were cut short,
 * and those whose writing failed (the first one's "end" in why), those of
 * merges merged included: a merged trace's "incomplete" counts them with the
 * traces not closed, and only its inputs tell them apart. */
static void count_ends(const char *v, const char *e, int depth, uint64_t *cut, uint64_t *failed,
		       struct buf *why)
{
	const char *mv, *me, *p, *ev, *ee, *tv, *te, *gv, *ge;

	if (depth >= META_MERGE_DEPTH || !jv_get(v, e, "inputs", &mv, &me))
		return;
	p = mv;
	while (jv_array_next(&p, me, &ev, &ee)) {
		bool has = jv_get(ev, ee, "gputrace", &gv, &ge);

		if (jv_get(ev, ee, "truncated", &tv, &te) && te - tv == 4 && !memcmp(tv, "true", 4))
			++*cut;
		else if (has && write_failed(gv, ge, *failed ? NULL : why)) /* the first one's reason */
			++*failed;
		if (has)
			count_ends(gv, ge, depth + 1, cut, failed, why);
	}
}

bool meta__parse(struct trace_meta *m, const char *v, const char *e)
{
	struct jv_iter it;
	struct jv_member mb;
	int64_t x;

	memset(m, 0, sizeof(*m));
	if (!jv_iter_init(&it, v, e))
		return false;
	m->present = true;
	buf__add(&m->raw, v, (size_t)(e - v));
	while (jv_iter_next(&it, &mb)) {
		if (jv_key_is(&mb, "pid") && jv_i64(mb.v, mb.e, &x)) {
			m->has_pid = true;
			m->pid = x;
		} else if (jv_key_is(&mb, "hostname")) {
			m->hostname = dup_str(mb.v, mb.e);
		} else if (jv_key_is(&mb, "exe")) {
			m->exe = dup_str(mb.v, mb.e);
		} else if (jv_key_is(&mb, "rank")) {
			if (!jv_is_null(mb.v, mb.e))
				buf__add(&m->rank, mb.v, (size_t)(mb.e - mb.v));
		} else if (jv_key_is(&mb, "anchor")) {
			const char *av, *ae, *cv, *ce;

			if (jv_get(mb.v, mb.e, "realtime_ns", &av, &ae) &&
			    jv_get(mb.v, mb.e, "clock_ns", &cv, &ce) &&
			    jv_i64(av, ae, &m->realtime_ns) && jv_i64(cv, ce, &m->clock_ns))
				/* a wall clock at 0 is none: a file written before its
				 * anchor was read (gputrace before 2026-12-06) says
				 * {0, 0}, and taken as one it moved every other input
				 * by the whole wall clock */
				m->has_anchor = m->realtime_ns != 0;
		} else if (jv_key_is(&mb, "merged")) {
			m->merged = mb.e - mb.v == 4 && !memcmp(mb.v, "true", 4);
		} else if (jv_key_is(&mb, "flight_recorder")) {
			m->flight = !jv_is_null(mb.v, mb.e);
		} else if (jv_key_is(&mb, "capture")) {
			m->window = !jv_is_null(mb.v, mb.e);
		} else if (jv_key_is(&mb, "complete")) {
			m->incomplete = mb.e - mb.v == 5 && !memcmp(mb.v, "false", 5);
		} else if (jv_key_is(&mb, "incomplete")) {
			jv_u64(mb.v, mb.e, &m->incomplete);
		} else if (jv_key_is(&mb, "inputs")) {
			count_ends(v, e, 0, &m->cut, &m->failed, &m->failed_why);
		} else if (jv_key_is(&mb, "events_lost")) {
			jv_u64(mb.v, mb.e, &m->events_lost);
		} else if (jv_key_is(&mb, "events_recorded")) {
			jv_u64(mb.v, mb.e, &m->events_recorded);
		} else if (jv_key_is(&mb, "flows_unmatched")) {
			jv_u64(mb.v, mb.e, &m->flows_unmatched);
		} else if (jv_key_is(&mb, "stacks")) {
			const char *dv, *de;

			if (jv_get(mb.v, mb.e, "dropped", &dv, &de))
				jv_u64(dv, de, &m->stacks_dropped);
		} else if (jv_key_is(&mb, "lossless") && !jv_is_null(mb.v, mb.e)) {
			const char *wv, *we;

			m->lossless = true;
			if (jv_get(mb.v, mb.e, "waits", &wv, &we))
				jv_u64(wv, we, &m->waits);
			if (jv_get(mb.v, mb.e, "wait_ns", &wv, &we))
				jv_u64(wv, we, &m->wait_ns);
		} else if (jv_key_is(&mb, "host_pids")) {
			const char *p = mb.v, *ev, *ee;

			while (jv_array_next(&p, mb.e, &ev, &ee))
				if (jv_i64(ev, ee, &x))
					meta__add_host_pid(m, x);
		}
	}
	if (!m->merged && write_failed(v, e, &m->failed_why))
		m->failed = 1;
	/* A merged trace lists its processes in host_pids; a plain one is one. */
	if (!m->nhost_pids && m->has_pid)
		meta__add_host_pid(m, m->pid);
	return true;
}

void meta__free(struct trace_meta *m)
{
	buf__free(&m->raw);
	buf__free(&m->rank);
	buf__free(&m->failed_why);
	free(m->hostname);
	free(m->exe);
	free(m->host_pids);
	pidmap__free(&m->host_set);
	memset(m, 0, sizeof(*m));
}

void meta__each_lost(const struct trace_meta *m,
		     void (*fn)(void *ctx, const char *reason, uint64_t n), void *ctx)
{
	const char *v, *e;
	struct jv_iter it;
	struct jv_member mb;
	struct buf key = { 0 };
	uint64_t n;

	if (!m->present || !jv_get(m->raw.p, m->raw.p + m->raw.len, "lost_by_reason", &v, &e) ||
	    !jv_iter_init(&it, v, e))
		return;
	while (jv_iter_next(&it, &mb)) {
		if (!jv_u64(mb.v, mb.e, &n))
			continue;
		buf__reset(&key);
		/* keys come undecoded from the iterator: decode via a quoted copy */
		jv_str(mb.key - 1, mb.key + mb.klen + 1, &key);
		fn(ctx, key.p ? key.p : "", n);
	}
	buf__free(&key);
}

void meta__each_adjusted(const struct trace_meta *m,
			 void (*fn)(void *ctx, const char *reason, uint64_t n, uint64_t max_ns),
			 void *ctx)
{
	const char *v, *e, *cv, *ce;
	struct jv_iter it;
	struct jv_member mb;
	struct buf key = { 0 };
	uint64_t n, max_ns;

	if (!m->present || !jv_get(m->raw.p, m->raw.p + m->raw.len, "adjusted", &v, &e) ||
	    !jv_iter_init(&it, v, e))
		return;
	while (jv_iter_next(&it, &mb)) {
		if (!jv_get(mb.v, mb.e, "count", &cv, &ce) || !jv_u64(cv, ce, &n))
			continue;
		max_ns = 0;
		if (jv_get(mb.v, mb.e, "max_ns", &cv, &ce))
			jv_u64(cv, ce, &max_ns);
		buf__reset(&key);
		jv_str(mb.key - 1, mb.key + mb.klen + 1, &key);
		fn(ctx, key.p ? key.p : "", n, max_ns);
	}
	buf__free(&key);
}

/* ---- pidmap ---- */

static size_t slot_of(int64_t key, size_t cap)
{
	uint64_t h = (uint64_t)key * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 17) & (cap - 1);
}

static void pidmap__grow(struct pidmap *m)
{
	struct pidmap n = { 0 };

	n.cap = m->cap ? m->cap * 2 : 16;
	n.keys = calloc(n.cap, sizeof(*n.keys));
	n.vals = calloc(n.cap, sizeof(*n.vals));
	n.names = calloc(n.cap, sizeof(*n.names));
	n.used = calloc(n.cap, sizeof(*n.used));
	if (!n.keys || !n.vals || !n.names || !n.used) {
		fprintf(stderr, "gputrace: out of memory\n");
		exit(1);
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->used[i])
			continue;
		size_t j = slot_of(m->keys[i], n.cap);

		while (n.used[j])
			j = (j + 1) & (n.cap - 1);
		n.used[j] = true;
		n.keys[j] = m->keys[i];
		n.vals[j] = m->vals[i];
		n.names[j] = m->names[i];
	}
	n.n = m->n;
	free(m->keys);
	free(m->vals);
	free(m->names);
	free(m->used);
	*m = n;
}

long pidmap__slot(const struct pidmap *m, int64_t key)
{
	if (m->cap)
		for (size_t j = slot_of(key, m->cap); m->used[j]; j = (j + 1) & (m->cap - 1))
			if (m->keys[j] == key)
				return (long)j;
	return -1;
}

long pidmap__add(struct pidmap *m, int64_t key)
{
	long found = pidmap__slot(m, key);
	size_t j;

	if (found >= 0)
		return found;
	if ((m->n + 1) * 2 > m->cap)
		pidmap__grow(m);
	for (j = slot_of(key, m->cap); m->used[j]; j = (j + 1) & (m->cap - 1))
		;
	m->used[j] = true;
	m->keys[j] = key;
	m->vals[j] = key;
	m->names[j] = NULL;
	m->n++;
	return (long)j;
}

bool pidmap__has(const struct pidmap *m, int64_t key)
{
	return pidmap__slot(m, key) >= 0;
}

void pidmap__free(struct pidmap *m)
{
	for (size_t i = 0; i < m->cap; i++)
		if (m->used[i])
			free(m->names[i]);
	free(m->keys);
	free(m->vals);
	free(m->names);
	free(m->used);
	memset(m, 0, sizeof(*m));
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

int64_t *pidmap__sorted_keys(const struct pidmap *m)
{
	int64_t *v = calloc(m->n + 1, sizeof(*v));
	size_t k = 0;

	if (!v) {
		fprintf(stderr, "gputrace: out of memory\n");
		exit(1);
	}
	for (size_t i = 0; i < m->cap; i++)
		if (m->used[i])
			v[k++] = m->keys[i];
	qsort(v, k, sizeof(*v), cmp_i64);
	return v;
}
