// SPDX-License-Identifier: MIT
/*
 * Check expressions: a recursive-descent parser over the text (positions
 * kept for every node, so each message points at what it is about), a
 * static pass that gives every node its unit, and an evaluator over a
 * summary. Grammar:
 *
 *   check   := sum CMP sum
 *   sum     := product (('+' | '-') product)*
 *   product := unary (('*' | '/') unary)*
 *   unary   := '-' unary | atom
 *   atom    := NUMBER [UNIT] | 'true' | 'false' | path | '(' sum ')'
 *   path    := NAME ['[' (STRING | INTEGER) ']'] ('.' NAME)*
 *   CMP     := '<' | '<=' | '>' | '>=' | '==' | '!='
 */
#include <ctype.h>
#include <fnmatch.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "expr.h"
#include "writer/summary.h"
#include "json.h"
#include "units.h"

/* ---- what names mean ---- */

enum agg {
	A_SUM,   /* counts, times, bytes: add up over the rows */
	A_MEAN,  /* total over count */
	A_MIN,
	A_MAX,
	A_BW,    /* bytes over total time */
	A_UTIL,  /* busy time over (rows x window) */
	A_ROWS,  /* how many rows matched */
};

#define TB(t) (1u << (t))
#define TIMED (TB(ST_KERNELS) | TB(ST_API) | TB(ST_ANNOTATIONS) | TB(ST_COPIES) | TB(ST_GRAPHS))
#define ALL   (TIMED | TB(ST_DEVICES) | TB(ST_RANGES))

struct field {
	const char *name;  /* as in the JSON */
	unsigned tables;
	struct dim d;
	bool pct;
	enum agg agg;
	double scale; /* JSON value to base units; 0 is 1 */
};

static const struct field fields[] = {
	{ "count", TIMED, DIM_COUNT, false, A_SUM },
	{ "count", TB(ST_DEVICES), DIM_COUNT, false, A_ROWS }, /* devices: how many */
	{ "total_ns", TIMED, DIM_TIME, false, A_SUM },
	{ "mean_ns", TIMED, DIM_TIME, false, A_MEAN },
	{ "min_ns", TIMED, DIM_TIME, false, A_MIN },
	{ "max_ns", TIMED, DIM_TIME, false, A_MAX },
	{ "share", TIMED & ~TB(ST_COPIES), DIM_COUNT, true, A_SUM },
	{ "bytes", TB(ST_COPIES), DIM_BYTES, false, A_SUM },
	{ "bandwidth_bytes_per_s", TB(ST_COPIES), DIM_RATE, false, A_BW, 1e-9 },
	{ "spans", TB(ST_DEVICES), DIM_COUNT, false, A_SUM },
	{ "busy_ns", TB(ST_DEVICES), DIM_TIME, false, A_SUM },
	{ "span_total_ns", TB(ST_DEVICES), DIM_TIME, false, A_SUM },
	{ "first_ns", TB(ST_DEVICES), DIM_TIME, false, A_MIN },
	{ "last_ns", TB(ST_DEVICES), DIM_TIME, false, A_MAX },
	{ "utilization", TB(ST_DEVICES), DIM_COUNT, true, A_UTIL },
	/* user ranges: their host time, the device work launched inside them */
	{ "count", TB(ST_RANGES), DIM_COUNT, false, A_SUM },
	{ "host_ns", TB(ST_RANGES), DIM_TIME, false, A_SUM },
	{ "device_ns", TB(ST_RANGES), DIM_TIME, false, A_SUM },
	{ "device_spans", TB(ST_RANGES), DIM_COUNT, false, A_SUM },
	{ "kernels", TB(ST_RANGES), DIM_COUNT, false, A_SUM },
	{ "distinct", ALL, DIM_COUNT, false, A_ROWS },
};

/* Short names of fields (besides dropping "_ns"). */
static const struct {
	const char *alias, *name;
} field_aliases[] = {
	{ "busy", "utilization" },
	{ "busy_time", "busy_ns" },
	{ "bandwidth", "bandwidth_bytes_per_s" },
};

/* How tables are named in expressions: the JSON key and a singular. */
static const struct {
	const char *name;
	enum stab t;
} table_names[] = {
	{ "kernels", ST_KERNELS }, { "kernel", ST_KERNELS },
	{ "api_calls", ST_API }, { "api", ST_API },
	{ "annotations", ST_ANNOTATIONS }, { "annotation", ST_ANNOTATIONS },
	{ "copies", ST_COPIES }, { "copy", ST_COPIES },
	{ "devices", ST_DEVICES }, { "device", ST_DEVICES },
	{ "ranges", ST_RANGES }, { "range", ST_RANGES },
	{ "graphs", ST_GRAPHS }, { "graph", ST_GRAPHS },
};

static const char *const row_noun[ST__COUNT] = { "kernel", "API call", "annotation",
						 "copy kind", "device", "range", "graph" };

/* Single values of the summary, by their JSON path. */
static const struct {
	const char *path;
	struct dim d;
} scalars[] = {
	{ "spans", DIM_COUNT },
	{ "window.start_ns", DIM_TIME },
	{ "window.end_ns", DIM_TIME },
	{ "window.duration_ns", DIM_TIME },
	{ "trace.bytes", DIM_BYTES },
	{ "totals.kernels.distinct", DIM_COUNT },
	{ "totals.kernels.count", DIM_COUNT },
	{ "totals.kernels.total_ns", DIM_TIME },
	{ "totals.graphs.distinct", DIM_COUNT },
	{ "totals.graphs.count", DIM_COUNT },
	{ "totals.graphs.total_ns", DIM_TIME },
	{ "totals.api_calls.distinct", DIM_COUNT },
	{ "totals.api_calls.count", DIM_COUNT },
	{ "totals.api_calls.total_ns", DIM_TIME },
	{ "totals.annotations.distinct", DIM_COUNT },
	{ "totals.annotations.count", DIM_COUNT },
	{ "totals.annotations.total_ns", DIM_TIME },
	{ "totals.ranges.distinct", DIM_COUNT },
	{ "totals.ranges.count", DIM_COUNT },
	{ "totals.ranges.host_ns", DIM_TIME },
	{ "totals.copies.count", DIM_COUNT },
	{ "totals.copies.bytes", DIM_BYTES },
	{ "totals.copies.total_ns", DIM_TIME },
	{ "totals.overhead.count", DIM_COUNT },
	{ "totals.overhead.total_ns", DIM_TIME },
	{ "lost.total", DIM_COUNT },
	{ "errors.total", DIM_COUNT },
	{ "partial", DIM_COUNT },
	{ "incomplete", DIM_COUNT },
	{ "flows.unmatched", DIM_COUNT },
	{ "stacks.dropped", DIM_COUNT },
	{ "version", DIM_COUNT },
};

