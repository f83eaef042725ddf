// SPDX-License-Identifier: MIT
/*
 * gputrace summary FILE: the exit-time summary, recomputed from a trace
 * (plain, gzip'ed or merged) by the same aggregator (writer/summary.c).
 * Pass 1 learns which pids are processes and what the device rows are
 * called; pass 2 feeds every complete span ("X") and every counter sample
 * ("C") to the aggregator.
 * Several traces (gputrace run with per-process files) sum into one
 * summary. Every span is attributed to its process, from the "gputrace"
 * object: a plain trace is one process with its device rows; a merged one
 * lists its inputs, each with its own object and pid renumbering.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "inject/utf8.h"
#include "args.h"
#include "json.h"
#include "meta.h"
#include "nameidx.h"
#include "summarize.h"
#include "tool.h"
#include "trace.h"

#define WHO "gputrace summary"

struct sum_ctx {
	struct summarized *out;
	const struct summarize_hooks *hooks;
	struct pidmap names;  /* pid -> process_name */
	struct pidmap hosts;  /* pids of traced processes */
	struct pidmap procs;  /* pid (host or device row) -> summary__process number */
	struct summary *s;
	struct buf cat, name, kind, error, tmp, ranges, key;
	const char *range_names[SUMMARY_RANGES_MAX];
	uint64_t lost_by_reason;
	/* Counts of the parts of a process (its capture windows' files, its flight
	 * recorder's dumps), each its process's since it started: the largest
	 * so far per process and counter, so that each part adds only what is
	 * new in it (added whole, a run's two windows said twice the events lost
	 * that its process lost). */
	struct part_count { char *key; uint64_t max; } *parts;
	size_t nparts, parts_cap;
	struct nameidx parts_idx;
	struct buf part; /* the part's process ("host pid realtime clock"), empty: none */
};

static char *str_member(const char *v, const char *e, const char *key, struct buf *tmp);

static const char *part_name(const void *ctx, size_t i)
{
	return ((const struct sum_ctx *)ctx)->parts[i].key;
}

/* Which process a trailer [v, e) is a part of, into c->part (as merged: pid;
 * empty when it is no window's or dump's file, or when its process is not
 * known by its host, pid and clock anchor). */
static void part_of(struct sum_ctx *c, const char *v, const char *e, int64_t pid)
{
	const char *mv, *me, *rv, *re, *kv, *ke;
	char *host;

	buf__reset(&c->part);
	if (!((jv_get(v, e, "capture", &mv, &me) && !jv_is_null(mv, me)) ||
	      (jv_get(v, e, "flight_recorder", &mv, &me) && !jv_is_null(mv, me))) ||
	    !jv_get(v, e, "anchor", &mv, &me) || !jv_get(mv, me, "realtime_ns", &rv, &re) ||
	    !jv_get(mv, me, "clock_ns", &kv, &ke))
		return;
	host = str_member(v, e, "hostname", &c->tmp);
	buf__printf(&c->part, "%s\x1f%" PRId64 "\x1f%.*s\x1f%.*s\x1f", host ? host : "", pid,
		    (int)(re - rv), rv, (int)(ke - kv), kv);
	free(host);
}

/* What counter n of the part named in c->part adds to the parts before it
 * (n itself outside a part). */
static uint64_t part_delta(struct sum_ctx *c, const char *counter, uint64_t n)
{
	size_t len = c->part.len;
	uint64_t add;
	long i;

	if (!len)
		return n;
	buf__adds(&c->part, counter);
	i = nameidx__find(&c->parts_idx, c->part.p, part_name, c);
	if (i < 0 && c->nparts == c->parts_cap) {
		size_t cap = c->parts_cap ? c->parts_cap * 2 : 16;
		struct part_count *np = realloc(c->parts, cap * sizeof(*np));

		if (np)
			c->parts = np, c->parts_cap = cap;
	}
	if (i < 0 && c->nparts < c->parts_cap &&
	    (c->parts[c->nparts].key = strdup(c->part.p))) {
		c->parts[c->nparts].max = 0;
		if (nameidx__add(&c->parts_idx, c->nparts, part_name, c))
			free(c->parts[c->nparts].key);
		else
			i = (long)c->nparts++;
	}
	c->part.len = len;
	c->part.p[len] = 0;
	if (i < 0)
		return n;
	add = n > c->parts[i].max ? n - c->parts[i].max : 0;
	if (n > c->parts[i].max)
		c->parts[i].max = n;
	return add;
}

