// SPDX-License-Identifier: MIT
/*
 * gputrace diff BASE... -- NEW...: per kernel, API call, copy kind, user
 * range and CUDA graph launched whole, how count, total and mean time moved from the base runs to the new
 * ones (a range's time: the device time of the work launched inside it).
 * Several files per side are several runs of one job: each side is read
 * as the median over its runs, and a time change that stays inside the
 * runs' spread (the sides' [min, max] ranges overlap) is called noise and
 * never breaks a --fail-on rule. Counts are exact and always compared.
 *
 * Rules (--fail-on):  [SCOPE] METRIC OP CHANGE   or   new-kernels, ...
 *   SCOPE  kernel | api | copy | range | graph, optionally with ["glob"]; none: kernels,
 *          copies and graphs (device work)
 *   METRIC time (total time) | mean | count
 *   OP     > >= < <= == !=
 *   CHANGE +10% | -5% | 0% | +2ms (a time) | +3 (a count)
 */
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "expr.h"
#include "json.h"
#include "junit.h"
#include "markdown.h"
#include "nameidx.h"
#include "sumdoc.h"
#include "tool.h"
#include "units.h"
#include "writer/summary.h"

#define WHO "gputrace diff"
#define DEFAULT_TOP 20
/* Time changes smaller than this never break a rule: device timestamps
 * come in ticks (52 ns on Intel GPUs), so a 300 ns kernel moves by a
 * sixth without anything having changed. */
#define DEFAULT_MIN_CHANGE_NS 1000.0

static double min_change_ns = DEFAULT_MIN_CHANGE_NS;

enum { ST_OK = 0, ST_FAILED = 1, ST_ERROR = 2 };

/* The tables a diff covers, in print order. */
static const enum stab diff_tables[] = { ST_KERNELS, ST_API, ST_COPIES, ST_RANGES, ST_GRAPHS };
#define NTABLES 5
#define RANGES_BIT 8u  /* rule tables bit of ST_RANGES */
#define GRAPHS_BIT 16u /* of ST_GRAPHS: graph launches traced whole, device work as kernels */
#define DEVICE_WORK (1u | 4u | GRAPHS_BIT)
static const char *const table_title[NTABLES] = { "kernel", "API call", "copy", "range",
						  "graph" };

/* ---- rules ---- */

enum metric { M_TIME, M_MEAN, M_COUNT, M_NEW, M_VANISHED };
enum op { OP_GT, OP_GE, OP_LT, OP_LE, OP_EQ, OP_NE };

struct rule {
	const char *text;
	enum metric metric;
	unsigned tables;   /* bit i: diff_tables[i] */
	char *glob;        /* NULL: every row */
	enum op op;
	double bound;      /* percent, or an absolute amount (ns or count) */
	bool relative;     /* bound is a percentage */
	/* results */
	size_t nbroken;
	struct buf broken; /* "kernel gemm +25.0%; ..." */
	size_t nmatched;   /* rows its scope and glob take, on either side */
	char why[160];     /* why it cannot be evaluated ("": it can) */
};

static void skip(const char **p)
{
	while (**p == ' ' || **p == '\t')
		(*p)++;
}

static int rule_error(const char *text, const char *at, int len, const char *msg)
{
	struct expr_err err = { .pos = (int)(at - text), .len = len };

	fprintf(stderr, WHO ": --fail-on '%s', column %d: %s\n", text, err.pos + 1, msg);
	expr__show_err(stderr, text, &err);
	return -1;
}

