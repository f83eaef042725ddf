// SPDX-License-Identifier: MIT
/*
 * gputrace summary FILE: the exit-time summary, recomputed from a trace
 * (plain, gzip'ed or merged) by the same aggregator (writer/summary.c).
 * Pass 1 learns which pids are processes and what the device rows are
 * called; pass 2 feeds every complete span ("X") to the aggregator.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "json.h"
#include "meta.h"
#include "summarize.h"
#include "tool.h"
#include "trace.h"

#define WHO "gputrace summary"

struct sum_ctx {
	struct summarized *out;
	const struct summarize_hooks *hooks;
	struct pidmap names;  /* pid -> process_name */
	struct pidmap hosts;  /* pids of traced processes */
	struct summary *s;
	struct buf cat, name, kind, tmp;
	uint64_t lost_by_reason;
};

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
	slot = pidmap__find(&c->names, pid, true);
	free(c->names.names[slot]);
	c->names.names[slot] = strdup(c->tmp.p);
	return 0;
}

static bool is_device_cat(const char *cat)
{
	return !strcmp(cat, "kernel") || !strcmp(cat, "gpu_memcpy") || !strcmp(cat, "gpu_memset");
}

static int pass2_event(void *ctx, const char *v, const char *e)
{
	struct sum_ctx *c = ctx;
	struct summary_span sp = { 0 };
	const char *pv, *pe, *av, *ae;
	int64_t pid = 0, ts, dur;
	bool has_pid, device;
	char devname[32];

	if (!jv_get(v, e, "ph", &pv, &pe) || pe - pv != 3 || pv[1] != 'X')
		return 0;
	if (!jv_get(v, e, "ts", &pv, &pe) || !jv_us_to_ns(pv, pe, &ts))
		return 0;
	if (!jv_get(v, e, "dur", &pv, &pe) || !jv_us_to_ns(pv, pe, &dur) || dur < 0)
		dur = 0;
	if (!jv_get(v, e, "cat", &pv, &pe) || !jv_str(pv, pe, &c->cat))
		buf__adds(&c->cat, "");
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
	}
	/* Device rows are the pids that are not traced processes; without the
	 * gputrace object (a foreign trace) go by the standard categories. */
	if (c->hosts.n)
		device = has_pid && !pidmap__has(&c->hosts, pid);
	else
		device = is_device_cat(sp.cat);
	if (device) {
		long slot = has_pid ? pidmap__find(&c->names, pid, false) : -1;

		if (slot >= 0 && c->names.names[slot]) {
			sp.device = c->names.names[slot];
		} else {
			snprintf(devname, sizeof(devname), "pid %" PRId64, pid);
			sp.device = devname;
		}
	}
	summary__add(c->s, &sp);
	if (c->hooks && c->hooks->span)
		c->hooks->span(c->hooks->ctx, &sp);
	return 0;
}

static void add_lost(void *ctx, const char *reason, uint64_t n)
{
	struct sum_ctx *c = ctx;

	summary__lost(c->s, reason, n);
	c->lost_by_reason += n;
}

int summarize__trace(const char *who, const char *path, const struct summarize_hooks *hooks,
		     struct summarized *out)
{
	struct sum_ctx c = { .out = out, .hooks = hooks };
	struct stat st;
	int ret = -1;

	memset(out, 0, sizeof(*out));
	struct trace_ops ops1 = { .ctx = &c, .event = pass1_event, .meta = pass1_meta };
	if (trace__scan(who, path, &ops1) == TRACE_ERROR)
		goto out;
	for (size_t i = 0; i < out->meta.nhost_pids; i++)
		pidmap__find(&c.hosts, out->meta.host_pids[i], true);
	c.s = summary__new();
	if (!c.s) {
		fprintf(stderr, "%s: out of memory\n", who);
		goto out;
	}
	struct trace_ops ops2 = { .ctx = &c, .event = pass2_event };
	if (trace__scan(who, path, &ops2) == TRACE_ERROR)
		goto out;
	meta__each_lost(&out->meta, add_lost, &c);
	if (out->meta.events_lost > c.lost_by_reason)
		summary__lost(c.s, "unknown", out->meta.events_lost - c.lost_by_reason);
	out->bytes = stat(path, &st) ? 0 : (uint64_t)st.st_size;
	out->s = c.s;
	c.s = NULL;
	ret = 0;
out:
	summary__free(c.s);
	pidmap__free(&c.names);
	pidmap__free(&c.hosts);
	buf__free(&c.cat);
	buf__free(&c.name);
	buf__free(&c.kind);
	buf__free(&c.tmp);
	return ret;
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

int cmd_summary(int argc, char **argv)
{
	struct summarized r;
	const char *path = NULL, *json = NULL;
	int ret = 1;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
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
		} else if (path) {
			fprintf(stderr, WHO ": one trace at a time (merge them first): '%s'\n", a);
			goto usage;
		} else {
			path = a;
		}
	}
	if (!path) {
		fprintf(stderr, WHO ": no trace file given\n");
		goto usage;
	}

	if (summarize__trace(WHO, path, NULL, &r))
		return 1;
	if (!json || strcmp(json, "-"))
		summary__print(r.s, stdout, path, r.bytes);
	if (json) {
		int err = summary__write_json(r.s, json, path, r.bytes);

		if (err) {
			fprintf(stderr, WHO ": cannot write %s: %s\n", json, strerror(-err));
			goto out;
		}
	}
	ret = 0;
out:
	summarized__free(&r);
	return ret;
usage:
	usage_summary(stderr);
	return 2;
}
