// SPDX-License-Identifier: MIT
/*
 * gputrace report TRACE -o report.html: one self-contained HTML page (inline
 * CSS, SVG and a little script; no network, no external font) for a person
 * who opens a CI artifact before deciding to download the trace: command
 * line and host, a device-utilisation timeline per device, the top kernels
 * and API calls as bar charts, copies by kind, API errors, lost events. The numbers are
 * the summary's (the same aggregator as `gputrace summary`); the page also
 * carries that summary JSON, and every row its exact values as data-*
 * attributes, so a script can read the page as well as a person.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "args.h"
#include "writer/summary.h"
#include "json.h"
#include "junit.h"
#include "meta.h"
#include "nameidx.h"
#include "summarize.h"
#include "sumdoc.h"
#include "tool.h"
#include "units.h"

#define WHO "gputrace report"
#define BUCKETS 240      /* timeline columns per device */
#define PENDING 64       /* open busy intervals per device, as the summary keeps */
#define TOP_BARS 15      /* rows in a bar chart */
#define TOP_ROWS 50      /* rows in a table */

/* ---- what the scan collects besides the summary ---- */

struct tl_dev {
	char *name;
	double busy[BUCKETS];       /* ns busy in each bucket */
	uint64_t pend[PENDING + 1][2];
	unsigned npend;
};

struct proc {
	int64_t pid;
	char *name, *labels;
};

struct rep {
	struct summarized r;
	struct tl_dev *devs;
	size_t ndevs;
	struct nameidx dev_index; /* devs by name */
	struct proc *procs;
	size_t nprocs;
	/* pid -> its index in procs (vals): looked up, not searched (a search per
	 * event was quadratic: 32k processes took 17 s) */
	struct pidmap by_pid;
	double bucket_ns;
	struct buf tmp, tmp2;
	bool oom;
};

static void *grow(void *p, size_t n, size_t size, bool *oom)
{
	/* doubling at powers of two */
	if (n & (n - 1) || (n && n < 8))
		return p;
	void *np = realloc(p, (n ? n * 2 : 8) * size);
	if (!np)
		*oom = true;
	return np;
}

static struct proc *proc_of(struct rep *rp, int64_t pid)
{
	long j = pidmap__slot(&rp->by_pid, pid);

	if (j >= 0)
		return &rp->procs[rp->by_pid.vals[j]];
	struct proc *np = grow(rp->procs, rp->nprocs, sizeof(*np), &rp->oom);
	if (!np)
		return NULL;
	rp->procs = np;
	np = &rp->procs[rp->nprocs++];
	memset(np, 0, sizeof(*np));
	np->pid = pid;
	j = pidmap__add(&rp->by_pid, pid); /* (before vals is read: it may move) */
	rp->by_pid.vals[j] = (int64_t)(rp->nprocs - 1);
	return np;
}

/* Pass 1: process names and command lines (metadata events). */
static int meta_event(void *ctx, const char *v, const char *e)
{
	struct rep *rp = ctx;
	const char *pv, *pe, *av, *ae;
	int64_t pid;
	bool labels;
	struct proc *p;

	if (!jv_get(v, e, "ph", &pv, &pe) || pe - pv != 3 || pv[1] != 'M')
		return 0;
	if (!jv_get(v, e, "name", &pv, &pe) || !jv_str(pv, pe, &rp->tmp))
		return 0;
	labels = !strcmp(rp->tmp.p, "process_labels");
	if (!labels && strcmp(rp->tmp.p, "process_name"))
		return 0;
	if (!jv_get(v, e, "pid", &pv, &pe) || !jv_i64(pv, pe, &pid) ||
	    !jv_get(v, e, "args", &av, &ae) ||
	    !jv_get(av, ae, labels ? "labels" : "name", &pv, &pe) || !jv_str(pv, pe, &rp->tmp2))
		return 0;
	p = proc_of(rp, pid);
	if (!p)
		return 0;
	char **slot = labels ? &p->labels : &p->name;
	free(*slot);
	*slot = strdup(rp->tmp2.p);
	return 0;
}

static void retire(struct rep *rp, struct tl_dev *d, uint64_t a, uint64_t b)
{
	double ws = (double)rp->r.window_start_ns, bw = rp->bucket_ns;

	if (b <= a || bw <= 0)
		return;
	long k0 = (long)floor(((double)a - ws) / bw), k1 = (long)floor(((double)b - ws) / bw);
	for (long k = k0 < 0 ? 0 : k0; k <= k1 && k < BUCKETS; k++) {
		double lo = ws + (double)k * bw, hi = lo + bw;
		double x = fmax(lo, (double)a), y = fmin(hi, (double)b);

		if (k == BUCKETS - 1)
			y = (double)b; /* the last bucket takes the end exactly */
		if (y > x)
			d->busy[k] += y - x;
	}
}

/* Busy time as a union of spans, like the summary's: disjoint intervals
 * sorted by start; the oldest retires into the buckets when full. */