static const struct {
	const char *alias, *path;
} scalar_aliases[] = {
	{ "lost", "lost.total" },
	{ "errors", "errors.total" },
	{ "window", "window.duration_ns" },
	{ "device.kernels", "totals.kernels.count" },
	{ "device.copies", "totals.copies.count" },
};

/* Reasons gputrace counts lost events under (lost_by_reason): a check on
 * one of these reads 0 when it did not happen; any other name is a typo
 * unless the summary has it. */
static const char *const lost_reasons[] = {
	"ring_full",	     "cupti_dropped",	 "cupti_no_timestamp", "cuda_event_timing",
	"nvtx_too_deep",     "nvtx_open_ranges", "nvtx_attributes",    "plugin_dropped",
	"ranges_too_deep",   "itt_open_ranges",	 "no_device_row",
	"reentrant",	     "ze_no_event",	 "ze_overwritten",     "ze_unread",	"ze_untracked_list",
	"ze_metrics_unread", "window_late",	 "cupti_pm_overflow",  "cupti_range_late",
	"no_thread_ring",
	"cupti_range_dropped", "cupti_range_unclaimed", "cupti_range_unmeasured", "cupti_after_exit",
	"unknown",
};

/* ... and device times corrected (the trailer's "adjusted"), the same way. */
static const char *const adjusted_reasons[] = { "clamped", "clock_step" };

/* The summary's counts by reason: lost.by_reason {"r": N} and adjusted.by_reason
 * {"r": {"count": N, "max_ns": N}}. */
struct reasons {
	const char *name;  /* in a check: lost.REASON, adjusted.REASON */
	const char *path;  /* the summary's object of reasons */
	const char *noun;  /* in messages */
	const char *const *known;
	size_t nknown;
	bool objects;      /* members are {"count", "max_ns"}, not a count */
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static const struct reasons reason_tables[] = {
	{ "lost", "lost.by_reason", "loss reason", lost_reasons, NELEM(lost_reasons), false },
	{ "adjusted", "adjusted.by_reason", "adjustment reason", adjusted_reasons,
	  NELEM(adjusted_reasons), true },
};

/* ---- tree ---- */

enum ntype { N_NUM, N_ROWS, N_SCALAR, N_REASON, N_NEG, N_ADD, N_SUB, N_MUL, N_DIV, N_CMP };
enum cmp { C_LT, C_LE, C_GT, C_GE, C_EQ, C_NE };
static const char *const cmp_text[] = { "<", "<=", ">", ">=", "==", "!=" };

enum sel { SEL_ALL, SEL_INDEX, SEL_NAME };

struct node {
	enum ntype t;
	int pos, len;
	struct node *l, *r;
	enum cmp cmp;
	double num;    /* N_NUM, in base units */
	bool bare;     /* a number written without a unit */
	struct dim d;  /* from the static pass */
	bool pct;
	/* N_ROWS */
	enum stab table;
	enum sel sel;
	long index;
	char *name;    /* N_ROWS and N_REASON: the selector; N_SCALAR: the JSON path */
	bool glob;
	int sel_pos, sel_len;
	const struct field *field;
	/* N_REASON: which counts, and the largest correction instead of the count */
	const struct reasons *reasons;
	bool max;
};

struct expr {
	char *text;
	struct node *root;
};

/* Bounds on a check's tree, which every pass walks recursively: nesting ('(' and
 * unary '-') and values and operators in all (a left-deep sum is as deep as it is long). */
#define EXPR_DEPTH_MAX 200
#define EXPR_NODES_MAX 10000

struct parser {
	const char *s;
	int p;
	struct expr_err *err;
	bool failed;
	int depth, nodes;
};

static void node_free(struct node *n)
{
	if (!n)
		return;
	node_free(n->l);
	node_free(n->r);
	free(n->name);
	free(n);
}

void expr__free(struct expr *x)
{
	if (!x)
		return;
	node_free(x->root);
	free(x->text);
	free(x);
}

__attribute__((format(printf, 4, 5))) static void fail_at(struct parser *ps, int pos, int len,
							   const char *fmt, ...)
{
	va_list ap;

	if (ps->failed)
		return;
	ps->failed = true;
	ps->err->pos = pos;
	ps->err->len = len > 0 ? len : 1;
	va_start(ap, fmt);
	vsnprintf(ps->err->msg, sizeof(ps->err->msg), fmt, ap);
	va_end(ap);
}

static struct node *new_node(struct parser *ps, enum ntype t, int pos)
{
	struct node *n;

