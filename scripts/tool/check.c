// SPDX-License-Identifier: MIT
/*
 * gputrace check SUMMARY|TRACE CHECK...: each check is an expression over
 * the summary (scripts/tool/expr.c); one PASS/FAIL/ERROR line per check
 * with the measured value. Exit 0 all pass, 1 one failed, 2 the checks
 * could not be evaluated (usage, a malformed check, a name that matches
 * nothing, an unreadable file).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "writer/summary.h"
#include "expr.h"
#include "junit.h"
#include "markdown.h"
#include "sumdoc.h"
#include "tool.h"

#define WHO "gputrace check"

enum { ST_OK = 0, ST_FAILED = 1, ST_ERROR = 2 };

struct check {
	char *text;
	char *where;    /* "checks.txt:3" for checks from a file, else NULL */
	struct expr *x;
	struct expr_result res;
	char line[1024]; /* the message for reports (an error message whole) */
};

struct checks {
	struct check *v;
	size_t n, cap;
};

static int add_check(struct checks *cs, const char *text, const char *where)
{
	if (cs->n == cs->cap) {
		size_t cap = cs->cap ? cs->cap * 2 : 16;
		struct check *nv = realloc(cs->v, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		cs->v = nv;
		cs->cap = cap;
	}
	memset(&cs->v[cs->n], 0, sizeof(cs->v[0]));
	cs->v[cs->n].text = strdup(text);
	cs->v[cs->n].where = where ? strdup(where) : NULL;
	if (!cs->v[cs->n].text)
		return -ENOMEM;
	cs->n++;
	return 0;
}

/* Cut a line's '#' comment: '#' outside a quoted name ("..." or '...',
 * where \" and \\ escape) starts one; a name may hold '#'. The blanks
 * before the comment go too, so that an error points into the check. */
static void cut_comment(char *s)
{
	char *end = NULL;

	for (char *p = s; *p; p++) {
		if (*p == '#') {
			end = p;
			break;
		}
		if (*p == '"' || *p == '\'') {
			char q = *p;

			while (*++p && *p != q)
				if (*p == '\\' && (p[1] == q || p[1] == '\\'))
					p++;
			if (!*p)
				return; /* unterminated: the parser says so */
		}
	}
	if (!end)
		return;
	while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	*end = 0;
}

/* One check per line; blank lines and '#' comments are skipped.
 * as_args: the lines are checks given on a command line (`gputrace run
 * --check` hands them over so), and messages count them as such. name: the
 * file as messages call it (gputrace run reads a copy of the user's). */
static int read_checks_file(const char *path, const char *name, struct checks *cs, bool as_args)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	char *line = NULL, where[4200];
	size_t cap = 0;
	ssize_t len;
	unsigned lineno = 0;

	if (!f) {
		fprintf(stderr, WHO ": cannot open %s: %s\n", name, strerror(errno));
		return -1;
	}
	while ((len = getline(&line, &cap, f)) >= 0) {
		char *s = line;

		lineno++;
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = 0;
		while (*s == ' ' || *s == '\t')
			s++;
		cut_comment(s);
		if (!*s)
			continue;
		snprintf(where, sizeof(where), "%s:%u", name, lineno);
		if (add_check(cs, s, as_args ? NULL : where)) {
			fprintf(stderr, WHO ": out of memory\n");
			break;
		}
	}
	/* a folder opens, and then reads as an error, not as no checks */
	int err = ferror(f) ? errno : 0;
	free(line);
	if (f != stdin)
		fclose(f);
	if (err) {
		fprintf(stderr, WHO ": cannot read %s: %s\n", name, strerror(err));
		return -1;
	}
	return 0;
}

static void free_checks(struct checks *cs)
{
	for (size_t i = 0; i < cs->n; i++) {
		free(cs->v[i].text);
		free(cs->v[i].where);
		expr__free(cs->v[i].x);
	}
	free(cs->v);
}

/* Parse all checks; every bad one is reported. 0 if all parse. */
static int parse_all(struct checks *cs)
{
	int bad = 0;

	for (size_t i = 0; i < cs->n; i++) {
		struct check *c = &cs->v[i];
		struct expr_err err;

		c->x = expr__parse(c->text, &err);
		if (c->x)
			continue;
		bad++;
		if (c->where)
			fprintf(stderr, "%s: %s: column %d: %s\n", WHO, c->where, err.pos + 1, err.msg);
		else
			fprintf(stderr, "%s: check %zu, column %d: %s\n", WHO, i + 1, err.pos + 1,
				err.msg);
		expr__show_err(stderr, c->text, &err);
	}
	return bad ? -1 : 0;
}

