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
#include "tool.h"
#include "trace.h"
#include "writer/summary.h"

#define WHO "gputrace summary"

struct sum_ctx {
	struct trace_meta meta;
	struct pidmap names;  /* pid -> process_name */
	struct pidmap hosts;  /* pids of traced processes */
	struct summary *s;
	struct buf cat, name, kind, tmp;
	uint64_t lost_by_reason;
};

static int pass1_meta(void *ctx, const char *v, const char *e)
{
	struct sum_ctx *c = ctx;

	meta__free(&c->meta);
	meta__parse(&c->meta, v, e);
	return 0;
}

static int pass1_event(void *ctx, const char *v, const char *e)
{
	struct sum_ctx *c = ctx;
	const char *pv, *pe, *av, *ae;
	int64_t pid;
	long slot;

	if (!jv_get(v, e, "ph", &pv, &pe) || pe - pv != 3 || pv[1] != 'M')
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
	return 0;
}

static void add_lost(void *ctx, const char *reason, uint64_t n)
{
	struct sum_ctx *c = ctx;

	summary__lost(c->s, reason, n);
	c->lost_by_reason += n;
}

static void usage_summary(FILE *f)
{
	fprintf(f, "usage: gputrace summary [--json OUT] FILE\n"
		   "Prints the summary of a trace (.json, .json.gz, merged or not) on stdout;\n"
		   "--json OUT also writes it as JSON (OUT '-': JSON on stdout, no table).\n");
}

int cmd_summary(int argc, char **argv)
{
	struct sum_ctx c = { 0 };
	const char *path = NULL, *json = NULL;
	struct stat st;
	int ret = 1, r;

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

	struct trace_ops ops1 = { .ctx = &c, .event = pass1_event, .meta = pass1_meta };
	if (trace__scan(WHO, path, &ops1) == TRACE_ERROR)
		return 1;
	for (size_t i = 0; i < c.meta.nhost_pids; i++)
		pidmap__find(&c.hosts, c.meta.host_pids[i], true);
	c.s = summary__new();
	if (!c.s)
		goto out;
	struct trace_ops ops2 = { .ctx = &c, .event = pass2_event };
	r = trace__scan(WHO, path, &ops2);
	if (r == TRACE_ERROR)
		goto out;
	meta__each_lost(&c.meta, add_lost, &c);
	if (c.meta.events_lost > c.lost_by_reason)
		summary__lost(c.s, "unknown", c.meta.events_lost - c.lost_by_reason);

	uint64_t size = stat(path, &st) ? 0 : (uint64_t)st.st_size;
	if (!json || strcmp(json, "-"))
		summary__print(c.s, stdout, path, size);
	if (json) {
		int err = summary__write_json(c.s, json, path, size);

		if (err) {
			fprintf(stderr, WHO ": cannot write %s: %s\n", json, strerror(-err));
			goto out;
		}
	}
	ret = 0;
out:
	summary__free(c.s);
	meta__free(&c.meta);
	pidmap__free(&c.names);
	pidmap__free(&c.hosts);
	buf__free(&c.cat);
	buf__free(&c.name);
	buf__free(&c.kind);
	buf__free(&c.tmp);
	return ret;
usage:
	usage_summary(stderr);
	return 2;
}