	if (++ps->nodes > EXPR_NODES_MAX) {
		fail_at(ps, pos, 1, "too long: a check has at most %d values and operators",
			EXPR_NODES_MAX);
		return NULL;
	}
	n = calloc(1, sizeof(*n));
	if (!n) {
		fail_at(ps, pos, 1, "out of memory");
		return NULL;
	}
	n->t = t;
	n->pos = pos;
	return n;
}

static void skip_ws(struct parser *ps)
{
	while (isspace((unsigned char)ps->s[ps->p]))
		ps->p++;
}

static bool name_start(char c)
{
	return isalpha((unsigned char)c) || c == '_';
}

static bool name_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/* What the next token is, for "expected X, found Y" messages. */
static void describe_next(struct parser *ps, char *out, size_t len)
{
	const char *s = ps->s + ps->p;
	int n = 0;

	if (!*s) {
		snprintf(out, len, "the end");
		return;
	}
	if (name_start(*s) || isdigit((unsigned char)*s)) {
		while (name_char(s[n]) || s[n] == '.')
			n++;
	} else if ((unsigned char)*s < 0x20 || *s == 0x7f) {
		snprintf(out, len, "a control character (0x%02x)", (unsigned char)*s);
		return;
	} else {
		/* the whole UTF-8 character (its continuation bytes are 10xxxxxx) */
		n = 1;
		while ((s[n] & 0xc0) == 0x80 && n < 4)
			n++;
	}
	snprintf(out, len, "'%.*s'", n, s);
}

/* The length of a logical word at s ("and", "or", "not", any case), else 0: a check
 * has none, and "unknown unit 'and'" would send the user looking for a unit. */
static int logic_word(const char *s, const char *word)
{
	size_t n = strlen(word);

	return !strncasecmp(s, word, n) && !name_char(s[n]) ? (int)n : 0;
}

#define ONE_COMPARISON "one comparison per check (give several checks instead: all must pass)"
#define NO_NOT "a check has no 'not': write the opposite comparison ('lost != 0', not 'not lost == 0')"

static struct node *parse_sum(struct parser *ps);
static size_t edit_distance(const char *a, const char *b);

/* ", did you mean 'kernel'?" when a known first name is close. */
static void near_name(const char *name, char *out, size_t len)
{
	const char *best = NULL;
	size_t bd = SIZE_MAX;

	out[0] = 0;
	for (size_t i = 0; i < NELEM(table_names); i++) {
		size_t d = edit_distance(name, table_names[i].name);

		if (d < bd) {
			bd = d;
			best = table_names[i].name;
		}
	}
	for (size_t i = 0; i < NELEM(scalar_aliases); i++) {
		size_t d = edit_distance(name, scalar_aliases[i].alias);

		if (d < bd) {
			bd = d;
			best = scalar_aliases[i].alias;
		}
	}
	for (size_t i = 0; i < NELEM(reason_tables); i++) {
		size_t d = edit_distance(name, reason_tables[i].name);

		if (d < bd) {
			bd = d;
			best = reason_tables[i].name;
		}
	}
	if (best && bd <= 2)
		snprintf(out, len, "; did you mean '%s'?", best);
}

/* A quoted selector: "..." or '...', with \" \' \\ escapes. */
static char *parse_string(struct parser *ps)
{
	char q = ps->s[ps->p];
	int start = ps->p;
	size_t n = 0, cap = 32;
	char *out = malloc(cap);

	if (!out) {
		fail_at(ps, start, 1, "out of memory");
		return NULL;
	}
	for (ps->p++;; ps->p++) {
		char c = ps->s[ps->p];

		if (!c) {
			fail_at(ps, start, ps->p - start, "unterminated string: a closing %c is missing",
				q);
			free(out);
			return NULL;
		}
		if (c == q)
			break;
		if (c == '\\' && (ps->s[ps->p + 1] == q || ps->s[ps->p + 1] == '\\')) {
			/* a glob escape (\*) is kept for fnmatch; a quote escape is not */
			if (ps->s[ps->p + 1] == q)
				c = ps->s[++ps->p];
		}
		if (n + 2 >= cap) {
			char *np = realloc(out, cap *= 2);
			if (!np) {
				free(out);
				fail_at(ps, start, 1, "out of memory");
				return NULL;
			}
			out = np;
		}
		out[n++] = c;
	}
	ps->p++;
	out[n] = 0;
	return out;
}

struct seg {
	int pos, len;        /* the name */
	char name[64];
	bool has_sel, sel_is_index;
	long index;
	char *sel;
	int sel_pos, sel_len;
};

static bool parse_seg(struct parser *ps, struct seg *g)
{
	int start = ps->p;

	memset(g, 0, sizeof(*g));
	if (!name_start(ps->s[ps->p])) {
		char what[64];

		describe_next(ps, what, sizeof(what));
		fail_at(ps, ps->p, 1, "a field name is expected after '.', found %s", what);
		return false;
	}
	while (name_char(ps->s[ps->p]))
		ps->p++;
	g->pos = start;
	g->len = ps->p - start;
	if (g->len >= (int)sizeof(g->name)) {
		fail_at(ps, start, g->len, "name too long");
		return false;
	}
	memcpy(g->name, ps->s + start, (size_t)g->len);
	g->name[g->len] = 0;
	skip_ws(ps);
	if (ps->s[ps->p] != '[') {
		ps->p = start + g->len; /* the blanks belong to what follows */
		return true;
	}
	g->has_sel = true;
	ps->p++;
	skip_ws(ps);
	g->sel_pos = ps->p;
	if (ps->s[ps->p] == '"' || ps->s[ps->p] == '\'') {
		g->sel = parse_string(ps);
		if (!g->sel)
			return false;
	} else if (isdigit((unsigned char)ps->s[ps->p])) {
		char *end;

		g->index = strtol(ps->s + ps->p, &end, 10);
		ps->p = (int)(end - ps->s);
		g->sel_is_index = true;
	} else {
		char what[64];

		describe_next(ps, what, sizeof(what));
		fail_at(ps, ps->p, 1,
			"a quoted name (\"gemm*\") or a row number is expected in [], found %s", what);
		return false;
	}
	g->sel_len = ps->p - g->sel_pos;
	skip_ws(ps);
	if (ps->s[ps->p] != ']') {
		fail_at(ps, ps->p, 1, "']' expected");
		free(g->sel);
		g->sel = NULL;
		return false;
	}
	ps->p++;
	return true;
}

static const struct field *find_field(enum stab t, const char *name)
{
	char with_ns[80];

	for (size_t i = 0; i < NELEM(field_aliases); i++)
		if (!strcmp(name, field_aliases[i].alias))
			name = field_aliases[i].name;
	snprintf(with_ns, sizeof(with_ns), "%s_ns", name);
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < NELEM(fields); i++)
			if ((fields[i].tables & TB(t)) &&
			    !strcmp(fields[i].name, pass ? with_ns : name))
				return &fields[i];
	return NULL;
}

/* "count, total, mean, ..." for a table: the short spellings. */
static void field_list(enum stab t, char *out, size_t len)
{
	size_t n = 0;

	out[0] = 0;
	for (size_t i = 0; i < NELEM(fields); i++) {
		const char *nm = fields[i].name;
		size_t l = strlen(nm);

		if (!(fields[i].tables & TB(t)))
			continue;
		for (size_t a = 0; a < NELEM(field_aliases); a++)
			if (!strcmp(field_aliases[a].name, nm)) {
				nm = field_aliases[a].alias;
				l = strlen(nm);
			}
		if (l > 3 && !strcmp(nm + l - 3, "_ns"))
			l -= 3;
		n += (size_t)snprintf(out + n, n < len ? len - n : 0, "%s%.*s", n ? ", " : "",
				      (int)l, nm);
	}
}