static int parse_rule(const char *text, struct rule *r)
{
	const char *p = text, *start;
	static const struct {
		const char *word;
		enum metric m;
		unsigned tables;
	} keywords[] = {
		{ "new-kernels", M_NEW, 1 },	 { "vanished-kernels", M_VANISHED, 1 },
		{ "new-apis", M_NEW, 2 },	 { "vanished-apis", M_VANISHED, 2 },
		{ "new-copies", M_NEW, 4 },	 { "vanished-copies", M_VANISHED, 4 },
		{ "new-ranges", M_NEW, RANGES_BIT }, { "vanished-ranges", M_VANISHED, RANGES_BIT },
		{ "new-graphs", M_NEW, GRAPHS_BIT }, { "vanished-graphs", M_VANISHED, GRAPHS_BIT },
		{ "new", M_NEW, 7 | GRAPHS_BIT },	 { "vanished", M_VANISHED, 7 | GRAPHS_BIT },
	};
	char word[64];
	size_t n;

	memset(r, 0, sizeof(*r));
	r->text = text;
	skip(&p);
	for (size_t i = 0; i < sizeof(keywords) / sizeof(keywords[0]); i++) {
		n = strlen(keywords[i].word);
		if (!strncmp(p, keywords[i].word, n)) {
			const char *q = p + n;

			skip(&q);
			if (*q)
				continue;
			r->metric = keywords[i].m;
			r->tables = keywords[i].tables;
			return 0;
		}
	}
	/* optional scope */
	r->tables = DEVICE_WORK;
	start = p;
	n = 0;
	while ((p[n] >= 'a' && p[n] <= 'z') || p[n] == '_' || p[n] == '-')
		n++;
	if (!n || n >= sizeof(word))
		return rule_error(text, p, 1,
				  "a rule starts with time, mean, count (or kernel/api/copy/range/graph "
				  "before them), or is new-kernels, vanished-kernels, new-apis, ...");
	memcpy(word, p, n);
	word[n] = 0;
	int scope = !strcmp(word, "kernel") || !strcmp(word, "kernels") ? 1
		    : !strcmp(word, "api") || !strcmp(word, "apis") || !strcmp(word, "api_calls")
			? 2
		    : !strcmp(word, "copy") || !strcmp(word, "copies") ? 4
		    : !strcmp(word, "range") || !strcmp(word, "ranges") ? (int)RANGES_BIT
		    : !strcmp(word, "graph") || !strcmp(word, "graphs") ? (int)GRAPHS_BIT
									 : 0;
	if (scope) {
		r->tables = (unsigned)scope;
		p += n;
		skip(&p);
		if (*p == '[') {
			const char *q;

			p++;
			skip(&p);
			if (*p != '"' && *p != '\'')
				return rule_error(text, p, 1, "a quoted name or glob is expected in []");
			q = strchr(p + 1, *p);
			if (!q)
				return rule_error(text, p, (int)strlen(p), "unterminated string");
			r->glob = strndup(p + 1, (size_t)(q - p - 1));
			p = q + 1;
			skip(&p);
			if (*p != ']')
				return rule_error(text, p, 1, "']' expected");
			p++;
		}
		skip(&p);
		start = p;
		n = 0;
		while ((p[n] >= 'a' && p[n] <= 'z') || p[n] == '_')
			n++;
		if (n >= sizeof(word))
			n = sizeof(word) - 1;
		memcpy(word, p, n);
		word[n] = 0;
	}
	if (!strcmp(word, "time") || !strcmp(word, "total"))
		r->metric = M_TIME;
	else if (!strcmp(word, "mean"))
		r->metric = M_MEAN;
	else if (!strcmp(word, "count"))
		r->metric = M_COUNT;
	else
		return rule_error(text, start, n ? (int)n : 1,
				  "unknown metric (time, mean or count; or new-kernels, "
				  "vanished-kernels, new-apis, vanished-apis, new-copies, vanished-copies, "
				  "new-ranges, vanished-ranges, new-graphs, vanished-graphs)");
	p = start + n;
	skip(&p);
	start = p;
	if (p[0] == '>' && p[1] == '=')
		r->op = OP_GE, p += 2;
	else if (p[0] == '<' && p[1] == '=')
		r->op = OP_LE, p += 2;
	else if (p[0] == '>')
		r->op = OP_GT, p++;
	else if (p[0] == '<')
		r->op = OP_LT, p++;
	else if (p[0] == '=' && p[1] == '=')
		r->op = OP_EQ, p += 2;
	else if (p[0] == '!' && p[1] == '=')
		r->op = OP_NE, p += 2;
	else
		return rule_error(text, p, 1, "a comparison (>, >=, <, <=, ==, !=) is expected");
	skip(&p);
	start = p;
	char *end;
	double v = strtod(p, &end);
	if (end == p || !(isdigit((unsigned char)*p) || *p == '+' || *p == '-' || *p == '.'))
		return rule_error(text, p, 1, "a change is expected: +10%, -5%, 0%, +2ms or +3");
	/* a plain decimal, as a check's: strtod's "nan" made a rule that never broke
	 * ("time > +nan%"), and its hex and infinities are no change either */
	bool plain = isfinite(v);

	for (const char *c = p + (*p == '+' || *p == '-'); c < end; c++)
		if (!isdigit((unsigned char)*c) && *c != '.' && *c != 'e' && *c != 'E' &&
		    *c != '+' && *c != '-')
			plain = false;
	if (!plain)
		return rule_error(text, p, (int)strcspn(p, " %"),
				  "a change is a decimal number: +10%, -5%, 0%, +2ms or +3");
	p = end;
	skip(&p);
	double scale;
	struct dim d;
	bool pct;
	int ul = unit__parse(p, &scale, &d, &pct);
	if (ul < 0)
		return rule_error(text, p, (int)strlen(p), "unknown unit (%, or ns us ms s for times)");
	/* a wrong change is pointed at whole (its number and its unit), not past it */
	if (ul == 0) {
		if (r->metric != M_COUNT || v != floor(v))
			return rule_error(text, start, (int)(end - start),
					  r->metric == M_COUNT
						  ? "a count change is a whole number or a percentage"
						  : "give the change as a percentage (+10%) or a time (+2ms)");
		r->bound = v;
	} else if (pct) {
		r->relative = true;
		r->bound = v;
	} else if (dim__eq(d, DIM_TIME) && r->metric != M_COUNT) {
		r->bound = unit__times(start, (size_t)(end - start), scale);
	} else {
		return rule_error(text, start, (int)(p + ul - start),
				  r->metric == M_COUNT ? "a count change is a number or a percentage"
						       : "a time change is a percentage or a time");
	}
	p += ul;
	skip(&p);
	if (*p)
		return rule_error(text, p, (int)strlen(p), "unexpected text after the rule");
	return 0;
}

/* ---- sides ---- */

/* One name's values on one side: per run (0 when absent from a run). */
struct side {
	double *count, *total, *mean; /* [nruns]; mean NAN where count is 0 */
	bool present;                 /* count > 0 in some run */
	double med_count, med_total, med_mean, min_total, max_total;
};

struct item {
	char *name;
	struct side s[2];            /* base, new */
	double order;                /* max of the two median totals: print order */
	bool noise;                  /* time change inside the spread */
	struct buf broken;           /* "time > +10%; ..." */
};

struct dtable {
	struct item *items;
	size_t n, cap;
	struct nameidx index; /* items by name */
};

struct diff {
	size_t nruns[2];
	char **paths[2];
	struct dtable t[NTABLES];
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median of the values that are not NAN; NAN if none. */
static double median(const double *v, size_t n)
{
	double tmp[n ? n : 1];
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (!isnan(v[i]))
			tmp[k++] = v[i];
	if (!k)
		return NAN;
	qsort(tmp, k, sizeof(double), cmp_double);
	return k % 2 ? tmp[k / 2] : (tmp[k / 2 - 1] + tmp[k / 2]) / 2;
}

static const char *item_name(const void *ctx, size_t i)
{
	return ((const struct dtable *)ctx)->items[i].name;
}

static struct item *find_item(struct dtable *t, const char *name, const struct diff *df)
{
	long found = nameidx__find(&t->index, name, item_name, t);

	if (found >= 0)
		return &t->items[found];
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 32;
		struct item *ni = realloc(t->items, cap * sizeof(*ni));