/* args.ranges of a device span: the names, NUL-separated in c->ranges. */
static unsigned read_ranges(struct sum_ctx *c, const char *v, const char *e)
{
	size_t offs[SUMMARY_RANGES_MAX];
	const char *p = v, *ev, *ee;
	unsigned n = 0;

	c->ranges.len = 0;
	while (n < SUMMARY_RANGES_MAX && jv_array_next(&p, e, &ev, &ee)) {
		if (!jv_str(ev, ee, &c->tmp))
			continue;
		offs[n++] = c->ranges.len;
		buf__add(&c->ranges, c->tmp.p, c->tmp.len + 1);
	}
	for (unsigned i = 0; i < n; i++)
		c->range_names[i] = c->ranges.p + offs[i];
	return n;
}

static int pass1_meta(void *ctx, const char *v, const char *e)
{
	struct sum_ctx *c = ctx;

	meta__free(&c->out->meta);
	meta__parse(&c->out->meta, v, e);
	return 0;
}

/* The window the summary will report (first span start to last span end),
 * known before pass 2 for hooks that bucket spans by time. */
static void pass1_window(struct sum_ctx *c, const char *v, const char *e)
{
	const char *pv, *pe;
	int64_t ts, dur;
	uint64_t start;

	if (!jv_get(v, e, "ts", &pv, &pe) || !jv_us_to_ns(pv, pe, &ts))
		return;
	if (!jv_get(v, e, "dur", &pv, &pe) || !jv_us_to_ns(pv, pe, &dur) || dur < 0)
		dur = 0;
	start = ts < 0 ? 0 : (uint64_t)ts;
	if (!c->out->window_spans++ || start < c->out->window_start_ns)
		c->out->window_start_ns = start;
	if (start + (uint64_t)dur > c->out->window_end_ns)
		c->out->window_end_ns = start + (uint64_t)dur;
}

static int pass1_event(void *ctx, const char *v, const char *e)
{
	struct sum_ctx *c = ctx;
	const char *pv, *pe, *av, *ae;
	int64_t pid;
	long slot;

	if (c->hooks && c->hooks->event1 && c->hooks->event1(c->hooks->ctx, v, e))
		return 1;
	if (!jv_get(v, e, "ph", &pv, &pe) || pe - pv != 3)
		return 0;
	if (pv[1] == 'X' && c->hooks && c->hooks->want_window)
		pass1_window(c, v, e);
	if (pv[1] != 'M')
		return 0;
	if (!jv_get(v, e, "name", &pv, &pe) || pe - pv != 14 || memcmp(pv, "\"process_name\"", 14))
		return 0;
	if (!jv_get(v, e, "pid", &pv, &pe) || !jv_i64(pv, pe, &pid))
		return 0;
	if (!jv_get(v, e, "args", &av, &ae) || !jv_get(av, ae, "name", &pv, &pe) ||
	    !jv_str(pv, pe, &c->tmp))
		return 0;
	slot = pidmap__add(&c->names, pid);
	free(c->names.names[slot]);
	c->names.names[slot] = strdup(c->tmp.p);
	return 0;
}

/* ---- which process each pid belongs to ---- */

/* A pid of one "gputrace" object's own numbering, and its process. */
struct owner {
	int64_t pid;
	int proc;
};

struct owners {
	struct owner *v;
	size_t n, cap;
};

static void owners__add(struct owners *o, int64_t pid, int proc)
{
	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 16;
		struct owner *v = realloc(o->v, cap * sizeof(*v));

		if (!v)
			return;
		o->v = v;
		o->cap = cap;
	}
	o->v[o->n++] = (struct owner){ pid, proc };
}