static bool has_glob(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

static bool known_reason(const struct reasons *t, const char *r)
{
	for (size_t i = 0; i < t->nknown; i++)
		if (!strcmp(r, t->known[i]))
			return true;
	return false;
}

/* A field after adjusted[.REASON]: 0 the count, 1 the largest correction, -1 none. */
static int reason_field(const char *name)
{
	if (!strcmp(name, "count") || !strcmp(name, "total"))
		return 0;
	if (!strcmp(name, "max") || !strcmp(name, "max_ns"))
		return 1;
	return -1;
}

/* path := NAME ['[' SEL ']'] ('.' NAME)* — resolved here into a row
 * reference, a loss reason or one of the scalars. */
static struct node *parse_path(struct parser *ps)
{
	struct seg segs[8];
	int nseg = 0, start = ps->p;
	struct node *n = NULL;
	enum stab table = ST__COUNT;

	for (;;) {
		if (nseg == (int)NELEM(segs)) {
			fail_at(ps, start, ps->p - start, "name too long");
			goto out;
		}
		if (!parse_seg(ps, &segs[nseg]))
			goto out;
		nseg++;
		if (ps->s[ps->p] != '.')
			break;
		ps->p++;
	}
	for (size_t i = 0; i < NELEM(table_names); i++)
		if (!strcmp(segs[0].name, table_names[i].name))
			table = table_names[i].t;
	for (int i = 1; i < nseg; i++)
		if (segs[i].has_sel) {
			fail_at(ps, segs[i].sel_pos - 1, segs[i].sel_len + 2,
				"only the first name takes a [selector]");
			goto out;
		}

	if (table != ST__COUNT) {
		struct seg *f = nseg > 1 ? &segs[1] : NULL;
		char list[256];

		/* device.kernels, device.copies: the totals */
		if (table == ST_DEVICES && !segs[0].has_sel && f && nseg == 2 &&
		    (!strcmp(f->name, "kernels") || !strcmp(f->name, "copies"))) {
			n = new_node(ps, N_SCALAR, start);
			if (n)
				n->name = strdup(f->name[0] == 'k' ? "totals.kernels.count"
								 : "totals.copies.count");
			goto done;
		}
		field_list(table, list, sizeof(list));
		if (!f) {
			fail_at(ps, start, ps->p - start, "%s%s needs a field: .%s",
				segs[0].name, segs[0].has_sel ? "[...]" : "", list);
			goto out;
		}
		if (nseg > 2) {
			fail_at(ps, segs[2].pos - 1, ps->p - segs[2].pos + 1,
				"a %s field has no parts", row_noun[table]);
			goto out;
		}
		const struct field *fd = find_field(table, f->name);
		if (!fd) {
			fail_at(ps, f->pos, f->len, "unknown field '%s' of %s rows (%s)", f->name,
				row_noun[table], list);
			goto out;
		}
		n = new_node(ps, N_ROWS, start);
		if (!n)
			goto out;
		n->table = table;
		n->field = fd;
		n->sel = !segs[0].has_sel ? SEL_ALL : segs[0].sel_is_index ? SEL_INDEX : SEL_NAME;
		n->index = segs[0].index;
		n->name = segs[0].sel;
		segs[0].sel = NULL;
		n->glob = n->name && has_glob(n->name);
		n->sel_pos = segs[0].has_sel ? segs[0].sel_pos : segs[0].pos;
		n->sel_len = segs[0].has_sel ? segs[0].sel_len : segs[0].len;
		goto done;
	}

	for (size_t t = 0; t < NELEM(reason_tables); t++) {
		const struct reasons *rt = &reason_tables[t];
		const char *reason = NULL;
		int rpos = 0, rlen = 0, next = 1;
		bool max = false;

		if (strcmp(segs[0].name, rt->name))
			continue;
		if (segs[0].has_sel) {
			if (segs[0].sel_is_index || (!rt->objects && nseg > 1)) {
				fail_at(ps, segs[0].sel_pos, segs[0].sel_len,
					"%s[\"reason\"] takes a quoted reason%s", rt->name,
					rt->objects ? " (then .count or .max)" : " and no field");
				goto out;
			}
			reason = segs[0].sel;
			rpos = segs[0].sel_pos;
			rlen = segs[0].sel_len;
		} else if (nseg >= 3 && !strcmp(segs[1].name, "by_reason")) {
			reason = segs[2].name;
			rpos = segs[2].pos;
			rlen = segs[2].len;
			next = 3;
		} else if (nseg >= 2 && strcmp(segs[1].name, "total") &&
			   (!rt->objects || reason_field(segs[1].name) < 0)) {
			reason = segs[1].name;
			rpos = segs[1].pos;
			rlen = segs[1].len;
			next = 2;
		} else if (rt->objects) {
			/* adjusted, adjusted.total, adjusted.max: over every reason
			 * (0 from a summary older than "adjusted") */
			reason = "*";
			rpos = segs[0].pos;
			rlen = segs[0].len;
		}
		if (!reason)
			break; /* lost, lost.total: the scalar */
		if (rt->objects && next + 1 == nseg && reason_field(segs[next].name) >= 0) {
			max = reason_field(segs[next].name) == 1;
			next++;
		}
		if (next < nseg) {
			fail_at(ps, segs[next].pos, ps->p - segs[next].pos,
				"%s%s", rt->name,
				rt->objects ? ".REASON takes .count or .max (the largest correction)"
					    : ".REASON has no field");
			goto out;
		}
		n = new_node(ps, N_REASON, start);
		if (!n)
			goto out;
		n->reasons = rt;
		n->max = max;
		n->name = strdup(reason);
		n->glob = has_glob(reason);
		n->sel_pos = rpos;
		n->sel_len = rlen;
		goto done;
	}

	/* A scalar: dotted JSON path or an alias of one. */
	char path[256], hint[80];
	size_t pl = 0;
	if (segs[0].has_sel) {
		near_name(segs[0].name, hint, sizeof(hint));
		fail_at(ps, segs[0].pos, segs[0].len,
			"unknown name '%s': rows are kernel[...], graph[...], api[...], "
			"annotation[...], range[...], copy[...], device[...], lost[...], "
			"adjusted[...]%s",
			segs[0].name, hint);
		goto out;
	}
	for (int i = 0; i < nseg; i++) {
		if (segs[i].has_sel) {
			fail_at(ps, segs[i].sel_pos - 1, segs[i].sel_len + 2,
				"'%s' has no rows to select", segs[i].name);
			goto out;
		}
		pl += (size_t)snprintf(path + pl, pl < sizeof(path) ? sizeof(path) - pl : 0, "%s%s",
				       i ? "." : "", segs[i].name);
	}
	const char *canon = NULL;
	for (size_t i = 0; i < NELEM(scalar_aliases) && !canon; i++)
		if (!strcmp(path, scalar_aliases[i].alias))
			canon = scalar_aliases[i].path;
	char with_ns[280];
	snprintf(with_ns, sizeof(with_ns), "%s_ns", path);
	for (size_t i = 0; i < NELEM(scalars) && !canon; i++)
		if (!strcmp(path, scalars[i].path) || !strcmp(with_ns, scalars[i].path))
			canon = scalars[i].path;
	if (!canon) {
		near_name(segs[0].name, hint, sizeof(hint));
		fail_at(ps, start, ps->p - start,
			"unknown name '%s'%s (rows: kernel[...], api[...], annotation[...], range[...], "
			"copy[...], device[...]; values: device.kernels, device.copies, lost, lost.REASON, "
			"adjusted, adjusted.REASON, flows.unmatched, stacks.dropped, "
			"spans, window, trace.bytes, totals.*: see README \"Checks\")",
			path, hint);
		goto out;
	}
	n = new_node(ps, N_SCALAR, start);
	if (n)
		n->name = strdup(canon);
done:
	if (n) {
		n->len = ps->p - start;
		if (!n->name && n->t != N_ROWS) {
			fail_at(ps, start, n->len, "out of memory");
			node_free(n);
			n = NULL;
		}
	}
out:
	for (int i = 0; i < nseg; i++)
		free(segs[i].sel);
	return ps->failed ? (node_free(n), NULL) : n;
}

/* One level deeper ('(' or unary '-' at pos), or false past EXPR_DEPTH_MAX (said). */
static bool nest(struct parser *ps, int pos)
{
	if (++ps->depth <= EXPR_DEPTH_MAX)
		return true;
	fail_at(ps, pos, 1, "nested too deep: at most %d levels", EXPR_DEPTH_MAX);
	return false;
}

static struct node *parse_number(struct parser *ps)
{
	const char *s = ps->s;
	int start = ps->p, q = ps->p, ul;
	double scale = 1;
	struct dim d = DIM_COUNT;
	bool pct = false;
	struct node *n;

	/* plain decimals: 12, 1.5, .5, 2e6 (no hex, no inf) */
	while (isdigit((unsigned char)s[q]))
		q++;
	if (s[q] == '.')
		for (q++; isdigit((unsigned char)s[q]);)
			q++;
	if ((s[q] == 'e' || s[q] == 'E') &&
	    (isdigit((unsigned char)s[q + 1]) ||
	     ((s[q + 1] == '+' || s[q + 1] == '-') && isdigit((unsigned char)s[q + 2])))) {
		q += 2;
		while (isdigit((unsigned char)s[q]))
			q++;
	}
	if (q - start >= 64) {
		fail_at(ps, start, q - start, "number too long");
		return NULL;
	}
	ps->p = q;
	int upos = ps->p;
	while (ps->s[upos] == ' ')
		upos++;
	ul = unit__parse(ps->s + upos, &scale, &d, &pct);
	if (ul < 0) {
		int l = logic_word(ps->s + upos, "and");

		if (l || (l = logic_word(ps->s + upos, "or"))) {
			fail_at(ps, upos, (int)strlen(ps->s + upos), ONE_COMPARISON);
			return NULL;
		}
		while (isalpha((unsigned char)ps->s[upos + l]) || ps->s[upos + l] == '/')
			l++;
		fail_at(ps, upos, l, "unknown unit '%.*s' (units: %s)", l, ps->s + upos,
			unit__list);
		return NULL;
	}
	if (ul > 0)
		ps->p = upos + ul;
	n = new_node(ps, N_NUM, start);
	if (!n)
		return NULL;
	n->num = unit__times(s + start, (size_t)(q - start), scale);
	n->bare = ul == 0;
	n->d = d;
	n->pct = pct;
	n->len = ps->p - start;
	return n;
}

static struct node *parse_atom(struct parser *ps)
{
	char c;

	skip_ws(ps);
	c = ps->s[ps->p];
	if (isdigit((unsigned char)c) || (c == '.' && isdigit((unsigned char)ps->s[ps->p + 1])))
		return parse_number(ps);
	if (c == '(') {
		int start = ps->p++;
		struct node *n;

		if (!nest(ps, start))
			return NULL;
		n = parse_sum(ps);
		ps->depth--;
		if (!n)
			return NULL;
		skip_ws(ps);
		if (ps->s[ps->p] != ')') {
			fail_at(ps, start, 1, "this '(' is not closed");
			node_free(n);
			return NULL;
		}
		ps->p++;
		return n;
	}
	if (name_start(c)) {
		int l = 0;

		while (name_char(ps->s[ps->p + l]))
			l++;
		if (logic_word(ps->s + ps->p, "not")) {
			fail_at(ps, ps->p, l, NO_NOT);
			return NULL;
		}
		if ((l == 4 && !strncmp(ps->s + ps->p, "true", 4)) ||
		    (l == 5 && !strncmp(ps->s + ps->p, "false", 5))) {
			struct node *n = new_node(ps, N_NUM, ps->p);

			if (!n)
				return NULL;
			n->num = l == 4;
			n->bare = true;
			n->len = l;
			ps->p += l;
			return n;
		}
		return parse_path(ps);
	}
	char what[64];
	if (c == '!') {
		fail_at(ps, ps->p, 1, NO_NOT);
		return NULL;
	}
	describe_next(ps, what, sizeof(what));
	fail_at(ps, ps->p, 1, "a value is expected (a number or a name), found %s", what);
	return NULL;
}

static struct node *parse_unary(struct parser *ps)
{
	skip_ws(ps);
	if (ps->s[ps->p] == '-') {
		int start = ps->p++;
		struct node *n, *x;

		if (!nest(ps, start))
			return NULL;
		n = new_node(ps, N_NEG, start);
		if (!n) {
			ps->depth--;
			return NULL;
		}
		x = parse_unary(ps);
		ps->depth--;
		if (!x) {
			free(n);
			return NULL;
		}
		n->l = x;
		n->len = x->pos + x->len - start;
		return n;
	}
	return parse_atom(ps);
}

static struct node *binary(struct parser *ps, enum ntype t, struct node *l, struct node *r)
{
	struct node *n;

	if (!r) {
		node_free(l);
		return NULL;
	}
	n = new_node(ps, t, l->pos);
	if (!n) {
		node_free(l);
		node_free(r);
		return NULL;
	}
	n->l = l;
	n->r = r;
	n->len = r->pos + r->len - l->pos;
	return n;
}

static struct node *parse_product(struct parser *ps)
{
	struct node *n = parse_unary(ps);

	while (n) {
		skip_ws(ps);
		char c = ps->s[ps->p];
		if (c != '*' && c != '/')
			break;
		ps->p++;
		n = binary(ps, c == '*' ? N_MUL : N_DIV, n, parse_unary(ps));
	}
	return n;
}

static struct node *parse_sum(struct parser *ps)
{
	struct node *n = parse_product(ps);

	while (n) {
		skip_ws(ps);
		char c = ps->s[ps->p];
		if (c != '+' && c != '-')
			break;
		ps->p++;
		n = binary(ps, c == '+' ? N_ADD : N_SUB, n, parse_product(ps));
	}
	return n;
}

static int parse_cmp(struct parser *ps, enum cmp *op)
{
	const char *s = ps->s + ps->p;

	if (s[0] == '<')
		*op = s[1] == '=' ? C_LE : C_LT;
	else if (s[0] == '>')
		*op = s[1] == '=' ? C_GE : C_GT;
	else if (s[0] == '=' && s[1] == '=')
		*op = C_EQ;
	else if (s[0] == '!' && s[1] == '=')
		*op = C_NE;
	else if (s[0] == '=') {
		fail_at(ps, ps->p, 1, "'=' is no comparison: write '=='");
		return -1;
	} else {
		char what[64];

		describe_next(ps, what, sizeof(what));
		fail_at(ps, ps->p, 1,
			"a comparison (<, <=, >, >=, ==, !=) is expected, found %s", what);
		return -1;
	}
	ps->p += *op == C_LT || *op == C_GT ? 1 : 2;
	return 0;
}

/* ---- units, statically ---- */

static bool is_literal(const struct node *n)
{
	return n->t == N_NUM || (n->t == N_NEG && is_literal(n->l));
}

static double literal_value(const struct node *n)
{
	return n->t == N_NUM ? n->num : -literal_value(n->l);
}

static bool is_bare(const struct node *n)
{
	return (n->t == N_NUM && n->bare) || (n->t == N_NEG && is_bare(n->l));
}

static void show_node(const char *text, const struct node *n, char *out, size_t len)
{
	snprintf(out, len, "%.*s", n->len, text + n->pos);
}

/* The bound b, written as a bare number, against a, which has units. */
static bool bare_vs(struct parser *ps, const struct node *a, const struct node *b)
{
	char what[160];

	if (!is_bare(b) || literal_value(b) == 0)
		return false;
	show_node(ps->s, a, what, sizeof(what));
	if (a->pct) {
		fail_at(ps, b->pos, b->len,
			"%s is a fraction: write the bound as a percentage (e.g. %g%%)", what,
			literal_value(b) <= 1 ? literal_value(b) * 100 : literal_value(b));
		return true;
	}
	if (!dim__eq(a->d, DIM_COUNT)) {
		const char *units = dim__eq(a->d, DIM_TIME)    ? "ns, us, ms, s"
				    : dim__eq(a->d, DIM_BYTES) ? "B, KiB, MiB, GiB, KB, MB, GB"
				    : dim__eq(a->d, DIM_RATE)  ? "B/s, MB/s, GB/s, MiB/s, GiB/s"
							       : "";
		char bare[64];

		/* named: in "1ms + 5" the bare number is an operand, not the bound */
		show_node(ps->s, b, bare, sizeof(bare));
		fail_at(ps, b->pos, b->len, "%s is %s: give %s a unit (%s)", what,
			dim__what(a->d, false), bare, units);
		return true;
	}
	return false;
}

static bool same_units(struct parser *ps, struct node *op, const struct node *l,
		       const struct node *r, const char *verb)
{
	char lw[160], rw[160];

	if (bare_vs(ps, l, r) || bare_vs(ps, r, l))
		return false;
	if (is_bare(l) && literal_value(l) == 0)
		return true; /* 0 needs no unit */
	if (is_bare(r) && literal_value(r) == 0)
		return true;
	if (dim__eq(l->d, r->d) && (l->pct == r->pct || (!l->pct && !is_literal(l)) ||
				    (!r->pct && !is_literal(r))))
		return true;
	show_node(ps->s, l, lw, sizeof(lw));
	show_node(ps->s, r, rw, sizeof(rw));
	fail_at(ps, op->pos, op->len, "cannot %s %s (%s) and %s (%s)", verb,
		dim__what(l->d, l->pct), lw, dim__what(r->d, r->pct), rw);
	return false;
}

static bool type_node(struct parser *ps, struct node *n)
{
	if (n->l && !type_node(ps, n->l))
		return false;
	if (n->r && !type_node(ps, n->r))
		return false;
	switch (n->t) {
	case N_NUM:
		return true;
	case N_ROWS:
		n->d = n->field->d;
		n->pct = n->field->pct;
		return true;
	case N_REASON:
		n->d = n->max ? DIM_TIME : DIM_COUNT;
		return true;
	case N_SCALAR:
		for (size_t i = 0; i < NELEM(scalars); i++)
			if (!strcmp(n->name, scalars[i].path))
				n->d = scalars[i].d;
		return true;
	case N_NEG:
		n->d = n->l->d;
		n->pct = n->l->pct;
		return true;
	case N_ADD:
	case N_SUB:
		if (!same_units(ps, n, n->l, n->r, n->t == N_ADD ? "add" : "subtract"))
			return false;
		n->d = is_bare(n->l) ? n->r->d : n->l->d;
		n->pct = n->l->pct || n->r->pct;
		return true;
	case N_MUL:
		n->d.t = (signed char)(n->l->d.t + n->r->d.t);
		n->d.b = (signed char)(n->l->d.b + n->r->d.b);
		n->pct = dim__eq(n->d, DIM_COUNT) && (n->l->pct || n->r->pct);
		return true;
	case N_DIV:
		n->d.t = (signed char)(n->l->d.t - n->r->d.t);
		n->d.b = (signed char)(n->l->d.b - n->r->d.b);
		/* a time over a time is a fraction, read as a percentage */
		n->pct = dim__eq(n->d, DIM_COUNT) &&
			 ((!dim__eq(n->l->d, DIM_COUNT)) || (n->l->pct && !n->r->pct));
		return true;
	case N_CMP:
		return same_units(ps, n, n->l, n->r, "compare");
	}
	return true;
}

struct expr *expr__parse(const char *text, struct expr_err *err)
{
	struct parser ps = { .s = text, .err = err };
	struct node *l, *r = NULL, *root = NULL;
	struct expr *x;
	enum cmp op;

	memset(err, 0, sizeof(*err));
	l = parse_sum(&ps);
	if (!l)
		goto fail;
	skip_ws(&ps);
	if (parse_cmp(&ps, &op))
		goto fail;
	r = parse_sum(&ps);
	if (!r)
		goto fail;
	skip_ws(&ps);
	if (ps.s[ps.p]) {
		char what[64];

		const char *rest = ps.s + ps.p;

		describe_next(&ps, what, sizeof(what));
		/* a chained comparison, or one joined to the next as a program would */
		fail_at(&ps, ps.p, (int)strlen(rest),
			strchr("<>=!&|,;", *rest) || logic_word(rest, "and") || logic_word(rest, "or")
				? ONE_COMPARISON
				: "unexpected %s after the check",
			what);
		goto fail;
	}
	root = new_node(&ps, N_CMP, l->pos);
	if (!root)
		goto fail;
	root->l = l;
	root->r = r;
	l = r = NULL;
	root->cmp = op;
	/* unit errors point at the comparison's operands; the node spans all */
	root->len = root->r->pos + root->r->len - root->pos;
	if (!type_node(&ps, root))
		goto fail;
	x = calloc(1, sizeof(*x));
	if (!x || !(x->text = strdup(text))) {
		free(x);
		fail_at(&ps, 0, 1, "out of memory");
		goto fail;
	}
	x->root = root;
	return x;
fail:
	if (!ps.failed)
		fail_at(&ps, ps.p, 1, "invalid check");
	node_free(l);
	node_free(r);
	node_free(root);
	return NULL;
}

void expr__show_err(FILE *f, const char *text, const struct expr_err *err)
{
	int len = (int)strlen(text), pos = err->pos > len ? len : err->pos;
	int n = err->len;

	if (pos + n > len + 1)
		n = len + 1 - pos;
	if (n < 1)
		n = 1;
	fprintf(f, "  %s\n  %*s^", text, pos, "");
	for (int i = 1; i < n; i++)
		fputc('~', f);
	fputc('\n', f);
}

/* ---- evaluation ---- */

struct eval {
	const struct expr *x;
	const struct sumdoc *d;
	struct stable tables[ST__COUNT];
	bool loaded[ST__COUNT];
	struct expr_result *res;
	bool failed;
};

__attribute__((format(printf, 4, 5))) static void eval_fail(struct eval *ev, int pos, int len,
							     const char *fmt, ...)
{
	va_list ap;

	if (ev->failed)
		return;
	ev->failed = true;
	ev->res->status = EXPR_ERROR;
	ev->res->err.pos = pos;
	ev->res->err.len = len;
	va_start(ap, fmt);
	vsnprintf(ev->res->err.msg, sizeof(ev->res->err.msg), fmt, ap);
	va_end(ap);
}

static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), *row, best;

	if (la > 256 || lb > 256)
		return SIZE_MAX;
	row = malloc((lb + 1) * sizeof(*row));
	if (!row)
		return SIZE_MAX;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j], v = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < v)
				v = up + 1;
			if (row[j - 1] + 1 < v)
				v = row[j - 1] + 1;
			row[j] = v;
			diag = up;
		}
	}
	best = row[lb];
	free(row);
	return best;
}