		if (!ni)
			return NULL;
		t->items = ni;
		t->cap = cap;
	}
	struct item *it = &t->items[t->n];
	memset(it, 0, sizeof(*it));
	it->name = strdup(name);
	for (int s = 0; s < 2; s++) {
		it->s[s].count = calloc(df->nruns[s] + 1, sizeof(double));
		it->s[s].total = calloc(df->nruns[s] + 1, sizeof(double));
		it->s[s].mean = calloc(df->nruns[s] + 1, sizeof(double));
		if (!it->s[s].count || !it->s[s].total || !it->s[s].mean)
			return NULL;
		for (size_t r = 0; r < df->nruns[s]; r++)
			it->s[s].mean[r] = NAN;
	}
	if (!it->name || nameidx__add(&t->index, t->n, item_name, t))
		return NULL;
	t->n++;
	return it;
}

static int add_run(struct diff *df, int side, size_t run, const struct sumdoc *d)
{
	for (int ti = 0; ti < NTABLES; ti++) {
		bool ranges = diff_tables[ti] == ST_RANGES;
		const char *v, *e;
		struct stable st;

		/* summaries written before user ranges (or graph launches) have no such table */
		if ((ranges || diff_tables[ti] == ST_GRAPHS) &&
		    !sumdoc__get(d, stab__key[diff_tables[ti]], &v, &e))
			continue;
		if (sumdoc__table(WHO, d, diff_tables[ti], &st))
			return -1;
		for (size_t i = 0; i < st.n; i++) {
			const struct srow *r = &st.rows[i];
			struct item *it = find_item(&df->t[ti], r->name, df);
			double total = r->total_ns;

			if (!it) {
				stable__free(&st);
				fprintf(stderr, WHO ": out of memory\n");
				return -1;
			}
			/* a name twice in one summary (not written so): add up */
			/* a range's time is that of the device work it caused */
			if (ranges && !jv_num(r->v, r->e, "device_ns", &total))
				total = 0;
			it->s[side].count[run] += r->count;
			it->s[side].total[run] += total;
			if (it->s[side].count[run] > 0)
				it->s[side].mean[run] = floor(it->s[side].total[run] /
							      it->s[side].count[run]);
		}
		stable__free(&st);
	}
	return 0;
}

static void finish_side(struct side *s, size_t n)
{
	s->present = false;
	s->min_total = s->max_total = n ? s->total[0] : 0;
	for (size_t r = 0; r < n; r++) {
		s->present |= s->count[r] > 0;
		if (s->total[r] < s->min_total)
			s->min_total = s->total[r];
		if (s->total[r] > s->max_total)
			s->max_total = s->total[r];
	}
	s->med_count = median(s->count, n);
	s->med_total = median(s->total, n);
	s->med_mean = median(s->mean, n);
	if (isnan(s->med_mean))
		s->med_mean = 0;
}

/* Relative change in percent; +-INFINITY from 0, 0 from 0 to 0. */
static double pct_change(double base, double now)
{
	if (base == 0)
		return now == 0 ? 0 : now > 0 ? INFINITY : -INFINITY;
	/* times 100 first (exact for any count or ns total): 100 us -> 107 us is
	 * 700000 / 100000, rounded once to 7, not 0.07 * 100 = 7.000000000000001,
	 * which broke "time > +7%" */
	return (now - base) * 100.0 / base;
}

static bool compare(double v, enum op op, double bound)
{
	switch (op) {
	case OP_GT: return v > bound;
	case OP_GE: return v >= bound;
	case OP_LT: return v < bound;
	case OP_LE: return v <= bound;
	case OP_EQ: return v == bound;
	case OP_NE: return v != bound;
	}
	return false;
}

/*
 * A median count exactly: the median of an even number of runs may end in
 * .5, and rounding it would print a count no run had (10.5 as "10").
 */
static const char *fmt_count(char *out, size_t len, double count, bool sign)
{
	snprintf(out, len, sign ? "%+.17g" : "%.17g", count);
	return out;
}

static const char *fmt_pct(char *out, size_t len, double p)
{
	if (isinf(p))
		snprintf(out, len, p > 0 ? "from 0" : "to 0");
	else
		snprintf(out, len, "%+.1f%%", p);
	return out;
}

/* Does rule r break on item it of table ti? The change it measured in *what. */
static bool rule_breaks(struct rule *r, int ti, const struct item *it, char *what,
			size_t len)
{
	const struct side *b = &it->s[0], *nw = &it->s[1];
	double base, now, change;
	char a[64], c[64];

	if (!(r->tables & (1u << ti)) || (r->glob && fnmatch(r->glob, it->name, 0)))
		return false;
	r->nmatched++;
	switch (r->metric) {
	case M_NEW:
		snprintf(what, len, "new");
		return !b->present && nw->present;
	case M_VANISHED:
		snprintf(what, len, "vanished");
		return b->present && !nw->present;
	case M_COUNT:
		base = b->med_count;
		now = nw->med_count;
		break;
	case M_TIME:
	case M_MEAN:
		/* new and vanished names have their own rules; noise never breaks one */
		if (!b->present || !nw->present || it->noise)
			return false;
		base = r->metric == M_TIME ? b->med_total : b->med_mean;
		now = r->metric == M_TIME ? nw->med_total : nw->med_mean;
		if (fabs(now - base) < min_change_ns)
			return false;
		break;
	default:
		return false;
	}
	if (r->relative) {
		change = pct_change(base, now);
		fmt_pct(what, len, change);
	} else {
		change = now - base;
		if (r->metric == M_COUNT)
			fmt_count(what, len, change, true);
		else
			snprintf(what, len, "%s%s", change >= 0 ? "+" : "-",
				 unit__fmt_short(a, sizeof(a), fabs(change), DIM_TIME, false));
	}
	(void)c;
	return compare(change, r->op, r->bound);
}

/* "kernel", "API call", ... for a rule's scope: its tables, named */
static const char *scope_noun(unsigned tables)
{
	for (int ti = 0; ti < NTABLES; ti++)
		if (tables == 1u << ti)
			return table_title[ti];
	return "kernel, copy or graph";
}

/* ---- output ---- */