static int write_markdown(const char *path, const struct checks *cs, const struct sumdoc *d,
			  size_t passed, size_t failed, size_t errors)
{
	FILE *f = summary__fopen_out(path);

	if (!f)
		return -errno;
	fprintf(f, "### gputrace checks: %zu passed, %zu failed", passed, failed);
	if (errors)
		fprintf(f, ", %zu could not be evaluated", errors);
	fputs("\n\n| | check | measured |\n|---|---|---|\n", f);
	for (size_t i = 0; i < cs->n; i++) {
		const struct check *c = &cs->v[i];
		static const char *const mark[] = { "\xe2\x9c\x85 PASS", "\xe2\x9d\x8c FAIL",
						    "\xe2\x9a\xa0\xef\xb8\x8f ERROR" };

		fprintf(f, "| %s | ", mark[c->res.status]);
		md__code(f, c->text);
		fputs(" | ", f);
		if (c->res.status == EXPR_ERROR)
			md__text(f, c->res.err.msg);
		else
			md__text(f, c->res.measured);
		if (c->res.status == EXPR_FAIL && c->res.bound[0]) {
			fputs(" (bound ", f);
			md__text(f, c->res.bound);
			fputs(")", f);
		}
		fputs(" |\n", f);
	}
	fputs("\n<details><summary>Summary of ", f);
	/* gputrace run's label already says "summary of" (its summary file is gone) */
	if (!strncmp(d->path, "summary of ", 11) && strcmp(d->path + 11, "the run"))
		md__code(f, d->path + 11);
	else if (!strcmp(d->path, "summary of the run"))
		fputs("the run", f);
	else
		md__code(f, d->path);
	fputs("</summary>\n\n", f);
	md__summary(f, d, 10);
	fputs("\n</details>\n", f);
	return out__close(f);
}

static void usage_check(FILE *f)
{
	fprintf(f,
		"usage: gputrace check [options] SUMMARY|TRACE CHECK...\n"
		"Evaluates each CHECK over the summary (a summary JSON, or a trace); prints\n"
		"one PASS/FAIL line per check with the measured value.\n"
		"  -f, --checks FILE   also read checks from FILE, one per line ('#' comments)\n"
		"  --junit FILE        write a JUnit XML report (one test case per check)\n"
		"  --markdown FILE     write a Markdown report (checks and a summary)\n"
		"  --syntax-only       only parse the checks (no SUMMARY is given)\n"
		"  --check-lines FILE  checks as if given as arguments, one per line (for run)\n"
		"Checks: device.kernels >= 1, lost == 0, kernel[\"gemm*\"].count == 40,\n"
		"  kernel[\"*\"].total <= 25ms, api[\"zeCommandQueueSynchronize\"].mean < 200us,\n"
		"  device[0].busy >= 60%%, copy[\"HtoD\"].bytes <= 1GiB,\n"
		"  adjusted.clamped.max <= 5us (README \"Checks\").\n"
		"Exit status: 0 all pass, 1 a check failed, 2 usage, a malformed check, a name\n"
		"that matches nothing, or an unreadable input.\n");
}