/* ", did you mean "x"?" for the closest row name, if close: the shortest that the
 * name begins (a name cut short: "gemm" for "gemm_f32", "zeCommandQueueSync" for
 * "zeCommandQueueSynchronize", which edits count far), else the one fewest edits
 * away. Its control characters escaped, as everywhere a name is printed. */
static void suggest(const struct stable *t, const char *name, char *out, size_t len)
{
	size_t best = SIZE_MAX, limit = strlen(name) / 3 + 2, n = strlen(name);
	const char *bn = NULL, *prefixed = NULL;
	char shown[256];

	out[0] = 0;
	for (size_t i = 0; i < t->n; i++) {
		const char *rn = t->rows[i].name;
		size_t dd;

		if (n && !strncmp(rn, name, n) &&
		    (!prefixed || strlen(rn) < strlen(prefixed)))
			prefixed = rn;
		dd = edit_distance(name, rn);
		if (dd < best) {
			best = dd;
			bn = rn;
		}
	}
	if (prefixed && (!bn || best > 1))
		bn = prefixed, best = 0;
	if (bn && best <= limit)
		snprintf(out, len, "; did you mean \"%s\"?", summary__text(shown, sizeof(shown), bn));
	else if (!t->n)
		snprintf(out, len, ", which has none");
}