/* An aligned text table: cells per row, widths computed at the end. */
#define MAXCOLS 12
struct tbl {
	char *(*cells)[MAXCOLS];
	size_t n, cap;
	int ncols;
	bool right[MAXCOLS];
};

static void tbl_row(struct tbl *t, const char *const *cells)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 32;
		void *nc = realloc(t->cells, cap * sizeof(*t->cells));

		if (!nc)
			return;
		t->cells = nc;
		t->cap = cap;
	}
	for (int i = 0; i < t->ncols; i++)
		t->cells[t->n][i] = strdup(cells[i] ? cells[i] : "");
	t->n++;
}

static void tbl_print(FILE *f, struct tbl *t)
{
	size_t w[MAXCOLS] = { 0 };

	/* widths in columns (UTF-8 characters), not bytes: a name such as
	 * "softmax_κ" lines up with the others */
	for (size_t r = 0; r < t->n; r++)
		for (int i = 0; i < t->ncols; i++)
			if (t->cells[r][i] && summary__columns(t->cells[r][i]) > w[i])
				w[i] = summary__columns(t->cells[r][i]);
	for (size_t r = 0; r < t->n; r++) {
		struct buf line = { 0 };

		buf__adds(&line, "  ");
		for (int i = 0; i < t->ncols; i++) {
			const char *s = t->cells[r][i] ? t->cells[r][i] : "";
			int pad = (int)(w[i] + strlen(s) - summary__columns(s));

			if (t->right[i])
				buf__printf(&line, "%*s  ", pad, s);
			else
				buf__printf(&line, "%-*s  ", pad, s);
		}
		while (line.len && line.p[line.len - 1] == ' ')
			line.p[--line.len] = 0;
		fprintf(f, "%s\n", line.p);
		buf__free(&line);
	}
	for (size_t r = 0; r < t->n; r++)
		for (int i = 0; i < t->ncols; i++)
			free(t->cells[r][i]);
	free(t->cells);
	memset(t, 0, sizeof(*t));
}

static const char *fmt_time(char *out, size_t len, double ns, bool present)
{
	if (!present)
		return strcpy(out, "-");
	return unit__fmt_short(out, len, ns, DIM_TIME, false);
}

/* Spread of one side's totals: (max - min) / median, "-" for one run. */
static const char *fmt_spread(char *out, size_t len, const struct side *s, size_t nruns)
{
	if (nruns < 2 || !s->present)
		return strcpy(out, "-");
	snprintf(out, len, "%.1f%%", s->med_total ? (s->max_total - s->min_total) / s->med_total * 100 : 0);
	return out;
}

static bool item_changed(const struct item *it)
{
	return it->s[0].med_count != it->s[1].med_count || it->s[0].med_total != it->s[1].med_total ||
	       it->broken.len || it->s[0].present != it->s[1].present;
}

/* The first `top` rows by time, and every flagged, new or vanished one. */
static bool must_show(const struct item *it, size_t shown, size_t top)
{
	return shown < top || it->broken.len || it->s[0].present != it->s[1].present;
}

static int cmp_item(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	return x->order < y->order ? 1 : x->order > y->order ? -1 : strcmp(x->name, y->name);
}

static const char *status_of(const struct item *it)
{
	if (!it->s[0].present && it->s[1].present)
		return "new";
	if (it->s[0].present && !it->s[1].present)
		return "vanished";
	if (!it->s[0].present && !it->s[1].present)
		return "absent";
	return item_changed(it) ? "changed" : "same";
}

/* The note column: what a person should look at. */
static void note_of(const struct item *it, const struct diff *df, char *out, size_t len)
{
	const char *st = status_of(it);
	size_t n = 0;

	out[0] = 0;
	if (!strcmp(st, "new") || !strcmp(st, "vanished"))
		n += (size_t)snprintf(out, len, "%s", st);
	else if (it->noise && it->s[0].med_total != it->s[1].med_total)
		n += (size_t)snprintf(out, len, "within spread");
	if (it->broken.len)
		snprintf(out + n, n < len ? len - n : 0, "%sFAIL %s", n ? "; " : "", it->broken.p);
	(void)df;
}

/* A cell of the text table: control characters escaped, as the summary
 * prints names (a line break would split the row). */
static void cell_text(char *cell, size_t len, const char *s)
{
	const char *shown = summary__text(cell, len, s);
	size_t n = strlen(shown);

	if (shown == cell)
		return;
	if (n >= len) /* cut between UTF-8 characters, never inside one */
		for (n = len - 1; n && ((unsigned char)shown[n] & 0xc0) == 0x80; n--)
			;
	memcpy(cell, shown, n);
	cell[n] = 0;
}

/* A name in the table: shortened in the middle (C++ kernels of one template
 * differ at their end as often as at their start), whole where that would read
 * as another row's shortened name: two rows never look the same. */
#define NAME_COLS 100
#define NAME_HEAD_COLS 40

static const char *row_name(const struct dtable *t, size_t i, char *buf, size_t len)
{
	const char *mine = summary__short(buf, len, t->items[i].name, NAME_COLS, NAME_HEAD_COLS);
	char other[4 * NAME_COLS + 8];

	if (mine == t->items[i].name || summary__columns(t->items[i].name) <= NAME_COLS)
		return mine;
	for (size_t j = 0; j < t->n; j++)
		if (j != i && summary__columns(t->items[j].name) > NAME_COLS &&
		    !strcmp(mine, summary__short(other, sizeof(other), t->items[j].name, NAME_COLS,
						 NAME_HEAD_COLS)))
			return summary__text(buf, len, t->items[i].name);
	return mine;
}

