// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json.h"
#include "summarize.h"
#include "sumdoc.h"

const char *const stab__key[ST__COUNT] = { "kernels", "api_calls", "annotations", "copies",
					   "devices", "ranges", "graphs" };

/* Members a summary has at its top level: a summary reformatted (jq -S)
 * may start with any of them. A trace starts with '[' or with members of
 * its own (traceEvents, distributedInfo, ...) and is never read whole. */
static bool summary_key(const char *quoted)
{
	static const char *const keys[] = { "\"schema\"", "\"version\"", "\"trace\"",
					    "\"window\"", "\"spans\"", "\"kernels\"",
					    "\"api_calls\"", "\"annotations\"", "\"copies\"",
					    "\"devices\"", "\"ranges\"", "\"totals\"", "\"lost\"",
					    "\"errors\"", "\"partial\"" };

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcmp(quoted, keys[i]))
			return true;
	return false;
}

/* Members traces start with (Chrome Trace, Kineto, gputrace's head). */
static bool trace_key(const char *quoted)
{
	static const char *const keys[] = { "\"traceEvents\"", "\"distributedInfo\"",
					    "\"deviceProperties\"", "\"displayTimeUnit\"",
					    "\"otherData\"", "\"schemaVersion\"",
					    "\"gputrace\"" };

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcmp(quoted, keys[i]))
			return true;
	return false;
}

/* A trace is left to the summarizer, streamed; a summary, or JSON that is
 * neither, is read whole (bounded by JR_MAX_VALUE) and looked at. */
static int read_root(const char *who, const char *path, struct buf *out, bool *is_trace)
{
	struct jr r;
	struct buf key = { 0 };
	int c, err = jr_open(&r, path);

	*is_trace = false;
	if (err) {
		fprintf(stderr, "%s: cannot open %s: %s\n", who, path, jr_strerror(err));
		return -1;
	}
	c = jr_peek(&r);
	if (c == '[') {
		*is_trace = true;
		goto done;
	}
	if (c == '{') {
		jr_take(&r);
		if (jr_peek(&r) == '"' && !jr_value(&r, &key) && !summary_key(key.p) &&
		    trace_key(key.p)) {
			*is_trace = true;
			goto done;
		}
	}
	jr_close(&r);
	if ((err = jr_open(&r, path)) || jr_value(&r, out)) {
		fprintf(stderr, "%s: %s: not JSON: %s\n", who, path,
			err ? jr_strerror(err) : r.err);
		jr_close(&r);
		buf__free(&key);
		return -1;
	}
done:
	jr_close(&r);
	buf__free(&key);
	return 0;
}

/* The JSON of a summary, through the same writer as --summary-json. */
static int summary_json(const char *who, const char *path, const struct summarized *r,
			struct buf *out)
{
	const char *dir = getenv("TMPDIR");
	struct buf tmp = { 0 };
	char chunk[65536];
	ssize_t n;
	int fd, err, ret = -1;

	buf__printf(&tmp, "%s/gputrace-summary-XXXXXX", dir && *dir ? dir : "/tmp");
	fd = mkstemp(tmp.p);
	if (fd < 0) {
		fprintf(stderr, "%s: cannot create a temporary file in %s: %s\n", who,
			dir && *dir ? dir : "/tmp", strerror(errno));
		goto out;
	}
	char *abs = summarize__json_path(path);

	err = abs ? summary__write_json(r->s, tmp.p, abs, r->bytes) : -ENOMEM;
	free(abs);
	if (!err) {
		/* read by its name: the summary is a file of its own, renamed
		 * over the one mkstemp made (summary__write_json) */
		int rd = open(tmp.p, O_RDONLY | O_CLOEXEC);

		if (rd < 0) {
			err = -errno;
		} else {
			close(fd);
			fd = rd;
		}
	}
	unlink(tmp.p);
	if (err) {
		fprintf(stderr, "%s: cannot write the summary of %s: %s\n", who, path, strerror(-err));
		close(fd);
		goto out;
	}
	while ((n = read(fd, chunk, sizeof(chunk))) > 0)
		buf__add(out, chunk, (size_t)n);
	close(fd);
	ret = n < 0 ? -1 : 0;
out:
	buf__free(&tmp);
	return ret;
}

int sumdoc__from_summarized(const char *who, const char *path, const struct summarized *r,
			    struct sumdoc *d)
{
	memset(d, 0, sizeof(*d));
	d->path = path;
	d->from_trace = true;
	if (summary_json(who, path, r, &d->json)) {
		sumdoc__free(d);
		return -1;
	}
	return 0;
}

int sumdoc__load(const char *who, const char *path, struct sumdoc *d)
{
	const char *v, *e;
	struct buf s = { 0 };
	bool is_trace;
	double version;

	memset(d, 0, sizeof(*d));
	d->path = path;
	if (read_root(who, path, &d->json, &is_trace))
		return -1;
	if (!is_trace && d->json.len && d->json.p[0] == '{' &&
	    !jv_get(d->json.p, d->json.p + d->json.len, "schema", &v, &e) &&
	    jv_get(d->json.p, d->json.p + d->json.len, "traceEvents", &v, &e))
		is_trace = true;
	if (is_trace) {
		struct summarized r;
		int err;

		buf__reset(&d->json);
		d->from_trace = true;
		if (summarize__trace(who, path, NULL, &r))
			goto fail;
		err = summary_json(who, path, &r, &d->json);
		summarized__free(&r);
		if (err)
			goto fail;
	}
	v = d->json.p;
	e = v + d->json.len;
	if (!jv_get(v, e, "schema", &v, &e) || !jv_str(v, e, &s) || strcmp(s.p, SUMMARY_SCHEMA)) {
		fprintf(stderr, "%s: %s: neither a trace nor a gputrace summary JSON "
				"(no \"schema\":\"" SUMMARY_SCHEMA "\")\n", who, path);
		goto fail;
	}
	if (!jv_num(d->json.p, d->json.p + d->json.len, "version", &version) || version < 1) {
		fprintf(stderr, "%s: %s: summary without a version\n", who, path);
		goto fail;
	}
	if (version > SUMMARY_VERSION) {
		fprintf(stderr, "%s: %s: summary version %g is newer than this gputrace reads (%d)\n",
			who, path, version, SUMMARY_VERSION);
		goto fail;
	}
	buf__free(&s);
	return 0;
fail:
	buf__free(&s);
	sumdoc__free(d);
	return -1;
}