static char *str_member(const char *v, const char *e, const char *key, struct buf *tmp)
{
	const char *mv, *me;

	if (!jv_get(v, e, key, &mv, &me) || jv_is_null(mv, me))
		return NULL;
	if (jv_str(mv, me, tmp))
		return strdup(tmp->p);
	buf__reset(tmp);
	buf__add(tmp, mv, (size_t)(me - mv)); /* a rank may be a number */
	return strdup(tmp->p);
}

static void map_pid(const char *map_v, const char *map_e, int64_t pid, int64_t *out)
{
	struct jv_iter it;
	struct jv_member mb;
	char key[32];

	*out = pid;
	if (!map_v || !jv_iter_init(&it, map_v, map_e))
		return;
	snprintf(key, sizeof(key), "%" PRId64, pid);
	while (jv_iter_next(&it, &mb))
		if (jv_key_is(&mb, key) && jv_i64(mb.v, mb.e, out))
			return;
}

/* The pid_maps of the merges a "gputrace" object is an input of, innermost first. */
struct map_chain {
	const char *v, *e;
	const struct map_chain *up;
};

static int64_t map_through(const struct map_chain *m, int64_t pid)
{
	for (; m; m = m->up)
		map_pid(m->v, m->e, pid, &pid);
	return pid;
}

/* The processes of one "gputrace" object [v, e) and the pids (in its own
 * numbering) that belong to each: its pid and device rows, or, merged, those
 * of its inputs through their pid_map. A process is known by its pid as the
 * trace has it (maps: the merges' renumbering): two inputs of one pid (a trace
 * merged with itself, or pids of two hosts) stay two processes. */
static void collect_owners(struct sum_ctx *c, const char *v, const char *e, int depth,
			   const struct map_chain *maps, struct owners *out)
{
	const char *mv, *me, *p, *ev, *ee;

	if (jv_get(v, e, "inputs", &mv, &me) && depth < META_MERGE_DEPTH) {
		p = mv;
		while (jv_array_next(&p, me, &ev, &ee)) {
			const char *gv, *ge, *map_v = NULL, *map_e = NULL;
			struct owners in = { 0 };

			/* no trailer: its process as the merge found it in its events */
			if ((!jv_get(ev, ee, "gputrace", &gv, &ge) || jv_is_null(gv, ge)) &&
			    !jv_get(ev, ee, "from_events", &gv, &ge))
				continue;
			if (!jv_get(ev, ee, "pid_map", &map_v, &map_e))
				map_v = map_e = NULL;
			collect_owners(c, gv, ge, depth + 1,
				       &(struct map_chain){ .v = map_v, .e = map_e, .up = maps }, &in);
			for (size_t i = 0; i < in.n; i++) {
				int64_t to;

				map_pid(map_v, map_e, in.v[i].pid, &to);
				owners__add(out, to, in.v[i].proc);
			}
			free(in.v);
		}
		return;
	}
	int64_t pid;
	uint64_t lost = 0;

	if (!jv_get(v, e, "pid", &mv, &me) || !jv_i64(mv, me, &pid))
		return;
	if (jv_get(v, e, "events_lost", &mv, &me))
		jv_u64(mv, me, &lost);
	char *exe = str_member(v, e, "exe", &c->tmp), *host = str_member(v, e, "hostname", &c->tmp),
	     *rank = str_member(v, e, "rank", &c->tmp), *base = exe ? strrchr(exe, '/') : NULL;
	struct summary_process sp = { .pid = map_through(maps, pid), .exe = base ? base + 1 : exe,
				      .host = host,
				      .rank = rank, .lost = lost };

	/* a process's windows or dumps (one process as merged: one pid) each say
	 * its losses since it started: summary__process adds them up */
	part_of(c, v, e, sp.pid);
	sp.lost = part_delta(c, "process lost", lost);
	buf__reset(&c->part);
	int proc = summary__process(c->s, &sp);

	free(exe);
	free(host);
	free(rank);
	owners__add(out, pid, proc);
	if (jv_get(v, e, "devices", &mv, &me)) {
		p = mv;
		while (jv_array_next(&p, me, &ev, &ee)) {
			const char *dv, *de;
			int64_t dpid;

			if (jv_get(ev, ee, "pid", &dv, &de) && jv_i64(dv, de, &dpid))
				owners__add(out, dpid, proc);
		}
	}
}