static void print_table(FILE *f, const struct diff *df, int ti, size_t top, bool all)
{
	const struct dtable *t = &df->t[ti];
	struct tbl tb = { .ncols = df->nruns[0] > 1 || df->nruns[1] > 1 ? 9 : 8 };
	bool spread = tb.ncols == 9;
	size_t shown = 0, hidden = 0;
	char c[9][160], note[160], name[4 * NAME_COLS + 8];

	if (!t->n)
		return;
	const char *head[9] = { table_title[ti], "count", "change", "total time", "change",
				"mean", "change", spread ? "spread" : "note", "note" };
	for (int i = 1; i < 7; i++)
		tb.right[i] = true;
	tb.right[7] = spread;
	tbl_row(&tb, head);
	for (size_t i = 0; i < t->n; i++) {
		const struct item *it = &t->items[i];
		const struct side *b = &it->s[0], *nw = &it->s[1];
		char x[64], y[64], sb[32], sn[32];
		const char *cells[9];

		if (!all && !must_show(it, shown, top)) {
			hidden++;
			continue;
		}
		shown++;
		cells[0] = row_name(t, i, name, sizeof(name));
		snprintf(c[1], sizeof(c[1]), "%s -> %s", fmt_count(x, sizeof(x), b->med_count, false),
			 fmt_count(y, sizeof(y), nw->med_count, false));
		if (b->med_count == nw->med_count)
			snprintf(c[2], sizeof(c[2]), "0");
		else
			fmt_count(c[2], sizeof(c[2]), nw->med_count - b->med_count, true);
		snprintf(c[3], sizeof(c[3]), "%s -> %s", fmt_time(x, sizeof(x), b->med_total, b->present),
			 fmt_time(y, sizeof(y), nw->med_total, nw->present));
		if (b->present && nw->present)
			fmt_pct(c[4], sizeof(c[4]), pct_change(b->med_total, nw->med_total));
		else
			strcpy(c[4], "");
		snprintf(c[5], sizeof(c[5]), "%s -> %s", fmt_time(x, sizeof(x), b->med_mean, b->present),
			 fmt_time(y, sizeof(y), nw->med_mean, nw->present));
		if (b->present && nw->present)
			fmt_pct(c[6], sizeof(c[6]), pct_change(b->med_mean, nw->med_mean));
		else
			strcpy(c[6], "");
		snprintf(c[7], sizeof(c[7]), "%s / %s", fmt_spread(sb, sizeof(sb), b, df->nruns[0]),
			 fmt_spread(sn, sizeof(sn), nw, df->nruns[1]));
		note_of(it, df, note, sizeof(note));
		cell_text(c[spread ? 8 : 7], sizeof(c[8]), note);
		for (int k = 1; k < 9; k++)
			cells[k] = c[k];
		tbl_row(&tb, cells);
	}
	fputc('\n', f);
	tbl_print(f, &tb);
	if (hidden)
		fprintf(f, "  (%zu more %s %s unflagged: --all shows %s)\n", hidden,
			table_title[ti], hidden == 1 ? "row" : "rows", hidden == 1 ? "it" : "them");
}

static void json_side(FILE *f, const struct side *s, size_t nruns)
{
	fprintf(f, "{\"runs\":%zu,\"present\":%s", nruns, s->present ? "true" : "false");
	fprintf(f, ",\"count\":%.17g,\"total_ns\":%.17g,\"mean_ns\":%.17g", s->med_count,
		s->med_total, s->med_mean);
	fprintf(f, ",\"total_min_ns\":%.17g,\"total_max_ns\":%.17g", s->min_total, s->max_total);
	fputs(",\"counts\":[", f);
	for (size_t r = 0; r < nruns; r++)
		fprintf(f, "%s%.17g", r ? "," : "", s->count[r]);
	fputs("],\"totals_ns\":[", f);
	for (size_t r = 0; r < nruns; r++)
		fprintf(f, "%s%.17g", r ? "," : "", s->total[r]);
	fputs("]}", f);
}

static void json_pct(FILE *f, double p)
{
	if (isinf(p) || isnan(p))
		fputs("null", f);
	else
		fprintf(f, "%.6g", p);
}

static void json_string(FILE *f, const char *s)
{
	struct buf b = { 0 };

	json_escape(&b, s, strlen(s));
	fputs(b.p, f);
	buf__free(&b);
}

static int write_json(FILE *f, const struct diff *df, const struct rule *rules, size_t nrules,
		      bool failed)
{
	fputs("{\"schema\":\"gputrace-diff\",\"version\":1", f);
	for (int s = 0; s < 2; s++) {
		fprintf(f, ",\n\"%s\":[", s ? "new" : "base");
		for (size_t r = 0; r < df->nruns[s]; r++) {
			fputs(r ? "," : "", f);
			json_string(f, df->paths[s][r]);
		}
		fputc(']', f);
	}
	for (int ti = 0; ti < NTABLES; ti++) {
		const struct dtable *t = &df->t[ti];

		fprintf(f, ",\n\"%s\":[", stab__key[diff_tables[ti]]);
		for (size_t i = 0; i < t->n; i++) {
			const struct item *it = &t->items[i];

			fputs(i ? ",\n {\"name\":" : "\n {\"name\":", f);
			json_string(f, it->name);
			fprintf(f, ",\"status\":\"%s\",\"base\":", status_of(it));
			json_side(f, &it->s[0], df->nruns[0]);
			fputs(",\"new\":", f);
			json_side(f, &it->s[1], df->nruns[1]);
			fprintf(f, ",\"change\":{\"count\":%.17g,\"count_pct\":",
				it->s[1].med_count - it->s[0].med_count);
			json_pct(f, pct_change(it->s[0].med_count, it->s[1].med_count));
			fputs(",\"total_pct\":", f);
			json_pct(f, pct_change(it->s[0].med_total, it->s[1].med_total));
			fputs(",\"mean_pct\":", f);
			json_pct(f, pct_change(it->s[0].med_mean, it->s[1].med_mean));
			fprintf(f, "},\"within_spread\":%s,\"failed\":", it->noise ? "true" : "false");
			json_string(f, it->broken.len ? it->broken.p : "");
			fputc('}', f);
		}
		fputc(']', f);
	}
	fputs(",\n\"rules\":[", f);
	for (size_t i = 0; i < nrules; i++) {
		fputs(i ? ",\n {\"rule\":" : "\n {\"rule\":", f);
		json_string(f, rules[i].text);
		/* a rule matching nothing is an error (its "error"), not a failure */
		fprintf(f, ",\"failed\":%s,\"rows\":%zu,\"detail\":",
			rules[i].nbroken ? "true" : "false", rules[i].nbroken);
		json_string(f, rules[i].broken.len ? rules[i].broken.p : "");
		if (rules[i].why[0]) {
			fputs(",\"error\":", f);
			json_string(f, rules[i].why);
		}
		fputc('}', f);
	}
	fprintf(f, "],\n\"failed\":%s}\n", failed ? "true" : "false");
	return ferror(f) ? -EIO : 0;
}

