// SPDX-License-Identifier: MIT
/*
 * gputrace merge: per-process traces into one timeline.
 *
 * Two streaming passes over each input: the first reads its "gputrace"
 * object (clock anchor, host, rank, lost counts) and the pids its events
 * use; the second copies every event through, rewriting only
 *  - "ts": moved onto a common wall-clock base (CLOCK_REALTIME anchor),
 *  - "pid": renumbered where two inputs use the same one,
 *  - "id"/"bind_id" of flows and async events: made unique per input,
 *  - process_name: prefixed with the host and rank when known.
 * Memory: one event plus per-input metadata, whatever the trace sizes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "json.h"
#include "meta.h"
#include "tool.h"
#include "trace.h"
#include "writer/summary.h"
#include "writer/times.h"

#define WHO "gputrace merge"
#define OUT_FLUSH (1u << 20)

/* A row as written so far: the slice written last and the one with the
 * latest end (as in writer/place.c). */
struct row_state {
	int64_t last_start;    /* as read (shifted) */
	int64_t last_ts, last_dur; /* as written */
	int64_t front_ts, front_dur;
	int64_t last_move;
};

struct input {
	const char *path;
	unsigned idx;
	struct trace_meta meta;
	struct pidmap pids; /* pid in this file -> pid in the merged trace */
	struct pidmap named; /* pids with a process_name event (its name) */
	struct pidmap device_pids; /* pids with device work (kernels, copies, fills) */
	struct pidmap span_pids;   /* pids with other spans */
	struct pidmap sorts; /* pid -> its process_sort_index in the file */
	struct pidmap order; /* pid -> its process_sort_index in the merge */
	bool pids_from_events; /* its trailer named no process: host_pids found from its spans */
	bool rank_shared; /* another process of the inputs has its host and rank */
	int part_of;      /* an earlier input that is another part (capture window,
			   * flight recorder dump) of its process, else -1 */
	struct buf rank;  /* its rank as named ("3" of 3 or "3"), empty if none */
	struct buf dist_rank; /* "rank" of its "distributedInfo", as written */
	struct buf tmp;
	int64_t shift_ns;
	struct buf prefix;  /* "host rank 0: " or "" */
	struct buf dev_prefix; /* device rows: "host [rank 0] ", "host [pid 42] " */
	struct pidmap rows;  /* pid << 32 | tid -> index in row_states */
	struct row_state *row_states;
	size_t nrows;
	uint64_t events;
	uint64_t skipped;   /* elements that are not objects */
	int scan;
};

struct out {
	const char *path;
	FILE *f;
	gzFile gz;
	struct buf b;
	bool failed;
};

struct merge {
	struct input *in;
	unsigned nin;
	struct out out;
	bool first_event;
	struct buf tmp;
};

/* ---- output (plain or gzip by suffix) ---- */

static bool has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);

	return n >= m && !strcmp(s + n - m, suf);
}

static int out__open(struct out *o, const char *path, const char *final_path)
{
	o->path = path;
	if (has_suffix(final_path, ".gz")) {
		o->gz = gzopen(path, "wb6");
		if (!o->gz)
			return -(errno ? errno : ENOMEM);
	} else {
		o->f = fopen(path, "w");
		if (!o->f)
			return -errno;
	}
	return 0;
}

static void out__flush(struct out *o)
{
	if (!o->b.len || o->failed)
		goto reset;
	if (o->gz) {
		if (gzwrite(o->gz, o->b.p, (unsigned)o->b.len) != (int)o->b.len)
			o->failed = true;
	} else if (fwrite(o->b.p, 1, o->b.len, o->f) != o->b.len) {
		o->failed = true;
	}
reset:
	buf__reset(&o->b);
}

static int out__close(struct out *o)
{
	int err = 0;

	out__flush(o);
	if (o->gz && gzclose(o->gz) != Z_OK)
		o->failed = true;
	if (o->f == stdout ? fflush(o->f) : o->f && fclose(o->f))
		o->failed = true;
	if (o->failed)
		err = -(errno ? errno : EIO);
	buf__free(&o->b);
	return err;
}

/* ---- pass 1 ---- */


/* The writer's device rows' pids start here; processes' are below. */
#define DEVICE_PIDS ((int64_t)GT_DEVICE_PID_BASE)

static void note_name(struct input *in, int64_t pid, const char *v, const char *e)
{
	const char *av, *ae, *nv, *ne;
	long slot = pidmap__add(&in->named, pid);

	if (!jv_get(v, e, "args", &av, &ae) || !jv_get(av, ae, "name", &nv, &ne) ||
	    !jv_str(nv, ne, &in->tmp))
		return;
	free(in->named.names[slot]);
	in->named.names[slot] = strdup(in->tmp.p);
}

/* Which pids have device work, which other spans: what tells its processes
 * where its trailer does not (as the summary of the file alone tells them). */
static void note_span(struct input *in, int64_t pid, const char *v, const char *e)
{
	const char *cv, *ce;

	if (!jv_get(v, e, "cat", &cv, &ce) || !jv_str(cv, ce, &in->tmp))
		buf__reset(&in->tmp);
	if (in->tmp.p && meta__is_device_cat(in->tmp.p))
		pidmap__add(&in->device_pids, pid);
	else if (!in->tmp.p || strcmp(in->tmp.p, "gpu_user_annotation")) /* drawn on device rows */
		pidmap__add(&in->span_pids, pid);
}

static bool is_sort_index(const char *v, const char *e)
{
	const char *pv, *pe;

	return jv_get(v, e, "name", &pv, &pe) && pe - pv == 20 &&
	       !memcmp(pv, "\"process_sort_index\"", 20);
}

static void note_sort(struct input *in, int64_t pid, const char *v, const char *e)
{
	const char *av, *ae, *sv, *se;
	int64_t x;
	long slot;

	if (!jv_get(v, e, "args", &av, &ae) || !jv_get(av, ae, "sort_index", &sv, &se) ||
	    !jv_i64(sv, se, &x))
		return;
	slot = pidmap__add(&in->sorts, pid);
	if (slot >= 0)
		in->sorts.vals[slot] = x;
}

static int pass1_event(void *ctx, const char *v, const char *e)
{
	struct input *in = ctx;
	const char *pv, *pe;
	int64_t pid;

	if (!jv_get(v, e, "pid", &pv, &pe) || !jv_i64(pv, pe, &pid))
		return 0;
	pidmap__add(&in->pids, pid);
	if (jv_get(v, e, "name", &pv, &pe) && pe - pv == 14 && !memcmp(pv, "\"process_name\"", 14))
		note_name(in, pid, v, e);
	else if (is_sort_index(v, e))
		note_sort(in, pid, v, e);
	if (jv_get(v, e, "ph", &pv, &pe) && pe - pv == 3 && pv[1] == 'X')
		note_span(in, pid, v, e);
	return 0;
}