/* Traced processes no trailer told of (merged from several that had none):
 * each one of its own, named as its row is. */
static void attribute_unowned_hosts(struct sum_ctx *c)
{
	const struct trace_meta *m = &c->out->meta;

	for (size_t i = 0; i < m->nhost_pids; i++) {
		int64_t pid = m->host_pids[i];
		long named = pidmap__slot(&c->names, pid), slot;
		struct summary_process sp = { .pid = pid,
					      .exe = named >= 0 ? c->names.names[named] : NULL };
		int proc;

		if (pidmap__has(&c->procs, pid) || (proc = summary__process(c->s, &sp)) <= 0)
			continue;
		slot = pidmap__add(&c->procs, pid);
		c->procs.vals[slot] = proc;
	}
}

static void attribute_pids(struct sum_ctx *c)
{
	struct owners o = { 0 };
	const struct trace_meta *m = &c->out->meta;

	if (!m->present)
		return;
	collect_owners(c, m->raw.p, m->raw.p + m->raw.len, 0, NULL, &o);
	for (size_t i = 0; i < o.n; i++) {
		long slot;

		if (o.v[i].proc <= 0)
			continue;
		slot = pidmap__add(&c->procs, o.v[i].pid); /* may grow the map */
		c->procs.vals[slot] = o.v[i].proc;
	}
	free(o.v);
	attribute_unowned_hosts(c);
}

/* ---- pass 2 ---- */

/* The device row's name of a pid ("pid N" when it has none). */
static const char *device_name(struct sum_ctx *c, bool has_pid, int64_t pid, char *buf,
			       size_t len)
{
	long slot = has_pid ? pidmap__slot(&c->names, pid) : -1;

	if (slot >= 0 && c->names.names[slot])
		return c->names.names[slot];
	snprintf(buf, len, "pid %" PRId64, pid);
	return buf;
}

/* The name of member m, decoded as every other string of the trace is: the
 * iterator hands the key as it is written, escapes and all (a series "gpu \u00b0C"
 * from a trace that Python's json rewrote, a plug-in's "bytes \"in use\""). */
static void member_name(const struct jv_member *m, struct buf *key, char *out, size_t len)
{
	const char *p = m->key;
	size_t n = m->klen;

	if (jv_str(m->key - 1, m->key + m->klen + 1, key) && key->p) {
		p = key->p;
		n = strlen(key->p);
	}
	/* a name longer than out is cut at a character, not inside one */
	if (n >= len)
		n = gt_utf8_trim_end(p, len - 1);
	snprintf(out, len, "%.*s", (int)n, p);
}

/* A counter sample ("C"): each numeric arg is one series. */
static void counter_event(struct sum_ctx *c, const char *v, const char *e)
{
	const char *pv, *pe, *av, *ae;
	struct jv_iter it;
	struct jv_member m;
	char devname[32], series[256];
	const char *dev;
	int64_t pid = 0;
	bool has_pid;
	double x;

	if (!jv_get(v, e, "name", &pv, &pe) || !jv_str(pv, pe, &c->name) ||
	    !jv_get(v, e, "args", &av, &ae) || !jv_iter_init(&it, av, ae))
		return;
	has_pid = jv_get(v, e, "pid", &pv, &pe) && jv_i64(pv, pe, &pid);
	dev = device_name(c, has_pid, pid, devname, sizeof(devname));
	while (jv_iter_next(&it, &m)) {
		if (!jv_f64(m.v, m.e, &x))
			continue;
		member_name(&m, &c->key, series, sizeof(series));
		summary__counter(c->s, dev, c->name.p, series, x);
	}
}