static void md_table(FILE *f, const struct diff *df, int ti, size_t top)
{
	const struct dtable *t = &df->t[ti];
	bool spread = df->nruns[0] > 1 || df->nruns[1] > 1;
	size_t shown = 0;
	char x[64], y[64], p[32], note[600];

	if (!t->n)
		return;
	fprintf(f, "\n| %s | count | total time | change | mean | change |%s note |\n"
		   "|---|--:|--:|--:|--:|--:|%s---|\n",
		table_title[ti], spread ? " spread |" : "", spread ? "--:|" : "");
	for (size_t i = 0; i < t->n; i++) {
		const struct item *it = &t->items[i];
		const struct side *b = &it->s[0], *nw = &it->s[1];
		char sb[32], sn[32];

		if (!must_show(it, shown, top))
			continue;
		shown++;
		fputs("| ", f);
		md__code(f, it->name);
		fprintf(f, " | %s → %s", fmt_count(x, sizeof(x), b->med_count, false),
			fmt_count(y, sizeof(y), nw->med_count, false));
		fprintf(f, " | %s → %s", fmt_time(x, sizeof(x), b->med_total, b->present),
			fmt_time(y, sizeof(y), nw->med_total, nw->present));
		fprintf(f, " | %s", b->present && nw->present
					    ? fmt_pct(p, sizeof(p), pct_change(b->med_total, nw->med_total))
					    : "");
		fprintf(f, " | %s → %s", fmt_time(x, sizeof(x), b->med_mean, b->present),
			fmt_time(y, sizeof(y), nw->med_mean, nw->present));
		fprintf(f, " | %s", b->present && nw->present
					    ? fmt_pct(p, sizeof(p), pct_change(b->med_mean, nw->med_mean))
					    : "");
		if (spread)
			fprintf(f, " | %s / %s", fmt_spread(sb, sizeof(sb), b, df->nruns[0]),
				fmt_spread(sn, sizeof(sn), nw, df->nruns[1]));
		note_of(it, df, note, sizeof(note));
		fputs(" | ", f);
		if (it->broken.len)
			fputs("\xe2\x9d\x8c ", f);
		md__text(f, note);
		fputs(" |\n", f);
	}
}

#define MD_ERROR "\xe2\x9a\xa0\xef\xb8\x8f" /* a rule that could not be judged */

static int write_markdown(const char *path, const struct diff *df, const struct rule *rules,
			  size_t nrules, size_t nbroken, size_t nunmatched, size_t top)
{
	FILE *f = summary__fopen_out(path);

	if (!f)
		return -errno;
	/* as the lines on stdout say it: a rule matching nothing is an error, not broken */
	if (!nrules)
		fputs("### gputrace diff\n", f);
	else if (nbroken)
		fprintf(f, "### gputrace diff: \xe2\x9d\x8c %zu of %zu rule%s broken%s\n", nbroken,
			nrules, nrules == 1 ? "" : "s", nunmatched ? ", and a rule matches nothing" : "");
	else if (nunmatched)
		fprintf(f, "### gputrace diff: " MD_ERROR " %zu of %zu rule%s match%s nothing\n",
			nunmatched, nrules, nrules == 1 ? "" : "s", nunmatched == 1 ? "es" : "");
	else
		fprintf(f, "### gputrace diff: \xe2\x9c\x85 %zu %s\n", nrules,
			nrules == 1 ? "rule holds" : "rules hold");
	fprintf(f, "\nBase: %zu run%s, new: %zu run%s; times are medians over the runs%s.\n",
		df->nruns[0], df->nruns[0] == 1 ? "" : "s", df->nruns[1], df->nruns[1] == 1 ? "" : "s",
		df->nruns[0] > 1 || df->nruns[1] > 1
			? "; spread = (max - min) / median of each side's totals"
			: "");
	if (nrules) {
		fputs("\n", f);
		for (size_t i = 0; i < nrules; i++) {
			fprintf(f, "- %s ", rules[i].why[0] ? MD_ERROR " ERROR"
					    : rules[i].nbroken ? "\xe2\x9d\x8c" : "\xe2\x9c\x85");
			md__code(f, rules[i].text);
			if (rules[i].why[0]) {
				fputs(": ", f);
				md__text(f, rules[i].why);
			} else if (rules[i].nbroken) {
				fputs(": ", f);
				md__text(f, rules[i].broken.p);
			}
			fputc('\n', f);
		}
	}
	for (int ti = 0; ti < NTABLES; ti++)
		md_table(f, df, ti, top);
	return out__close(f);
}