static void add_busy(struct rep *rp, struct tl_dev *d, uint64_t a, uint64_t b)
{
	unsigned w = 0;

	for (unsigned i = 0; i < d->npend; i++) {
		uint64_t s = d->pend[i][0], e = d->pend[i][1];

		if (e < a || s > b) {
			d->pend[w][0] = s;
			d->pend[w][1] = e;
			w++;
		} else {
			a = s < a ? s : a;
			b = e > b ? e : b;
		}
	}
	d->npend = w;
	unsigned pos = 0;
	while (pos < d->npend && d->pend[pos][0] < a)
		pos++;
	memmove(&d->pend[pos + 1], &d->pend[pos], (d->npend - pos) * sizeof(d->pend[0]));
	d->pend[pos][0] = a;
	d->pend[pos][1] = b;
	if (++d->npend > PENDING) {
		retire(rp, d, d->pend[0][0], d->pend[0][1]);
		memmove(&d->pend[0], &d->pend[1], (d->npend - 1) * sizeof(d->pend[0]));
		d->npend--;
	}
}

static const char *dev_name(const void *ctx, size_t i)
{
	return ((const struct rep *)ctx)->devs[i].name;
}

static struct tl_dev *dev_of(const struct rep *rp, const char *name)
{
	long i = nameidx__find(&rp->dev_index, name, dev_name, rp);

	return i >= 0 ? &rp->devs[i] : NULL;
}

static void span(void *ctx, const struct summary_span *sp)
{
	struct rep *rp = ctx;
	struct tl_dev *d;

	if (!sp->device || !sp->dur_ns || summary__is_wait(sp))
		return;
	if (!rp->bucket_ns) /* pass 1 has found the window by now */
		rp->bucket_ns = (double)(rp->r.window_end_ns - rp->r.window_start_ns) / BUCKETS;
	d = dev_of(rp, sp->device);
	if (!d) {
		struct tl_dev *nd = grow(rp->devs, rp->ndevs, sizeof(*nd), &rp->oom);

		if (!nd)
			return;
		rp->devs = nd;
		d = &rp->devs[rp->ndevs++];
		memset(d, 0, sizeof(*d));
		d->name = strdup(sp->device);
		if (!d->name || nameidx__add(&rp->dev_index, rp->ndevs - 1, dev_name, rp)) {
			free(d->name);
			rp->ndevs--;
			rp->oom = true;
			return;
		}
	}
	add_busy(rp, d, sp->start_ns, sp->start_ns + sp->dur_ns);
}

/* ---- HTML ---- */

static const char *fmt(char *out, size_t len, double v, struct dim d, bool pct)
{
	return unit__fmt_short(out, len, v, d, pct);
}

static const char css[] =
	":root{--fg:#1d2330;--muted:#5b6475;--line:#d9dee7;--bg:#fff;--panel:#f5f7fa;"
	"--k:#3567d6;--a:#c2620c;--c:#1f8a5b;--bad:#c0392b}"
	"*{box-sizing:border-box}"
	"body{margin:0;font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;"
	"color:var(--fg);background:var(--bg)}"
	"header{padding:18px 28px;background:#1d2330;color:#fff}"
	"header h1{margin:0 0 6px;font-size:20px}"
	"header code{color:#e8ecf3;word-break:break-all}"
	"header .meta{color:#b9c2d3;font-size:13px}"
	"main{padding:8px 28px 40px;max-width:1280px}"
	"section{margin-top:26px}"
	"h2{font-size:16px;margin:0 0 10px;border-bottom:1px solid var(--line);padding-bottom:4px}"
	".cards{display:flex;flex-wrap:wrap;gap:12px}"
	".card{background:var(--panel);border:1px solid var(--line);border-radius:6px;"
	"padding:10px 14px;min-width:150px}"
	".card dt{color:var(--muted);font-size:12px}"
	".card dd{margin:2px 0 0;font-size:20px;font-weight:600}"
	".card.bad{border-color:var(--bad)}.card.bad dd{color:var(--bad)}"
	"table{border-collapse:collapse;width:100%;font-size:13px}"
	"th,td{padding:3px 8px;border-bottom:1px solid var(--line);text-align:right;"
	"white-space:nowrap}"
	"th:first-child,td:first-child{text-align:left;white-space:normal;word-break:break-all}"
	"th{cursor:pointer;color:var(--muted);font-weight:600;user-select:none}"
	"th.sorted::after{content:' \\25BE'}"
	"svg{display:block;max-width:100%;height:auto}"
	"svg text{font:12px system-ui,sans-serif;fill:var(--fg)}"
	"svg .axis{fill:var(--muted)}"
	".device{margin:0 0 14px}"
	".device figcaption{font-weight:600;margin-bottom:2px}"
	".device figcaption span{font-weight:400;color:var(--muted)}"
	"#tip{position:fixed;pointer-events:none;background:#1d2330;color:#fff;padding:3px 7px;"
	"border-radius:4px;font-size:12px;display:none}"
	".none{color:var(--muted)}"
	".lostbad{color:var(--bad);font-weight:600}";

/* Sorting of tables by a click on a header, and a tooltip over the
 * timeline; the data stays in the page, nothing is fetched. */