#define KERNEL_METRICS_MAX 64

/* A kernel's hardware metrics: the numbers of its args.metrics object. */
static unsigned kernel_metrics(const char *av, const char *ae, struct summary_metric *out,
			       char (*names)[256], struct buf *key)
{
	const char *mv, *me;
	struct jv_iter it;
	struct jv_member m;
	unsigned n = 0;

	if (!jv_get(av, ae, "metrics", &mv, &me) || !jv_iter_init(&it, mv, me))
		return 0;
	while (n < KERNEL_METRICS_MAX && jv_iter_next(&it, &m)) {
		if (!jv_f64(m.v, m.e, &out[n].value))
			continue;
		member_name(&m, key, names[n], sizeof(names[n]));
		out[n].name = names[n];
		n++;
	}
	return n;
}

static int pass2_event(void *ctx, const char *v, const char *e)
{
	struct sum_ctx *c = ctx;
	struct summary_span sp = { 0 };
	struct summary_metric metrics[KERNEL_METRICS_MAX];
	char metric_names[KERNEL_METRICS_MAX][256];
	const char *pv, *pe, *av, *ae;
	int64_t pid = 0, ts, dur;
	bool has_pid, device;
	char devname[32];

	if (!jv_get(v, e, "ph", &pv, &pe) || pe - pv != 3)
		return 0;
	if (pv[1] == 'C') {
		counter_event(c, v, e);
		return 0;
	}
	if (pv[1] != 'X')
		return 0;
	if (!jv_get(v, e, "ts", &pv, &pe) || !jv_us_to_ns(pv, pe, &ts))
		return 0;
	if (!jv_get(v, e, "dur", &pv, &pe) || !jv_us_to_ns(pv, pe, &dur) || dur < 0)
		dur = 0;
	if (!jv_get(v, e, "cat", &pv, &pe) || !jv_str(pv, pe, &c->cat))
		buf__adds(&c->cat, "");
	/* drawn around device work, not work: the summary counts that once */
	if (!strcmp(c->cat.p, "gpu_user_annotation"))
		return 0;
	if (!jv_get(v, e, "name", &pv, &pe) || !jv_str(pv, pe, &c->name))
		buf__adds(&c->name, "");
	has_pid = jv_get(v, e, "pid", &pv, &pe) && jv_i64(pv, pe, &pid);

	sp.cat = c->cat.p;
	sp.name = c->name.p;
	sp.start_ns = ts < 0 ? 0 : (uint64_t)ts;
	sp.dur_ns = (uint64_t)dur;
	if (jv_get(v, e, "args", &av, &ae)) {
		if (jv_get(av, ae, "bytes", &pv, &pe))
			jv_u64(pv, pe, &sp.bytes);
		if (jv_get(av, ae, "kind", &pv, &pe) && jv_str(pv, pe, &c->kind))
			sp.copy_kind = c->kind.p;
		if (jv_get(av, ae, "error", &pv, &pe) && jv_str(pv, pe, &c->error))
			sp.error = c->error.p;
		sp.metrics = metrics;
		sp.nmetrics = kernel_metrics(av, ae, metrics, metric_names, &c->key);
		if (jv_get(av, ae, "ranges", &pv, &pe) && pv < pe && *pv == '[') {
			sp.nranges = read_ranges(c, pv, pe);
			sp.ranges = c->range_names;
		}
	}
	/* Device rows are the pids that are not traced processes; without the
	 * gputrace object (a foreign trace) go by the standard categories. */
	if (c->hosts.n)
		device = has_pid && !pidmap__has(&c->hosts, pid);
	else
		device = meta__is_device_cat(sp.cat);
	if (device)
		sp.device = device_name(c, has_pid, pid, devname, sizeof(devname));
	if (has_pid) {
		long slot = pidmap__slot(&c->procs, pid);

		sp.process = slot >= 0 ? (int)c->procs.vals[slot] : 0;
	}
	summary__add(c->s, &sp);
	if (c->hooks && c->hooks->span)
		c->hooks->span(c->hooks->ctx, &sp);
	return 0;
}