/* A trace without its trailer (cut before it, or a foreign one) names no
 * process: they are its pids with spans, none of them device work, and not
 * the writer's device rows. Else the merged host_pids would lack them, and
 * every reader of the merge take their rows for devices. */
static void find_host_pids(struct input *in)
{
	int64_t *keys;

	if (in->meta.nhost_pids)
		return;
	keys = pidmap__sorted_keys(&in->span_pids);
	for (size_t k = 0; k < in->span_pids.n; k++)
		if (keys[k] < DEVICE_PIDS && !pidmap__has(&in->device_pids, keys[k]))
			meta__add_host_pid(&in->meta, keys[k]);
	free(keys);
	in->pids_from_events = in->meta.nhost_pids > 0;
}

/* Kineto's "distributedInfo" heads a file of a rank: its rank where no
 * trailer tells it (a file cut before it). */
static int pass1_dist(void *ctx, const char *v, const char *e)
{
	struct input *in = ctx;
	const char *rv, *re;

	buf__reset(&in->dist_rank);
	if (jv_get(v, e, "rank", &rv, &re))
		buf__add(&in->dist_rank, rv, (size_t)(re - rv));
	return 0;
}

static int pass1_meta(void *ctx, const char *v, const char *e)
{
	struct input *in = ctx;

	meta__free(&in->meta);
	if (!meta__parse(&in->meta, v, e))
		fprintf(stderr, WHO ": %s: \"gputrace\" is not an object; ignored\n", in->path);
	return 0;
}

static bool same_process(const struct trace_meta *a, const struct trace_meta *b);

static bool is_part(const struct trace_meta *mt)
{
	return mt->window || mt->flight;
}

/* Another part than a: its trailer differs (one file given twice is no two parts). */
static bool other_part(const struct trace_meta *a, const struct trace_meta *b)
{
	return is_part(a) && is_part(b) && same_process(a, b) &&
	       (a->raw.len != b->raw.len || memcmp(a->raw.p, b->raw.p, a->raw.len));
}

/* The windows' files of one process, or its flight recorder's dumps, are that
 * one process: a later one keeps the pids the first was given (renumbered, it
 * was a process of its own, whose pid never ran, with rows of its own). A
 * trace given twice stays two processes, as two of one pid do. */
static void find_parts(struct merge *m)
{
	for (unsigned i = 0; i < m->nin; i++) {
		m->in[i].part_of = -1;
		for (unsigned j = 0; j < i && is_part(&m->in[i].meta); j++) {
			if (m->in[j].part_of < 0 && other_part(&m->in[j].meta, &m->in[i].meta)) {
				m->in[i].part_of = (int)j;
				break;
			}
		}
	}
}

/* Inputs keep their pids; a pid already taken by an earlier input gets a
 * fresh number above every pid seen of its kind (a process's stays a small
 * number, a device row's stays among device rows'), but in another part of
 * the same process (find_parts), which maps it as its first part did. */
static void assign_pids(struct merge *m)
{
	struct pidmap taken = { 0 }, seen = { 0 };
	int64_t next[2] = { 1, DEVICE_PIDS }; /* a process's, a device row's */

	for (unsigned i = 0; i < m->nin; i++)
		for (size_t s = 0; s < m->in[i].pids.cap; s++) {
			int64_t pid = m->in[i].pids.keys[s];
			int kind = pid >= DEVICE_PIDS;

			if (!m->in[i].pids.used[s])
				continue;
			pidmap__add(&seen, pid);
			/* INT64_MAX (a foreign trace's) has none above: next stays
			 * on it, and the search below goes round from the kind's
			 * first pid (pid + 1 overflowed to a negative pid) */
			if (pid >= next[kind])
				next[kind] = pid < INT64_MAX ? pid + 1 : pid;
		}
	for (unsigned i = 0; i < m->nin; i++) {
		struct input *in = &m->in[i];
		int64_t *keys = pidmap__sorted_keys(&in->pids);

		for (size_t k = 0; k < in->pids.n; k++) {
			long s = pidmap__slot(&in->pids, keys[k]);
			int kind = keys[k] >= DEVICE_PIDS;
			const struct pidmap *first = in->part_of >= 0 ? &m->in[in->part_of].pids
								       : NULL;
			long f = first ? pidmap__slot(first, keys[k]) : -1;

			if (f >= 0) {
				in->pids.vals[s] = first->vals[f];
			} else if (pidmap__has(&taken, keys[k])) {
				while (pidmap__has(&taken, next[kind]) ||
				       pidmap__has(&seen, next[kind]))
					next[kind] = next[kind] < INT64_MAX ? next[kind] + 1
						     : kind ? DEVICE_PIDS : 1;
				in->pids.vals[s] = next[kind];
			}
			pidmap__add(&taken, in->pids.vals[s]);
		}
		free(keys);
	}
	pidmap__free(&taken);
	pidmap__free(&seen);
}

static int64_t map_pid(struct input *in, int64_t pid)
{
	long s = pidmap__slot(&in->pids, pid);

	return s < 0 ? pid : in->pids.vals[s];
}

/* Common base = the smallest (realtime - clock) offset: every shift is >= 0,
 * so times stay positive and small enough for exact doubles. */
static int64_t assign_shifts(struct merge *m)
{
	bool have = false;
	int64_t base = 0;

	for (unsigned i = 0; i < m->nin; i++) {
		struct trace_meta *mt = &m->in[i].meta;
		int64_t off = mt->realtime_ns - mt->clock_ns;

		if (!mt->has_anchor)
			continue;
		if (!have || off < base)
			base = off;
		have = true;
	}
	for (unsigned i = 0; i < m->nin; i++) {
		struct input *in = &m->in[i];

		if (in->meta.has_anchor) {
			in->shift_ns = in->meta.realtime_ns - in->meta.clock_ns - base;
		} else {
			in->shift_ns = 0;
			if (m->nin > 1)
				fprintf(stderr, WHO ": %s: no clock anchor (\"gputrace\".anchor); its "
						"times are left as they are\n", in->path);
		}
	}
	return base;
}

/* Are its device rows named after their process already (by a merge whose
 * output was cut before the trailer that said so)? */
static bool rows_named_after(const struct input *in, int64_t pid)
{
	char tag[40];

	snprintf(tag, sizeof(tag), "[pid %" PRId64 "] ", pid);
	for (size_t s = 0; s < in->named.cap; s++) {
		const char *name = in->named.used[s] ? in->named.names[s] : NULL;

		if (name && in->named.keys[s] != pid && (strstr(name, tag) || strstr(name, "[rank ")))
			return true;
	}
	return false;
}

