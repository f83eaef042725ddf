// SPDX-License-Identifier: MIT
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "markdown.h"
#include "units.h"
#include "writer/summary.h"

/* A control character as the summary prints it (a line break would end the
 * table's row): true when c was one. */
static bool put_ctl(FILE *f, char c)
{
	char e[5];

	if (!summary__ctl_escape((unsigned char)c, e))
		return false;
	fputs(e, f);
	return true;
}

void md__text(FILE *f, const char *s)
{
	for (const char *p = s ? s : ""; *p; p++) {
		if (*p == '|')
			fputs("\\|", f);
		else if (put_ctl(f, *p))
			continue;
		else if (*p == '<')
			fputs("&lt;", f);
		else
			fputc(*p, f);
	}
}

/* A code span's fence is one backtick longer than the longest run of them inside
 * (CommonMark: a run of the fence's length would end the span), with a space inside
 * each end when the text holds any (stripped by the reader: `` `x` ``). */
void md__code(FILE *f, const char *s)
{
	size_t longest = 0, run = 0;

	s = s ? s : "";
	for (const char *p = s; *p; p++) {
		run = *p == '`' ? run + 1 : 0;
		longest = run > longest ? run : longest;
	}
	for (size_t i = 0; i <= longest; i++)
		fputc('`', f);
	if (longest)
		fputc(' ', f);
	for (const char *p = s; *p; p++) {
		if (*p == '|')
			fputs("\\|", f);
		else if (!put_ctl(f, *p))
			fputc(*p, f);
	}
	if (longest)
		fputc(' ', f);
	for (size_t i = 0; i <= longest; i++)
		fputc('`', f);
}

static void timed_table(FILE *f, const struct sumdoc *d, enum stab which, const char *title,
			int top)
{
	struct stable t;
	char a[64], b[64], c[64];

	if (sumdoc__table("gputrace", d, which, &t) || !t.n) {
		if (!t.n)
			stable__free(&t);
		return;
	}
	fprintf(f, "\n| %s | count | total | mean | share |\n|---|--:|--:|--:|--:|\n", title);
	for (size_t i = 0; i < t.n && (int)i < top; i++) {
		const struct srow *r = &t.rows[i];
		double share = 0;

		jv_num(r->v, r->e, "share", &share);
		fputs("| ", f);
		md__code(f, r->name);
		fprintf(f, " | %.0f | %s | %s | %s |\n", r->count,
			unit__fmt_short(a, sizeof(a), r->total_ns, DIM_TIME, false),
			/* mean_ns: rounded down, as the summary's and a check's mean (the
			 * float quotient printed 16.375 us beside a check's 16.374 us) */
			unit__fmt_short(b, sizeof(b), r->count ? floor(r->total_ns / r->count) : 0,
					DIM_TIME, false),
			unit__fmt_short(c, sizeof(c), share, DIM_COUNT, true));
	}
	if (t.n > (size_t)top)
		fprintf(f, "| %zu more | | | | |\n", t.n - (size_t)top);
	stable__free(&t);
}

/* The calls that failed: a user fixing a CI run looks here first. */
static void errors_table(FILE *f, const struct sumdoc *d, int top)
{
	double total = sumdoc__num(d, "errors.total");
	struct serror_iter it = { 0 };
	int rows = 0;

	if (!total)
		return;
	fprintf(f, "\n%.0f API %s returned an error", total, total == 1 ? "call" : "calls");
	while (sumdoc__error_next(d, &it)) {
		if (!rows)
			fputs(":\n\n| call | error | count |\n|---|---|--:|\n", f);
		if (rows++ >= top)
			continue;
		fputs("| ", f);
		md__code(f, it.name.p);
		fputs(" | ", f);
		md__code(f, it.error.p);
		fprintf(f, " | %" PRIu64 " |\n", it.count);
	}
	if (rows > top)
		fprintf(f, "| %d more | | |\n", rows - top);
	if (!rows) /* a summary that counts them without naming them */
		fputs(".\n", f);
}