static void add_lost(void *ctx, const char *reason, uint64_t n)
{
	struct sum_ctx *c = ctx;

	buf__reset(&c->key);
	buf__printf(&c->key, "lost %s", reason);
	summary__lost(c->s, reason, part_delta(c, c->key.p, n));
	c->lost_by_reason += n;
}

static void add_adjusted(void *ctx, const char *reason, uint64_t n, uint64_t max_ns)
{
	struct sum_ctx *c = ctx;

	buf__reset(&c->key);
	buf__printf(&c->key, "adjusted %s", reason);
	summary__adjusted(c->s, reason, part_delta(c, c->key.p, n), max_ns);
}

/* One trace into c->s (its "gputrace" object into c->out->meta). */
static int add_trace(struct sum_ctx *c, const char *who, const char *path)
{
	struct trace_ops ops1 = { .ctx = c, .event = pass1_event, .meta = pass1_meta };
	struct trace_ops ops2 = { .ctx = c, .event = pass2_event, .quiet = true };
	struct stat st;
	int scan;

	meta__free(&c->out->meta);
	pidmap__free(&c->names);
	pidmap__free(&c->hosts);
	pidmap__free(&c->procs);
	c->lost_by_reason = 0;
	scan = trace__scan(who, path, &ops1);
	if (scan == TRACE_ERROR)
		return -1;
	for (size_t i = 0; i < c->out->meta.nhost_pids; i++)
		pidmap__add(&c->hosts, c->out->meta.host_pids[i]);
	attribute_pids(c);
	if (trace__scan(who, path, &ops2) == TRACE_ERROR)
		return -1;
	/* the counts of a process's window or dump are its process's since it
	 * started (a window's flows_unmatched its own): its earlier parts' among
	 * the files count once */
	const struct trace_meta *mt = &c->out->meta;

	if (!mt->merged && mt->has_pid && mt->present)
		part_of(c, mt->raw.p, mt->raw.p + mt->raw.len, mt->pid);
	meta__each_lost(mt, add_lost, c);
	if (mt->events_lost > c->lost_by_reason)
		summary__lost(c->s, "unknown", part_delta(c, "lost, no reason",
							  mt->events_lost - c->lost_by_reason));
	meta__each_adjusted(mt, add_adjusted, c);
	summary__flows_unmatched(c->s, mt->flight ? part_delta(c, "flows unmatched",
							       mt->flows_unmatched)
						  : mt->flows_unmatched);
	summary__stacks_dropped(c->s, part_delta(c, "stacks dropped", mt->stacks_dropped));
	if (mt->lossless)
		summary__waits(c->s, part_delta(c, "waits", mt->waits),
			       part_delta(c, "wait_ns", mt->wait_ns));
	buf__reset(&c->part);
	/* a file cut short is not closed either, whatever its trailer said before
	 * the cut: counted once, as merge counts it */
	summary__incomplete(c->s, meta__incomplete(&c->out->meta, scan == TRACE_TRUNCATED),
			    c->out->meta.cut + (scan == TRACE_TRUNCATED),
			    c->out->meta.failed, c->out->meta.failed_why.p);
	c->out->bytes += stat(path, &st) ? 0 : (uint64_t)st.st_size;
	return 0;
}