void sumdoc__free(struct sumdoc *d)
{
	buf__free(&d->json);
}

bool jv_num(const char *v, const char *e, const char *key, double *out)
{
	const char *mv, *me;
	char tmp[64];
	char *end;
	size_t n;

	if (!jv_get(v, e, key, &mv, &me))
		return false;
	n = (size_t)(me - mv);
	if (n == 4 && !memcmp(mv, "true", 4)) {
		*out = 1;
		return true;
	}
	if (n == 5 && !memcmp(mv, "false", 5)) {
		*out = 0;
		return true;
	}
	if (!n || n >= sizeof(tmp))
		return false;
	memcpy(tmp, mv, n);
	tmp[n] = 0;
	*out = strtod(tmp, &end);
	return end != tmp && !*end;
}

double sumdoc__num(const struct sumdoc *d, const char *path)
{
	const char *v, *e;
	char tmp[64];

	if (!sumdoc__get(d, path, &v, &e) || e - v >= (long)sizeof(tmp))
		return 0;
	memcpy(tmp, v, (size_t)(e - v));
	tmp[e - v] = 0;
	return strtod(tmp, NULL);
}

bool sumdoc__get(const struct sumdoc *d, const char *path, const char **v, const char **e)
{
	const char *cv = d->json.p, *ce = cv + d->json.len;
	char part[128];

	for (const char *p = path; *p;) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t)(dot - p) : strlen(p);

		if (n >= sizeof(part) || !n)
			return false;
		memcpy(part, p, n);
		part[n] = 0;
		if (!jv_get(cv, ce, part, &cv, &ce))
			return false;
		p += n + (dot != NULL);
	}
	*v = cv;
	*e = ce;
	return true;
}

int sumdoc__table(const char *who, const struct sumdoc *d, enum stab which, struct stable *t)
{
	const char *av, *ae, *p, *rv, *re, *nv, *ne;
	struct buf name = { 0 };
	size_t cap = 0;

	memset(t, 0, sizeof(*t));
	if (!jv_get(d->json.p, d->json.p + d->json.len, stab__key[which], &av, &ae) || *av != '[') {
		fprintf(stderr, "%s: %s: the summary has no \"%s\" table\n", who, d->path,
			stab__key[which]);
		return -1;
	}
	p = av;
	while (jv_array_next(&p, ae, &rv, &re)) {
		struct srow *r;

		if (t->n == cap) {
			cap = cap ? cap * 2 : 16;
			r = realloc(t->rows, cap * sizeof(*r));
			if (!r) {
				fprintf(stderr, "%s: out of memory\n", who);
				stable__free(t);
				buf__free(&name);
				return -1;
			}
			t->rows = r;
		}
		r = &t->rows[t->n++];
		memset(r, 0, sizeof(*r));
		r->v = rv;
		r->e = re;
		if ((jv_get(rv, re, which == ST_COPIES ? "kind" : "name", &nv, &ne) &&
		     jv_str(nv, ne, &name)))
			r->name = strdup(name.p);
		else
			r->name = strdup("");
		jv_num(rv, re, "count", &r->count);
		jv_num(rv, re, "total_ns", &r->total_ns);
		jv_num(rv, re, "min_ns", &r->min_ns);
		jv_num(rv, re, "max_ns", &r->max_ns);
		jv_num(rv, re, "bytes", &r->bytes);
		jv_num(rv, re, "busy_ns", &r->busy_ns);
		if (which == ST_DEVICES)
			jv_num(rv, re, "spans", &r->count);
	}
	buf__free(&name);
	return 0;
}

void stable__free(struct stable *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->rows[i].name);
	free(t->rows);
	memset(t, 0, sizeof(*t));
}

const struct srow *stable__find(const struct stable *t, const char *name)
{
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->rows[i].name, name))
			return &t->rows[i];
	return NULL;
}

bool sumdoc__error_next(const struct sumdoc *d, struct serror_iter *it)
{
	const char *rv, *re, *fv, *fe;

	if (!it->p && (!sumdoc__get(d, "errors.calls", &it->p, &it->e) || *it->p != '['))
		it->p = it->e = NULL;
	while (it->p && jv_array_next(&it->p, it->e, &rv, &re))
		if (jv_get(rv, re, "name", &fv, &fe) && jv_str(fv, fe, &it->name) &&
		    jv_get(rv, re, "error", &fv, &fe) && jv_str(fv, fe, &it->error) &&
		    jv_get(rv, re, "count", &fv, &fe) && jv_u64(fv, fe, &it->count))
			return true;
	buf__free(&it->name);
	buf__free(&it->error);
	return false;
}