int cmd_check(int argc, char **argv)
{
	struct checks cs = { 0 };
	struct sumdoc d = { 0 };
	const char *input = NULL, *junit = NULL, *markdown = NULL, *v;
	const char *label = NULL; /* gputrace run's: its summary is a file it removes */
	const char *checks_name = NULL; /* gputrace run's: the next --checks is a copy of it */
	const char *files_read = NULL; /* the last --checks FILE, as named */
	bool syntax_only = false, dashdash = false, loaded = false, bad = false;
	size_t passed = 0, failed = 0, errors = 0;
	int ret = ST_ERROR;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (dashdash || a[0] != '-' || !a[1]) {
			if (!input && !syntax_only)
				input = a;
			else if (add_check(&cs, a, NULL))
				goto out;
		} else if (!strcmp(a, "--")) {
			dashdash = true;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage_check(stdout);
			ret = ST_OK;
			goto out;
		} else if ((v = arg__file(argc, argv, &i, "--junit", WHO, &bad))) {
			if (bad)
				goto usage;
			junit = v;
		} else if ((v = arg__file(argc, argv, &i, "--markdown", WHO, &bad))) {
			if (bad)
				goto usage;
			markdown = v;
		} else if ((v = arg__file(argc, argv, &i, "--checks", WHO, &bad)) ||
			   (v = arg__file(argc, argv, &i, "-f", WHO, &bad))) {
			if (bad)
				goto usage;
			if (read_checks_file(v, checks_name ? checks_name : v, &cs, false))
				goto out; /* its line says what is wrong */
			files_read = checks_name ? checks_name : v;
			checks_name = NULL;
		} else if ((v = arg__value(argc, argv, &i, "--checks-named", WHO, &bad))) {
			if (bad)
				goto usage;
			checks_name = v;
		} else if ((v = arg__value(argc, argv, &i, "--label", WHO, &bad))) {
			if (bad)
				goto usage;
			label = v;
		} else if ((v = arg__value(argc, argv, &i, "--check-arg", WHO, &bad))) {
			/* gputrace run's --check: one check, as an argument, in its
			 * place among the --checks files */
			if (bad)
				goto usage;
			if (add_check(&cs, v, NULL))
				goto out;
		} else if ((v = arg__file(argc, argv, &i, "--check-lines", WHO, &bad))) {
			if (bad)
				goto usage;
			if (read_checks_file(v, v, &cs, true))
				goto out;
		} else if (!strcmp(a, "--syntax-only")) {
			syntax_only = true;
			if (input) { /* it was a check after all */
				if (add_check(&cs, input, NULL))
					goto out;
				input = NULL;
			}
		} else {
			fprintf(stderr, WHO ": unknown option '%s'\n", a);
			goto usage;
		}
	}
	if (!input && !syntax_only) {
		fprintf(stderr, WHO ": no summary or trace given\n");
		goto usage;
	}
	if (!cs.n && files_read) {
		/* one line, not the usage (under gputrace run --checks, another
		 * command's): the file was given, and is what is wrong */
		fprintf(stderr, WHO ": no checks given: --checks %s holds none (only blank "
			"lines and comments)\n", files_read);
		goto out;
	}
	if (!cs.n) {
		fprintf(stderr, WHO ": no checks given (e.g. 'device.kernels >= 1')\n");
		goto usage;
	}
	if (parse_all(&cs))
		goto out;
	if (syntax_only) {
		ret = ST_OK;
		goto out;
	}
	/* a report over the summary it reads would lose it: one line, 2 */
	if (out__is_input(WHO, "--junit", junit, (char *const[]){ (char *)input }, 1) ||
	    out__is_input(WHO, "--markdown", markdown, (char *const[]){ (char *)input }, 1) ||
	    out__same(WHO, "--junit", junit, "--markdown", markdown))
		goto out;
	if (sumdoc__load(WHO, input, &d))
		goto out;
	loaded = true;
	if (label)
		input = d.path = label;

	for (size_t i = 0; i < cs.n; i++) {
		struct check *c = &cs.v[i];
		struct expr_result *r = &c->res;

		expr__eval(c->x, &d, r);
		switch (r->status) {
		case EXPR_PASS:
			passed++;
			printf("PASS %s: %s\n", c->text, r->measured);
			snprintf(c->line, sizeof(c->line), "measured %s", r->measured);
			break;
		case EXPR_FAIL:
			failed++;
			printf("FAIL %s: %s\n", c->text, r->measured);
			snprintf(c->line, sizeof(c->line), "measured %s%s%s%s", r->measured,
				 r->bound[0] ? ", bound " : "", r->bound, "");
			break;
		case EXPR_ERROR:
			errors++;
			printf("ERROR %s: %s\n", c->text, r->err.msg);
			expr__show_err(stdout, c->text, &r->err);
			snprintf(c->line, sizeof(c->line), "%s", r->err.msg);
			break;
		}
	}
	printf("gputrace check: %zu passed, %zu failed", passed, failed);
	if (errors)
		printf(", %zu could not be evaluated", errors);
	printf(" (%s)\n", input);
	fflush(stdout);
	ret = errors ? ST_ERROR : failed ? ST_FAILED : ST_OK;

	if (junit) {
		struct test_case *tc = calloc(cs.n, sizeof(*tc));
		int err = tc ? 0 : -ENOMEM;

		for (size_t i = 0; tc && i < cs.n; i++) {
			tc[i].name = cs.v[i].text;
			tc[i].status = cs.v[i].res.status == EXPR_PASS   ? CASE_PASS
				       : cs.v[i].res.status == EXPR_FAIL ? CASE_FAIL
									 : CASE_ERROR;
			tc[i].message = cs.v[i].line;
		}
		if (tc)
			err = junit__write(junit, WHO, "gputrace.check", input, tc, cs.n);
		free(tc);
		if (err) {
			fprintf(stderr, WHO ": cannot write %s: %s\n", junit, strerror(-err));
			ret = ST_ERROR;
		}
	}
	if (markdown) {
		int err = write_markdown(markdown, &cs, &d, passed, failed, errors);

		if (err) {
			fprintf(stderr, WHO ": cannot write %s: %s\n", markdown, strerror(-err));
			ret = ST_ERROR;
		}
	}
out:
	if (loaded)
		sumdoc__free(&d);
	free_checks(&cs);
	return ret;
usage:
	free_checks(&cs);
	usage_check(stderr);
	return ST_ERROR;
}