int summarize__traces(const char *who, char *const *paths, size_t n,
		      const struct summarize_hooks *hooks, struct summarized *out)
{
	struct sum_ctx c = { .out = out, .hooks = hooks };
	int ret = -1;

	memset(out, 0, sizeof(*out));
	c.s = summary__new();
	if (!c.s) {
		fprintf(stderr, "%s: out of memory\n", who);
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		if (add_trace(&c, who, paths[i]))
			goto out;
	out->s = c.s;
	c.s = NULL;
	ret = 0;
out:
	summary__free(c.s);
	pidmap__free(&c.names);
	pidmap__free(&c.hosts);
	pidmap__free(&c.procs);
	buf__free(&c.cat);
	buf__free(&c.name);
	buf__free(&c.kind);
	buf__free(&c.error);
	buf__free(&c.tmp);
	buf__free(&c.ranges);
	buf__free(&c.key);
	for (size_t i = 0; i < c.nparts; i++)
		free(c.parts[i].key);
	free(c.parts);
	nameidx__free(&c.parts_idx);
	buf__free(&c.part);
	return ret;
}

int summarize__trace(const char *who, const char *path, const struct summarize_hooks *hooks,
		     struct summarized *out)
{
	char *one = (char *)path;

	return summarize__traces(who, &one, 1, hooks, out);
}

void summarized__free(struct summarized *r)
{
	summary__free(r->s);
	meta__free(&r->meta);
	memset(r, 0, sizeof(*r));
}

static void usage_summary(FILE *f)
{
	fprintf(f, "usage: gputrace summary [--json OUT] FILE\n"
		   "Prints the summary of a trace (.json, .json.gz, merged or not) on stdout;\n"
		   "--json OUT also writes it as JSON (OUT '-': JSON on stdout, no table).\n");
}

char *summarize__json_path(const char *path)
{
	char *abs = realpath(path, NULL);

	return abs ? abs : strdup(path);
}

int cmd_summary(int argc, char **argv)
{
	struct summarized r;
	const char *path = NULL, *json = NULL;
	bool dashdash = false; /* after "--": a trace named -x.json */
	int ret = 1;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!dashdash && !strcmp(a, "--")) {
			dashdash = true; /* the end of the options, as merge's and check's */
		} else if (dashdash) {
			if (!arg__one_trace(WHO, a, &path))
				goto usage;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage_summary(stdout);
			return 0;
		} else if (!strcmp(a, "--json")) {
			if (i + 1 >= argc) {
				fprintf(stderr, WHO ": --json needs a file name ('-' for stdout)\n");
				goto usage;
			}
			json = argv[++i];
		} else if (!strncmp(a, "--json=", 7)) {
			json = a + 7;
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, WHO ": unknown option '%s'\n", a);
			goto usage;
		} else if (!arg__one_trace(WHO, a, &path)) {
			goto usage;
		}
	}
	if (json && !*json) { /* no file ("--json=", "--json ''"): it failed only when written */
		fprintf(stderr, WHO ": --json needs a file name ('-' for stdout)\n");
		goto usage;
	}
	if (!path) {
		fprintf(stderr, WHO ": no trace file given\n");
		goto usage;
	}

	/* the JSON over the trace (or another's) would lose it: said before
	 * the trace is read */
	if (json && out__is_input(WHO, "--json", json, (char *const[]){ (char *)path }, 1))
		return 2;
	if (json && strcmp(json, "-") && summary__holds_trace(json)) {
		fprintf(stderr, WHO ": --json %s: %s; give another file\n", json,
			summary__strerror(-EEXIST));
		return 2;
	}
	/* an input that is not a readable trace: 2, as check and diff say it */
	if (summarize__trace(WHO, path, NULL, &r))
		return 2;
	summary__set_hints(r.s, &(struct summary_hints){ .more = "--json" });
	/* the JSON first: one it cannot write fails the command with one line and
	 * nothing on stdout (a table printed first read as a success, as diff's) */
	if (json) {
		char *abs = summarize__json_path(path);
		int err = abs ? summary__write_json(r.s, json, abs, r.bytes) : -ENOMEM;

		free(abs);

		if (err) {
			/* --json -: stdout, as the other commands name it */
			fprintf(stderr, WHO ": cannot write %s: %s\n",
				strcmp(json, "-") ? json : "to stdout", summary__strerror(err));
			goto out;
		}
	}
	if (!json || strcmp(json, "-"))
		summary__print(r.s, stdout, path, r.bytes);
	ret = 0;
out:
	summarized__free(&r);
	return ret;
usage:
	usage_summary(stderr);
	return 2;
}