static const char script[] =
	"(function(){'use strict';"
	"var tip=document.getElementById('tip');"
	"document.querySelectorAll('table.sortable').forEach(function(t){"
	"t.querySelectorAll('th').forEach(function(th,i){th.addEventListener('click',function(){"
	"var body=t.tBodies[0];var rows=Array.prototype.slice.call(body.rows);"
	"var key=th.getAttribute('data-key');"
	"rows.sort(function(a,b){if(!key){return a.cells[i].textContent.localeCompare("
	"b.cells[i].textContent);}return Number(b.getAttribute(key))-Number(a.getAttribute(key));});"
	"rows.forEach(function(r){body.appendChild(r);});"
	"t.querySelectorAll('th').forEach(function(h){h.classList.remove('sorted');});"
	"th.classList.add('sorted');});});});"
	"document.querySelectorAll('[data-tip]').forEach(function(el){"
	"el.addEventListener('mousemove',function(ev){tip.textContent=el.getAttribute('data-tip');"
	"tip.style.display='block';tip.style.left=(ev.clientX+12)+'px';"
	"tip.style.top=(ev.clientY+12)+'px';});"
	"el.addEventListener('mouseleave',function(){tip.style.display='none';});});"
	"var s=JSON.parse(document.getElementById('gputrace-summary').textContent);"
	"document.documentElement.setAttribute('data-kernels',String(s.totals.kernels.count));"
	"document.documentElement.setAttribute('data-ready','1');"
	"})();";

static void card(FILE *f, const char *id, const char *title, const char *value, double raw,
		 bool bad)
{
	fprintf(f, "<div class=\"card%s\"><dt>", bad ? " bad" : "");
	xml__text(f, title);
	fprintf(f, "</dt><dd id=\"%s\" data-value=\"%.17g\">", id, raw);
	xml__text(f, value);
	fputs("</dd></div>", f);
}

static void timeline(FILE *f, struct rep *rp, const struct sumdoc *d)
{
	const int W = 960, H = 46, X0 = 0;
	double window = sumdoc__num(d, "window.duration_ns");
	struct stable t;
	char a[64], b[64], c[64];

	fputs("<section id=\"timeline\"><h2>Device utilisation over time</h2>", f);
	if (sumdoc__table(WHO, d, ST_DEVICES, &t) || !t.n) {
		fputs("<p class=\"none\">No device work in this trace.</p></section>", f);
		stable__free(&t);
		return;
	}
	for (size_t i = 0; i < t.n; i++) {
		const struct srow *r = &t.rows[i];
		const struct tl_dev *dv = dev_of(rp, r->name);
		double util = 0, total = 0;

		jv_num(r->v, r->e, "utilization", &util);
		fputs("<figure class=\"device\" data-device=\"", f);
		xml__text(f, r->name);
		fprintf(f, "\" data-busy-ns=\"%.0f\" data-utilization=\"%.6f\" data-spans=\"%.0f\">"
			   "<figcaption>",
			r->busy_ns, util, r->count);
		xml__text(f, r->name);
		fprintf(f, " <span>busy %s of %s (%s), %.0f span%s</span></figcaption>",
			fmt(a, sizeof(a), r->busy_ns, DIM_TIME, false),
			fmt(b, sizeof(b), window, DIM_TIME, false),
			fmt(c, sizeof(c), util, DIM_COUNT, true), r->count, r->count == 1 ? "" : "s");
		fprintf(f, "<svg viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\">"
			   "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#eef1f6\"/>",
			W, H + 16, W, H + 16, W, H);
		for (int k = 0; dv && k < BUCKETS; k++) {
			double frac = rp->bucket_ns > 0 ? dv->busy[k] / rp->bucket_ns : 0;
			double h = fmin(1.0, frac) * H;
			double x = X0 + (double)k * W / BUCKETS;

			total += dv->busy[k];
			if (dv->busy[k] <= 0)
				continue;
			fprintf(f, "<rect class=\"bucket\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
				   "height=\"%.2f\" fill=\"#3567d6\" data-busy=\"%.3f\" data-tip=\"",
				x, H - h < 0 ? 0 : H - h, (double)W / BUCKETS, h < 0.8 ? 0.8 : h,
				dv->busy[k]);
			fprintf(f, "%s to %s: %.0f%% busy\"/>",
				fmt(a, sizeof(a), k * rp->bucket_ns, DIM_TIME, false),
				fmt(b, sizeof(b), (k + 1) * rp->bucket_ns, DIM_TIME, false),
				fmin(100.0, frac * 100.0));
		}
		for (int q = 0; q <= 4; q++) {
			fprintf(f, "<text class=\"axis\" x=\"%d\" y=\"%d\" text-anchor=\"%s\">%s</text>",
				q * W / 4, H + 13, q == 0 ? "start" : q == 4 ? "end" : "middle",
				fmt(a, sizeof(a), window * q / 4, DIM_TIME, false));
		}
		fprintf(f, "</svg><div hidden class=\"bucket-total\" data-busy-total=\"%.3f\"></div>"
			   "</figure>",
			total);
	}
	stable__free(&t);
	fputs("</section>", f);
}