void md__summary(FILE *f, const struct sumdoc *d, int top)
{
	struct stable t;
	char a[64], b[64], c[64];
	const char *v, *e;
	struct jv_iter it;
	struct jv_member m;
	struct buf key = { 0 };

	double kernels = sumdoc__num(d, "totals.kernels.count");
	double calls = sumdoc__num(d, "totals.api_calls.count");
	double copies = sumdoc__num(d, "totals.copies.count"), lost = sumdoc__num(d, "lost.total");

	fprintf(f, "%.0f %s (%.0f distinct, %s of device time), %.0f %s, %.0f %s (%s), %.0f %s, "
		   "over %s.\n",
		kernels, kernels == 1 ? "kernel launch" : "kernel launches",
		sumdoc__num(d, "totals.kernels.distinct"),
		unit__fmt_short(a, sizeof(a), sumdoc__num(d, "totals.kernels.total_ns"), DIM_TIME, false),
		calls, calls == 1 ? "API call" : "API calls", copies,
		copies == 1 ? "copy or fill" : "copies and fills",
		unit__fmt_short(b, sizeof(b), sumdoc__num(d, "totals.copies.bytes"), DIM_BYTES, false),
		lost, lost == 1 ? "lost event" : "lost events",
		unit__fmt_short(c, sizeof(c), sumdoc__num(d, "window.duration_ns"), DIM_TIME, false));
	timed_table(f, d, ST_KERNELS, "kernel", top);
	/* graph launches traced whole (a summary from before 2026-12-07 has no table) */
	if (sumdoc__get(d, stab__key[ST_GRAPHS], &v, &e))
		timed_table(f, d, ST_GRAPHS, "CUDA graph", top);
	timed_table(f, d, ST_API, "API call", top);
	errors_table(f, d, top);
	if (!sumdoc__table("gputrace", d, ST_COPIES, &t) && t.n) {
		fputs("\n| copy | count | bytes | total | bandwidth |\n|---|--:|--:|--:|--:|\n", f);
		for (size_t i = 0; i < t.n; i++) {
			const struct srow *r = &t.rows[i];
			double bw = 0;

			jv_num(r->v, r->e, "bandwidth_bytes_per_s", &bw);
			fputs("| ", f);
			md__text(f, r->name);
			fprintf(f, " | %.0f | %s | %s | %s |\n", r->count,
				unit__fmt_short(a, sizeof(a), r->bytes, DIM_BYTES, false),
				unit__fmt_short(b, sizeof(b), r->total_ns, DIM_TIME, false),
				unit__fmt_short(c, sizeof(c), bw * 1e-9, DIM_RATE, false));
		}
	}
	stable__free(&t);
	if (!sumdoc__table("gputrace", d, ST_DEVICES, &t) && t.n) {
		fputs("\n| device | spans | busy | utilization |\n|---|--:|--:|--:|\n", f);
		for (size_t i = 0; i < t.n; i++) {
			const struct srow *r = &t.rows[i];
			double u = 0;

			jv_num(r->v, r->e, "utilization", &u);
			fputs("| ", f);
			md__text(f, r->name);
			fprintf(f, " | %.0f | %s | %s |\n", r->count,
				unit__fmt_short(a, sizeof(a), r->busy_ns, DIM_TIME, false),
				unit__fmt_short(b, sizeof(b), u, DIM_COUNT, true));
		}
	}
	stable__free(&t);
	if (sumdoc__get(d, "lost.by_reason", &v, &e) && jv_iter_init(&it, v, e)) {
		bool first = true;

		while (jv_iter_next(&it, &m)) {
			jv_str(m.key - 1, m.key + m.klen + 1, &key);
			fprintf(f, "%s%s: %.*s", first ? "\nLost events by reason: " : ", ", key.p,
				(int)(m.e - m.v), m.v);
			first = false;
		}
		if (!first)
			fputs(".\n", f);
	}
	buf__free(&key);
}
