// SPDX-License-Identifier: MIT
/*
 * The summary aggregator (see writer/summary.h). Rows are kept in hash
 * tables keyed by name, so memory grows with the number of distinct
 * kernels/calls, never with the number of events; past SUMMARY_MAX_ROWS
 * distinct names per table the rest is folded into one "(other)" row.
 *
 * Not thread-safe: the writer (one drain thread) or the tool feeds it.
 * Compiled into libgputrace.so and linked into gputrace-tool: libc only.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "inject/config.h"
#include "writer/summary.h"
#include "inject/hash.h"
#include "inject/utf8.h"

#define SUMMARY_MAX_ROWS 65536  /* distinct names per table */
#define SUMMARY_TOP      10     /* rows printed per table */
#define BUSY_PENDING_MIN 64     /* busy intervals kept per device, at first */
#define BUSY_PENDING_MAX 4096   /* ... at most: then the older half retires */
#define BUSY_BLOCKS_MAX  4096   /* retired blocks kept per device: then two merge */
#define NAME_COLUMNS     44     /* printed name width */
#define OTHER_ROW        "(other)"

/* Retired busy intervals of a device: [start, end), of which covered ns are busy. */
struct busy_block {
	uint64_t start, end, covered;
};

/* One aggregated row: a kernel, an API call, a copy direction, a device. */
struct row {
	char *name;
	char *cat;        /* API calls: the category of the first call seen */
	uint64_t count;
	uint64_t total_ns;
	uint64_t min_ns;
	uint64_t max_ns;
	uint64_t bytes;
	/* devices: busy time as a union of spans. Disjoint intervals sorted
	 * by start, up to BUSY_PENDING_MAX; then the older half retires into
	 * a block (its bounds and the time its intervals cover), busy_done
	 * adds up the blocks, and busy_until is where the last one ends. Spans
	 * come in the order they were read, not in time order (a Level Zero
	 * queue's work when its list is read, after other queues' later work),
	 * so a span may come thousands of intervals late: it fills the gaps
	 * between and inside the blocks it covers whole; within a block it
	 * covers in part only what lies outside the block's bounds counts. */
	uint64_t busy_done, busy_until;
	uint64_t first_ns, last_ns;
	unsigned npending, pending_cap;
	uint64_t (*pending)[2];
	unsigned nblocks, blocks_cap;
	struct busy_block *blocks;
	/* metrics: samples of one counter series, or one kernel's metric; fmean, the
	 * running mean, for when their sum overflows (samples near DBL_MAX) */
	double fsum, fmin, fmax, fmean;
	/* ranges: the device work launched inside them (count, total: host) */
	uint64_t device_ns, device_spans, kernels;
};

#define TABLE_HINTS 16

struct table {
	struct row *rows;  /* open addressing, name == NULL is empty */
	size_t cap;        /* power of two */
	size_t used;
	bool full;         /* SUMMARY_MAX_ROWS reached: new names go to OTHER_ROW */
	/* rows of interned names lately looked up, by the name's address (emptied when
	 * the rows move) */
	struct {
		const char *name;
		struct row *row;
	} hint[TABLE_HINTS];
};

/* T_COUNTERS rows are keyed "device\x1fcounter\x1fseries", T_KERNEL_METRICS
 * rows "kernel\x1fmetric", T_RANGE_METRICS "range\x1fmetric", T_ERRORS "call\x1ferror":
 * sorted by name, they come out grouped. */
enum { T_KERNELS, T_API, T_ANNOTATIONS, T_RANGES, T_COPIES, T_DEVICES, T_LOST, T_ADJUSTED,
       T_COUNTERS, T_KERNEL_METRICS, T_RANGE_METRICS, T_ERRORS, T_GRAPHS, T__COUNT };
#define KEY_SEP '\x1f'


/* A traced process: its share of the tables, and its devices' busy time. */
struct proc {
	int64_t pid;
	char *exe, *host, *rank;
	uint64_t lost, spans;
	struct row kernels, api, copies; /* count, total_ns, bytes */
	struct table devices;            /* busy time per device row */
};

struct summary {
	struct table t[T__COUNT];
	uint64_t spans;
	uint64_t first_ns, last_ns; /* window over all spans */
	uint64_t overhead_count, overhead_ns;
	uint64_t lost_total;
	uint64_t errors;            /* host calls that failed (T_ERRORS) */
	bool lossless;              /* a process recorded with --lossless */
	uint64_t waits, wait_ns;    /* ... and waited this often, this long */
	uint64_t incomplete;        /* traces not closed (summary__incomplete) */
	uint64_t cut;               /* ... of which files cut short */
	uint64_t failed;            /* ... and of the others, stopped by a failed write */
	char failed_why[96];        /* the first of those: its trailer's "end" */
	uint64_t flows_unmatched;   /* device spans without their arrow */
	uint64_t stacks_dropped;    /* calls without their call stack */
	bool oom;                   /* an allocation failed: numbers are partial */
	struct proc *procs;
	size_t nprocs, procs_cap;
	char *hint_more, *hint_buffer, *hint_overflow;
	unsigned long hint_buffer_kb, hint_overflow_mb;
	/* this summary's id in the high half, the times rows or processes moved in the
	 * low one: what a summary_kernel_rows was stamped with while it holds */
	uint64_t moves;
};

static uint64_t hash_name(const char *s)
{
	return gt_fnv1a64_str(s);
}

static struct row *table__probe(struct row *rows, size_t cap, const char *name)
{
	size_t i = hash_name(name) & (cap - 1);

	while (rows[i].name && strcmp(rows[i].name, name))
		i = (i + 1) & (cap - 1);
	return &rows[i];
}

static int table__grow(struct table *t)
{
	size_t ncap = t->cap ? t->cap * 2 : 64;
	struct row *nrows = calloc(ncap, sizeof(*nrows));

	if (!nrows)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++)
		if (t->rows[i].name)
			*table__probe(nrows, ncap, t->rows[i].name) = t->rows[i];
	free(t->rows);
	t->rows = nrows;
	t->cap = ncap;
	memset(t->hint, 0, sizeof(t->hint));
	return 0;
}

/* The table's rows moved (s->moves: summary_kernel_rows made before are stale). */
static int table__grow_in(struct summary *s, struct table *t)
{
	int err = table__grow(t);

	if (!err)
		s->moves++;
	return err;
}

/* The row for name, created empty on first use; NULL only without memory. */
static struct row *table__get(struct summary *s, struct table *t, const char *name)
{
	struct row *r;

	if (!name)
		name = "";
	if (t->cap) {
		r = table__probe(t->rows, t->cap, name);
		if (r->name)
			return r;
	}
	if (t->used >= SUMMARY_MAX_ROWS && strcmp(name, OTHER_ROW)) {
		t->full = true;
		return table__get(s, t, OTHER_ROW);
	}
	if ((t->used + 1) * 4 > t->cap * 3 && table__grow_in(s, t)) {
		s->oom = true;
		return NULL;
	}
	r = table__probe(t->rows, t->cap, name);
	r->name = strdup(name);
	if (!r->name) {
		s->oom = true;
		return NULL;
	}
	r->min_ns = UINT64_MAX;
	t->used++;
	return r;
}

/* table__get for a span's name or device: where the caller interned them (an address
 * that holds its text for good: the drain's device spans, one or two lookups each), found
 * by the address without hashing the name. */
static struct row *table__get_for(struct summary *s, struct table *t,
				  const struct summary_span *sp, const char *name)
{
	size_t i = ((uintptr_t)name >> 3) & (TABLE_HINTS - 1);
	struct row *r;

	if (!sp->interned || !name)
		return table__get(s, t, name);
	if (t->hint[i].name == name)
		return t->hint[i].row;
	r = table__get(s, t, name);
	if (r) {
		t->hint[i].name = name;
		t->hint[i].row = r;
	}
	return r;
}

static void row__account_calls(struct row *r, const struct summary_calls *c)
{
	r->count += c->count;
	r->total_ns += c->total_ns;
	if (c->min_ns < r->min_ns)
		r->min_ns = c->min_ns;
	if (c->max_ns > r->max_ns)
		r->max_ns = c->max_ns;
}

static void row__account(struct row *r, uint64_t dur_ns, uint64_t bytes)
{
	r->bytes += bytes;
	row__account_calls(r, &(struct summary_calls){ .count = 1, .total_ns = dur_ns,
						       .min_ns = dur_ns, .max_ns = dur_ns });
}

/* Room for one more retired block: the list grows to BUSY_BLOCKS_MAX, then
 * the two oldest blocks become one (a span late enough to cover it in part
 * then misses what it fills inside: memory stays 96 KiB a device). */
static bool row__block_room(struct summary *s, struct row *r)
{
	struct busy_block *b = r->blocks;

	if (r->nblocks < r->blocks_cap)
		return true;
	if (r->blocks_cap < BUSY_BLOCKS_MAX) {
		unsigned cap = r->blocks_cap ? 2 * r->blocks_cap : 16;

		b = realloc(b, cap * sizeof(*b));
		if (b) {
			r->blocks = b;
			r->blocks_cap = cap;
			return true;
		}
		s->oom = true;
		b = r->blocks;
	}
	if (r->nblocks < 2)
		return false;
	b[0].end = b[1].end;
	b[0].covered += b[1].covered;
	memmove(&b[1], &b[2], (r->nblocks - 2) * sizeof(*b));
	r->nblocks--;
	return true;
}

/* Replace blocks [i, j) by blk, which holds them, joined with a block it touches. */
static void row__block_put(struct row *r, unsigned i, unsigned j, struct busy_block blk)
{
	struct busy_block *b = r->blocks;

	if (i > 0 && b[i - 1].end == blk.start) {
		blk.start = b[--i].start;
		blk.covered += b[i].covered;
	}
	if (j < r->nblocks && b[j].start == blk.end) {
		blk.end = b[j].end;
		blk.covered += b[j++].covered;
	}
	/* j == i: a gap filled alone, touching no block; the caller made room */
	memmove(&b[i + 1], &b[j], (r->nblocks - j) * sizeof(*b));
	b[i] = blk;
	r->nblocks = r->nblocks - (j - i) + 1;
}