/* A horizontal bar chart of the first rows by total time. */
static void bars(FILE *f, const struct stable *t, const char *color, const char *what)
{
	const int W = 960, ROW = 22, LABEL = 360, BARW = 440;
	size_t n = t->n < TOP_BARS ? t->n : TOP_BARS;
	double max = 0;
	char a[64];

	if (!n) {
		fprintf(f, "<p class=\"none\">No %s in this trace.</p>", what);
		return;
	}
	for (size_t i = 0; i < n; i++)
		max = fmax(max, t->rows[i].total_ns);
	fprintf(f, "<svg class=\"bars\" viewBox=\"0 0 %d %zu\" width=\"%d\" height=\"%zu\" role=\"img\">",
		W, n * ROW + 4, W, n * ROW + 4);
	for (size_t i = 0; i < n; i++) {
		const struct srow *r = &t->rows[i];
		double w = max > 0 ? r->total_ns / max * BARW : 0;
		size_t len = strlen(r->name);
		int y = (int)i * ROW;

		fputs("<g><title>", f);
		xml__text(f, r->name);
		fprintf(f, "</title><text x=\"%d\" y=\"%d\" text-anchor=\"end\">", LABEL - 8, y + 15);
		if (len > 46) {
			/* keep both ends: kernels differ at the end as often as at the start
			 * (cut between UTF-8 characters: half of one is not text) */
			char cut[64];
			size_t head = 20, tail = len - 24;

			while (head && ((unsigned char)r->name[head] & 0xc0) == 0x80)
				head--;
			while (((unsigned char)r->name[tail] & 0xc0) == 0x80)
				tail++;
			snprintf(cut, sizeof(cut), "%.*s", (int)head, r->name);
			xml__text(f, cut);
			fputs("\xe2\x80\xa6", f);
			xml__text(f, r->name + tail);
		} else {
			xml__text(f, r->name);
		}
		fprintf(f, "</text><rect x=\"%d\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" "
			   "data-total-ns=\"%.0f\"/>",
			LABEL, y + 3, w < 1 && r->total_ns > 0 ? 1 : w, ROW - 6, color, r->total_ns);
		fprintf(f, "<text x=\"%.2f\" y=\"%d\">%s \xc3\x97%.0f</text></g>", LABEL + w + 6, y + 15,
			fmt(a, sizeof(a), r->total_ns, DIM_TIME, false), r->count);
	}
	fputs("</svg>", f);
}

static void timed_table(FILE *f, const struct stable *t, const char *first, const char *cls)
{
	size_t n = t->n < TOP_ROWS ? t->n : TOP_ROWS;
	char a[64], b[64], c[64], d[64], e[64];

	if (!t->n)
		return;
	fprintf(f, "<table class=\"sortable %s\"><thead><tr><th>%s</th>"
		   "<th data-key=\"data-count\">count</th><th data-key=\"data-total-ns\">total</th>"
		   "<th data-key=\"data-mean-ns\">mean</th><th data-key=\"data-min-ns\">min</th>"
		   "<th data-key=\"data-max-ns\">max</th><th data-key=\"data-share\">share</th>"
		   "</tr></thead><tbody>",
		cls, first);
	for (size_t i = 0; i < n; i++) {
		const struct srow *r = &t->rows[i];
		double mean = 0, share = 0;

		jv_num(r->v, r->e, "mean_ns", &mean);
		jv_num(r->v, r->e, "share", &share);
		fputs("<tr class=\"row\" data-name=\"", f);
		xml__text(f, r->name);
		fprintf(f, "\" data-count=\"%.0f\" data-total-ns=\"%.0f\" data-mean-ns=\"%.0f\" "
			   "data-min-ns=\"%.0f\" data-max-ns=\"%.0f\" data-share=\"%.6f\"><td>",
			r->count, r->total_ns, mean, r->min_ns, r->max_ns, share);
		xml__text(f, r->name);
		fprintf(f, "</td><td class=\"count\">%.0f</td><td>%s</td><td>%s</td><td>%s</td>"
			   "<td>%s</td><td>%s</td></tr>",
			r->count, fmt(a, sizeof(a), r->total_ns, DIM_TIME, false),
			fmt(b, sizeof(b), mean, DIM_TIME, false),
			fmt(c, sizeof(c), r->min_ns, DIM_TIME, false),
			fmt(d, sizeof(d), r->max_ns, DIM_TIME, false),
			fmt(e, sizeof(e), share, DIM_COUNT, true));
	}
	fputs("</tbody></table>", f);
	if (t->n > n)
		fprintf(f, "<p class=\"none\">%zu more %s in the summary JSON (gputrace summary "
			   "--json).</p>",
			t->n - n, t->n - n == 1 ? "row" : "rows");
}

/* optional: no section at all when the table is empty (graphs: most traces have none) */
static void section_timed(FILE *f, const struct sumdoc *d, enum stab which, const char *id,
			  const char *title, const char *what, const char *color, bool optional)
{
	static const char *const first[] = { [ST_KERNELS] = "kernel", [ST_API] = "API call",
					     [ST_GRAPHS] = "graph" };
	struct stable t;
	const char *v, *e;

	if (optional && !sumdoc__get(d, stab__key[which], &v, &e))
		return;
	if (sumdoc__table(WHO, d, which, &t)) {
		if (!optional)
			fprintf(f, "<section id=\"%s\"><h2>%s</h2></section>", id, title);
		stable__free(&t);
		return;
	}
	if (optional && !t.n) {
		stable__free(&t);
		return;
	}
	fprintf(f, "<section id=\"%s\"><h2>%s</h2>", id, title);
	bars(f, &t, color, what);
	timed_table(f, &t, first[which], id);
	stable__free(&t);
	fputs("</section>", f);
}