static void usage_diff(FILE *f)
{
	fprintf(f,
		"usage: gputrace diff [options] BASE... -- NEW...\n"
		"Compares summaries (summary JSONs or traces) per kernel, API call, copy kind,\n"
		"user range (its time: the device time of the work launched inside it) and\n"
		"CUDA graph launched whole: count, total and mean time. Several files per side are several runs:\n"
		"medians are compared, and a time change inside the runs' spread is noise.\n"
		"  --fail-on RULE     exit 1 when RULE breaks: 'time > +10%%', 'mean > +5%%',\n"
		"                     'count != 0%%', 'kernel[\"gemm*\"] time > +2ms',\n"
		"                     'api time > +50%%', 'range[\"forward\"] mean > +5%%',\n"
		"                     new-kernels, vanished-kernels, new-apis, vanished-apis,\n"
		"                     new-copies, vanished-copies, new-ranges, vanished-ranges,\n"
		"                     new-graphs, vanished-graphs\n"
		"                     (repeatable)\n"
		"  --json             JSON on stdout instead of the table (--json=FILE: to FILE)\n"
		"  --markdown FILE    write the diff as Markdown\n"
		"  --junit FILE       write a JUnit XML report (one test case per rule)\n"
		"  --min-change DUR   time changes smaller than DUR never break a rule\n"
		"                     (default 1us: timestamps come in device ticks)\n"
		"  --top N            rows per table in the table (default %d; flagged, new and\n"
		"                     vanished rows are always shown); --all for every row\n"
		"Exit status: 0 no rule broken, 1 a rule broken, 2 usage, a rule whose name\n"
		"matches nothing, or an unreadable input.\n",
		DEFAULT_TOP);
}

static void free_diff(struct diff *df)
{
	for (int ti = 0; ti < NTABLES; ti++) {
		for (size_t i = 0; i < df->t[ti].n; i++) {
			struct item *it = &df->t[ti].items[i];

			free(it->name);
			for (int s = 0; s < 2; s++) {
				free(it->s[s].count);
				free(it->s[s].total);
				free(it->s[s].mean);
			}
			buf__free(&it->broken);
		}
		free(df->t[ti].items);
		nameidx__free(&df->t[ti].index);
	}
	free(df->paths[0]);
	free(df->paths[1]);
}