static const struct stable *table_of(struct eval *ev, enum stab t, const struct node *n)
{
	if (!ev->loaded[t]) {
		if (sumdoc__table("gputrace check", ev->d, t, &ev->tables[t])) {
			eval_fail(ev, n->pos, n->len, "the summary %s has no \"%s\" table",
				  ev->d->path, stab__key[t]);
			return NULL;
		}
		ev->loaded[t] = true;
	}
	return &ev->tables[t];
}

static double row_field(const struct srow *r, const struct field *f)
{
	double v = 0;

	jv_num(r->v, r->e, f->name, &v);
	return f->scale ? v * f->scale : v;
}

static double scalar_value(struct eval *ev, const char *path, bool *found)
{
	const char *v, *e;
	char tmp[64];

	*found = false;
	if (!sumdoc__get(ev->d, path, &v, &e))
		return 0;
	if (e - v == 4 && !memcmp(v, "true", 4)) {
		*found = true;
		return 1;
	}
	if (e - v == 5 && !memcmp(v, "false", 5)) {
		*found = true;
		return 0;
	}
	if (e - v >= (long)sizeof(tmp) || e == v || !(isdigit((unsigned char)*v) || *v == '-'))
		return 0;
	memcpy(tmp, v, (size_t)(e - v));
	tmp[e - v] = 0;
	*found = true;
	return strtod(tmp, NULL);
}