/* Two files of one process: its capture windows, its flight recorder's
 * dumps (one host, pid and clock anchor; a merge's output is none). */
static bool same_process(const struct trace_meta *a, const struct trace_meta *b)
{
	return a->has_pid && b->has_pid && a->has_anchor && b->has_anchor && !a->merged &&
	       !b->merged && a->pid == b->pid && a->realtime_ns == b->realtime_ns &&
	       a->clock_ns == b->clock_ns && !a->hostname == !b->hostname &&
	       (!a->hostname || !strcmp(a->hostname, b->hostname));
}

/* Its rank as its rows are named: a number, or a string's text. */
static void read_rank(struct input *in)
{
	const struct trace_meta *mt = &in->meta;
	/* the trailer's, else its head's (a file cut before its trailer) */
	const struct buf *rank = mt->rank.len ? &mt->rank : &in->dist_rank;

	/* an earlier merge named its rows with their host and rank already */
	if (mt->merged || !rank->len)
		return;
	if (!jv_str(rank->p, rank->p + rank->len, &in->rank)) {
		buf__reset(&in->rank);
		buf__add(&in->rank, rank->p, rank->len);
	}
}

/* By host, then rank as named, the inputs with a rank only. */
static int cmp_host_rank(const void *a, const void *b)
{
	const struct input *x = *(struct input *const *)a, *y = *(struct input *const *)b;
	const char *hx = x->meta.hostname, *hy = y->meta.hostname;
	int c = strcmp(hx ? hx : "", hy ? hy : "");

	return c ? c : strcmp(x->rank.p, y->rank.p);
}

/* Several processes with one host and rank (a rank's program that starts
 * others, which inherit its RANK; files of two jobs): "[rank 0]" alone would
 * name their rows of a GPU alike, and the summary, which knows a device by
 * its name, would take them for one. Sorted, not compared pairwise: a job's
 * files may be thousands. */
static void mark_shared_ranks(struct merge *m)
{
	struct input **by = calloc(m->nin, sizeof(*by));
	size_t n = 0;

	if (!by)
		return;
	for (unsigned i = 0; i < m->nin; i++)
		if (m->in[i].rank.len)
			by[n++] = &m->in[i];
	qsort(by, n, sizeof(*by), cmp_host_rank);
	for (size_t i = 0, j; i < n; i = j) {
		bool shared = false;

		/* the run of one host and rank: shared if it holds another process
		 * than its first's (windows and dumps of one process are one) */
		for (j = i + 1; j < n && !cmp_host_rank(&by[i], &by[j]); j++)
			shared |= !same_process(&by[i]->meta, &by[j]->meta);
		for (size_t k = i; shared && k < j; k++)
			by[k]->rank_shared = true;
	}
	free(by);
}

/* Ranks as numbers where both are ("2" before "10"), else as text; a
 * number before a text. */
static int cmp_rank(const char *x, const char *y)
{
	bool nx = *x && strspn(x, "0123456789") == strlen(x);
	bool ny = *y && strspn(y, "0123456789") == strlen(y);
	size_t lx, ly;

	if (nx != ny)
		return nx ? -1 : 1;
	if (!nx)
		return strcmp(x, y);
	while (*x == '0' && x[1])
		x++;
	while (*y == '0' && y[1])
		y++;
	lx = strlen(x), ly = strlen(y);
	return lx != ly ? (lx < ly ? -1 : 1) : strcmp(x, y);
}

static int64_t first_pid(const struct input *in)
{
	const struct trace_meta *mt = &in->meta;

	return mt->has_pid ? (int64_t)mt->pid : mt->nhost_pids ? mt->host_pids[0] : 0;
}

/* The processes' order in the merge: by rank (those with one first), host,
 * pid, then as given. */