static void section_copies(FILE *f, const struct sumdoc *d)
{
	struct stable t;
	char a[64], b[64], c[64];
	double max = 0;
	const int W = 960, ROW = 22, LABEL = 120, BARW = 600;

	fputs("<section id=\"copies\"><h2>Copies and fills by kind</h2>", f);
	if (sumdoc__table(WHO, d, ST_COPIES, &t) || !t.n) {
		fputs("<p class=\"none\">No copies or fills in this trace.</p></section>", f);
		stable__free(&t);
		return;
	}
	for (size_t i = 0; i < t.n; i++)
		max = fmax(max, t.rows[i].bytes);
	fprintf(f, "<svg class=\"bars\" viewBox=\"0 0 %d %zu\" width=\"%d\" height=\"%zu\" role=\"img\">",
		W, t.n * ROW + 4, W, t.n * ROW + 4);
	for (size_t i = 0; i < t.n; i++) {
		const struct srow *r = &t.rows[i];
		double w = max > 0 ? r->bytes / max * BARW : 0;
		int y = (int)i * ROW;

		fprintf(f, "<g><text x=\"%d\" y=\"%d\" text-anchor=\"end\">", LABEL - 8, y + 15);
		xml__text(f, r->name);
		fprintf(f, "</text><rect x=\"%d\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"#1f8a5b\"/>"
			   "<text x=\"%.2f\" y=\"%d\">%s in %.0f, %s</text></g>",
			LABEL, y + 3, w < 1 && r->bytes > 0 ? 1 : w, ROW - 6, LABEL + w + 6, y + 15,
			fmt(a, sizeof(a), r->bytes, DIM_BYTES, false), r->count,
			fmt(b, sizeof(b), r->total_ns, DIM_TIME, false));
	}
	fputs("</svg><table class=\"sortable copies\"><thead><tr><th>kind</th>"
	      "<th data-key=\"data-count\">count</th><th data-key=\"data-bytes\">bytes</th>"
	      "<th data-key=\"data-total-ns\">total</th><th data-key=\"data-bandwidth\">bandwidth</th>"
	      "</tr></thead><tbody>",
	      f);
	for (size_t i = 0; i < t.n; i++) {
		const struct srow *r = &t.rows[i];
		double bw = 0;

		jv_num(r->v, r->e, "bandwidth_bytes_per_s", &bw);
		fputs("<tr class=\"row\" data-kind=\"", f);
		xml__text(f, r->name);
		fprintf(f, "\" data-count=\"%.0f\" data-bytes=\"%.0f\" data-total-ns=\"%.0f\" "
			   "data-bandwidth=\"%.6g\"><td>",
			r->count, r->bytes, r->total_ns, bw);
		xml__text(f, r->name);
		fprintf(f, "</td><td class=\"count\">%.0f</td><td>%s</td><td>%s</td><td>%s</td></tr>",
			r->count, fmt(a, sizeof(a), r->bytes, DIM_BYTES, false),
			fmt(b, sizeof(b), r->total_ns, DIM_TIME, false),
			fmt(c, sizeof(c), bw * 1e-9, DIM_RATE, false));
	}
	fputs("</tbody></table></section>", f);
	stable__free(&t);
}

/* The program's own names for its phases, with the device time of the
 * work launched inside them; only for programs that annotate. */
static void section_ranges(FILE *f, const struct sumdoc *d)
{
	const char *v, *e;
	struct stable t;
	char a[64], b[64];

	if (!sumdoc__get(d, stab__key[ST_RANGES], &v, &e) || sumdoc__table(WHO, d, ST_RANGES, &t))
		return;
	if (!t.n) {
		stable__free(&t);
		return;
	}
	fputs("<section id=\"ranges\"><h2>User ranges (NVTX, ITT) and the device work inside "
	      "them</h2><table class=\"sortable ranges\"><thead><tr><th>range</th>"
	      "<th data-key=\"data-count\">count</th><th data-key=\"data-host-ns\">host</th>"
	      "<th data-key=\"data-device-ns\">device</th>"
	      "<th data-key=\"data-kernels\">kernels</th></tr></thead><tbody>",
	      f);
	for (size_t i = 0; i < t.n; i++) {
		const struct srow *r = &t.rows[i];
		double host = 0, device = 0, kernels = 0;

		jv_num(r->v, r->e, "host_ns", &host);
		jv_num(r->v, r->e, "device_ns", &device);
		jv_num(r->v, r->e, "kernels", &kernels);
		fputs("<tr class=\"row\" data-name=\"", f);
		xml__text(f, r->name);
		fprintf(f, "\" data-count=\"%.0f\" data-host-ns=\"%.0f\" data-device-ns=\"%.0f\" "
			   "data-kernels=\"%.0f\"><td>",
			r->count, host, device, kernels);
		xml__text(f, r->name);
		fprintf(f, "</td><td class=\"count\">%.0f</td><td>%s</td><td>%s</td>"
			   "<td class=\"count\">%.0f</td></tr>",
			r->count, fmt(a, sizeof(a), host, DIM_TIME, false),
			fmt(b, sizeof(b), device, DIM_TIME, false), kernels);
	}
	fputs("</tbody></table></section>", f);
	stable__free(&t);
}