static double eval_rows(struct eval *ev, const struct node *n)
{
	const struct stable *t = table_of(ev, n->table, n);
	const struct field *f = n->field;
	double sum = 0, count = 0, bytes = 0, best = 0, busy = 0, window = 0;
	size_t matched = 0, first = 0, end;
	bool any = false, found;

	if (!t)
		return 0;
	end = t->n;
	/* One row named or numbered goes through the same arithmetic as a glob
	 * of one: its busy share from busy_ns over the window, not the
	 * summary's utilization rounded to six places, so device[0].busy and
	 * device.busy agree on a one-device run. */
	if (n->sel == SEL_INDEX) {
		if (n->index < 0 || (size_t)n->index >= t->n) {
			eval_fail(ev, n->sel_pos, n->sel_len,
				  "no %s row %ld: the summary has %zu (0 is the first)",
				  row_noun[n->table], n->index, t->n);
			return 0;
		}
		first = (size_t)n->index;
		end = first + 1;
	} else if (n->sel == SEL_NAME && !n->glob) {
		const struct srow *r = stable__find(t, n->name);
		char hint[300];

		if (!r) {
			suggest(t, n->name, hint, sizeof(hint));
			eval_fail(ev, n->sel_pos, n->sel_len,
				  "no %s named \"%s\" in the summary%s (a glob such as \"%s*\" "
				  "counts 0 when nothing matches)",
				  row_noun[n->table], n->name, hint, n->name);
			return 0;
		}
		first = (size_t)(r - t->rows);
		end = first + 1;
	}
	for (size_t i = first; i < end; i++) {
		const struct srow *r = &t->rows[i];
		double v;

		if (n->sel == SEL_NAME && n->glob && fnmatch(n->name, r->name, 0))
			continue;
		matched++;
		switch (f->agg) {
		case A_SUM:
			sum += row_field(r, f);
			break;
		case A_MEAN:
			sum += r->total_ns;
			count += r->count;
			break;
		case A_BW:
			sum += r->total_ns;
			bytes += r->bytes;
			break;
		case A_UTIL:
			busy += r->busy_ns;
			break;
		case A_MIN:
		case A_MAX:
			/* rows that never ran have no minimum */
			if (n->table != ST_DEVICES && r->count == 0)
				break;
			v = row_field(r, f);
			if (!any || (f->agg == A_MIN ? v < best : v > best))
				best = v;
			any = true;
			break;
		case A_ROWS:
			break;
		}
	}
	switch (f->agg) {
	case A_SUM:
		return sum;
	case A_MEAN:
		return count ? floor(sum / count) : 0;
	case A_BW:
		return sum ? bytes / sum : 0;
	case A_UTIL:
		window = scalar_value(ev, "window.duration_ns", &found);
		return matched && window > 0 ? busy / ((double)matched * window) : 0;
	case A_MIN:
	case A_MAX:
		return best;
	case A_ROWS:
		return (double)matched;
	}
	return 0;
}