static int cmp_merge_order(const void *a, const void *b)
{
	const struct input *x = *(struct input *const *)a, *y = *(struct input *const *)b;
	const char *hx = x->meta.hostname, *hy = y->meta.hostname;
	int64_t px = first_pid(x), py = first_pid(y);
	int c;

	if (!x->rank.len != !y->rank.len)
		return x->rank.len ? -1 : 1;
	if (x->rank.len && (c = cmp_rank(x->rank.p, y->rank.p)))
		return c;
	if ((c = strcmp(hx ? hx : "", hy ? hy : "")))
		return c;
	if (px != py)
		return px < py ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

struct sort_key {
	int64_t sort, pid;
};

static int cmp_sort_key(const void *a, const void *b)
{
	const struct sort_key *x = a, *y = b;

	if (x->sort != y->sort)
		return x->sort < y->sort ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static bool order_of(const struct input *in, int64_t pid, int64_t *sort)
{
	long s = pidmap__slot(&in->order, pid);

	if (s >= 0)
		*sort = in->order.vals[s];
	return s >= 0;
}

/*
 * Every row of the merge gets a process_sort_index of its own, in the order
 * of cmp_merge_order, each file's rows in their own order (its process at 0,
 * its devices at 1000 + d, or an earlier merge's): a process's device rows
 * come right after it. As written, every process had 0 and every GPU 0 row
 * 1001: the legacy viewer (sortIndex, then name) put rank 10 before rank 2
 * and all processes above all devices.
 */
static void assign_order(struct merge *m)
{
	struct input **by = calloc(m->nin, sizeof(*by));
	int64_t next = 0;

	if (!by)
		return;
	for (unsigned i = 0; i < m->nin; i++)
		by[i] = &m->in[i];
	qsort(by, m->nin, sizeof(*by), cmp_merge_order);
	for (unsigned i = 0; i < m->nin; i++) {
		struct input *in = by[i];
		int64_t *keys = pidmap__sorted_keys(&in->pids);
		struct sort_key *k = calloc(in->pids.n + 1, sizeof(*k));

		for (size_t j = 0; keys && k && j < in->pids.n; j++) {
			long s = pidmap__slot(&in->sorts, keys[j]);

			k[j].pid = keys[j];
			/* without one, as the writer has them: the process, then devices */
			k[j].sort = s >= 0 ? in->sorts.vals[s] : keys[j] >= DEVICE_PIDS ? 1000 : 0;
		}
		if (keys && k)
			qsort(k, in->pids.n, sizeof(*k), cmp_sort_key);
		for (size_t j = 0; keys && k && j < in->pids.n; j++) {
			long s = pidmap__add(&in->order, k[j].pid);
			int64_t first;

			/* a part of a process ordered already: its rows are that one's */
			if (in->part_of >= 0 && order_of(&m->in[in->part_of], k[j].pid, &first)) {
				if (s >= 0)
					in->order.vals[s] = first;
				continue;
			}
			if (s >= 0)
				in->order.vals[s] = next;
			next++;
		}
		free(keys);
		free(k);
	}
	free(by);
}

static void build_prefix(struct input *in)
{
	const struct buf *rank = &in->rank;
	const struct trace_meta *mt = &in->meta;

	/* an earlier merge named its rows with their host and rank already */
	if (mt->merged)
		return;
	if (mt->hostname && *mt->hostname)
		buf__adds(&in->prefix, mt->hostname);
	if (rank->len)
		buf__printf(&in->prefix, "%srank %s", in->prefix.len ? " " : "", rank->p);
	if (in->prefix.len)
		buf__adds(&in->prefix, ": ");
	/* a device row belongs to one process: two processes on one GPU get two
	 * rows, named apart */
	if (mt->hostname && *mt->hostname)
		buf__printf(&in->dev_prefix, "%s ", mt->hostname);
	if (rank->len && in->rank_shared && mt->has_pid && mt->pid > 0)
		buf__printf(&in->dev_prefix, "[rank %s, pid %" PRId64 "] ", rank->p,
			    map_pid(in, (int64_t)mt->pid));
	else if (rank->len)
		buf__printf(&in->dev_prefix, "[rank %s] ", rank->p);
	else if (mt->pid > 0)
		buf__printf(&in->dev_prefix, "[pid %" PRId64 "] ", map_pid(in, (int64_t)mt->pid));
	else if (in->pids_from_events && mt->nhost_pids == 1 && /* its rows are its one process's */
		 !rows_named_after(in, mt->host_pids[0]))
		buf__printf(&in->dev_prefix, "[pid %" PRId64 "] ", map_pid(in, mt->host_pids[0]));
}

/* ---- pass 2 ---- */

static bool has_scoped_id(char ph)
{
	/* flows (s t f) and async slices (b e n, S T F): ids shared across a file */
	return ph && strchr("stfbenSTF", ph);
}

/* Flow ids made unique per input. Ids below 2^52 (the writer's: < 2^48 plus
 * a namespace) get the input number in the top bits, readable in a viewer;
 * others (already merged) are hashed with it. Hex strings: Perfetto reads
 * string ids as hex, and 64-bit values survive JavaScript viewers. */
static uint64_t scoped_id(const struct input *in, uint64_t id, unsigned nin)
{
	uint64_t h;

	if (id < (1ull << 52) && nin < 4096)
		return (uint64_t)(in->idx + 1) << 52 | id;
	h = id ^ ((uint64_t)(in->idx + 1) * 0x9e3779b97f4a7c15ull);
	h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
	h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
	return h ^ (h >> 31);
}

static bool parse_id(const char *v, const char *e, uint64_t *id)
{
	if (jv_is_string(v, e)) {
		char tmp[24], *end;
		size_t n = (size_t)(e - v - 2);

		if (n == 0 || n >= sizeof(tmp))
			return false;
		memcpy(tmp, v + 1, n);
		tmp[n] = 0;
		errno = 0;
		*id = strtoull(tmp, &end, 16);
		return !errno && !*end;
	}
	return jv_u64(v, e, id);
}

static void put_key(struct buf *o, const struct jv_member *mb)
{
	buf__addc(o, '"');
	buf__add(o, mb->key, mb->klen);
	buf__add(o, "\":", 2);
}

static void put_member(struct buf *o, const struct jv_member *mb)
{
	put_key(o, mb);
	buf__add(o, mb->v, (size_t)(mb->e - mb->v));
}

/* args of a process_name event, with the name prefixed. */
static void put_prefixed_args(struct merge *m, const struct buf *prefix,
			      const struct jv_member *args)
{
	struct buf *o = &m->out.b;
	struct jv_iter it;
	struct jv_member mb;
	bool first = true;

	if (!jv_iter_init(&it, args->v, args->e)) {
		put_member(o, args);
		return;
	}
	put_key(o, args);
	buf__addc(o, '{');
	while (jv_iter_next(&it, &mb)) {
		if (!first)
			buf__addc(o, ',');
		first = false;
		if (jv_key_is(&mb, "name") && jv_str(mb.v, mb.e, &m->tmp)) {
			struct buf full = { 0 };

			buf__add(&full, prefix->p, prefix->len);
			buf__add(&full, m->tmp.p, m->tmp.len);
			put_key(o, &mb);
			json_escape(o, full.p, full.len);
			buf__free(&full);
		} else {
			put_member(o, &mb);
		}
	}
	buf__addc(o, '}');
}

static bool is_host_pid(const struct trace_meta *mt, int64_t pid)
{
	return pidmap__has(&mt->host_set, pid);
}

static struct row_state *row_of(struct input *in, int64_t pid, int64_t tid)
{
	size_t known = in->rows.n;
	long slot = pidmap__add(&in->rows, (int64_t)((uint64_t)pid << 32 | (uint32_t)tid));

	if (slot < 0)
		return NULL;
	if (in->rows.n == known)
		return &in->row_states[in->rows.vals[slot]];
	if (!(in->nrows & (in->nrows + 1)) || !in->row_states) {
		struct row_state *t = realloc(in->row_states, (in->nrows + 1) * 2 * sizeof(*t));

		if (!t)
			return NULL;
		in->row_states = t;
	}
	in->rows.vals[slot] = (int64_t)in->nrows;
	in->row_states[in->nrows] = (struct row_state){ .last_start = INT64_MIN };
	return &in->row_states[in->nrows++];
}

/* An instant on its thread's row ("s" absent or "t"), as viewers draw a slice. */
static bool thread_scoped(const char *v, const char *e)
{
	const char *pv, *pe;

	return !jv_get(v, e, "s", &pv, &pe) || (pe - pv == 3 && !memcmp(pv, "\"t\"", 3));
}

/* A flow end bound to the slice holding it ("bp":"e"). */
static bool bound_to_enclosing(const char *v, const char *e)
{
	const char *pv, *pe;

	return jv_get(v, e, "bp", &pv, &pe) && pe - pv == 3 && !memcmp(pv, "\"e\"", 3);
}

/*
 * The shift keeps every nanosecond, but not how a reader's doubles add up at
 * the new magnitude: a slice touching one before it may seem to overlap it
 * again. So a slice is placed as the writer places it (writer/place.c): one
 * that starts exactly where the row's last or latest-ending slice ends, when
 * that end adds up past its start, starts 1 ns later (its end stays), and a
 * slice starting where the last one started (a child) moves with it.
 * Instants on a thread's row are slices of no length here (moved whole), and
 * an arrow end at the start of the slice written last, or 1 ns after it, moves
 * with that slice.
 */
static bool place_slice(struct input *in, const char *v, const char *e, char ph, int64_t *ts,
			int64_t *dur)
{
	const char *pv, *pe;
	int64_t pid, tid, move = 0;
	struct row_state *r;

	*dur = 0; /* an instant on its thread's row is placed as a slice of no length */
	if (!jv_get(v, e, "ts", &pv, &pe) || !jv_us_to_ns(pv, pe, ts) ||
	    (ph == 'X' && (!jv_get(v, e, "dur", &pv, &pe) || !jv_us_to_ns(pv, pe, dur) ||
			   *dur < 0)) ||
	    !jv_get(v, e, "pid", &pv, &pe) || !jv_i64(pv, pe, &pid) ||
	    !jv_get(v, e, "tid", &pv, &pe) || !jv_i64(pv, pe, &tid))
		return false;
	*ts += in->shift_ns;
	r = row_of(in, pid, tid);
	if (!r || *ts < 0)
		return true;
	if (ph == 's' || ph == 'f') {
		/* an arrow end in the slice written last moves as its start did: it
		 * stays 1 ns after it (or on a short slice's start), not on it */
		if (r->last_ts > r->last_start && *ts >= r->last_start &&
		    *ts <= r->last_start + 1) {
			*ts += r->last_ts - r->last_start;
			if (*ts > r->last_ts + r->last_dur)
				*ts = r->last_ts + r->last_dur;
		}
		return true;
	}
	if (*ts == r->last_start)
		move = r->last_move;
	else if ((*ts == r->last_ts + r->last_dur &&
		  gt_ends_after((uint64_t)r->last_ts, (uint64_t)r->last_dur, (uint64_t)*ts)) ||
		 (*ts == r->front_ts + r->front_dur &&
		  gt_ends_after((uint64_t)r->front_ts, (uint64_t)r->front_dur, (uint64_t)*ts)))
		move = 1;
	/* one that would start on an instant (a slice of no length) written just
	 * before it starts 1 ns after it, as the writer places it: Perfetto puts
	 * the instant on top of it and gives it its arrow ends */
	if (*dur > move && r->last_dur == 0 && *ts + move == r->last_ts)
		move++;
	r->last_start = *ts;
	r->last_move = move;
	/* a slice of no length (an instant) moves whole, as the writer moves it */
	move = !*dur || move < *dur ? move : *dur;
	*ts += move;
	*dur -= *dur ? move : 0;
	r->last_ts = *ts;
	r->last_dur = *dur;
	/* of two that end together (a device row's annotation ends with its
	 * last kernel, and is written after it), the one whose end adds up past
	 * it, as the writer's frontier keeps */
	int64_t end = *ts + *dur, front_end = r->front_ts + r->front_dur;

	if (end > front_end ||
	    (end == front_end &&
	     !gt_ends_after((uint64_t)r->front_ts, (uint64_t)r->front_dur, (uint64_t)end))) {
		r->front_ts = *ts;
		r->front_dur = *dur;
	}
	return true;
}

struct pass2_ctx {
	struct merge *m;
	struct input *in;
};

static int pass2_event(void *ctx, const char *v, const char *e)
{
	struct pass2_ctx *c = ctx;
	struct merge *m = c->m;
	struct input *in = c->in;
	struct buf *o = &m->out.b;
	struct jv_iter it;
	struct jv_member mb;
	const char *pv, *pe;
	char ph = 0;
	bool first = true, process_name = false;
	const struct buf *prefix = &in->prefix;
	int64_t x;
	uint64_t id;

	if (!jv_iter_init(&it, v, e)) {
		if (!in->skipped++)
			fprintf(stderr, WHO ": %s: skipping elements of traceEvents that are not "
					"objects\n", in->path);
		return 0;
	}
	if (jv_get(v, e, "ph", &pv, &pe) && jv_is_string(pv, pe) && pe - pv > 2)
		ph = pv[1];
	if (ph == 'M' && jv_get(v, e, "name", &pv, &pe))
		process_name = pe - pv == 14 && !memcmp(pv, "\"process_name\"", 14);
	if (process_name && jv_get(v, e, "pid", &pv, &pe) && jv_i64(pv, pe, &x) &&
	    !is_host_pid(&in->meta, x))
		prefix = &in->dev_prefix;
	process_name = process_name && prefix->len;
	int64_t sort = 0;
	bool sort_index = ph == 'M' && is_sort_index(v, e) && jv_get(v, e, "pid", &pv, &pe) &&
			  jv_i64(pv, pe, &x) && order_of(in, x, &sort);
	bool placed = false;
	int64_t ts_ns = 0, dur_ns = 0;

	if (ph == 'X' || ph == 's' || (ph == 'f' && bound_to_enclosing(v, e)) ||
	    ((ph == 'i' || ph == 'I') && thread_scoped(v, e)))
		placed = place_slice(in, v, e, ph, &ts_ns, &dur_ns);

	buf__adds(o, m->first_event ? "\n" : ",\n");
	m->first_event = false;
	buf__addc(o, '{');
	while (jv_iter_next(&it, &mb)) {
		if (!first)
			buf__addc(o, ',');
		first = false;
		if (placed && jv_key_is(&mb, "ts")) {
			put_key(o, &mb);
			json_ns_as_us(o, ts_ns);
		} else if (placed && jv_key_is(&mb, "dur")) {
			put_key(o, &mb);
			json_ns_as_us(o, dur_ns);
		} else if (jv_key_is(&mb, "ts") && jv_us_to_ns(mb.v, mb.e, &x)) {
			put_key(o, &mb);
			json_ns_as_us(o, x + in->shift_ns);
		} else if (jv_key_is(&mb, "pid") && jv_i64(mb.v, mb.e, &x)) {
			put_key(o, &mb);
			buf__printf(o, "%" PRId64, map_pid(in, x));
		} else if (((jv_key_is(&mb, "id") && has_scoped_id(ph)) || jv_key_is(&mb, "bind_id")) &&
			   parse_id(mb.v, mb.e, &id)) {
			put_key(o, &mb);
			buf__printf(o, "\"%" PRIx64 "\"", scoped_id(in, id, m->nin));
		} else if (process_name && jv_key_is(&mb, "args")) {
			put_prefixed_args(m, prefix, &mb);
		} else if (sort_index && jv_key_is(&mb, "args")) {
			put_key(o, &mb);
			buf__printf(o, "{\"sort_index\":%" PRId64 "}", sort);
		} else {
			put_member(o, &mb);
		}
	}
	buf__addc(o, '}');
	in->events++;
	if (o->len >= OUT_FLUSH)
		out__flush(&m->out);
	return 0;
}

/* The writer names device rows but leaves the process row to the viewer:
 * in a merged trace every process gets a name, "host rank N: exe". */
static void name_processes(struct merge *m, struct input *in)
{
	struct buf *o = &m->out.b;
	const char *exe = in->meta.exe, *base;
	struct buf name = { 0 };

	if (in->part_of >= 0) /* its first part names the process */
		return;
	for (size_t k = 0; k < in->meta.nhost_pids; k++) {
		int64_t pid = in->meta.host_pids[k];

		if (pidmap__has(&in->named, pid))
			continue;
		base = exe && *exe ? strrchr(exe, '/') : NULL;
		buf__reset(&name);
		buf__add(&name, in->prefix.p, in->prefix.len);
		if (exe && *exe)
			buf__adds(&name, base ? base + 1 : exe);
		else
			buf__printf(&name, "pid %" PRId64, pid);
		buf__adds(o, m->first_event ? "\n" : ",\n");
		m->first_event = false;
		buf__printf(o, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%" PRId64
			       ",\"tid\":0,\"args\":{\"name\":", map_pid(in, pid));
		json_escape(o, name.p, name.len);
		buf__adds(o, "}}");
	}
	buf__free(&name);
}

/* The rows of a file without a process_sort_index of their own get theirs
 * (see assign_order). */
static void sort_processes(struct merge *m, struct input *in)
{
	struct buf *o = &m->out.b;
	int64_t *keys = pidmap__sorted_keys(&in->pids), sort;

	for (size_t k = 0; keys && k < in->pids.n; k++) {
		if (pidmap__has(&in->sorts, keys[k]) || !order_of(in, keys[k], &sort))
			continue;
		buf__adds(o, m->first_event ? "\n" : ",\n");
		m->first_event = false;
		buf__printf(o, "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%" PRId64
			       ",\"tid\":0,\"args\":{\"sort_index\":%" PRId64 "}}",
			    map_pid(in, keys[k]), sort);
	}
	free(keys);
}

/* ---- the merged "gputrace" object ---- */

/* Counts by reason over the inputs (lost events; adjusted times, with the
 * largest correction of each reason); keep_max: the largest count, not
 * the sum (the files of one process, each with its running total). */
struct reason_sum {
	char **names;
	uint64_t *counts, *maxes;
	size_t n;
	bool keep_max;
};

static void sum_reason(struct reason_sum *r, const char *reason, uint64_t n, uint64_t max)
{
	for (size_t i = 0; i < r->n; i++) {
		if (!strcmp(r->names[i], reason)) {
			if (!r->keep_max)
				r->counts[i] += n;
			else if (n > r->counts[i])
				r->counts[i] = n;
			if (max > r->maxes[i])
				r->maxes[i] = max;
			return;
		}
	}
	char **nn = realloc(r->names, (r->n + 1) * sizeof(*nn));
	uint64_t *nc = nn ? realloc(r->counts, (r->n + 1) * sizeof(*nc)) : NULL;
	uint64_t *nm = nc ? realloc(r->maxes, (r->n + 1) * sizeof(*nm)) : NULL;
	if (nn)
		r->names = nn;
	if (nc)
		r->counts = nc;
	if (!nm || !(r->names[r->n] = strdup(reason)))
		return;
	r->maxes = nm;
	r->counts[r->n] = n;
	r->maxes[r->n++] = max;
}

static void add_reason(void *ctx, const char *reason, uint64_t n)
{
	sum_reason(ctx, reason, n, 0);
}

static void add_adjusted(void *ctx, const char *reason, uint64_t n, uint64_t max_ns)
{
	sum_reason(ctx, reason, n, max_ns);
}

static void reason_sum__free(struct reason_sum *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->names[i]);
	free(r->names);
	free(r->counts);
	free(r->maxes);
}

static void put_opt_str(struct buf *o, const char *s)
{
	if (s)
		json_escape(o, s, strlen(s));
	else
		buf__adds(o, "null");
}

static void fold_reasons(struct reason_sum *into, struct reason_sum *from)
{
	for (size_t i = 0; i < from->n; i++)
		sum_reason(into, from->names[i], from->counts[i], from->maxes[i]);
	reason_sum__free(from);
}

/* The counts of the inputs: summed over processes, once per process. A
 * trailer's lost, adjusted and lossless counts are its process's since it
 * started, and so are a dump's events_recorded and flows_unmatched: of a
 * process's files the largest (the latest) is taken; each window's
 * events_recorded and flows_unmatched are its own, and they add up. */
static void count_inputs(struct merge *m, uint64_t *lost, uint64_t *recorded,
			 uint64_t *waits, uint64_t *wait_ns, uint64_t *unmatched,
			 uint64_t *stacks, struct reason_sum *rs, struct reason_sum *adj)
{
	for (unsigned i = 0; i < m->nin; i++) {
		struct reason_sum grs = { .keep_max = true }, gadj = { .keep_max = true };
		uint64_t glost = 0, grec = 0, gwaits = 0, gwait_ns = 0, gflows = 0, gstacks = 0;
		unsigned j;

		for (j = 0; j < i && !same_process(&m->in[j].meta, &m->in[i].meta); j++)
			;
		if (j < i)
			continue; /* counted with the process's first file */
		for (j = i; j < m->nin; j++) {
			struct trace_meta *mt = &m->in[j].meta;

			if (j > i && !same_process(mt, &m->in[i].meta))
				continue;
			glost = mt->events_lost > glost ? mt->events_lost : glost;
			if (!mt->flight)
				grec += mt->events_recorded;
			else if (mt->events_recorded > grec)
				grec = mt->events_recorded;
			if (!mt->flight)
				gflows += mt->flows_unmatched;
			else if (mt->flows_unmatched > gflows)
				gflows = mt->flows_unmatched;
			gwaits = mt->waits > gwaits ? mt->waits : gwaits;
			/* the process's stack table's, as its lost counts */
			gstacks = mt->stacks_dropped > gstacks ? mt->stacks_dropped : gstacks;
			gwait_ns = mt->wait_ns > gwait_ns ? mt->wait_ns : gwait_ns;
			meta__each_lost(mt, add_reason, &grs);
			meta__each_adjusted(mt, add_adjusted, &gadj);
		}
		*lost += glost;
		*recorded += grec;
		*waits += gwaits;
		*wait_ns += gwait_ns;
		*unmatched += gflows;
		*stacks += gstacks;
		fold_reasons(rs, &grs);
		fold_reasons(adj, &gadj);
	}
}

/* An input whose trailer named no process, and one was found in its events:
 * "from_events", shaped as a trailer, tells the summary whose its device rows
 * are (its own pids, as "gputrace"'s). With several, whose is not known. */
static void put_process_from_events(struct buf *o, struct input *in)
{
	int64_t host, *keys;
	long named;
	bool first = true;

	if (!in->pids_from_events || in->meta.nhost_pids != 1)
		return;
	host = in->meta.host_pids[0];
	named = pidmap__slot(&in->named, host);
	buf__printf(o, ",\"from_events\":{\"pid\":%" PRId64 ",\"exe\":", host);
	put_opt_str(o, named >= 0 ? in->named.names[named] : NULL);
	buf__adds(o, ",\"devices\":[");
	keys = pidmap__sorted_keys(&in->pids);
	for (size_t k = 0; k < in->pids.n; k++) {
		if (keys[k] == host)
			continue;
		buf__printf(o, "%s{\"pid\":%" PRId64 "}", first ? "" : ",", keys[k]);
		first = false;
	}
	free(keys);
	buf__adds(o, "]}");
}

static void write_meta(struct merge *m, int64_t base)
{
	struct buf *o = &m->out.b;
	struct reason_sum rs = { 0 }, adj = { 0 };
	uint64_t lost = 0, recorded = 0, waits = 0, wait_ns = 0, unmatched = 0, stacks = 0;
	bool lossless = false;
	const char *host = NULL;
	bool one_host = true;
	uint64_t incomplete = 0;

	count_inputs(m, &lost, &recorded, &waits, &wait_ns, &unmatched, &stacks, &rs, &adj);
	for (unsigned i = 0; i < m->nin; i++) {
		struct trace_meta *mt = &m->in[i].meta;

		lossless |= mt->lossless;
		/* a file not closed (killed, still running) or cut short */
		incomplete += meta__incomplete(mt, m->in[i].scan == TRACE_TRUNCATED);
		if (!mt->hostname || (host && strcmp(host, mt->hostname)))
			one_host = false;
		else
			host = mt->hostname;
	}

	buf__adds(o, "\n],\n\"displayTimeUnit\":\"ns\",\n\"gputrace\":{\"version\":\"" GPUTRACE_VERSION
		     "\",\"merged\":true,\"clock\":\"CLOCK_REALTIME - anchor.realtime_ns\",");
	buf__printf(o, "\"anchor\":{\"realtime_ns\":%" PRId64 ",\"clock_ns\":0},", base);
	buf__adds(o, "\"pid\":null,\"hostname\":");
	put_opt_str(o, one_host ? host : NULL);
	buf__adds(o, ",\"rank\":null,\"exe\":null,\"host_pids\":[");
	bool first = true;
	struct pidmap listed = { 0 }; /* a process's parts list it once */
	for (unsigned i = 0; i < m->nin; i++) {
		struct input *in = &m->in[i];

		for (size_t k = 0; k < in->meta.nhost_pids; k++) {
			int64_t pid = map_pid(in, in->meta.host_pids[k]);

			if (pidmap__has(&listed, pid))
				continue;
			pidmap__add(&listed, pid);
			buf__printf(o, "%s%" PRId64, first ? "" : ",", pid);
			first = false;
		}
	}
	pidmap__free(&listed);
	buf__printf(o, "],\"events_lost\":%" PRIu64 ",\"events_recorded\":%" PRIu64
		       ",\"lost_by_reason\":{", lost, recorded);
	for (size_t i = 0; i < rs.n; i++) {
		if (i)
			buf__addc(o, ',');
		json_escape(o, rs.names[i], strlen(rs.names[i]));
		buf__printf(o, ":%" PRIu64, rs.counts[i]);
	}
	reason_sum__free(&rs);
	buf__addc(o, '}');
	for (size_t i = 0; i < adj.n; i++) {
		buf__adds(o, i ? "," : ",\"adjusted\":{");
		json_escape(o, adj.names[i], strlen(adj.names[i]));
		buf__printf(o, ":{\"count\":%" PRIu64 ",\"max_ns\":%" PRIu64 "}%s", adj.counts[i],
			    adj.maxes[i], i + 1 == adj.n ? "}" : "");
	}
	reason_sum__free(&adj);
	if (lossless)
		buf__printf(o, ",\"lossless\":{\"waits\":%" PRIu64 ",\"wait_ns\":%" PRIu64 "}", waits,
			    wait_ns);
	buf__printf(o, ",\"incomplete\":%" PRIu64, incomplete);
	if (unmatched) /* as a trace's trailer has it: when not 0 */
		buf__printf(o, ",\"flows_unmatched\":%" PRIu64, unmatched);
	/* the calls whose stack was not recorded: the merge's summary and check
	 * read them here (without, a merged run's stacks.dropped was always 0) */
	if (stacks)
		buf__printf(o, ",\"stacks\":{\"dropped\":%" PRIu64 "}", stacks);
	buf__adds(o, ",\"inputs\":[");
	for (unsigned i = 0; i < m->nin; i++) {
		struct input *in = &m->in[i];
		bool any = false;

		buf__adds(o, i ? ",\n {\"path\":" : "\n {\"path\":");
		put_opt_str(o, in->path);
		buf__printf(o, ",\"events\":%" PRIu64 ",\"ts_shift_ns\":%" PRId64
			       ",\"truncated\":%s,\"pid_map\":{",
			    in->events, in->shift_ns, in->scan == TRACE_TRUNCATED ? "true" : "false");
		for (size_t s = 0; s < in->pids.cap; s++) {
			if (!in->pids.used[s] || in->pids.keys[s] == in->pids.vals[s])
				continue;
			buf__printf(o, "%s\"%" PRId64 "\":%" PRId64, any ? "," : "", in->pids.keys[s],
				    in->pids.vals[s]);
			any = true;
		}
		buf__adds(o, "},\"gputrace\":");
		if (in->meta.present)
			buf__add(o, in->meta.raw.p, in->meta.raw.len);
		else
			buf__adds(o, "null");
		put_process_from_events(o, in);
		buf__addc(o, '}');
	}
	buf__adds(o, "]}}\n");
}

static void usage_merge(FILE *f)
{
	fprintf(f, "usage: gputrace merge -o OUT FILE...\n"
		   "Joins per-process traces (.json or .json.gz) into one timeline;\n"
		   "OUT ending in .gz is written compressed; OUT - is stdout.\n");
}

/* Earliest process start first (the clock anchor is taken then). */
static int cmp_start(const void *a, const void *b)
{
	const struct input *x = a, *y = b;
	int64_t p = x->meta.has_anchor ? x->meta.realtime_ns : INT64_MAX;
	int64_t q = y->meta.has_anchor ? y->meta.realtime_ns : INT64_MAX;

	return (p > q) - (p < q);
}

static bool is_folder(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

int tool__merge(const char *outpath, char *const *files, unsigned nfiles,
		const struct merge_opts *opts)
{
	struct merge m = { 0 };
	struct buf tmppath = { 0 };
	int64_t base;
	int ret = 1, err;
	/* "-o -": stdout, as report -o - (no temporary file to rename) */
	bool to_stdout = !strcmp(outpath, "-");
	const char *shown = to_stdout ? "stdout" : outpath;

	m.nin = nfiles;
	m.in = calloc(nfiles, sizeof(*m.in));
	if (!m.in)
		goto out;
	m.nin = 0; /* the traces among the files */
	for (unsigned i = 0; i < nfiles; i++) {
		struct input *in = &m.in[m.nin];
		struct trace_ops ops = { .ctx = in, .event = pass1_event, .meta = pass1_meta,
					 .dist = pass1_dist,
					 .skip_reports = true };

		in->path = files[i];
		in->scan = trace__scan(WHO, in->path, &ops);
		if (in->scan == TRACE_ERROR)
			goto out;
		if (in->scan == TRACE_SKIPPED) { /* a glob's *.json took a report too */
			meta__free(&in->meta);
			buf__free(&in->dist_rank);
			memset(in, 0, sizeof(*in));
			continue;
		}
		find_host_pids(in);
		m.nin++;
	}
	if (!m.nin) {
		fprintf(stderr, WHO ": no trace among the inputs\n");
		goto out;
	}
	nfiles = m.nin;
	if (opts && opts->by_start)
		qsort(m.in, nfiles, sizeof(*m.in), cmp_start);
	for (unsigned i = 0; i < nfiles; i++)
		m.in[i].idx = i;
	find_parts(&m);
	assign_pids(&m);
	for (unsigned i = 0; i < nfiles; i++)
		read_rank(&m.in[i]);
	mark_shared_ranks(&m);
	assign_order(&m);
	/* after the pids: a device row is named after its process's pid as merged */
	for (unsigned i = 0; i < nfiles; i++)
		build_prefix(&m.in[i]);
	base = assign_shifts(&m);

	/* Write next to the output and rename at the end: a failed merge leaves
	 * no half file, and an input may be the output. */
	buf__printf(&tmppath, "%s.tmp.%d", outpath, (int)getpid());
	if (to_stdout)
		m.out.path = "-", m.out.f = stdout, err = 0;
	else
		err = out__open(&m.out, tmppath.p, outpath);
	if (err) {
		fprintf(stderr, WHO ": cannot write %s: %s\n", outpath, strerror(-err));
		goto out;
	}
	buf__adds(&m.out.b, "{\"traceEvents\":[");
	m.first_event = true;
	for (unsigned i = 0; i < nfiles; i++) {
		struct pass2_ctx c = { .m = &m, .in = &m.in[i] };
		struct trace_ops ops = { .ctx = &c, .event = pass2_event, .quiet = true };
		int r;

		name_processes(&m, &m.in[i]);
		sort_processes(&m, &m.in[i]);
		r = trace__scan(WHO, m.in[i].path, &ops);

		if (r == TRACE_ERROR || m.out.failed) {
			out__close(&m.out);
			if (!to_stdout)
				unlink(tmppath.p);
			if (m.out.failed)
				fprintf(stderr, WHO ": writing %s failed\n", shown);
			goto out;
		}
	}
	write_meta(&m, base);
	err = out__close(&m.out);
	if (!err && !to_stdout && rename(tmppath.p, outpath))
		err = -errno;
	if (err) {
		fprintf(stderr, WHO ": writing %s failed: %s\n", shown, strerror(-err));
		if (!to_stdout)
			unlink(tmppath.p);
		goto out;
	}
	uint64_t total = 0;
	for (unsigned i = 0; i < nfiles; i++)
		total += m.in[i].events;
	if (!opts || !opts->quiet)
		fprintf(stderr, WHO ": %s: %" PRIu64 " event%s from %u trace%s\n", shown, total,
			total == 1 ? "" : "s", nfiles, nfiles == 1 ? "" : "s");
	ret = 0;
out:
	for (unsigned i = 0; m.in && i < nfiles; i++) {
		meta__free(&m.in[i].meta);
		pidmap__free(&m.in[i].pids);
		pidmap__free(&m.in[i].named);
		pidmap__free(&m.in[i].device_pids);
		pidmap__free(&m.in[i].span_pids);
		buf__free(&m.in[i].tmp);
		pidmap__free(&m.in[i].rows);
		free(m.in[i].row_states);
		buf__free(&m.in[i].prefix);
		buf__free(&m.in[i].dev_prefix);
		buf__free(&m.in[i].rank);
		buf__free(&m.in[i].dist_rank);
		pidmap__free(&m.in[i].sorts);
		pidmap__free(&m.in[i].order);
	}
	free(m.in);
	buf__free(&m.tmp);
	buf__free(&tmppath);
	return ret;
}

int cmd_merge(int argc, char **argv)
{
	const char *outpath = NULL;
	char **files = calloc((size_t)argc + 1, sizeof(*files));
	unsigned nfiles = 0;
	int ret;

	if (!files)
		return 1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage_merge(stdout);
			free(files);
			return 0;
		} else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
			if (i + 1 >= argc) {
				fprintf(stderr, WHO ": %s needs a file name\n", a);
				goto usage;
			}
			outpath = argv[++i];
		} else if (!strncmp(a, "--output=", 9)) {
			outpath = a + 9;
		} else if (!strcmp(a, "--")) {
			while (++i < argc)
				files[nfiles++] = argv[i];
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, WHO ": unknown option '%s'\n", a);
			goto usage;
		} else {
			files[nfiles++] = argv[i];
		}
	}
	if (!outpath || !*outpath) {
		fprintf(stderr, WHO ": no output file: give -o OUT\n");
		goto usage;
	}
	if (!nfiles) {
		fprintf(stderr, WHO ": no input traces given\n");
		goto usage;
	}
	/* said before the inputs are read, not as a failed rename after the
	 * whole merge ("-o .": "Device or resource busy") */
	if (strcmp(outpath, "-") && is_folder(outpath)) {
		fprintf(stderr, WHO ": -o %s is a folder: give the merged trace's file name "
			"(as %s/merged.json)\n", outpath, outpath);
		free(files);
		return 2;
	}
	trace__catch_stop();
	ret = tool__merge(outpath, files, nfiles, NULL);
	free(files);
	/* (a signal after the last event: the merge is whole, and ends by it all the same) */
	if (trace__stop_signal) {
		if (!ret)
			trace__die_by(trace__stop_signal);
		if (strcmp(outpath, "-"))
			fprintf(stderr, WHO ": stopped by %s: %s not written\n", trace__stop_name(),
				outpath);
		else
			fprintf(stderr, WHO ": stopped by %s: the trace on stdout is cut short\n",
				trace__stop_name());
		trace__die_by(trace__stop_signal);
	}
	return ret;
usage:
	usage_merge(stderr);
	free(files);
	return 2;
}