static void section_lost(FILE *f, const struct sumdoc *d)
{
	const char *v, *e;
	struct jv_iter it;
	struct jv_member m;
	struct buf key = { 0 };
	double total = sumdoc__num(d, "lost.total");

	fprintf(f, "<section id=\"lost\"><h2>Lost events</h2><p id=\"lost-total\" "
		   "data-value=\"%.0f\" class=\"%s\">",
		total, total ? "lostbad" : "");
	if (!total)
		fputs("No event was lost: the trace holds everything gputrace recorded.</p>", f);
	else
		fprintf(f, "%.0f %s lost (counted, not in the trace). A bigger overflow "
			   "(--overflow-mb) or buffer (--buffer-kb) keeps ring_full losses away.</p>",
			total, total == 1 ? "event was" : "events were");
	if (total && sumdoc__get(d, "lost.by_reason", &v, &e) && jv_iter_init(&it, v, e)) {
		fputs("<table class=\"lost\"><thead><tr><th>reason</th><th>events</th></tr></thead>"
		      "<tbody>",
		      f);
		while (jv_iter_next(&it, &m)) {
			jv_str(m.key - 1, m.key + m.klen + 1, &key);
			fputs("<tr class=\"row\" data-reason=\"", f);
			xml__text(f, key.p);
			fprintf(f, "\" data-count=\"%.*s\"><td>", (int)(m.e - m.v), m.v);
			xml__text(f, key.p);
			fprintf(f, "</td><td>%.*s</td></tr>", (int)(m.e - m.v), m.v);
		}
		fputs("</tbody></table>", f);
	}
	buf__free(&key);
	fputs("</section>", f);
}

/* The calls that failed, by call and error (the summary's errors.calls): none, one line. */
static void section_errors(FILE *f, const struct sumdoc *d, double total)
{
	struct serror_iter it = { 0 };
	bool table = false;

	fprintf(f, "<section id=\"errors\"><h2>API errors</h2><p id=\"errors-total\" "
		   "data-value=\"%.0f\" class=\"%s\">",
		total, total ? "lostbad" : "");
	if (!total)
		fputs("No call returned an error (a poll's \"not ready\" is not one).</p>", f);
	else
		fprintf(f, "%.0f %s returned an error, which the program may have ignored.</p>",
			total, total == 1 ? "call" : "calls");
	while (total && sumdoc__error_next(d, &it)) {
		if (!table)
			fputs("<table class=\"errors\"><thead><tr><th>call</th><th>error</th>"
			      "<th>count</th></tr></thead><tbody>",
			      f);
		fputs("<tr class=\"row\" data-name=\"", f);
		xml__text(f, it.name.p);
		fputs("\" data-error=\"", f);
		xml__text(f, it.error.p);
		fprintf(f, "\" data-count=\"%" PRIu64 "\"><td>", it.count);
		xml__text(f, it.name.p);
		fputs("</td><td>", f);
		xml__text(f, it.error.p);
		fprintf(f, "</td><td>%" PRIu64 "</td></tr>", it.count);
		table = true;
	}
	fputs(table ? "</tbody></table></section>" : "</section>", f);
}

static bool is_host(const struct rep *rp, int64_t pid)
{
	return pidmap__has(&rp->r.meta.host_set, pid);
}

static const struct proc *first_host(const struct rep *rp)
{
	for (size_t i = 0; i < rp->r.meta.nhost_pids; i++) {
		long j = pidmap__slot(&rp->by_pid, rp->r.meta.host_pids[i]);

		if (j >= 0)
			return &rp->procs[rp->by_pid.vals[j]];
	}
	return NULL;
}

static void section_processes(FILE *f, const struct rep *rp)
{
	size_t n = 0;

	fputs("<section id=\"processes\"><h2>Processes</h2><table class=\"procs\"><thead><tr>"
	      "<th>process</th><th>pid</th><th style=\"text-align:left\">command line</th></tr>"
	      "</thead><tbody>",
	      f);
	for (size_t i = 0; i < rp->nprocs; i++) {
		const struct proc *p = &rp->procs[i];

		if (!is_host(rp, p->pid))
			continue;
		n++;
		fputs("<tr class=\"row\"><td>", f);
		xml__text(f, p->name ? p->name : "?");
		fprintf(f, "</td><td>%" PRId64 "</td><td style=\"text-align:left;white-space:normal\">"
			   "<code>",
			p->pid);
		xml__text(f, p->labels ? p->labels : "");
		fputs("</code></td></tr>", f);
	}
	fputs("</tbody></table>", f);
	if (!n)
		fputs("<p class=\"none\">The trace names no traced process.</p>", f);
	fputs("</section>", f);
}