static double eval_reason(struct eval *ev, const struct node *n)
{
	const struct reasons *rt = n->reasons;
	const char *v, *e, *xv, *xe;
	struct jv_iter it;
	struct jv_member m;
	struct buf key = { 0 };
	double sum = 0, x;
	bool seen = false;
	char tmp[64];

	if (sumdoc__get(ev->d, rt->path, &v, &e) && jv_iter_init(&it, v, e)) {
		while (jv_iter_next(&it, &m)) {
			jv_str(m.key - 1, m.key + m.klen + 1, &key);
			if (n->glob ? fnmatch(n->name, key.p, 0) : strcmp(n->name, key.p))
				continue;
			xv = m.v;
			xe = m.e;
			if (rt->objects && !jv_get(m.v, m.e, n->max ? "max_ns" : "count", &xv, &xe))
				continue;
			snprintf(tmp, sizeof(tmp), "%.*s", (int)(xe - xv < 63 ? xe - xv : 63), xv);
			x = strtod(tmp, NULL);
			if (!n->max)
				sum += x;
			else if (x > sum)
				sum = x;
			seen = true;
		}
	}
	buf__free(&key);
	if (!seen && !n->glob && !known_reason(rt, n->name)) {
		char list[768]; /* every reason named: 25 are about 440 characters */
		size_t l = 0;

		for (size_t i = 0; i < rt->nknown; i++)
			l += (size_t)snprintf(list + l, l < sizeof(list) ? sizeof(list) - l : 0, "%s%s",
					      i ? ", " : "", rt->known[i]);
		eval_fail(ev, n->sel_pos, n->sel_len,
			  "no %s \"%s\" in the summary, and gputrace records none by that name (%s)",
			  rt->noun, n->name, list);
	}
	return sum;
}

static double eval_node(struct eval *ev, const struct node *n)
{
	double l, r;
	bool found;

	if (ev->failed)
		return 0;
	switch (n->t) {
	case N_NUM:
		return n->num;
	case N_ROWS:
		return eval_rows(ev, n);
	case N_REASON:
		return eval_reason(ev, n);
	case N_SCALAR:
		l = scalar_value(ev, n->name, &found);
		/* added within version 1: an older summary reads 0, as adjusted */
		if (!found && strcmp(n->name, "incomplete") && strcmp(n->name, "errors.total") &&
		    strcmp(n->name, "flows.unmatched") && strcmp(n->name, "stacks.dropped"))
			eval_fail(ev, n->pos, n->len, "the summary %s has no %s", ev->d->path,
				  n->name);
		return l;
	case N_NEG:
		return -eval_node(ev, n->l);
	case N_ADD:
		return eval_node(ev, n->l) + eval_node(ev, n->r);
	case N_SUB:
		return eval_node(ev, n->l) - eval_node(ev, n->r);
	case N_MUL:
		return eval_node(ev, n->l) * eval_node(ev, n->r);
	case N_DIV:
		l = eval_node(ev, n->l);
		r = eval_node(ev, n->r);
		if (r == 0 && !ev->failed) {
			eval_fail(ev, n->r->pos, n->r->len, "division by zero: %.*s is 0", n->r->len,
				  ev->x->text + n->r->pos);
			return 0;
		}
		return l / r;
	case N_CMP:
		break;
	}
	return 0;
}

static bool has_name(const struct node *n)
{
	return n && (n->t == N_ROWS || n->t == N_SCALAR || n->t == N_REASON || has_name(n->l) ||
		     has_name(n->r));
}

void expr__eval(const struct expr *x, const struct sumdoc *d, struct expr_result *res)
{
	struct eval ev = { .x = x, .d = d, .res = res };
	const struct node *c = x->root;
	double l, r;
	bool ok = false;
	char lt[96], rt[96];

	memset(res, 0, sizeof(*res));
	l = eval_node(&ev, c->l);
	r = eval_node(&ev, c->r);
	if (!ev.failed) {
		switch (c->cmp) {
		case C_LT: ok = l < r; break;
		case C_LE: ok = l <= r; break;
		case C_GT: ok = l > r; break;
		case C_GE: ok = l >= r; break;
		case C_EQ: ok = l == r; break;
		case C_NE: ok = l != r; break;
		}
		res->status = ok ? EXPR_PASS : EXPR_FAIL;
		/* a bare 0 on one side takes the other's unit */
		unit__fmt(lt, sizeof(lt), l, is_bare(c->l) ? c->r->d : c->l->d,
			  is_bare(c->l) ? c->r->pct : c->l->pct);
		unit__fmt(rt, sizeof(rt), r, is_bare(c->r) ? c->l->d : c->r->d,
			  is_bare(c->r) ? c->l->pct : c->r->pct);
		if (has_name(c->l) && has_name(c->r)) {
			snprintf(res->measured, sizeof(res->measured), "%s vs %s", lt, rt);
		} else if (has_name(c->r)) {
			snprintf(res->measured, sizeof(res->measured), "%s", rt);
			snprintf(res->bound, sizeof(res->bound), "%s", lt);
		} else {
			snprintf(res->measured, sizeof(res->measured), "%s", lt);
			snprintf(res->bound, sizeof(res->bound), "%s", rt);
		}
	}
	for (int t = 0; t < ST__COUNT; t++)
		if (ev.loaded[t])
			stable__free(&ev.tables[t]);
	(void)cmp_text;
}