/* First block ending after t (their ends are sorted: they are disjoint). */
static unsigned row__block_after(const struct row *r, uint64_t t)
{
	unsigned lo = 0, hi = r->nblocks;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (r->blocks[mid].end <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* A span read late, [start, end) before busy_until: it adds the gaps it fills
 * between the retired blocks, and inside those it covers whole; a block it
 * covers in part is left as it is (what was busy inside is not known). */
static void row__busy_late(struct summary *s, struct row *r, uint64_t start, uint64_t end)
{
	uint64_t covered = 0;
	unsigned i, j;

	for (;;) {
		i = row__block_after(r, start);
		j = row__block_after(r, end);
		if (i < r->nblocks && r->blocks[i].start < start)
			start = r->blocks[i++].end;
		if (j < r->nblocks && r->blocks[j].start < end)
			end = r->blocks[j].start;
		if (end <= start)
			return;
		if (i < j || r->nblocks < r->blocks_cap)
			break;
		/* a block of its own: room made may join the two oldest, so
		 * look again */
		if (!row__block_room(s, r))
			return;
	}
	for (unsigned k = i; k < j; k++)
		covered += r->blocks[k].covered;
	r->busy_done += end - start - covered;
	row__block_put(r, i, j, (struct busy_block){ start, end, end - start });
}

/* Room for one more busy interval: the list grows to BUSY_PENDING_MAX, then
 * its older half retires at once into a block (one move for BUSY_PENDING_MAX
 * / 2 spans). */
static bool row__busy_room(struct summary *s, struct row *r)
{
	uint64_t (*p)[2] = r->pending;
	uint64_t covered = 0;
	unsigned half;

	if (r->npending < r->pending_cap)
		return true;
	if (r->pending_cap < BUSY_PENDING_MAX) {
		unsigned cap = r->pending_cap ? 2 * r->pending_cap : BUSY_PENDING_MIN;

		p = realloc(p, (cap + 1) * sizeof(*p));
		if (!p) {
			s->oom = true;
			return false;
		}
		r->pending = p;
		r->pending_cap = cap;
		return true;
	}
	if (!row__block_room(s, r))
		return false;
	half = r->npending / 2;
	for (unsigned i = 0; i < half; i++)
		covered += p[i][1] - p[i][0];
	r->busy_done += covered;
	r->blocks[r->nblocks++] = (struct busy_block){ p[0][0], p[half - 1][1], covered };
	r->busy_until = p[half - 1][1];
	memmove(&p[0], &p[half], (r->npending - half) * sizeof(*p));
	r->npending -= half;
	return true;
}

/* Add [start, end) to the device's union of busy intervals. */
static void row__busy(struct summary *s, struct row *r, uint64_t start, uint64_t end)
{
	uint64_t (*p)[2];
	unsigned i, j, n, lo, hi;

	if (r->count == 1 || start < r->first_ns)
		r->first_ns = start;
	if (end > r->last_ns)
		r->last_ns = end;
	if (start < r->busy_until) {
		row__busy_late(s, r, start, end < r->busy_until ? end : r->busy_until);
		start = r->busy_until;
	}
	if (end <= start || !row__busy_room(s, r))
		return;
	p = r->pending;
	n = r->npending;
	/* first interval ending at or after start: the ones before stay
	 * (disjoint and sorted, so their ends are sorted too) */
	for (lo = 0, hi = n; lo < hi;) {
		unsigned mid = lo + (hi - lo) / 2;

		if (p[mid][1] < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	i = lo;
	/* intervals [i, j) touch the new one: merge them into it */
	for (j = i; j < n && p[j][0] <= end; j++) {
		if (p[j][0] < start)
			start = p[j][0];
		if (p[j][1] > end)
			end = p[j][1];
	}
	memmove(&p[i + 1], &p[j], (n - j) * sizeof(*p));
	p[i][0] = start;
	p[i][1] = end;
	r->npending = n - (j - i) + 1;
}

static uint64_t row__busy_ns(const struct row *r)
{
	uint64_t busy = r->busy_done;

	for (unsigned i = 0; i < r->npending; i++)
		busy += r->pending[i][1] - r->pending[i][0];
	return busy;
}

struct summary *summary__new(void)
{
	static _Atomic uint32_t made;
	struct summary *s = calloc(1, sizeof(struct summary));

	/* a stamp no other summary's rows had, whatever address this one got */
	if (s)
		s->moves = (uint64_t)(atomic_fetch_add(&made, 1) + 1) << 32;
	return s;
}

static void table__free(struct table *t)
{
	for (size_t i = 0; i < t->cap; i++) {
		free(t->rows[i].name);
		free(t->rows[i].cat);
		free(t->rows[i].pending);
		free(t->rows[i].blocks);
	}
	free(t->rows);
}

void summary__free(struct summary *s)
{
	if (!s)
		return;
	for (int k = 0; k < T__COUNT; k++)
		table__free(&s->t[k]);
	for (size_t i = 0; i < s->nprocs; i++) {
		free(s->procs[i].exe);
		free(s->procs[i].host);
		free(s->procs[i].rank);
		table__free(&s->procs[i].devices);
	}
	free(s->procs);
	free(s->hint_more);
	free(s->hint_buffer);
	free(s->hint_overflow);
	free(s);
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static char *dup_or_null(struct summary *s, const char *v)
{
	char *d = v ? strdup(v) : NULL;

	if (v && !d)
		s->oom = true;
	return d;
}

int summary__process(struct summary *s, const struct summary_process *p)
{
	struct proc *n;

	if (!s || !p)
		return 0;
	for (size_t i = 0; i < s->nprocs; i++) {
		struct proc *q = &s->procs[i];

		if (q->pid == p->pid && same_str(q->host, p->host) && same_str(q->rank, p->rank)) {
			/* the same process after an exec: named after its last image */
			q->lost += p->lost;
			if (p->exe) {
				free(q->exe);
				q->exe = dup_or_null(s, p->exe);
			}
			return (int)i + 1;
		}
	}
	if (s->nprocs == s->procs_cap) {
		size_t cap = s->procs_cap ? s->procs_cap * 2 : 8;

		n = realloc(s->procs, cap * sizeof(*n));
		if (n) {
			s->procs = n;
			s->moves++;
		}
		if (!n || s->nprocs >= SUMMARY_MAX_ROWS) {
			s->oom = true;
			return 0;
		}
		s->procs_cap = cap;
	}
	n = &s->procs[s->nprocs];
	memset(n, 0, sizeof(*n));
	n->pid = p->pid;
	n->exe = dup_or_null(s, p->exe);
	n->host = dup_or_null(s, p->host);
	n->rank = dup_or_null(s, p->rank);
	n->lost = p->lost;
	return (int)++s->nprocs;
}

void summary__set_hints(struct summary *s, const struct summary_hints *h)
{
	if (!s || !h)
		return;
	free(s->hint_more);
	free(s->hint_buffer);
	free(s->hint_overflow);
	s->hint_more = dup_or_null(s, h->more);
	s->hint_buffer = dup_or_null(s, h->buffer);
	s->hint_buffer_kb = h->buffer_kb;
	s->hint_overflow = dup_or_null(s, h->overflow);
	s->hint_overflow_mb = h->overflow_mb;
}

/* (Called several times a span: the first byte tells most categories apart without a
 * call; a launch's kernel span asked strcmp seven times.) */
static inline bool is_cat(const char *cat, const char *want)
{
	return cat && cat[0] == want[0] && !strcmp(cat, want);
}

bool summary__is_wait(const struct summary_span *sp)
{
	return sp->device && (is_cat(sp->cat, "cuda_sync") || is_cat(sp->cat, "gpu_sync"));
}

/* The process's own rows: its kernels, calls, copies and devices. */
static void proc__add(struct summary *s, struct proc *p, const struct summary_span *sp)
{
	struct row *r;

	p->spans++;
	if (summary__is_wait(sp) || (sp->device && is_cat(sp->cat, "overhead")))
		return;
	if (sp->device) {
		r = table__get_for(s, &p->devices, sp, sp->device);
		if (r) {
			r->count++;
			r->total_ns += sp->dur_ns;
			row__busy(s, r, sp->start_ns, sp->start_ns + sp->dur_ns);
		}
		if (is_cat(sp->cat, "kernel"))
			row__account(&p->kernels, sp->dur_ns, 0);
		else if (is_cat(sp->cat, "gpu_memcpy") || is_cat(sp->cat, "gpu_memset"))
			row__account(&p->copies, sp->dur_ns, sp->bytes);
	} else if (!is_cat(sp->cat, "overhead") && !is_cat(sp->cat, "user_annotation")) {
		row__account(&p->api, sp->dur_ns, 0);
	}
}

/* One value into the row "a\x1fb[\x1fc]" of a metrics table. */
static void summary__sample(struct summary *s, int table, const char *a, const char *b,
			    const char *c, double v)
{
	char key[1024];
	struct row *r;

	if (!isfinite(v)) /* NaN, Inf: not a sample (and JSON has neither) */
		return;
	if (c)
		snprintf(key, sizeof(key), "%s%c%s%c%s", a ? a : "", KEY_SEP, b ? b : "", KEY_SEP, c);
	else
		snprintf(key, sizeof(key), "%s%c%s", a ? a : "", KEY_SEP, b ? b : "");
	r = table__get(s, &s->t[table], key);
	if (!r)
		return;
	if (!r->count || v < r->fmin)
		r->fmin = v;
	if (!r->count || v > r->fmax)
		r->fmax = v;
	r->fsum += v;
	r->count++;
	r->fmean += v / (double)r->count - r->fmean / (double)r->count;
}

void summary__counter(struct summary *s, const char *device, const char *counter,
		      const char *series, double value)
{
	if (s)
		summary__sample(s, T_COUNTERS, device, counter, series, value);
}

/* The work of a device span, to each distinct range it was launched in. */
static void add_to_ranges(struct summary *s, const struct summary_span *sp)
{
	bool kernel = sp->nranges && is_cat(sp->cat, "kernel");

	for (unsigned i = 0; i < sp->nranges && i < SUMMARY_RANGES_MAX; i++) {
		struct row *r;
		unsigned j;

		for (j = 0; j < i && strcmp(sp->ranges[j], sp->ranges[i]); j++)
			;
		if (j < i || !(r = table__get(s, &s->t[T_RANGES], sp->ranges[i])))
			continue;
		r->device_ns += sp->dur_ns;
		r->device_spans++;
		r->kernels += kernel;
	}
}

void summary__add(struct summary *s, const struct summary_span *sp)
{
	uint64_t end = sp->start_ns + sp->dur_ns;
	struct summary_kernel_rows k;
	struct row *r;

	/* gputrace's own marks (a capture window's or a dump's slice) are not the
	 * program's: no API call, no span, and they do not stretch the window */
	if (!s || (!sp->device && is_cat(sp->cat, "gputrace")))
		return;
	/* a kernel without ranges or metrics: the way the drain adds the ones it kept rows
	 * for, so that there is one (the rest below, where a row could not be made) */
	if (sp->device && !sp->nranges && !sp->nmetrics && is_cat(sp->cat, "kernel") &&
	    summary__kernel_rows(s, sp, &k)) {
		summary__add_kernel(s, &k, sp->start_ns, sp->dur_ns, sp->bytes);
		return;
	}
	if (sp->process > 0 && (size_t)sp->process <= s->nprocs)
		proc__add(s, &s->procs[sp->process - 1], sp);
	if (!s->spans || sp->start_ns < s->first_ns)
		s->first_ns = sp->start_ns;
	if (end > s->last_ns)
		s->last_ns = end;
	s->spans++;

	/* A queue waiting on an event, a host waiting on a stream: not busy. */
	if (summary__is_wait(sp))
		return;
	if (sp->device) {
		if (is_cat(sp->cat, "overhead")) {
			/* CUPTI's, the range profiler's kernels: the tool's cost, not
			 * the device's work (its busy time, its spans) */
			s->overhead_count++;
			s->overhead_ns += sp->dur_ns;
			return;
		}
		add_to_ranges(s, sp);
		r = table__get_for(s, &s->t[T_DEVICES], sp, sp->device);
		if (r) {
			r->count++;
			r->total_ns += sp->dur_ns;
			row__busy(s, r, sp->start_ns, end);
		}
		if (is_cat(sp->cat, "kernel")) {
			r = table__get_for(s, &s->t[T_KERNELS], sp, sp->name);
		} else if (is_cat(sp->cat, "gpu_memcpy")) {
			r = table__get(s, &s->t[T_COPIES], sp->copy_kind && *sp->copy_kind ?
							      sp->copy_kind : "copy");
		} else if (is_cat(sp->cat, "gpu_memset")) {
			r = table__get(s, &s->t[T_COPIES], "memset");
		} else if (is_cat(sp->cat, "cuda_graph")) {
			/* a whole graph launch (--graph-trace, or CUDA events without
			 * CUPTI): not a kernel (it may run many), a row of its own */
			r = table__get_for(s, &s->t[T_GRAPHS], sp, sp->name);
		} else {
			return;
		}
		if (r)
			row__account(r, sp->dur_ns, sp->bytes);
		for (unsigned i = 0; i < sp->nmetrics && is_cat(sp->cat, "kernel"); i++)
			summary__sample(s, T_KERNEL_METRICS, sp->name, sp->metrics[i].name, NULL,
					sp->metrics[i].value);
		return;
	}

	if (is_cat(sp->cat, "overhead")) {
		s->overhead_count++;
		s->overhead_ns += sp->dur_ns;
		return;
	}
	if (is_cat(sp->cat, "user_annotation")) {
		r = table__get(s, &s->t[T_RANGES], sp->name);
		if (r)
			row__account(r, sp->dur_ns, 0);
		for (unsigned i = 0; i < sp->nmetrics; i++) /* --metrics-mode nvtx */
			summary__sample(s, T_RANGE_METRICS, sp->name, sp->metrics[i].name, NULL,
					sp->metrics[i].value);
		r = table__get(s, &s->t[T_ANNOTATIONS], sp->name);
	} else {
		r = table__get(s, &s->t[T_API], sp->name);
		if (r && !r->cat && sp->cat)
			r->cat = strdup(sp->cat);
		if (sp->error)
			summary__add_error(s, sp);
	}
	if (r)
		row__account(r, sp->dur_ns, 0);
}

bool summary__kernel_rows(struct summary *s, const struct summary_span *sp,
			  struct summary_kernel_rows *k)
{
	uint64_t before;

	k->moves = 0;
	if (!s || !sp->device)
		return false;
	/* a lookup that made a row may have moved the rows found before it: again, then */
	do {
		before = s->moves;
		k->proc = sp->process > 0 && (size_t)sp->process <= s->nprocs
				  ? &s->procs[sp->process - 1]
				  : NULL;
		k->proc_device = k->proc ? table__get_for(s, &k->proc->devices, sp, sp->device)
					 : NULL;
		k->device = table__get_for(s, &s->t[T_DEVICES], sp, sp->device);
		k->kernel = table__get_for(s, &s->t[T_KERNELS], sp, sp->name);
	} while (s->moves != before);
	if ((k->proc && !k->proc_device) || !k->device || !k->kernel)
		return false;
	k->moves = s->moves;
	return true;
}

bool summary__kernel_rows_fresh(const struct summary *s, const struct summary_kernel_rows *k)
{
	return s && k->moves == s->moves;
}

/* A kernel span without ranges or metrics (summary__add's way with one too, so the
 * drain's summary and `gputrace summary FILE` add it up alike). */
void summary__add_kernel(struct summary *s, const struct summary_kernel_rows *k,
			 uint64_t start_ns, uint64_t dur_ns, uint64_t bytes)
{
	uint64_t end = start_ns + dur_ns;

	if (k->proc) {
		k->proc->spans++;
		k->proc_device->count++;
		k->proc_device->total_ns += dur_ns;
		row__busy(s, k->proc_device, start_ns, end);
		row__account(&k->proc->kernels, dur_ns, 0);
	}
	if (!s->spans || start_ns < s->first_ns)
		s->first_ns = start_ns;
	if (end > s->last_ns)
		s->last_ns = end;
	s->spans++;
	k->device->count++;
	k->device->total_ns += dur_ns;
	row__busy(s, k->device, start_ns, end);
	row__account(k->kernel, dur_ns, bytes);
}

/* A failed call of the CUDA or Level Zero API (the backends' rule, GT_EVF_FAILED):
 * not a poll's answer that its work has not ended (cudaEventQuery,
 * zeEventQueryStatus, a synchronize with timeout 0), not a warning (the call did
 * its work), not a plug-in's span that happens to have an "error" argument. */
static bool failed_call(const struct summary_span *sp)
{
	const char *e = sp->error;

	if (!e || !*e || !sp->cat ||
	    (strcmp(sp->cat, "cuda_runtime") && strcmp(sp->cat, "cuda_driver") &&
	     strcmp(sp->cat, "ze_api")))
		return false;
	return strcmp(e, "cudaErrorNotReady") && strcmp(e, "CUDA_ERROR_NOT_READY") &&
	       strcmp(e, "ZE_RESULT_NOT_READY") && strncmp(e, "ZE_RESULT_WARNING_", 18);
}

void summary__add_error(struct summary *s, const struct summary_span *sp)
{
	char key[512];
	struct row *r;

	if (!s || !failed_call(sp))
		return;
	snprintf(key, sizeof(key), "%s%c%s", sp->name ? sp->name : "", KEY_SEP, sp->error);
	r = table__get(s, &s->t[T_ERRORS], key);
	if (r)
		r->count++;
	s->errors++;
}

void summary__add_calls(struct summary *s, const struct summary_span *sp,
			const struct summary_calls *c)
{
	struct row *r;

	if (!s || !c->count)
		return;
	if (sp->process > 0 && (size_t)sp->process <= s->nprocs) {
		s->procs[sp->process - 1].spans += c->count;
		row__account_calls(&s->procs[sp->process - 1].api, c);
	}
	if (!s->spans || sp->start_ns < s->first_ns)
		s->first_ns = sp->start_ns;
	if (c->last_end_ns > s->last_ns)
		s->last_ns = c->last_end_ns;
	s->spans += c->count;
	r = table__get_for(s, &s->t[T_API], sp, sp->name);
	if (r && !r->cat && sp->cat)
		r->cat = strdup(sp->cat);
	if (r)
		row__account_calls(r, c);
}

void summary__lost(struct summary *s, const char *reason, uint64_t n)
{
	struct row *r;

	if (!s || !n)
		return;
	s->lost_total += n;
	r = table__get(s, &s->t[T_LOST], reason && *reason ? reason : "unknown");
	if (r)
		r->count += n;
}

void summary__adjusted(struct summary *s, const char *reason, uint64_t n, uint64_t max_ns)
{
	struct row *r;

	if (!s || !n)
		return;
	r = table__get(s, &s->t[T_ADJUSTED], reason && *reason ? reason : "unknown");
	if (!r)
		return;
	r->count += n;
	if (max_ns > r->max_ns)
		r->max_ns = max_ns;
}

void summary__incomplete(struct summary *s, uint64_t n, uint64_t cut, uint64_t failed,
			 const char *failed_why)
{
	if (!s)
		return;
	cut = cut < n ? cut : n;
	failed = failed < n - cut ? failed : n - cut;
	s->incomplete += n;
	s->cut += cut;
	if (failed && !s->failed && failed_why && *failed_why)
		snprintf(s->failed_why, sizeof(s->failed_why), "%s", failed_why);
	s->failed += failed;
}

void summary__flows_unmatched(struct summary *s, uint64_t n)
{
	if (s)
		s->flows_unmatched += n;
}

void summary__stacks_dropped(struct summary *s, uint64_t n)
{
	if (s)
		s->stacks_dropped += n;
}

void summary__waits(struct summary *s, uint64_t waits, uint64_t wait_ns)
{
	if (!s)
		return;
	s->lossless = true;
	s->waits += waits;
	s->wait_ns += wait_ns;
}

/* ---- reporting ---- */

static int cmp_total_desc(const void *a, const void *b)
{
	const struct row *x = *(const struct row *const *)a, *y = *(const struct row *const *)b;

	if (x->total_ns != y->total_ns)
		return x->total_ns < y->total_ns ? 1 : -1;
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return strcmp(x->name, y->name);
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp((*(const struct row *const *)a)->name, (*(const struct row *const *)b)->name);
}

/* The table's rows sorted (by total time, or by name), and sums. Caller frees. */
static const struct row **table__sorted(const struct table *t, bool by_name, uint64_t *count,
					uint64_t *total_ns, uint64_t *bytes)
{
	const struct row **v = calloc(t->used + 1, sizeof(*v));
	size_t n = 0;

	*count = *total_ns = 0;
	if (bytes)
		*bytes = 0;
	if (!v)
		return NULL;
	for (size_t i = 0; i < t->cap; i++) {
		const struct row *r = &t->rows[i];

		if (!r->name)
			continue;
		v[n++] = r;
		*count += r->count;
		*total_ns += r->total_ns;
		if (bytes)
			*bytes += r->bytes;
	}
	qsort(v, n, sizeof(*v), by_name ? cmp_name : cmp_total_desc);
	return v;
}

static const char *fmt_ns(char *buf, size_t len, uint64_t ns)
{
	if (ns < 10000)
		snprintf(buf, len, "%" PRIu64 " ns", ns);
	else if (ns < 10000000)
		snprintf(buf, len, "%.3f us", ns / 1e3);
	else if (ns < 10000000000ull)
		snprintf(buf, len, "%.3f ms", ns / 1e6);
	else
		snprintf(buf, len, "%.3f s", ns / 1e9);
	return buf;
}

static const char *fmt_bytes(char *buf, size_t len, uint64_t b)
{
	if (b < 1024)
		snprintf(buf, len, "%" PRIu64 " B", b);
	else if (b < 1024 * 1024)
		snprintf(buf, len, "%.1f KiB", b / 1024.0);
	else if (b < 1024ull * 1024 * 1024)
		snprintf(buf, len, "%.1f MiB", b / (1024.0 * 1024));
	else
		snprintf(buf, len, "%.2f GiB", b / (1024.0 * 1024 * 1024));
	return buf;
}

/* "1 launch", "2 launches". */
static const char *plural(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

static const char *hint_more(const struct summary *s)
{
	return s->hint_more ? s->hint_more : "--json";
}

size_t summary__ctl_escape(unsigned char c, char out[5])
{
	return gt_ctl_escape(c, out); /* a bad setting's line escapes as this does */
}

/* Bytes byte c takes once printed: escaped control characters take more. */
static size_t text_bytes(unsigned char c)
{
	char e[5];
	size_t n = summary__ctl_escape(c, e);

	return n ? n : 1;
}

/* A UTF-8 continuation byte: part of the character its lead byte began. */
static bool utf8_cont(unsigned char c)
{
	return (c & 0xc0) == 0x80;
}

/* Columns byte c takes once printed: one per character (its lead byte), an
 * escaped control character its escape. */
static size_t text_width(unsigned char c)
{
	return utf8_cont(c) ? 0 : text_bytes(c);
}

size_t summary__columns(const char *s)
{
	size_t w = 0;

	for (; *s; s++)
		w += text_width((unsigned char)*s);
	return w;
}

/* A field width for printf's "%-*s" (which counts bytes) that pads s, as
 * printed, to cols columns: a name in UTF-8 lines up with the others. */
static int pad_cols(const char *s, int cols)
{
	return cols + (int)(strlen(s) - summary__columns(s));
}

/* Bytes [p, e) into o, control characters escaped; the end of o returned. */
static char *put_escaped(char *o, const char *p, const char *e)
{
	for (; p < e; p++) {
		size_t n = summary__ctl_escape((unsigned char)*p, o);

		if (!n)
			*o = *p, n = 1;
		o += n;
	}
	*o = 0;
	return o;
}

const char *summary__text(char *buf, size_t len, const char *s)
{
	const char *p = s, *end;
	size_t w = 0;

	while (*p && !summary__ctl_escape((unsigned char)*p, (char[5]){ 0 }))
		p++;
	if (!*p || !len)
		return s;
	for (end = s; *end && w + text_bytes((unsigned char)*end) < len; end++)
		w += text_bytes((unsigned char)*end);
	while (end > s && utf8_cont((unsigned char)*end)) /* never half a character */
		end--;
	put_escaped(buf, s, end);
	return buf;
}

void summary__put_text(FILE *f, const char *s)
{
	char e[5];

	for (; *s; s++) {
		if (summary__ctl_escape((unsigned char)*s, e))
			fputs(e, f);
		else
			fputc(*s, f);
	}
}

/*
 * Long (templated) names are shortened in the middle, keeping their start
 * and their end (template arguments and parameter lists, where kernels of
 * one family differ); the JSON has them whole. print_timed_table prints a
 * name whole, on a line of its own, where shortening would make two rows
 * of the table look alike. Control characters are escaped (their escapes
 * count in the width).
 */
#define NAME_HEAD 18
/* a shortened name's bytes: NAME_COLUMNS characters of up to 4 bytes */
#define NAME_BUF (4 * NAME_COLUMNS + 8)

const char *summary__short(char *buf, size_t len, const char *name, size_t cols, size_t head_cols)
{
	size_t n = strlen(name), tail = cols - head_cols - 3, w, hw = 0, tw = 0;
	const char *head, *from;
	char *o;

	if (len < 4 * cols + 8 || head_cols + 3 >= cols)
		return name;
	w = summary__columns(name);
	if (w <= cols)
		return summary__text(buf, len, name);
	/* counted in characters: the head ends before a lead byte, the tail
	 * starts at one (a character cut in two would not be UTF-8) */
	for (head = name; hw + text_width((unsigned char)*head) <= head_cols; head++)
		hw += text_width((unsigned char)*head);
	for (from = name + n; tw + text_width((unsigned char)from[-1]) <= tail; from--)
		tw += text_width((unsigned char)from[-1]);
	while (utf8_cont((unsigned char)*from))
		from++;
	o = put_escaped(buf, name, head);
	memcpy(o, "...", 3);
	put_escaped(o + 3, from, name + n);
	return buf;
}

static const char *fmt_name(char *buf, size_t len, const char *name)
{
	return summary__short(buf, len, name, NAME_COLUMNS, NAME_HEAD);
}

static double share(uint64_t part, uint64_t whole)
{
	return whole ? (double)part / (double)whole : 0.0;
}

/* Would row i's shortened name read like another printed row's? */
static bool name_collides(const struct row **v, size_t shown, size_t i)
{
	char a[NAME_BUF], b[NAME_BUF];
	const char *mine = fmt_name(a, sizeof(a), v[i]->name);

	if (mine == v[i]->name)
		return false;
	for (size_t j = 0; j < shown; j++)
		if (j != i && !strcmp(mine, fmt_name(b, sizeof(b), v[j]->name)))
			return true;
	return false;
}

static void print_timed_table(FILE *f, const struct summary *s, const struct table *t,
			      const char *title, const char *one, const char *many)
{
	uint64_t count, total;
	const struct row **v = table__sorted(t, false, &count, &total, NULL);
	size_t shown = t->used < SUMMARY_TOP ? t->used : SUMMARY_TOP;
	char a[32], b[32], c[32], d[32], nb[NAME_BUF];

	if (!v || !t->used) {
		free(v);
		return;
	}
	if (t->full) /* the names past the limit are one "(other)" row, not one name */
		fprintf(f, "  %s: over %d distinct (the rest in \"" OTHER_ROW "\"), %" PRIu64
			" %s, %s total\n", title, SUMMARY_MAX_ROWS, count, plural(count, one, many),
			fmt_ns(a, sizeof(a), total));
	else
		fprintf(f, "  %s: %zu distinct, %" PRIu64 " %s, %s total\n", title, t->used,
			count, plural(count, one, many), fmt_ns(a, sizeof(a), total));
	fprintf(f, "    %-*s %9s %12s %12s %12s %12s %6s\n", NAME_COLUMNS, "name", "count",
		"total", "mean", "min", "max", "share");
	for (size_t i = 0; i < shown; i++) {
		const struct row *r = v[i];
		const char *name = fmt_name(nb, sizeof(nb), r->name);

		if (name_collides(v, shown, i)) {
			/* whole, above its numbers: never two rows that look the same */
			fputs("    ", f);
			summary__put_text(f, r->name);
			fputc('\n', f);
			name = "";
		}
		fprintf(f, "    %-*s %9" PRIu64 " %12s %12s %12s %12s %5.1f%%\n",
			pad_cols(name, NAME_COLUMNS), name, r->count, fmt_ns(a, sizeof(a), r->total_ns),
			fmt_ns(b, sizeof(b), r->total_ns / r->count), fmt_ns(c, sizeof(c), r->min_ns),
			fmt_ns(d, sizeof(d), r->max_ns), 100.0 * share(r->total_ns, total));
	}
	if (t->used > SUMMARY_TOP)
		fprintf(f, "    ... %zu more (see %s)\n", t->used - SUMMARY_TOP, hint_more(s));
	free(v);
}

static const char *key_part(const char *key, int n, char *buf, size_t len);

/* The calls that failed, by call and error: the most frequent first. */
static void print_errors(FILE *f, const struct summary *s)
{
	const struct table *t = &s->t[T_ERRORS];
	uint64_t count, total;
	const struct row **v;
	char call[256], error[256], shown[NAME_BUF];

	/* (no time in these rows: by count, then name) */
	if (!s->errors || !(v = table__sorted(t, false, &count, &total, NULL)))
		return;
	fprintf(f, "  API errors: %" PRIu64 " %s failed\n", s->errors,
		plural(s->errors, "call", "calls"));
	fprintf(f, "    %-*s %9s  %s\n", NAME_COLUMNS, "name", "count", "error");
	for (size_t i = 0; i < t->used && i < SUMMARY_TOP; i++) {
		const char *name = fmt_name(shown, sizeof(shown), key_part(v[i]->name, 0, call,
									  sizeof(call)));

		fprintf(f, "    %-*s %9" PRIu64 "  ", pad_cols(name, NAME_COLUMNS), name,
			v[i]->count);
		summary__put_text(f, key_part(v[i]->name, 1, error, sizeof(error)));
		fputc('\n', f);
	}
	if (t->used > SUMMARY_TOP)
		fprintf(f, "    ... %zu more (see %s)\n", t->used - SUMMARY_TOP, hint_more(s));
	free(v);
}

/* Ranges: host time of the ranges, device time and kernels of the work
 * launched inside them. */
static void print_ranges(FILE *f, const struct summary *s, const struct table *t)
{
	uint64_t count, total;
	const struct row **v = table__sorted(t, false, &count, &total, NULL);
	char a[32], b[32], nb[NAME_BUF];

	if (!v || !t->used) {
		free(v);
		return;
	}
	fprintf(f, "  ranges: %zu distinct, %" PRIu64 " %s, %s total\n", t->used, count,
		plural(count, "range", "ranges"), fmt_ns(a, sizeof(a), total));
	fprintf(f, "    %-*s %9s %12s %12s %9s\n", NAME_COLUMNS, "name", "count", "host",
		"device", "kernels");
	for (size_t i = 0; i < t->used && i < SUMMARY_TOP; i++) {
		const struct row *r = v[i];
		const char *name = fmt_name(nb, sizeof(nb), r->name);

		fprintf(f, "    %-*s %9" PRIu64 " %12s %12s %9" PRIu64 "\n",
			pad_cols(name, NAME_COLUMNS), name, r->count,
			fmt_ns(a, sizeof(a), r->total_ns), fmt_ns(b, sizeof(b), r->device_ns),
			r->kernels);
	}
	if (t->used > SUMMARY_TOP)
		fprintf(f, "    ... %zu more (see %s)\n", t->used - SUMMARY_TOP, hint_more(s));
	free(v);
}

static double bandwidth(uint64_t bytes, uint64_t ns)
{
	return ns ? (double)bytes * 1e9 / (double)ns : 0.0;
}

/* Bytes per second in the unit that keeps three significant digits (decimal units, as
 * bandwidth is quoted): a slow copy reads 512 KB/s or 12.0 B/s, never 0.00 GB/s. */
static const char *fmt_rate(char *buf, size_t len, double bps)
{
	static const char units[][5] = { "B/s", "KB/s", "MB/s", "GB/s", "TB/s" };
	unsigned u = 0;

	/* the thresholds are where the printed value rounds up: 9.996 is "10.0",
	 * not "10.00", and 999.6 KB/s is "1.00 MB/s" */
	while (bps >= 999.5 && u + 1 < sizeof(units) / sizeof(units[0])) {
		bps /= 1000.0;
		u++;
	}
	if (bps >= 99.95 || bps == 0.0)
		snprintf(buf, len, "%.0f %s", bps, units[u]);
	else if (bps >= 9.995)
		snprintf(buf, len, "%.1f %s", bps, units[u]);
	else
		snprintf(buf, len, "%.2f %s", bps, units[u]);
	return buf;
}

static void print_copies(FILE *f, const struct table *t)
{
	uint64_t count, total, bytes;
	const struct row **v = table__sorted(t, false, &count, &total, &bytes);
	char a[32], b[32], c[32], name[256];

	if (!v || !t->used) {
		free(v);
		return;
	}
	fprintf(f, "  copies and fills: %" PRIu64 " %s, %s, %s total\n", count,
		plural(count, "operation", "operations"), fmt_bytes(a, sizeof(a), bytes),
		fmt_ns(b, sizeof(b), total));
	fprintf(f, "    %-10s %9s %12s %12s %12s\n", "kind", "count", "bytes", "total", "bandwidth");
	for (size_t i = 0; i < t->used && i < SUMMARY_TOP; i++) {
		const struct row *r = v[i];
		const char *kind = summary__text(name, sizeof(name), r->name);

		fprintf(f, "    %-*s %9" PRIu64 " %12s %12s %12s\n", pad_cols(kind, 10), kind,
			r->count,
			fmt_bytes(a, sizeof(a), r->bytes), fmt_ns(b, sizeof(b), r->total_ns),
			fmt_rate(c, sizeof(c), bandwidth(r->bytes, r->total_ns)));
	}
	free(v);
}

static void print_device_rows(FILE *f, const struct summary *s, const struct table *t,
			      const char *indent)
{
	uint64_t count, total, window = s->last_ns - s->first_ns;
	const struct row **v = table__sorted(t, true, &count, &total, NULL);
	char a[32], b[32], name[256];

	for (size_t i = 0; v && i < t->used; i++) {
		const struct row *r = v[i];
		uint64_t busy = row__busy_ns(r);
		const char *shown = summary__text(name, sizeof(name), r->name);

		fprintf(f, "%s%-*s busy %s of %s (%.1f%%), %" PRIu64 " %s\n", indent,
			pad_cols(shown, NAME_COLUMNS - 14), shown,
			fmt_ns(a, sizeof(a), busy),
			fmt_ns(b, sizeof(b), window), 100.0 * share(busy, window), r->count,
			plural(r->count, "span", "spans"));
	}
	free(v);
}

static void print_devices(FILE *f, const struct summary *s)
{
	if (!s->t[T_DEVICES].used)
		return;
	fprintf(f, "  devices:\n");
	print_device_rows(f, s, &s->t[T_DEVICES], "    ");
}

/* Processes by kernel time, then calls, then pid. */
static int cmp_proc(const void *a, const void *b)
{
	const struct proc *x = *(const struct proc *const *)a, *y = *(const struct proc *const *)b;

	if (x->kernels.total_ns != y->kernels.total_ns)
		return x->kernels.total_ns < y->kernels.total_ns ? 1 : -1;
	if (x->api.total_ns != y->api.total_ns)
		return x->api.total_ns < y->api.total_ns ? 1 : -1;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

static const struct proc **procs_sorted(const struct summary *s)
{
	const struct proc **v = calloc(s->nprocs + 1, sizeof(*v));

	for (size_t i = 0; v && i < s->nprocs; i++)
		v[i] = &s->procs[i];
	if (v)
		qsort(v, s->nprocs, sizeof(*v), cmp_proc);
	return v;
}

/* "node1 rank 0: python (pid 4242)": the host only when the trace has more
 * than one. */
static void proc_label(char *buf, size_t len, const struct proc *p, bool hosts)
{
	char where[160] = "";

	if (hosts && p->host)
		snprintf(where, sizeof(where), "%.100s", p->host);
	if (p->rank)
		snprintf(where + strlen(where), sizeof(where) - strlen(where), "%srank %.40s",
			 where[0] ? " " : "", p->rank);
	snprintf(buf, len, "%s%s%.100s (pid %" PRId64 ")", where, where[0] ? ": " : "",
		 p->exe ? p->exe : "?", p->pid);
}

static bool many_hosts(const struct summary *s)
{
	for (size_t i = 1; i < s->nprocs; i++)
		if (!same_str(s->procs[i].host, s->procs[0].host))
			return true;
	return false;
}

/* Devices by process: only where the trace has several processes. */
static void print_processes(FILE *f, const struct summary *s)
{
	const struct proc **v;
	bool hosts = many_hosts(s);
	char label[320], shown[320], a[32], b[32];

	if (s->nprocs < 2 || !(v = procs_sorted(s)))
		return;
	fprintf(f, "  processes: %zu\n", s->nprocs);
	for (size_t i = 0; i < s->nprocs && i < SUMMARY_TOP; i++) {
		const struct proc *p = v[i];

		proc_label(label, sizeof(label), p, hosts);
		fprintf(f, "    %s: %" PRIu64 " %s %s, %" PRIu64 " %s %s, %" PRIu64 " lost\n",
			summary__text(shown, sizeof(shown), label),
			p->kernels.count, plural(p->kernels.count, "kernel", "kernels"),
			fmt_ns(a, sizeof(a), p->kernels.total_ns), p->api.count,
			plural(p->api.count, "call", "calls"), fmt_ns(b, sizeof(b), p->api.total_ns),
			p->lost);
		print_device_rows(f, s, &p->devices, "      ");
	}
	if (s->nprocs > SUMMARY_TOP)
		fprintf(f, "    ... %zu more (see %s)\n", s->nprocs - SUMMARY_TOP, hint_more(s));
	free(v);
}

static uint64_t lost_of(const struct summary *s, const char *reason)
{
	const struct table *t = &s->t[T_LOST];
	struct row *r = t->cap ? table__probe(t->rows, t->cap, reason) : NULL;

	return r && r->name ? r->count : 0;
}

/* What to do about the losses: only a full ring has a knob. */
static void lost_advice(const struct summary *s, char *buf, size_t len)
{
	const char *flag = s->hint_buffer ? s->hint_buffer : "--buffer-kb ";
	unsigned long now = s->hint_buffer_kb, next = now * 4;

	buf[0] = 0;
	if (!lost_of(s, "ring_full"))
		return;
	if (next > GT_BUFFER_KB_MAX)
		next = GT_BUFFER_KB_MAX;
	if (s->hint_overflow && s->hint_overflow_mb) {
		/* the ring overflowed and the process's overflow ran out too */
		unsigned long mb = s->hint_overflow_mb;
		unsigned long more = mb * 4 > GT_OVERFLOW_MB_MAX ? GT_OVERFLOW_MB_MAX : mb * 4;

		if (more > mb)
			snprintf(buf, len, "a thread recorded faster than gputrace wrote, past its ring "
				 "and the overflow: rerun with %s%lu (now %lu MiB for the process)",
				 s->hint_overflow, more, mb);
		else
			snprintf(buf, len, "a thread recorded faster than gputrace wrote, past the "
				 "largest overflow (%s%lu): record fewer kinds (--activities)",
				 s->hint_overflow, mb);
	} else if (now && next > now)
		snprintf(buf, len, "a thread recorded faster than gputrace wrote: rerun with %s%lu "
			 "(now %lu KiB per thread)", flag, next, now);
	else if (now)
		snprintf(buf, len, "a thread recorded faster than gputrace wrote, with the largest "
			 "buffer (%s%lu): record fewer kinds (--activities)", flag, now);
	else
		snprintf(buf, len, "a thread recorded faster than gputrace wrote: rerun with a larger "
			 "%s(the default is 4096 KiB per thread)", s->hint_buffer ? flag : "--buffer-kb ");
	/* the way to lose nothing, spelled as the buffer's hint is (option or variable) */
	if (!s->lossless && strlen(buf) + 64 < len)
		strcat(buf, strncmp(flag, "--", 2) ? ", or GPUTRACE_LOSSLESS=1 to make it wait"
						   : ", or --lossless to make it wait");
}

static void put_reasons(FILE *f, const struct summary *s)
{
	const struct table *t = &s->t[T_LOST];
	uint64_t count, total;
	const struct row **v = table__sorted(t, true, &count, &total, NULL);

	fputc('(', f);
	for (size_t i = 0; v && i < t->used; i++) {
		fputs(i ? ", " : "", f);
		summary__put_text(f, v[i]->name);
		fprintf(f, " %" PRIu64, v[i]->count);
	}
	fputc(')', f);
	free(v);
}

static void print_lost(FILE *f, const struct summary *s)
{
	char advice[256];

	if (!s->lost_total) {
		fprintf(f, "  lost events: 0\n");
		return;
	}
	fprintf(f, "  lost events: %" PRIu64 " ", s->lost_total);
	put_reasons(f, s);
	fputc('\n', f);
	lost_advice(s, advice, sizeof(advice));
	if (advice[0])
		fprintf(f, "    %s\n", advice);
}

/* Device times a backend moved (the trailer's "adjusted"): how many, why, the
 * largest move; no line when none was. */
static void print_adjusted(FILE *f, const struct summary *s)
{
	const struct table *t = &s->t[T_ADJUSTED];
	uint64_t count, total;
	const struct row **v;
	char a[32];

	if (!t->used)
		return;
	v = table__sorted(t, true, &count, &total, NULL);
	fputs("  device times adjusted:", f);
	for (size_t i = 0; v && i < t->used; i++) {
		fprintf(f, "%s %" PRIu64 " ", i ? "," : "", v[i]->count);
		summary__put_text(f, v[i]->name);
		fprintf(f, " (largest %s)", fmt_ns(a, sizeof(a), v[i]->max_ns));
	}
	fputc('\n', f);
	free(v);
}

/*
 * The block goes out in one write (stderr is unbuffered: a write per fputc
 * and fprintf otherwise, ~40 for a short summary, the trace's path one per
 * character), so the program's other processes and threads, writing to the
 * same terminal or log as they end, cannot land in the middle of it. Where
 * no memory is left, it goes straight to f, piece by piece.
 */
static void in_one_write(FILE *f, void (*print)(FILE *m, void *arg), void *arg)
{
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);

	if (!m) {
		print(f, arg);
		fflush(f);
		return;
	}
	print(m, arg);
	if (fclose(m)) {
		free(text);
		print(f, arg);
	} else {
		fwrite(text, 1, len, f);
		free(text);
	}
	fflush(f);
}

struct print_args {
	struct summary *s;
	const char *trace_path;
	uint64_t trace_bytes;
};

static void print_lost_line(FILE *f, void *arg)
{
	struct print_args *a = arg;
	struct summary *s = a->s;
	const char *trace_path = a->trace_path;
	char advice[256];

	fprintf(f, "gputrace: %" PRIu64 " %s lost ", s->lost_total,
		plural(s->lost_total, "event", "events"));
	put_reasons(f, s);
	if (trace_path) {
		fputs(" in ", f);
		summary__put_text(f, trace_path);
	}
	lost_advice(s, advice, sizeof(advice));
	fprintf(f, "%s%s\n", advice[0] ? "; " : "", advice);
}

void summary__print_lost_line(struct summary *s, FILE *f, const char *trace_path)
{
	struct print_args a = { s, trace_path, 0 };

	if (s && f && s->lost_total)
		in_one_write(f, print_lost_line, &a);
}

/* The parts of a metrics key. */
static const char *key_part(const char *key, int n, char *buf, size_t len)
{
	const char *p = key, *e;

	for (int i = 0; i < n && p; i++) {
		p = strchr(p, KEY_SEP);
		if (p)
			p++;
	}
	if (!p)
		return "";
	e = strchr(p, KEY_SEP);
	snprintf(buf, len, "%.*s", (int)(e ? (size_t)(e - p) : strlen(p)), p);
	return buf;
}

static double row__mean(const struct row *r)
{
	double mean = r->count ? r->fsum / (double)r->count : 0.0;

	/* a sum past DBL_MAX printed "inf", which is not JSON */
	return isfinite(mean) ? mean : r->fmean;
}

/* Per-name metric means (kernels', NVTX ranges'): one line per name. */
static void print_named_metrics(FILE *f, const struct summary *s, const struct table *k,
				const char *title, const char *what)
{
	uint64_t count, total;
	const struct row **v;
	char name[256], prev[256] = "", a[256], shown[NAME_BUF];
	size_t names = 0;

	if (!k->used || (v = table__sorted(k, true, &count, &total, NULL)) == NULL)
		return;
	fprintf(f, "  %s:\n", title);
	for (size_t i = 0; i < k->used; i++) {
		const struct row *r = v[i];

		key_part(r->name, 0, name, sizeof(name));
		if (i == 0 || strcmp(name, prev)) {
			if (++names > SUMMARY_TOP) {
				fprintf(f, "\n    ... more %s (see %s)", what, hint_more(s));
				break;
			}
			fprintf(f, "%s    %s (%" PRIu64 "):", i ? "\n" : "",
				fmt_name(shown, sizeof(shown), name), r->count);
			snprintf(prev, sizeof(prev), "%s", name);
		} else {
			fputc(',', f);
		}
		fputc(' ', f);
		summary__put_text(f, key_part(r->name, 1, a, sizeof(a)));
		fprintf(f, " %.6g", row__mean(r));
	}
	fputc('\n', f);
	free(v);
}

static void print_metrics(FILE *f, const struct summary *s)
{
	const struct table *t = &s->t[T_COUNTERS], *k = &s->t[T_KERNEL_METRICS];
	uint64_t count, total;
	const struct row **v;
	char dev[256], prev[256] = "", a[256], b[256];

	if (t->used && (v = table__sorted(t, true, &count, &total, NULL)) != NULL) {
		fprintf(f, "  metrics (counter tracks, over their samples):\n");
		for (size_t i = 0; i < t->used; i++) {
			const struct row *r = v[i];
			char series[2 * sizeof(a) + 2], shown[sizeof(series)];

			key_part(r->name, 0, dev, sizeof(dev));
			if (i == 0 || strcmp(dev, prev)) {
				fputs("    ", f);
				summary__put_text(f, *dev ? dev : "(no device)");
				fputc('\n', f);
				fprintf(f, "      %-*s %9s %12s %12s %12s\n", NAME_COLUMNS - 2, "series",
					"samples", "mean", "min", "max");
				snprintf(prev, sizeof(prev), "%s", dev);
			}
			snprintf(series, sizeof(series), "%s %s", key_part(r->name, 1, a, sizeof(a)),
				 key_part(r->name, 2, b, sizeof(b)));
			const char *text = summary__text(shown, sizeof(shown), series);

			fprintf(f, "      %-*s %9" PRIu64 " %12.6g %12.6g %12.6g\n",
				pad_cols(text, NAME_COLUMNS - 2), text, r->count, row__mean(r),
				r->fmin, r->fmax);
		}
		free(v);
	}
	print_named_metrics(f, s, k, "kernel metrics (mean per launch)", "kernels");
	print_named_metrics(f, s, &s->t[T_RANGE_METRICS], "range metrics (mean per range)",
			    "ranges");
}

static void print_block(struct summary *s, FILE *f, const char *trace_path,
			uint64_t trace_bytes)
{
	char a[32], b[32];

	/* The first line is the marker tests and users split stderr on; every
	 * other line of the block is indented. */
	fputs("gputrace summary: ", f);
	summary__put_text(f, trace_path ? trace_path : "(no trace file)");
	fputc('\n', f);
	fprintf(f, "  trace: %s, %" PRIu64 " %s over %s\n", fmt_bytes(a, sizeof(a), trace_bytes),
		s->spans, plural(s->spans, "span", "spans"),
		fmt_ns(b, sizeof(b), s->spans ? s->last_ns - s->first_ns : 0));
	print_timed_table(f, s, &s->t[T_KERNELS], "kernels", "launch", "launches");
	print_timed_table(f, s, &s->t[T_GRAPHS], "CUDA graphs", "launch", "launches");
	print_timed_table(f, s, &s->t[T_API], "API calls", "call", "calls");
	print_errors(f, s);
	/* the annotations' table, with the device work of each range */
	print_ranges(f, s, &s->t[T_RANGES]);
	print_copies(f, &s->t[T_COPIES]);
	print_devices(f, s);
	print_processes(f, s);
	print_metrics(f, s);
	if (s->overhead_count)
		fprintf(f, "  tracer overhead: %" PRIu64 " %s, %s\n", s->overhead_count,
			plural(s->overhead_count, "span", "spans"),
			fmt_ns(a, sizeof(a), s->overhead_ns));
	print_lost(f, s);
	print_adjusted(f, s);
	if (s->flows_unmatched)
		fprintf(f, "  arrows missing: %" PRIu64 " device %s without an arrow, their launch "
			"not in the trace (the trailer's flows_unmatched)\n", s->flows_unmatched,
			plural(s->flows_unmatched, "span", "spans"));
	if (s->stacks_dropped)
		fprintf(f, "  stacks dropped: %" PRIu64 " %s without a call stack, the stack table "
			"full or the unwinder failing (the trailer's stacks.dropped)\n",
			s->stacks_dropped, plural(s->stacks_dropped, "call", "calls"));
	if (s->incomplete) {
		/* the reason known: a file cut short may have been closed by its process */
		char why[256];
		uint64_t unknown = s->incomplete - s->cut - s->failed;
		const char *detail = s->failed_why;

		if (!strncmp(detail, SUMMARY_END_WRITE_FAILED, sizeof(SUMMARY_END_WRITE_FAILED) - 1))
			detail += sizeof(SUMMARY_END_WRITE_FAILED) - 1;
		detail += strspn(detail, ": ");
		if (unknown == s->incomplete) {
			snprintf(why, sizeof(why), "killed, or still running");
		} else if (s->cut == s->incomplete) {
			snprintf(why, sizeof(why), "%s cut short", plural(s->cut, "file", "files"));
		} else {
			/* the known reasons, then the rest: "1 file cut short; 1 stopped ..." */
			int at = 0;

			why[0] = '\0';
			if (s->cut)
				at += snprintf(why + at, sizeof(why) - (size_t)at,
					       "%" PRIu64 " %s cut short", s->cut,
					       plural(s->cut, "file", "files"));
			if (s->failed)
				at += snprintf(why + at, sizeof(why) - (size_t)at,
					       "%s%" PRIu64 " stopped at a failed write%s%s",
					       at ? "; " : "", s->failed, *detail ? ": " : "", detail);
			if (unknown)
				snprintf(why + at, sizeof(why) - (size_t)at,
					 "; %" PRIu64 " killed, or still running", unknown);
		}
		fprintf(f, "  incomplete: %" PRIu64 " %s not closed (%s): the last interval may be "
			"missing\n", s->incomplete, plural(s->incomplete, "trace", "traces"), why);
	}
	if (s->lossless)
		fprintf(f, "  waits for a full buffer (--lossless): %" PRIu64 ", %s in all\n", s->waits,
			fmt_ns(a, sizeof(a), s->wait_ns));
	if (s->oom)
		fprintf(f, "  (out of memory while summarizing: numbers are partial)\n");
}

static void print_block_to(FILE *m, void *arg)
{
	struct print_args *a = arg;

	print_block(a->s, m, a->trace_path, a->trace_bytes);
}

void summary__print(struct summary *s, FILE *f, const char *trace_path, uint64_t trace_bytes)
{
	struct print_args a = { s, trace_path, trace_bytes };

	if (s && f)
		in_one_write(f, print_block_to, &a);
}

/* ---- JSON ---- */

/* A finite double as JSON that parses back finite: %.15g (as the trace writes
 * samples, json__f64) rounds the largest up past DBL_MAX, 17 digits do not. */
#define F64_15G_MAX 1.79769313486231e308 /* writer/json.h's JSON_F64_15G_MAX */

static void json_f64(FILE *f, double v)
{
	fprintf(f, fabs(v) > F64_15G_MAX ? "%.17g" : "%.15g", v);
}

/* A table's totals. Past SUMMARY_MAX_ROWS names the rest are one "(other)"
 * row and their number is not kept: distinct (the rows, "(other)" among
 * them) is then only a lower bound, and says so. */
static void json_total(FILE *f, const struct table *t, uint64_t count, const char *time,
		       uint64_t ns)
{
	fprintf(f, "{\"distinct\":%zu,%s\"count\":%" PRIu64 ",\"%s\":%" PRIu64 "}", t->used,
		t->full ? "\"distinct_lower_bound\":true," : "", count, time, ns);
}

static void json_str(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t n = strlen((const char *)p);

	fputc('"', f);
	for (size_t i = 0, l; i < n; i += l) {
		l = p[i] < 0x80 ? 1 : gt_utf8_len(p + i, n - i);
		if (p[i] == '"' || p[i] == '\\')
			fprintf(f, "\\%c", p[i]);
		else if (p[i] == '\n')
			fputs("\\n", f);
		else if (p[i] == '\t')
			fputs("\\t", f);
		else if (p[i] < 0x20 || !l) /* a byte that is not UTF-8 (a path's) as U+00XX,
					     * as the trace writes it: JSON is UTF-8 */
			fprintf(f, "\\u%04x", p[i]);
		else
			fwrite(p + i, 1, l, f);
		l += !l;
	}
	fputc('"', f);
}

static void json_timed_rows(FILE *f, const char *key, const struct table *t, bool with_cat,
			    bool with_bytes, uint64_t *sum_count, uint64_t *sum_total,
			    uint64_t *sum_bytes)
{
	uint64_t count, total, bytes;
	const struct row **v = table__sorted(t, false, &count, &total, &bytes);

	fprintf(f, ",\n\"%s\":[", key);
	for (size_t i = 0; v && i < t->used; i++) {
		const struct row *r = v[i];

		fprintf(f, "%s\n {\"%s\":", i ? "," : "", with_bytes ? "kind" : "name");
		json_str(f, r->name);
		if (with_cat) {
			fputs(",\"cat\":", f);
			json_str(f, r->cat);
		}
		fprintf(f, ",\"count\":%" PRIu64 ",\"total_ns\":%" PRIu64 ",\"mean_ns\":%" PRIu64
			   ",\"min_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64,
			r->count, r->total_ns, r->count ? r->total_ns / r->count : 0,
			r->count ? r->min_ns : 0, r->max_ns);
		if (with_bytes)
			fprintf(f, ",\"bytes\":%" PRIu64 ",\"bandwidth_bytes_per_s\":%.6g", r->bytes,
				bandwidth(r->bytes, r->total_ns));
		else
			fprintf(f, ",\"share\":%.6f", share(r->total_ns, total));
		fputc('}', f);
	}
	fputs("]", f);
	*sum_count = count;
	*sum_total = total;
	if (sum_bytes)
		*sum_bytes = bytes;
	free(v);
}

static void json_device_rows(FILE *f, const struct table *t, uint64_t window, const char *sep)
{
	uint64_t count, total;
	const struct row **v = table__sorted(t, true, &count, &total, NULL);

	fputc('[', f);
	for (size_t i = 0; v && i < t->used; i++) {
		const struct row *r = v[i];
		uint64_t busy = row__busy_ns(r);

		fprintf(f, "%s%s{\"name\":", i ? "," : "", sep);
		json_str(f, r->name);
		fprintf(f, ",\"spans\":%" PRIu64 ",\"busy_ns\":%" PRIu64 ",\"span_total_ns\":%" PRIu64
			   ",\"first_ns\":%" PRIu64 ",\"last_ns\":%" PRIu64 ",\"utilization\":%.6f}",
			r->count, busy, r->total_ns, r->first_ns, r->last_ns, share(busy, window));
	}
	fputc(']', f);
	free(v);
}

static void json_opt_str(FILE *f, const char *s)
{
	if (s)
		json_str(f, s);
	else
		fputs("null", f);
}

/* Each process: its kernels, calls, copies, lost events, and its devices. */
static void json_processes(FILE *f, const struct summary *s, uint64_t window)
{
	const struct proc **v = procs_sorted(s);

	for (size_t i = 0; v && i < s->nprocs; i++) {
		const struct proc *p = v[i];

		fprintf(f, "%s\n {\"pid\":%" PRId64 ",\"exe\":", i ? "," : "", p->pid);
		json_opt_str(f, p->exe);
		fputs(",\"host\":", f);
		json_opt_str(f, p->host);
		fputs(",\"rank\":", f);
		json_opt_str(f, p->rank);
		fprintf(f, ",\"spans\":%" PRIu64 ",\"kernels\":{\"count\":%" PRIu64
			   ",\"total_ns\":%" PRIu64 "},\"api_calls\":{\"count\":%" PRIu64
			   ",\"total_ns\":%" PRIu64 "},\"copies\":{\"count\":%" PRIu64
			   ",\"bytes\":%" PRIu64 ",\"total_ns\":%" PRIu64 "},\"lost\":%" PRIu64
			   ",\n  \"devices\":",
			p->spans, p->kernels.count, p->kernels.total_ns, p->api.count, p->api.total_ns,
			p->copies.count, p->copies.bytes, p->copies.total_ns, p->lost);
		json_device_rows(f, &p->devices, window, "\n   ");
		fputc('}', f);
	}
	free(v);
}

/* "metrics": counter series per device, kernels' and NVTX ranges' metrics per name. */
static void json_metrics(FILE *f, const struct summary *s)
{
	/* arrays, not pointers: the library's relocated read-only data is to stay
	 * on one page (test_cli_quiet.py) */
	static const struct {
		int table;
		char key[9];
		char fields[3][8];
		char count[8];
	} parts[] = {
		{ T_COUNTERS, "counters", { "device", "counter", "series" }, "samples" },
		{ T_KERNEL_METRICS, "kernels", { "kernel", "metric", "" }, "count" },
		{ T_RANGE_METRICS, "ranges", { "range", "metric", "" }, "count" },
	};
	char part[1024];

	fputs("\"metrics\":{", f);
	for (size_t p = 0; p < sizeof(parts) / sizeof(parts[0]); p++) {
		const struct table *t = &s->t[parts[p].table];
		uint64_t count, total;
		const struct row **v = table__sorted(t, true, &count, &total, NULL);

		fprintf(f, "%s\"%s\":[", p ? ",\n " : "", parts[p].key);
		for (size_t i = 0; v && i < t->used; i++) {
			const struct row *r = v[i];

			fputs(i ? ",\n  {" : "\n  {", f);
			for (int k = 0; k < 3 && parts[p].fields[k][0]; k++) {
				fprintf(f, "%s\"%s\":", k ? "," : "", parts[p].fields[k]);
				json_str(f, key_part(r->name, k, part, sizeof(part)));
			}
			/* %.15g, as the trace writes the samples (json__f64): with %.9g a
			 * min or max was no sample's value (1 GiB used: 1073741820) */
			fprintf(f, ",\"%s\":%" PRIu64 ",\"mean\":", parts[p].count, r->count);
			json_f64(f, row__mean(r));
			fputs(",\"min\":", f);
			json_f64(f, r->fmin);
			fputs(",\"max\":", f);
			json_f64(f, r->fmax);
			fputc('}', f);
		}
		fputc(']', f);
		free(v);
	}
	fputs("},\n", f);
}

/* "adjusted":{"total":N,"by_reason":{"clamped":{"count":N,"max_ns":N}}}, always
 * there (a gate reads 0, not a missing member, when nothing moved) */
static void json_adjusted(FILE *f, const struct summary *s)
{
	const struct table *t = &s->t[T_ADJUSTED];
	uint64_t count, total;
	const struct row **v = table__sorted(t, true, &count, &total, NULL);

	fprintf(f, "\"adjusted\":{\"total\":%" PRIu64 ",\"by_reason\":{", count);
	for (size_t i = 0; v && i < t->used; i++) {
		fputs(i ? "," : "", f);
		json_str(f, v[i]->name);
		fprintf(f, ":{\"count\":%" PRIu64 ",\"max_ns\":%" PRIu64 "}", v[i]->count,
			v[i]->max_ns);
	}
	fputs("}},\n", f);
	free(v);
}

bool summary__holds_trace(const char *path)
{
	/* the first members of traces: gputrace's head, Chrome's and Kineto's */
	static const char keys[][20] = { "\"traceEvents\"", "\"distributedInfo\"",
					    "\"deviceProperties\"", "\"displayTimeUnit\"",
					    "\"otherData\"", "\"schemaVersion\"" };
	char head[64] = { 0 };
	const char *p = head;
	struct stat st;
	int fd;

	/* not a pipe or a device: only a file's bytes are read, and lost */
	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return false;
	if (read(fd, head, sizeof(head) - 1) < 0)
		head[0] = 0;
	close(fd);
	if ((unsigned char)head[0] == 0x1f && (unsigned char)head[1] == 0x8b)
		return true; /* gzip: a summary is never compressed */
	p += strspn(p, " \t\r\n");
	if (*p == '[')
		return true;
	if (*p++ != '{')
		return false;
	p += strspn(p, " \t\r\n");
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strncmp(p, keys[i], strlen(keys[i])))
			return true;
	return false;
}

const char *summary__strerror(int err)
{
	return err == -EEXIST ? "it holds a trace, which is never written over"
			      : strerror(-err);
}

int summary__own_fd(const char *path)
{
	const char *n = NULL;
	char *end;
	long fd;

	if (!strcmp(path, "/dev/stdout"))
		return 1;
	if (!strcmp(path, "/dev/stderr"))
		return 2;
	if (!strncmp(path, "/dev/fd/", 8))
		n = path + 8;
	else if (!strncmp(path, "/proc/self/fd/", 14))
		n = path + 14;
	if (!n || *n < '0' || *n > '9')
		return -1;
	fd = strtol(n, &end, 10);
	return *end || fd > INT32_MAX ? -1 : (int)fd;
}

FILE *summary__fopen_out(const char *path)
{
	int fd = summary__own_fd(path);
	FILE *f;

	if (!strcmp(path, "-"))
		return stdout;
	if (fd < 0)
		return fopen(path, "w");
	if (fd == 1)
		fflush(stdout); /* what went before, first */
	/* through a copy of the descriptor, at its offset: reopened by its name, a file
	 * behind it would be truncated (or written from its start), over what the
	 * program wrote there */
	fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return NULL;
	f = fdopen(fd, "w");
	if (!f)
		close(fd);
	return f;
}

/*
 * A summary JSON that is (or will be) a regular file is written beside it,
 * under a name of its own, and renamed over it once whole: processes that
 * share one name (GPUTRACE_SUMMARY_JSON without %p in every rank of a job)
 * each replace it with a whole summary, the last one's. Opened with "w" by
 * each, a shorter summary written over a longer one left that one's tail
 * behind it: not JSON. A device, a pipe, the program's own descriptor, or a
 * file in a folder that takes no new file is written in place, as before.
 * Returns the descriptor (tmp and final filled), or -1.
 */
static int open_beside(const char *path, char *tmp, size_t tmplen, char *final, size_t finallen)
{
	struct stat st;
	const char *base;
	int fd = -1;

	if (!strcmp(path, "-") || summary__own_fd(path) >= 0)
		return -1;
	if (!lstat(path, &st) && S_ISLNK(st.st_mode)) {
		char real[PATH_MAX];

		/* replace what the link names, not the link */
		if (!realpath(path, real) || snprintf(final, finallen, "%s", real) >= (int)finallen)
			return -1;
	} else if (snprintf(final, finallen, "%s", path) >= (int)finallen) {
		return -1;
	}
	bool existed = !stat(final, &st);

	if (existed && !S_ISREG(st.st_mode))
		return -1;
	base = strrchr(final, '/');
	base = base ? base + 1 : final;
	for (unsigned n = 0; n < 64 && fd < 0; n++) {
		/* hidden, and no .json: a glob of the folder's traces does not take it */
		if (snprintf(tmp, tmplen, "%.*s.%s.%d-%u.tmp", (int)(base - final), final, base,
			     (int)getpid(), n) >= (int)tmplen)
			return -1;
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (fd < 0 && errno != EEXIST)
			return -1;
	}
	/* the file replaced keeps its mode (a 0600 summary stays private) */
	if (fd >= 0 && existed)
		(void)fchmod(fd, st.st_mode & 07777);
	return fd;
}

int summary__write_json(struct summary *s, const char *path, const char *trace_path,
			uint64_t trace_bytes)
{
	uint64_t kc, kt, gc, gt, ac, at, nc, nt, cc, ct, cb, dc, dt, rc, rt;
	uint64_t window = s && s->spans ? s->last_ns - s->first_ns : 0;
	const struct row **v;
	FILE *f;
	int err = 0, fd;
	char tmp[PATH_MAX], final[PATH_MAX];

	if (!s || !path || !*path)
		return -EINVAL;
	if (summary__holds_trace(path))
		return -EEXIST;
	fd = open_beside(path, tmp, sizeof(tmp), final, sizeof(final));
	f = fd >= 0 ? fdopen(fd, "w") : summary__fopen_out(path);
	if (!f) {
		err = -errno;
		if (fd >= 0) {
			close(fd);
			unlink(tmp);
		}
		return err;
	}
	fputs("{\"schema\":\"gputrace-summary\",\"version\":1,\n\"trace\":{\"path\":", f);
	if (trace_path)
		json_str(f, trace_path);
	else
		fputs("null", f);
	fprintf(f, ",\"bytes\":%" PRIu64 "},\n\"window\":{\"start_ns\":%" PRIu64 ",\"end_ns\":%" PRIu64
		   ",\"duration_ns\":%" PRIu64 "},\n\"spans\":%" PRIu64,
		trace_bytes, s->spans ? s->first_ns : 0, s->spans ? s->last_ns : 0, window, s->spans);

	json_timed_rows(f, "kernels", &s->t[T_KERNELS], false, false, &kc, &kt, NULL);
	json_timed_rows(f, "graphs", &s->t[T_GRAPHS], false, false, &gc, &gt, NULL);
	json_timed_rows(f, "api_calls", &s->t[T_API], true, false, &ac, &at, NULL);
	json_timed_rows(f, "annotations", &s->t[T_ANNOTATIONS], false, false, &nc, &nt, NULL);
	json_timed_rows(f, "copies", &s->t[T_COPIES], false, true, &cc, &ct, &cb);

	v = table__sorted(&s->t[T_RANGES], false, &rc, &rt, NULL);
	fputs(",\n\"ranges\":[", f);
	for (size_t i = 0; v && i < s->t[T_RANGES].used; i++) {
		const struct row *r = v[i];

		fprintf(f, "%s\n {\"name\":", i ? "," : "");
		json_str(f, r->name);
		fprintf(f, ",\"count\":%" PRIu64 ",\"host_ns\":%" PRIu64 ",\"device_ns\":%" PRIu64
			   ",\"device_spans\":%" PRIu64 ",\"kernels\":%" PRIu64 "}",
			r->count, r->total_ns, r->device_ns, r->device_spans, r->kernels);
	}
	free(v);
	fputs("]", f);

	fputs(",\n\"devices\":", f);
	json_device_rows(f, &s->t[T_DEVICES], window, "\n ");
	fprintf(f, ",\n\"totals\":{\"kernels\":");
	json_total(f, &s->t[T_KERNELS], kc, "total_ns", kt);
	fputs(",\"graphs\":", f);
	json_total(f, &s->t[T_GRAPHS], gc, "total_ns", gt);
	fputs(",\"api_calls\":", f);
	json_total(f, &s->t[T_API], ac, "total_ns", at);
	fputs(",\"annotations\":", f);
	json_total(f, &s->t[T_ANNOTATIONS], nc, "total_ns", nt);
	fputs(",\"ranges\":", f);
	json_total(f, &s->t[T_RANGES], rc, "host_ns", rt);
	fprintf(f, ","
		   "\"copies\":{\"count\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"total_ns\":%" PRIu64 "},"
		   "\"overhead\":{\"count\":%" PRIu64 ",\"total_ns\":%" PRIu64 "}},\n",
		cc, cb, ct, s->overhead_count, s->overhead_ns);

	json_metrics(f, s);

	/* "errors":{"total":N,"calls":[{"name","error","count"}]}, always there (a gate
	 * reads 0 when none failed) */
	v = table__sorted(&s->t[T_ERRORS], true, &dc, &dt, NULL);
	fprintf(f, "\"errors\":{\"total\":%" PRIu64 ",\"calls\":[", s->errors);
	for (size_t i = 0; v && i < s->t[T_ERRORS].used; i++) {
		char call[256], error[256];

		fprintf(f, "%s\n {\"name\":", i ? "," : "");
		json_str(f, key_part(v[i]->name, 0, call, sizeof(call)));
		fputs(",\"error\":", f);
		json_str(f, key_part(v[i]->name, 1, error, sizeof(error)));
		fprintf(f, ",\"count\":%" PRIu64 "}", v[i]->count);
	}
	free(v);
	fputs("]},\n", f);

	v = table__sorted(&s->t[T_LOST], true, &dc, &dt, NULL);
	fprintf(f, "\"lost\":{\"total\":%" PRIu64 ",\"by_reason\":{", s->lost_total);
	for (size_t i = 0; v && i < s->t[T_LOST].used; i++) {
		fputs(i ? "," : "", f);
		json_str(f, v[i]->name);
		fprintf(f, ":%" PRIu64, v[i]->count);
	}
	free(v);
	fputs("}},\n", f);
	json_adjusted(f, s);
	fputs("\"lossless\":", f);
	if (s->lossless)
		fprintf(f, "{\"waits\":%" PRIu64 ",\"wait_ns\":%" PRIu64 "}", s->waits, s->wait_ns);
	else
		fputs("null", f);
	fprintf(f, ",\n\"incomplete\":%" PRIu64, s->incomplete);
	/* always there: a gate reads 0, not a missing member, when every arrow was drawn */
	fprintf(f, ",\n\"flows\":{\"unmatched\":%" PRIu64 "}", s->flows_unmatched);
	/* always there too: 0 says every stack asked for was recorded */
	fprintf(f, ",\n\"stacks\":{\"dropped\":%" PRIu64 "}", s->stacks_dropped);
	fputs(",\n\"processes\":[", f);
	json_processes(f, s, window);
	fprintf(f, "],\n\"partial\":%s}\n", s->oom ? "true" : "false");

	/* the write's own reason where it has one (ENOSPC on a full disk) */
	errno = 0;
	if (fflush(f))
		err = -(errno ? errno : EIO);
	else if (ferror(f))
		err = -EIO;
	if (f != stdout && fclose(f) && !err)
		err = -errno;
	if (fd >= 0 && !err && rename(tmp, final))
		err = -errno;
	if (fd >= 0 && err)
		unlink(tmp);
	return err;
}