/* The summary JSON inside a <script> element: "</" must not appear. */
static void embed_json(FILE *f, const struct buf *j)
{
	fputs("<script type=\"application/json\" id=\"gputrace-summary\">", f);
	for (size_t i = 0; i < j->len; i++) {
		if (j->p[i] == '<')
			fputs("\\u003c", f);
		else
			fputc(j->p[i], f);
	}
	fputs("</script>", f);
}

static int write_html(const char *out, struct rep *rp, const struct sumdoc *d, const char *trace)
{
	FILE *f = summary__fopen_out(out);
	const struct proc *host = first_host(rp);
	const struct trace_meta *mt = &rp->r.meta;
	char a[64], b[64], when[64] = "";
	double lost = sumdoc__num(d, "lost.total"), errors = sumdoc__num(d, "errors.total");
	double unmatched = sumdoc__num(d, "flows.unmatched");

	if (!f)
		return -errno;
	if (mt->has_anchor && rp->r.window_spans) {
		int64_t wall = mt->realtime_ns + ((int64_t)rp->r.window_start_ns - mt->clock_ns);
		time_t sec = (time_t)(wall / 1000000000);
		struct tm tm;

		gmtime_r(&sec, &tm);
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	}
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
	      "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
	      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
	      "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
	      "<title>gputrace report: ",
	      f);
	xml__text(f, host && host->name ? host->name : mt->exe ? mt->exe : trace);
	fprintf(f, "</title><style>%s</style></head><body data-report-version=\"1\">"
		   "<header><h1>gputrace report: ",
		css);
	xml__text(f, host && host->name ? host->name : mt->exe ? mt->exe : trace);
	fputs("</h1><div id=\"command\"><code>", f);
	xml__text(f, host && host->labels ? host->labels : host && host->name ? host->name : "");
	fputs("</code></div><div class=\"meta\">host <span id=\"host\">", f);
	xml__text(f, mt->hostname ? mt->hostname : "(several or unknown)");
	fputs("</span> &middot; trace <span id=\"trace\">", f);
	xml__text(f, trace);
	fprintf(f, "</span> (%s)", fmt(a, sizeof(a), (double)rp->r.bytes, DIM_BYTES, false));
	if (when[0])
		fprintf(f, " &middot; started %s", when);
	fprintf(f, " &middot; %s of activity &middot; gputrace %s</div></header><main>",
		fmt(b, sizeof(b), sumdoc__num(d, "window.duration_ns"), DIM_TIME, false), GPUTRACE_VERSION);

	fputs("<section id=\"overview\"><h2>Overview</h2><dl class=\"cards\">", f);
	snprintf(a, sizeof(a), "%.0f", sumdoc__num(d, "totals.kernels.count"));
	card(f, "n-kernels", "kernel launches", a, sumdoc__num(d, "totals.kernels.count"), false);
	snprintf(a, sizeof(a), "%.0f", sumdoc__num(d, "totals.kernels.distinct"));
	card(f, "n-kernel-names", "distinct kernels", a, sumdoc__num(d, "totals.kernels.distinct"), false);
	card(f, "kernel-time", "kernel time",
	     fmt(a, sizeof(a), sumdoc__num(d, "totals.kernels.total_ns"), DIM_TIME, false),
	     sumdoc__num(d, "totals.kernels.total_ns"), false);
	snprintf(a, sizeof(a), "%.0f", sumdoc__num(d, "totals.api_calls.count"));
	card(f, "n-api", "API calls", a, sumdoc__num(d, "totals.api_calls.count"), false);
	snprintf(a, sizeof(a), "%.0f", sumdoc__num(d, "totals.copies.count"));
	card(f, "n-copies", "copies and fills", a, sumdoc__num(d, "totals.copies.count"), false);
	card(f, "copy-bytes", "bytes moved",
	     fmt(a, sizeof(a), sumdoc__num(d, "totals.copies.bytes"), DIM_BYTES, false),
	     sumdoc__num(d, "totals.copies.bytes"), false);
	snprintf(a, sizeof(a), "%.0f", errors);
	card(f, "n-errors", "API errors", a, errors, errors > 0);
	snprintf(a, sizeof(a), "%.0f", lost);
	card(f, "n-lost", "lost events", a, lost, lost > 0);
	fputs("</dl>", f);
	if (sumdoc__num(d, "incomplete") > 0)
		fprintf(f, "<p class=\"lostbad\">%.0f of the traces summarized %s not closed (the "
			   "process was killed, or still ran, or the file was cut short, or a write "
			   "failed): the last interval may be missing.</p>",
			sumdoc__num(d, "incomplete"), sumdoc__num(d, "incomplete") == 1 ? "was" : "were");
	if (unmatched > 0)
		fprintf(f, "<p id=\"flows-unmatched\" data-value=\"%.0f\" class=\"lostbad\">%.0f "
			   "device %s no arrow from the call that launched %s: that call is not in "
			   "the trace (the trailer's flows_unmatched).</p>",
			unmatched, unmatched, unmatched == 1 ? "span has" : "spans have",
			unmatched == 1 ? "it" : "them");
	if (sumdoc__num(d, "partial"))
		fputs("<p class=\"lostbad\">gputrace ran out of memory while summarizing: the "
		      "numbers are partial.</p>",
		      f);
	fputs("</section>", f);

	timeline(f, rp, d);
	section_timed(f, d, ST_KERNELS, "kernels", "Top kernels by device time", "kernels",
		      "#3567d6", false);
	/* a graph launch traced whole (--graph-trace, or no CUPTI) is one span, no kernel */
	section_timed(f, d, ST_GRAPHS, "graphs", "CUDA graph launches by device time",
		      "graph launches", "#2e9a6b", true);
	section_timed(f, d, ST_API, "apis", "Top API calls by host time", "API calls", "#c2620c",
		      false);
	section_copies(f, d);
	section_ranges(f, d);
	section_errors(f, d, errors);
	section_lost(f, d);
	section_processes(f, rp);
	fputs("</main><div id=\"tip\"></div>", f);
	embed_json(f, &d->json);
	fprintf(f, "<script>%s</script></body></html>\n", script);
	return out__close(f);
}