int cmd_diff(int argc, char **argv)
{
	struct diff df = { 0 };
	struct rule *rules = calloc((size_t)argc, sizeof(*rules));
	size_t nrules = 0, nbroken = 0, nunmatched = 0, top = DEFAULT_TOP;
	const char *junit = NULL, *markdown = NULL, *json = NULL, *v;
	bool all = false, bad = false, sep = false;
	int ret = ST_ERROR;

	df.paths[0] = calloc((size_t)argc, sizeof(char *));
	df.paths[1] = calloc((size_t)argc, sizeof(char *));
	if (!rules || !df.paths[0] || !df.paths[1]) {
		fprintf(stderr, WHO ": out of memory\n");
		goto out;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--")) {
			if (sep) {
				fprintf(stderr, WHO ": one '--' between the base and the new runs\n");
				goto usage;
			}
			sep = true;
		} else if (a[0] != '-' || !a[1]) {
			df.paths[sep][df.nruns[sep]++] = argv[i];
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage_diff(stdout);
			ret = ST_OK;
			goto out;
		} else if ((v = arg__value(argc, argv, &i, "--fail-on", WHO, &bad))) {
			if (bad || parse_rule(v, &rules[nrules]))
				goto usage_quiet;
			nrules++;
		} else if ((v = arg__file(argc, argv, &i, "--junit", WHO, &bad))) {
			if (bad)
				goto usage;
			junit = v;
		} else if ((v = arg__file(argc, argv, &i, "--markdown", WHO, &bad))) {
			if (bad)
				goto usage;
			markdown = v;
		} else if ((v = arg__value(argc, argv, &i, "--top", WHO, &bad))) {
			char *end;
			long n = strtol(v, &end, 10);

			if (bad || *end || end == v || n < 0) {
				fprintf(stderr, WHO ": --top wants a number of rows, not '%s'\n", v);
				goto usage;
			}
			top = (size_t)n;
		} else if ((v = arg__value(argc, argv, &i, "--min-change", WHO, &bad))) {
			char *end;
			double x = strtod(v, &end), scale = 1;
			struct dim d = DIM_TIME;
			bool pct;
			int ul = bad ? -1 : unit__parse(end, &scale, &d, &pct);

			/* a plain decimal: strtod's "nan" (nanus) disabled the bound */
			if (!bad && (!isfinite(x) || strspn(v, "0123456789.eE+-") < (size_t)(end - v)))
				bad = true;
			/* 0 needs no unit, as a bound of check's */
			bool zero = !bad && end != v && x == 0 && !*end;

			if (!zero && (bad || end == v || x < 0 || ul <= 0 || end[ul] ||
				      !dim__eq(d, DIM_TIME))) {
				fprintf(stderr, WHO ": --min-change wants a time (500ns, 1us, 2ms), "
						"not '%s'\n", v);
				goto usage;
			}
			min_change_ns = unit__times(v, (size_t)(end - v), scale);
		} else if (!strcmp(a, "--json")) {
			json = "-";
		} else if (!strncmp(a, "--json=", 7)) {
			json = a + 7;
			if (!*json) { /* no file: '-' (or --json alone) is stdout */
				fprintf(stderr, WHO ": --json= needs a file name ('-' for stdout)\n");
				goto usage;
			}
		} else if (!strcmp(a, "--all")) {
			all = true;
		} else {
			fprintf(stderr, WHO ": unknown option '%s'\n", a);
			goto usage;
		}
	}
	if (!sep || !df.nruns[0] || !df.nruns[1]) {
		fprintf(stderr, WHO ": give the base runs, then '--', then the new runs\n");
		goto usage;
	}
	/* an output over a run it reads would lose it: one line, 2 */
	for (int s = 0; s < 2; s++)
		if (out__is_input(WHO, "--json", json, df.paths[s], df.nruns[s]) ||
		    out__is_input(WHO, "--markdown", markdown, df.paths[s], df.nruns[s]) ||
		    out__is_input(WHO, "--junit", junit, df.paths[s], df.nruns[s]))
			goto out;
	/* nor may two outputs be one file: one report would be lost, unsaid */
	if (out__same(WHO, "--json", json, "--markdown", markdown) ||
	    out__same(WHO, "--json", json, "--junit", junit) ||
	    out__same(WHO, "--markdown", markdown, "--junit", junit))
		goto out;

	for (int s = 0; s < 2; s++) {
		for (size_t r = 0; r < df.nruns[s]; r++) {
			struct sumdoc d;
			int err;

			if (sumdoc__load(WHO, df.paths[s][r], &d))
				goto out;
			/* a killed run's counts fall short: a rule it breaks (or passes) may be
			 * that, not the change; the table alone did not say so */
			double inc = sumdoc__num(&d, "incomplete");

			if (inc > 0)
				fprintf(stderr, WHO ": %s run %s: %.0f %s not closed (killed, or "
					"cut short): its counts may fall short\n", s ? "new" : "base",
					df.paths[s][r], inc, inc == 1 ? "trace" : "traces");
			err = add_run(&df, s, r, &d);
			sumdoc__free(&d);
			if (err)
				goto out;
		}
	}
	for (int ti = 0; ti < NTABLES; ti++) {
		struct dtable *t = &df.t[ti];

		for (size_t i = 0; i < t->n; i++) {
			struct item *it = &t->items[i];

			finish_side(&it->s[0], df.nruns[0]);
			finish_side(&it->s[1], df.nruns[1]);
			it->order = fmax(it->s[0].med_total, it->s[1].med_total);
			/* noise: with several runs, the sides' ranges of totals overlap */
			it->noise = (df.nruns[0] > 1 || df.nruns[1] > 1) &&
				    it->s[0].min_total <= it->s[1].max_total &&
				    it->s[1].min_total <= it->s[0].max_total;
		}
		/* a table the summaries lack (ranges, graphs) has no items at all */
		if (t->n)
			qsort(t->items, t->n, sizeof(*t->items), cmp_item);
		nameidx__free(&t->index); /* stale now: nothing is looked up after this */
		for (size_t i = 0; i < t->n; i++) {
			struct item *it = &t->items[i];

			for (size_t k = 0; k < nrules; k++) {
				char what[96];

				if (!rule_breaks(&rules[k], ti, it, what, sizeof(what)))
					continue;
				buf__printf(&it->broken, "%s%s", it->broken.len ? "; " : "",
					    rules[k].text);
				buf__printf(&rules[k].broken, "%s%s %s %s",
					    rules[k].nbroken ? "; " : "", table_title[ti], it->name,
					    what);
				rules[k].nbroken++;
			}
		}
	}
	for (size_t k = 0; k < nrules; k++) {
		nbroken += rules[k].nbroken > 0;
		/* a glob that takes no row of either side is a typo: it never passes (as a
		 * check's name that matches nothing), else a gate on it would never fire */
		if (!rules[k].glob || rules[k].nmatched)
			continue;
		nunmatched++;
		snprintf(rules[k].why, sizeof(rules[k].why),
			 "\"%s\" matches no %s of the base or the new runs (a typo never passes)",
			 rules[k].glob, scope_noun(rules[k].tables));
	}

	if (json) {
		FILE *f = summary__fopen_out(json);
		int err = f ? write_json(f, &df, rules, nrules, nbroken + nunmatched > 0) : -errno;

		if (f && f != stdout && fclose(f) && !err)
			err = -errno;
		if (err) {
			fprintf(stderr, WHO ": cannot write %s: %s\n", json, strerror(-err));
			goto out;
		}
	}
	if (!json || strcmp(json, "-")) {
		printf("gputrace diff: base %zu run%s, new %zu run%s", df.nruns[0],
		       df.nruns[0] == 1 ? "" : "s", df.nruns[1], df.nruns[1] == 1 ? "" : "s");
		if (df.nruns[0] > 1 || df.nruns[1] > 1)
			printf(" (medians; spread = (max - min) / median of the totals, base / new)");
		putchar('\n');
		for (int ti = 0; ti < NTABLES; ti++)
			print_table(stdout, &df, ti, all ? SIZE_MAX : top, all);
		putchar('\n');
		for (size_t k = 0; k < nrules; k++) {
			if (rules[k].nbroken) {
				printf("FAIL %s: ", rules[k].text);
				summary__put_text(stdout, rules[k].broken.p);
				putchar('\n');
			} else if (rules[k].why[0]) {
				printf("ERROR %s: %s\n", rules[k].text, rules[k].why);
			} else
				printf("PASS %s\n", rules[k].text);
		}
		if (nrules)
			printf("gputrace diff: %zu of %zu rule%s broken%s\n", nbroken, nrules,
			       nrules == 1 ? "" : "s", nunmatched ? ", and a rule matches nothing" : "");
		else
			printf("gputrace diff: no --fail-on rules given\n");
	}
	fflush(stdout);
	ret = nunmatched ? ST_ERROR : nbroken ? ST_FAILED : ST_OK;

	if (junit) {
		struct test_case *tc = calloc(nrules ? nrules : 1, sizeof(*tc));
		int err = tc ? 0 : -ENOMEM;

		for (size_t k = 0; tc && k < nrules; k++) {
			tc[k].name = rules[k].text;
			tc[k].status = rules[k].nbroken ? CASE_FAIL : CASE_PASS;
			tc[k].message = rules[k].nbroken ? rules[k].broken.p : "holds";
			if (rules[k].why[0]) {
				tc[k].status = CASE_ERROR;
				tc[k].message = rules[k].why;
			}
		}
		if (tc)
			err = junit__write(junit, WHO, "gputrace.diff", df.paths[1][0], tc, nrules);
		free(tc);
		if (err) {
			fprintf(stderr, WHO ": cannot write %s: %s\n", junit, strerror(-err));
			ret = ST_ERROR;
		}
	}
	if (markdown) {
		int err = write_markdown(markdown, &df, rules, nrules, nbroken, nunmatched,
					 all ? SIZE_MAX : top);

		if (err) {
			fprintf(stderr, WHO ": cannot write %s: %s\n", markdown, strerror(-err));
			ret = ST_ERROR;
		}
	}
	goto out;
usage:
	usage_diff(stderr);
usage_quiet:
	ret = ST_ERROR;
out:
	for (size_t k = 0; rules && k < (size_t)argc; k++) {
		free(rules[k].glob);
		buf__free(&rules[k].broken);
	}
	free(rules);
	free_diff(&df);
	return ret;
}