static void usage_report(FILE *f)
{
	fprintf(f, "usage: gputrace report [-o OUT] TRACE\n"
		   "Writes one self-contained HTML page (no network, no external file): device\n"
		   "utilisation over time, top kernels and API calls, copies, lost events, the\n"
		   "command line and host. OUT defaults to TRACE's name with .html ('-': stdout).\n");
}

int cmd_report(int argc, char **argv)
{
	struct rep rp = { 0 };
	struct sumdoc d = { 0 };
	const char *path = NULL, *out = NULL, *v;
	struct buf def = { 0 };
	bool have_doc = false, bad = false;
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
			usage_report(stdout);
			return 0;
		} else if ((v = arg__file(argc, argv, &i, "-o", WHO, &bad)) ||
			   (v = arg__file(argc, argv, &i, "--output", WHO, &bad))) {
			if (bad)
				goto usage;
			out = v;
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, WHO ": unknown option '%s'\n", a);
			goto usage;
		} else if (!arg__one_trace(WHO, a, &path)) {
			goto usage;
		}
	}
	if (!path) {
		fprintf(stderr, WHO ": no trace file given\n");
		goto usage;
	}
	if (!out) {
		size_t n = strlen(path);

		if (n > 8 && !strcmp(path + n - 8, ".json.gz"))
			n -= 8;
		else if (n > 5 && !strcmp(path + n - 5, ".json"))
			n -= 5;
		else if (n > 3 && !strcmp(path + n - 3, ".gz"))
			n -= 3; /* a trace named t.gz (run -o t.gz writes one) */
		buf__add(&def, path, n);
		buf__adds(&def, ".html");
		out = def.p;
	}

	/* -o naming the trace would overwrite it before it is read whole */
	if (out__is_input(WHO, "-o", out, (char *const[]){ (char *)path }, 1)) {
		ret = 2;
		goto out;
	}

	struct summarize_hooks hooks = {
		.ctx = &rp, .event1 = meta_event, .span = span, .want_window = true,
	};
	/* the window is known after pass 1; span() buckets in pass 2 */
	/* an input that is not a readable trace: 2, as check and diff say it */
	if (summarize__trace(WHO, path, &hooks, &rp.r)) {
		ret = 2;
		goto out;
	}
	if (!rp.r.s) {
		fprintf(stderr, WHO ": %s: nothing to report\n", path);
		goto out;
	}
	for (size_t k = 0; k < rp.ndevs; k++) {
		struct tl_dev *dv = &rp.devs[k];

		for (unsigned i = 0; i < dv->npend; i++)
			retire(&rp, dv, dv->pend[i][0], dv->pend[i][1]);
		dv->npend = 0;
	}
	if (sumdoc__from_summarized(WHO, path, &rp.r, &d))
		goto out;
	have_doc = true;
	if (rp.oom)
		fprintf(stderr, WHO ": out of memory: the timeline or process list is partial\n");
	int err = write_html(out, &rp, &d, path);
	if (err) {
		/* -o -: stdout, as the other commands name it */
		fprintf(stderr, WHO ": cannot write %s: %s\n", strcmp(out, "-") ? out : "to stdout",
			strerror(-err));
		goto out;
	}
	if (strcmp(out, "-"))
		fprintf(stderr, WHO ": wrote %s\n", out);
	ret = 0;
out:
	if (have_doc)
		sumdoc__free(&d);
	for (size_t k = 0; k < rp.ndevs; k++)
		free(rp.devs[k].name);
	free(rp.devs);
	nameidx__free(&rp.dev_index);
	for (size_t k = 0; k < rp.nprocs; k++) {
		free(rp.procs[k].name);
		free(rp.procs[k].labels);
	}
	free(rp.procs);
	pidmap__free(&rp.by_pid);
	buf__free(&rp.tmp);
	buf__free(&rp.tmp2);
	buf__free(&def);
	summarized__free(&rp.r);
	return ret;
usage:
	usage_report(stderr);
	buf__free(&def);
	return 2;
}
