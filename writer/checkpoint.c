/* SPDX-License-Identifier: MIT */
/*
 * The trace file and its checkpoints. The file is opened when there is
 * something to write; every checkpoint appends what the cycle formatted
 * and rewrites the trailer (the "gputrace" object: process, clock anchor,
 * counts, lost events, devices, threads) behind it, so the file on disk is
 * complete JSON after each one, whatever cuts the process short. The last
 * one closes it and prints the summary.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inject/capture.h"
#include "inject/clock.h"
#include "inject/config.h"
#include "inject/registry.h"
#include "inject/ring.h"
#include "inject/shim.h"
#include "inject/stacks.h"
#include "inject/watchdog.h"
#include "internal.h"
#include "writer.h"
#include "summary.h"

#ifndef GPUTRACE_VERSION
#define GPUTRACE_VERSION "0.0.0"
#endif

#define TRAILER_THREADS  16   /* threads listed in a checkpoint's footer */

/* The file's name for messages: the one asked for (a file still being
 * made has none of its own yet), else the one it has. */
static const char *out_name(void)
{
	return W.out.want[0] ? W.out.want : W.out.path[0] ? W.out.path : W.path;
}

/* An output template expanded, a relative one in the folder the process started in:
 * the file is opened with the first cycle, maybe after the program changed folder. */
static int expand_path(const char *tmpl, char *out, size_t len)
{
	const char *cwd = gt_start_cwd();
	size_t n = tmpl[0] == '/' ? 0 : strlen(cwd);

	if (n + 2 > len)
		return -ENAMETOOLONG;
	memcpy(out, cwd, n);
	if (n && out[n - 1] != '/')
		out[n++] = '/';
	return config__expand_output(tmpl, out + n, len - n, gt_st.pid, gt_exe(),
				     gt_st.start_realtime_ns);
}

int writer__trace_name(char *buf, size_t len)
{
	int ret = -ENOENT;

	if (writer__lock_rings(500))
		return -ETIMEDOUT;
	/* the name it was given: trace.1.json when trace.json was taken */
	if (W.opened && snprintf(buf, len, "%s", !W.out.unpublished && W.out.path[0]
						    ? W.out.path : out_name()) < (int)len)
		ret = 0;
	/* between capture windows there is no file: the last window's name
	 * (before the first, the name it will have) */
	else if (!W.opened && !W.failed &&
		 (W.path[0] ? snprintf(buf, len, "%s", W.path) < (int)len
			    : !expand_path(gt_cfg.output, buf, len)))
		ret = 0;
	writer__unlock_rings();
	return ret;
}

static void output_failed(int err)
{
	const char *name = out_name();
	size_t n = strlen(name);

	/* a file we created that never held a checkpoint is no trace: leave none */
	if (W.opened && W.out.seekable && !W.out.size && W.out.path[0])
		unlink(W.out.path);
	W.failed = true;
	/* a very long name is shortened in the middle: the reason stays on the line */
	pr_err("cannot write the trace to '%.*s%s%s': %s; tracing stops, the program goes on",
	       n > 400 ? 300 : (int)n, name, n > 400 ? "..." : "", n > 400 ? name + n - 80 : "",
	       strerror(-err));
	/* a trace that holds checkpoints stops at the last, and its footer says
	 * why where the file takes that (else it reads as a trace not closed, as
	 * a killed process's); gputrace run says it too */
	if (W.opened && W.out.size) {
		char why[160];

		snprintf(why, sizeof(why), SUMMARY_END_WRITE_FAILED ": %s", strerror(-err));
		(void)out__stopped(&W.out, why);
		if (gt_under_run())
			gt_run_note('x', strerror(-err));
	}
	/* its recording is over here, not at an exit cycle that tracing off may
	 * never run: gputrace run counts a process that listed no trace as one
	 * that could not write it (it said why above), not as one killed */
	checkpoint__list('=', NULL);
	/* the hang watchdog watches on (a full disk is no reason to miss a hang;
	 * its report goes to its own file, its line to stderr) */
	if (gt_watchdog_on && watchdog__started())
		atomic_store(&gt_watchdog_alone, true);
	/* last: an exit stops waiting for the drain once tracing is off, and
	 * would end the process in the middle of the lines above */
	gt_phase_set(GT_PHASE_OFF);
}

static void build_trailer(bool final);

static bool flight_mode(void)
{
	return gt_cfg.flight_bytes != 0;
}

/*
 * The head: Kineto's "distributedInfo" first, written as Kineto writes it
 * (a space after each colon: HTA finds a trace's rank with the pattern
 * "rank":\s+(\d+) on the first line that has one).
 */
static void build_head(struct jbuf *b)
{
	W.rank = config__rank();
	if (W.rank.var && !W.rank.source)
		pr_warn("%s='%.40s' is not a rank (a whole number >= 0): the trace carries none",
			W.rank.var, W.rank.text);
	jbuf__ch(b, '{');
	if (W.rank.source) {
		jbuf__lit(b, "\"distributedInfo\": {\"backend\": ");
		json__str(b, W.rank.source, strlen(W.rank.source));
		jbuf__lit(b, ", \"rank\": ");
		json__u64(b, (uint64_t)W.rank.rank);
		if (W.rank.world_size >= 0) {
			jbuf__lit(b, ", \"world_size\": ");
			json__u64(b, (uint64_t)W.rank.world_size);
		}
		jbuf__lit(b, "},\n");
	}
	jbuf__lit(b, "\"traceEvents\":[\n");
}

/* The command line as a shell would read it back (words with blanks or
 * quotes in single quotes), cut at `cap` with "...": the process_labels of
 * the host process, which Perfetto shows and `gputrace report` prints.
 * Read when the file opens, so an exec'd image names its own. */
static size_t command_line(char *out, size_t cap)
{
	char raw[4096];
	ssize_t n = 0, r;
	size_t len = 0;
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	while (n < (ssize_t)sizeof(raw) && (r = read(fd, raw + n, sizeof(raw) - (size_t)n)) > 0)
		n += r;
	close(fd);
	for (ssize_t i = 0; i < n && len + 8 < cap;) {
		const char *w = raw + i;
		size_t wl = strnlen(w, (size_t)(n - i));
		bool quote = !wl || strpbrk(w, " \t\n'\"$`\\*?;&|<>()") != NULL;

		if (len)
			out[len++] = ' ';
		if (quote)
			out[len++] = '\'';
		for (size_t k = 0; k < wl && len + 8 < cap; k++) {
			if (w[k] == '\'') {
				memcpy(out + len, "'\\''", 4);
				len += 4;
			} else {
				out[len++] = w[k];
			}
		}
		if (quote)
			out[len++] = '\'';
		i += (ssize_t)wl + 1;
		if (len + 8 >= cap && i < n) {
			memcpy(out + len, "...", 3);
			len += 3;
		}
	}
	return len;
}

/* This process as the summary names it: pid, program, host (into host),
 * rank (into rank; NULL when not under MPI/torchrun/Slurm). */
static struct summary_process this_process(char *host, size_t len, char *rank, size_t rlen)
{
	struct gt_rank r = config__rank();
	struct summary_process p = { .pid = gt_st.pid, .exe = gt_exe(), .host = host };

	if (r.source && snprintf(rank, rlen, "%ld", r.rank) < (int)rlen)
		p.rank = rank;
	if (gethostname(host, len - 1))
		strcpy(host, "localhost");
	host[len - 1] = 0;
	return p;
}

/* Where a file name's extension begins: its ".json", else a ".gz" it ends
 * with (trace.gz: the window's file must end in .gz too, or it is written
 * plain; it was, as trace.gz-w2, until 2026-12-07), else its end. */
static size_t extension_at(const char *path)
{
	const char *slash = strrchr(path, '/');
	const char *dot = strstr(slash ? slash : path, ".json");
	size_t len = strlen(path);

	if (dot)
		return (size_t)(dot - path);
	return len >= 3 && !strcmp(path + len - 3, ".gz") ? len - 3 : len;
}

/* The file of capture window n > 1: "-w<n>" before the extension
 * (trace.json -> trace-w2.json, trace.json.gz -> trace-w2.json.gz,
 * trace.gz -> trace-w2.gz). */
static void window_path(char *path, size_t cap, uint32_t n)
{
	char tail[PATH_MAX];
	size_t at = extension_at(path);

	snprintf(tail, sizeof(tail), "%s", path + at);
	snprintf(path + at, cap - at, "-w%u%s", n, tail);
}

/* Where "-w<n>" begins in a window's file name (window_path's), or -1. */
static ssize_t window_split(const char *path, uint32_t n)
{
	char tag[16];
	size_t at = extension_at(path);
	size_t tl = (size_t)snprintf(tag, sizeof(tag), "-w%u", n);

	return at >= tl && !memcmp(path + at - tl, tag, tl) ? (ssize_t)(at - tl) : -1;
}

void checkpoint__forget_file(void)
{
	/* the ".N" the process's first file took (an earlier trace had its
	 * name): its windows' files take it too */
	if (!W.name_suffix)
		W.name_suffix = W.out.suffix;
	W.opened = false;
	W.listed = false; /* a gputrace run is told of each window's file */
	W.any_event = false;
	W.recorded = 0;
	W.files++;
	/* events formatted before the next file opens are placed when it does */
	W.paged = false;
	W.buf_at = 0;
	memset(&W.out, 0, sizeof(W.out));
	W.out.fd = -1;
	/* the next file names its rows and threads again, links only its own launches */
	W.devices_named = W.tracks_named = 0;
	if (W.tids)
		memset(W.tids, 0, (W.tids_mask + 1) * sizeof(*W.tids));
	W.ntids = 0;
	W.tid_named_last = 0;
	ranges__lanes_forget();
	/* threads[] lists the file's threads: those gone in an earlier one are
	 * not; their losses and waits stay, counted since the process started */
	W.ndead = 0;
	W.dead_threads = 0;
	/* threads[].events counts the file's events, as events_recorded does */
	for (struct ring *r = atomic_load(&gt_st.rings); r; r = r->next)
		r->recorded = 0;
	flows__forget();
	/* the next file's summary is made when it opens, as the first's was */
	memset(W.sum_batch, 0, sizeof(W.sum_batch));
	summary__free(W.sum);
	W.sum = NULL;
}

/* The default trace name in the start folder (a .gz one for a .gz template),
 * where the configured one could not be created: 0, or -EEXIST when that is
 * the name that failed. */
static int fallback_path(char *path, size_t len, const char *failed)
{
	size_t n = strlen(gt_cfg.output);
	bool gz = n >= 3 && !strcmp(gt_cfg.output + n - 3, ".gz");

	if (expand_path(gz ? "gputrace-%e-%p.json.gz" : "gputrace-%e-%p.json", path, len))
		return -ENAMETOOLONG;
	if (W.files)
		window_path(path, len, W.files + 1);
	return strcmp(path, failed) ? 0 : -EEXIST;
}

/* Opens W.path into @o; where the file cannot have that path (its folder
 * missing or closed to us), what was recorded goes to the default name
 * instead, said once (*said set, where asked): 0 or the last try's negative
 * errno. W.path names the file opened, or is left as asked. */
static int open_or_fallback(struct out *o, const char *what, bool *said)
{
	char failed[sizeof(W.path)];
	int err = out__open(o, W.path), first = err;

	if (!err)
		return 0;
	memcpy(failed, W.path, sizeof(failed));
	if (fallback_path(W.path, sizeof(W.path), failed))
		return first;
	err = out__open(o, W.path);
	pr_err("cannot write %s to '%.300s': %s; %s %s", what, failed, strerror(-first),
	       err ? "nor to" : "writing it to", W.path);
	if (said)
		*said = true;
	if (err)
		memcpy(W.path, failed, sizeof(failed));
	return err;
}

/*
 * Windows the trigger's handler opened and ended while no drain thread ran
 * (a paused process that made no GPU call in them: no file to end, nothing
 * counted here) are numbered as every window is: this file is that of the
 * window open now (gt_cap.windows; the next opens only once its file is
 * ended). Their number was given to the next window's file (trace.json and
 * "window": 1 for a process's second window), where a window that held no
 * call under a drain thread leaves its number unused (trace-w3.json after
 * trace.json); and, as for that one, GPUTRACE_LOG=info says so.
 */
static void number_unwritten_windows(void)
{
	uint32_t now = atomic_load(&gt_cap.windows);

	if (!gt_cap.controlled || now <= W.files + 1)
		return;
	if (now - 1 == W.files + 1)
		pr_info("capture window %u held no GPU call (it ended before this process "
			"made one): no file written", now - 1);
	else
		pr_info("capture windows %u to %u held no GPU call (they ended before this "
			"process made one): no file written", W.files + 1, now - 1);
	W.files = now - 1;
}

bool checkpoint__open(void)
{
	char *path = W.path;
	struct stat st;
	int err;

	if (W.opened || W.failed)
		return W.opened;
	err = expand_path(gt_cfg.output, path, sizeof(W.path));
	if (err) {
		/* checked at start-up, but the real program name or pid can make
		 * it too long; the default is always valid */
		config__expand_output("gputrace-%e-%p.json", path, sizeof(W.path), gt_st.pid,
				      gt_exe(), gt_st.start_realtime_ns);
		pr_err("GPUTRACE_OUTPUT='%.100s' expands to a path longer than %d bytes; "
		       "writing %s instead", gt_cfg.output, PATH_MAX - 1, path);
	} else if (!stat(path, &st) && S_ISDIR(st.st_mode)) {
		/* a folder: the trace goes in it, under the default name */
		size_t n = strlen(path);

		if (n && path[n - 1] != '/' && n + 1 < sizeof(W.path))
			path[n++] = '/';
		if (config__expand_output("gputrace-%e-%p.json", path + n, sizeof(W.path) - n,
					  gt_st.pid, gt_exe(), gt_st.start_realtime_ns))
			config__expand_output("gputrace-%p.json", path, sizeof(W.path), gt_st.pid,
					      gt_exe(), gt_st.start_realtime_ns);
		pr_warn("GPUTRACE_OUTPUT='%.100s' is a folder, not a file name or template (such "
			"as trace-%%p.json): writing %s", gt_cfg.output, path);
	}
	number_unwritten_windows();
	if (W.files)
		window_path(path, sizeof(W.path), W.files + 1);
	/* a flight recorder keeps its events in memory: files come with dumps */
	atomic_store(&gt_opening_file, W.path);
	err = flight_mode() ? 0 : open_or_fallback(&W.out, "the trace", NULL);
	atomic_store(&gt_opening_file, NULL);
	if (err) {
		output_failed(err);
		return false;
	}
	if (W.files && W.out.want[0]) {
		/* named after the process's first file, as trace.1-w2.json after
		 * trace.1.json: not trace-w2.json, which read as a window of the
		 * trace.json an exec'd image before us (our pid) or an earlier
		 * run wrote */
		ssize_t split = window_split(W.out.want, W.files + 1);

		if (split >= 0) {
			W.out.capture_window = W.files + 1;
			W.out.split = (size_t)split;
			W.out.suffix = W.name_suffix;
		}
	}
	if (flight_mode())
		W.out.fd = -1;
	W.opened = true;
	/* the summary is built as events are written, only if someone reads
	 * it; under gputrace run the run makes one of all its processes */
	if (!gt_under_run() && (gt_cfg.summary || gt_cfg.summary_json[0])) {
		char host[256], rank[32];
		struct summary_process me = this_process(host, sizeof(host), rank, sizeof(rank));

		W.sum = summary__new();
		W.sum_process = summary__process(W.sum, &me); /* its one row */
	}
	struct jbuf head = { 0 }, pending = W.buf;
	size_t n;

	W.buf = (struct jbuf){ 0 };
	W.any_event = false;
	W.ev_start = 0;
	build_head(&head);
	build_trailer(false);
	/* a head, a trailer or events that found no memory have holes: not JSON */
	if (head.oom || W.trailer.oom || pending.oom)
		err = -ENOMEM;
	else
		err = flight_mode() ? 0 : out__begin(&W.out, head.p, head.len, W.trailer.p,
						     W.trailer.len);
	jbuf__free(&head);
	if (err) {
		jbuf__free(&pending);
		output_failed(err);
		return false;
	}
	W.paged = W.out.paged;
	W.buf_at = W.out.events_end;
	/* The host process first, above its devices; then whatever the cycle
	 * formatted before the file existed. */
	events__meta(&W.buf, "process_name", (uint32_t)gt_st.pid, 0, "name", gt_exe(), strlen(gt_exe()), 0);
	events__meta(&W.buf, "process_sort_index", (uint32_t)gt_st.pid, 0, "sort_index", NULL, 0, 0);
	char cmd[1024];
	size_t cmd_len = command_line(cmd, sizeof(cmd));
	if (cmd_len)
		events__meta(&W.buf, "process_labels", (uint32_t)gt_st.pid, 0, "labels", cmd, cmd_len, 0);
	/* placed event by event for their offsets in it, as every later event is:
	 * put in as formatted, for no file, they crossed pages, which a kill that
	 * cuts the write leaves half-written */
	for (const char *q = pending.p, *ev; (ev = events__next(&q, pending.p + pending.len, &n));)
		events__put_formatted(ev, n);
	jbuf__free(&pending);
	return true;
}

static void trailer_thread(struct jbuf *b, bool *first, uint32_t tid, uint64_t events,
			   uint64_t lost)
{
	if (!*first)
		jbuf__ch(b, ',');
	*first = false;
	jbuf__lit(b, "{\"tid\":");
	json__u64(b, tid);
	jbuf__lit(b, ",\"events\":");
	json__u64(b, events);
	jbuf__lit(b, ",\"lost\":");
	json__u64(b, lost);
	jbuf__ch(b, '}');
}

/* Events dropped because their thread's ring was full: live and gone threads. */
static uint64_t ring_lost(void)
{
	uint64_t n = W.dead_lost;

	for (struct ring *r = atomic_load(&gt_st.rings); r; r = r->next)
		n += atomic_load(&r->lost);
	return n;
}

/* --lossless: the waits of live and gone threads, and their time (the
 * gone ones' as totals: O(1) in their number, as their losses). */
static uint64_t ring_waits(uint64_t *wait_ns)
{
	uint64_t n = 0;

	*wait_ns = 0;
	for (struct ring *r = atomic_load(&gt_st.rings); r; r = r->next) {
		n += atomic_load(&r->waits);
		*wait_ns += atomic_load(&r->wait_ns);
	}
	*wait_ns += W.dead_wait_ns;
	return n + W.dead_waits;
}

/* The losses at one moment, total and by reason, for the trailer: taken on the stack,
 * so that writing them needs no buffer of its own (the last trailer is made at an exit
 * that may find no memory left). */
struct lost_now {
	uint64_t full, total;
	unsigned n;
	uint32_t reason[GT_LOST_REASONS];
	uint64_t count[GT_LOST_REASONS];
};

static void lost_now(struct lost_now *l)
{
	l->full = l->total = ring_lost();
	l->n = 0;
	for (int i = 0; i < GT_LOST_REASONS; i++) {
		uint32_t reason = atomic_load(&gt_st.lost_reason[i]);

		if (!reason)
			break;
		l->reason[l->n] = reason;
		l->count[l->n] = atomic_load(&gt_st.lost_count[i]);
		l->total += l->count[l->n++];
	}
}

static uint64_t lost_total(void)
{
	struct lost_now l;

	lost_now(&l);
	return l.total;
}

/* Kineto's "deviceProperties": what the backends could read of each device
 * (gt_device_prop), its "id" and "name" at least. */
static void build_device_properties(struct jbuf *b)
{
	uint32_t nd = W.devices_named, id_key = gt_str_intern("id");
	bool first = true;

	for (uint32_t d = 1; d <= nd; d++) {
		uint32_t n;
		const struct gt_arg *p;
		bool has_id = false;

		if (!registry__device_shown(d))
			continue; /* a fork child's of its parent's, unused here */
		p = registry__device_props(d, &n);
		if (first)
			jbuf__lit(b, "\"deviceProperties\":[");
		else
			jbuf__ch(b, ',');
		first = false;
		jbuf__ch(b, '{');
		for (uint32_t i = 0; i < n; i++)
			has_id |= p[i].key == id_key;
		if (!has_id) {
			jbuf__lit(b, "\"id\":");
			json__u64(b, d - 1);
			jbuf__lit(b, ",\"name\":");
			events__put_sid(b, registry__device_name(d));
		}
		events__put_props(b, p, n, !has_id);
		jbuf__ch(b, '}');
	}
	if (!first)
		jbuf__lit(b, "],\n");
}

/* ,"adjusted":{"clamped":{"count":3,"max_ns":1200}} when a backend corrected times */
static void trailer_adjusted(struct jbuf *b)
{
	for (int i = 0; i < GT_ADJUST_REASONS; i++) {
		uint32_t reason = atomic_load(&gt_st.adjust_reason[i]);

		if (!reason)
			break;
		if (i)
			jbuf__ch(b, ',');
		else
			jbuf__lit(b, ",\"adjusted\":{");
		events__put_sid(b, reason);
		jbuf__lit(b, ":{\"count\":");
		json__u64(b, atomic_load(&gt_st.adjust_count[i]));
		jbuf__lit(b, ",\"max_ns\":");
		json__u64(b, atomic_load(&gt_st.adjust_max_ns[i]));
		jbuf__ch(b, '}');
		if (i + 1 == GT_ADJUST_REASONS || !atomic_load(&gt_st.adjust_reason[i + 1]))
			jbuf__ch(b, '}');
	}
}

/* ,"gaps":[{"reason":"...","start_ns":1,"end_ns":2}] (end_ns null: still open) */
static void trailer_gaps(struct jbuf *b)
{
	unsigned n = atomic_load(&gt_st.ngaps), listed = 0;

	for (unsigned i = 0; i < n && i < GT_GAPS_MAX; i++) {
		uint32_t reason = atomic_load_explicit(&gt_st.gaps[i].reason, memory_order_acquire);
		uint64_t end = atomic_load(&gt_st.gaps[i].end_ns);

		if (!reason)
			continue;
		if (listed++)
			jbuf__lit(b, ",{\"reason\":");
		else
			jbuf__lit(b, ",\"gaps\":[{\"reason\":");
		events__put_sid(b, reason);
		jbuf__lit(b, ",\"start_ns\":");
		json__u64(b, atomic_load(&gt_st.gaps[i].start_ns));
		jbuf__lit(b, ",\"end_ns\":");
		if (end)
			json__u64(b, end);
		else
			jbuf__lit(b, "null");
		jbuf__ch(b, '}');
	}
	if (listed)
		jbuf__ch(b, ']');
}

/* The trailer, listing at most `limit` threads. */
static void build_trailer_listing(bool final, size_t limit)
{
	struct jbuf *b = &W.trailer;
	const char *reason = atomic_load(&gt_end_reason);
	char host[256];
	bool first = true;

	if (gethostname(host, sizeof(host) - 1))
		strcpy(host, "localhost");
	host[sizeof(host) - 1] = 0;
	b->len = 0;
	jbuf__lit(b, "\n],\n\"displayTimeUnit\":\"ns\",\n");
	build_device_properties(b);
	jbuf__lit(b, "\"gputrace\":{\"version\":\"" GPUTRACE_VERSION
		     "\",\"pid\":");
	json__u64(b, (uint32_t)gt_st.pid);
	jbuf__lit(b, ",\"exe\":");
	json__str(b, gt_exe(), strlen(gt_exe()));
	jbuf__lit(b, ",\"hostname\":");
	json__str(b, host, strlen(host));
	jbuf__lit(b, ",\"rank\":");
	if (W.rank.source)
		json__u64(b, (uint64_t)W.rank.rank);
	else
		jbuf__lit(b, "null");
	jbuf__lit(b, ",\"clock\":\"" GT_CLOCK_NAME "\",\"anchor\":{\"realtime_ns\":");
	json__u64(b, gt_st.anchor_realtime_ns);
	jbuf__lit(b, ",\"clock_ns\":");
	json__u64(b, gt_st.anchor_clock_ns);
	/* read at every checkpoint: with the anchor, a line through the wall
	 * clock where NTP slews it (raw clock: the crash path writes this too) */
	struct gt_clock_pair last = gt_clock_pair_of(gt_clock_gettime_ns);

	jbuf__lit(b, "},\"anchor_last\":{\"realtime_ns\":");
	json__u64(b, (uint64_t)last.realtime_ns);
	jbuf__lit(b, ",\"clock_ns\":");
	json__u64(b, last.clock_ns);
	jbuf__lit(b, "},\"complete\":");
	/* the image an exec replaces has its file finished (a failed exec goes on) */
	const char *why = atomic_load(&gt_end_reason);
	if (final || W.device_flush_pending || (why && !strcmp(why, "exec")))
		jbuf__lit(b, "true");
	else
		jbuf__lit(b, "false");
	if (W.device_flush_pending)
		jbuf__lit(b, ",\"device_flush\":\"unfinished\"");
	if (gt_cap.controlled) {
		/* the capture window this file holds (close: null while open) */
		uint64_t close = atomic_load(&gt_cap.close_ns);

		jbuf__lit(b, ",\"capture\":{\"window\":");
		json__u64(b, W.files + 1);
		jbuf__lit(b, ",\"start_ns\":");
		json__u64(b, atomic_load(&gt_cap.open_ns));
		jbuf__lit(b, ",\"end_ns\":");
		if (close != UINT64_MAX)
			json__u64(b, close);
		else
			jbuf__lit(b, "null");
		jbuf__lit(b, "}");
		if (W.window_ending && !reason)
			reason = "window";
	}
	jbuf__lit(b, ",\"end\":");
	if (reason)
		json__str(b, reason, strlen(reason));
	else
		jbuf__lit(b, "null");
	jbuf__lit(b, ",\"events_recorded\":");
	json__u64(b, W.recorded);
	jbuf__lit(b, ",\"events_lost\":");
	struct lost_now lost;
	lost_now(&lost);
	json__u64(b, lost.total);
	jbuf__lit(b, ",\"lost_by_reason\":{\"ring_full\":");
	json__u64(b, lost.full);
	for (unsigned i = 0; i < lost.n; i++) {
		jbuf__ch(b, ',');
		events__put_sid(b, lost.reason[i]);
		jbuf__ch(b, ':');
		json__u64(b, lost.count[i]);
	}
	jbuf__ch(b, '}');
	if (gt_cfg.lossless_ms) {
		uint64_t wait_ns, waits = ring_waits(&wait_ns);

		jbuf__lit(b, ",\"lossless\":{\"waits\":");
		json__u64(b, waits);
		jbuf__lit(b, ",\"wait_ns\":");
		json__u64(b, wait_ns);
		jbuf__lit(b, ",\"timeout_ms\":");
		json__u64(b, gt_cfg.lossless_ms);
		jbuf__ch(b, '}');
	}
	uint64_t ovf_now, ovf_peak, ovf_segments;
	ring__overflow_stats(&ovf_now, &ovf_peak, &ovf_segments);
	if (ovf_segments) {
		/* full rings went on in overflow segments (inject/ring_overflow.c) */
		jbuf__lit(b, ",\"overflow\":{\"segments\":");
		json__u64(b, ovf_segments);
		jbuf__lit(b, ",\"peak_bytes\":");
		json__u64(b, ovf_peak);
		jbuf__lit(b, ",\"limit_bytes\":");
		json__u64(b, (uint64_t)gt_cfg.overflow_mb << 20);
		jbuf__ch(b, '}');
	}
	trailer_adjusted(b);
	trailer_gaps(b);
	uint64_t unmatched = flows__unmatched();
	if (unmatched) {
		/* plug-ins' device spans whose launch is not in the file (yet) */
		jbuf__lit(b, ",\"flows_unmatched\":");
		json__u64(b, unmatched);
	}
	jbuf__lit(b, ",\"devices\":[");
	for (uint32_t d = 1; d <= W.devices_named; d++) {
		if (d > 1)
			jbuf__ch(b, ',');
		jbuf__lit(b, "{\"pid\":");
		json__u64(b, device_pid(d));
		jbuf__lit(b, ",\"name\":");
		events__put_sid(b, registry__device_name(d));
		jbuf__ch(b, '}');
	}
	jbuf__lit(b, "],\"stacks\":{\"unique\":");
	json__u64(b, stacks__count());
	jbuf__lit(b, ",\"dropped\":");
	json__u64(b, stacks__dropped());
	/* checkpoints list the first threads only: their footer must fit in
	 * one page to be rewritten in one uncut write; the last lists all */
	size_t listed = 0;
	uint64_t total = W.dead_threads;
	jbuf__lit(b, "},\"threads\":[");
	for (struct ring *r = atomic_load(&gt_st.rings); r; r = r->next, total++)
		if (listed++ < limit)
			trailer_thread(b, &first, (uint32_t)r->tid, r->recorded,
				       atomic_load(&r->lost));
	/* the exited threads: never walked whole but at the end */
	for (size_t i = 0; i < W.ndead && listed < limit; i++, listed++)
		trailer_thread(b, &first, W.dead[i].tid, W.dead[i].events, W.dead[i].lost);
	jbuf__lit(b, "],\"threads_total\":");
	json__u64(b, total);
	if (final && limit != SIZE_MAX) {
		/* the list every thread's was cut (build_trailer) */
		jbuf__lit(b, ",\"threads_listed\":");
		json__u64(b, listed < limit ? listed : limit);
	}
	if (W.flight)
		flight__trailer(b, W.flight);
	jbuf__lit(b, "}}\n");
}

/*
 * The last trailer lists every thread: 20000 threads take ~700 KB, asked for at the exit
 * of a process that may have used up its address space (`ulimit -v`, threads' stacks and
 * rings). Where that memory is not there, the numbers that found no room were left out
 * and the file was not JSON; now the list is cut to a checkpoint's (room the footer
 * already had), then to none, and `threads_listed` says how many it holds.
 */
static void build_trailer(bool final)
{
	W.trailer.oom = 0;
	build_trailer_listing(final, final ? SIZE_MAX : TRAILER_THREADS);
	if (W.trailer.oom && final) {
		W.trailer.oom = 0;
		build_trailer_listing(final, TRAILER_THREADS);
	}
	if (W.trailer.oom) {
		W.trailer.oom = 0;
		build_trailer_listing(final, 0);
	}
}

bool checkpoint__anything(bool final)
{
	/* lost events count too: a process that lost all it recorded says so */
	return W.recorded || W.npend || (final && lost_total());
}

/*
 * Under gputrace run, the run learns of its traces and of the processes
 * recording from a list in its state folder (a run may write its traces
 * anywhere its -o template says): "* PID" when a process starts recording,
 * "+ PID PATH" once its file is named, "= PID" when its recording is over
 * (at exit, or before an exec). So the run waits for the processes still
 * recording when its command ends, and no others.
 */
void checkpoint__list(char what, const char *path)
{
	int err = gt_run_note(what, path);

	/* (EMFILE under a low RLIMIT_NOFILE) the run takes what is in its parts
	 * folder, but a trace elsewhere (-o with %p) it cannot find: the user is
	 * told where it is */
	if (err && path)
		pr_warn("cannot list this process's trace with gputrace run (%s/traces: %s); "
			"the trace is %s", gt_cfg.run_state, strerror(-err), path);
}

void checkpoint__list_end(void)
{
	/* a flight recorder whose process ended well writes nothing, nor does a
	 * process whose capture window held no complete call (its one wait ran
	 * across it) and so opened no file: the run must not count it among
	 * those that could not write their trace */
	bool nothing_by_design = !W.listed && !W.failed &&
				 (flight_mode() || (gt_cap.controlled && !W.opened));

	checkpoint__list(nothing_by_design ? '-' : '=', NULL);
}

/* After a checkpoint that worked: the file has its name now. */
static void checkpoint_done(void)
{
	if (!W.listed && !W.out.unpublished) {
		W.listed = true;
		checkpoint__list('+', W.out.path);
	}
}

/* Why the process's end is worth a dump (NULL: it is not): a signal, a
 * non-zero exit status. */
static const char *flight_end_reason(void)
{
	const char *why = atomic_load(&gt_end_reason);
	int status = atomic_load(&gt_exit_status);

	if (!why || !strcmp(why, "exec"))
		return NULL;
	if (gt_reason_is_signal(why))
		return why;
	return status ? "exit status not 0" : NULL;
}

/* The flight recorder's window as a trace file of its own: the head, row
 * names, the window's events, a trailer with what was kept and aged out. */
static void flight_dump(const char *reason, bool final, uint64_t as_of)
{
	struct flight_counts c;
	struct jbuf head = { 0 }, events = { 0 };
	struct out o;
	int err;

	uint64_t now = gt_clock_ns();
	bool any = W.any_event, said = false;

	flight__dump(&events, now, as_of && as_of < now ? as_of : now, &c);
	c.reason = reason;
	/* counted in events_recorded as read; kept + aged out + these is every one
	 * (they were missing from the sum: a dump of a program with ranges came out
	 * short by a cycle's device work) */
	c.waiting = W.npend;
	/* marked as a capture window is: a run's trace tells its dumps apart */
	W.any_event = events.len > 0;
	events__capture_mark(&events, "dump", c.dump, c.from_ns, now);
	W.any_event = any;
	build_head(&head);
	/* named once it holds a skeleton (complete: false), then finished: a
	 * reader never sees a complete dump without its events */
	build_trailer(false);
	/* the default name kept for the next dumps once it served, not the window lost */
	err = open_or_fallback(&o, "the flight recorder's window", &said);
	if (!err)
		err = out__begin(&o, head.p, head.len, W.trailer.p, W.trailer.len);
	W.flight = &c;
	build_trailer(true);
	W.flight = NULL;
	if (!err)
		err = out__finish(&o, events.p, events.len, W.trailer.p, W.trailer.len);
	if (err) {
		if (!said)
			pr_err("cannot write the flight recorder's window to '%s': %s", W.path,
			       strerror(-err));
	} else {
		/* under gputrace run the file is a part, merged into the run's trace
		 * and removed: that trace is named by the run */
		/* each dump its line, under gputrace run too, where the line names
		 * no file: several processes (or dumps) with the same count said it
		 * once in all; there it names the process */
		if (gt_under_run())
			pr_warn_each("flight recorder (%s): %llu events of the last window of %s "
				     "(pid %d) written for the run's trace",
				     reason, (unsigned long long)c.kept_events, gt_exe(),
				     (int)gt_st.pid);
		else
			pr_warn_each("flight recorder (%s): %llu events of the last window in %s",
				     reason, (unsigned long long)c.kept_events, o.path);
		checkpoint__list('+', o.path);
		snprintf(W.flight_path, sizeof(W.flight_path), "%s", o.path);
		atomic_fetch_add(&W.flight_written, 1);
		if (final) {
			/* the summary names it */
			snprintf(W.out.path, sizeof(W.out.path), "%s", o.path);
			W.out.size = o.size;
		}
	}
	out__close(&o);
	jbuf__free(&head);
	jbuf__free(&events);
}

/* A checkpoint of a flight recorder: the cycle's events into memory, and a
 * dump when one was asked for or the process ends badly. Not in the middle
 * of a cycle (behind): device work read from the rings may still wait for
 * its launch there, counted as recorded and not yet in the window. */
static void flight_checkpoint(bool final, bool behind)
{
	/* the request this cycle took as it began (drain.c, cycle): what was
	 * recorded up to it has been read */
	const char *asked = behind ? NULL : W.flight_asked;
	const char *reason = final ? flight_end_reason() : NULL;
	/* when the dump was asked for, taken or still waiting for a cycle, or
	 * the process began to end: nothing of its window ages out while the
	 * drain catches up (until its dump, this cycle's or the next's) */
	uint64_t now = gt_clock_ns(), hold = now, at;

	if (W.flight_asked && W.flight_asked_ns && W.flight_asked_ns < hold)
		hold = W.flight_asked_ns;
	if (atomic_load(&W.flight_request) && (at = atomic_load(&W.flight_request_ns)) && at < hold)
		hold = at;
	if (atomic_load(&gt_end_reason) && (at = atomic_load(&gt_st.host_end_ns)) && at < hold)
		hold = at;
	/* a hang that may be under way: its window stays for the watchdog's dump */
	if ((at = watchdog__hang_since()) < hold)
		hold = at;
	at = reason ? atomic_load(&gt_st.host_end_ns) : W.flight_asked_ns;
	if (!behind)
		W.flight_asked = NULL;

	flight__add(W.buf.p, W.buf.len, now, hold);
	W.buf.len = 0;
	W.ev_start = 0;
	if (reason || asked)
		flight_dump(reason ? reason : asked, final, at);
	if (final)
		flight__free();
}

/*
 * Events or a trailer formatted without the memory they needed (a process that used up
 * its address space: `ulimit -v`) have holes where a number or a name found no room, and
 * the file was not JSON (or, where no buffer could be had at all, empty), without a word:
 * they are not written, and the trace ends at its last checkpoint, said as a failed write
 * is. True: so.
 */
static bool out_of_memory(void)
{
	if (gt_likely(!W.buf.oom && !W.trailer.oom))
		return false;
	W.buf.len = 0;
	W.ev_start = 0;
	W.buf.oom = 0;
	output_failed(-ENOMEM);
	return true;
}

static void checkpoint_write(bool final, bool behind)
{
	int err;

	if (W.failed)
		return;
	if (!W.opened && !checkpoint__anything(final))
		return; /* nothing recorded: no file (a shell, a compiler, a child that execs) */
	if (!checkpoint__open())
		return;
	if (flight_mode()) {
		if (!out_of_memory())
			flight_checkpoint(final, behind);
		return;
	}
	/* Rows made since the cycle named them: a write in the middle of a cycle
	 * (behind) may hold their events, and a SIGKILL may make it the file */
	events__name_rows();
	/* in a paged file, whatever the kernel cuts of these writes leaves it valid */
	events__fit();
	build_trailer(final);
	if (out_of_memory())
		return;
	W.buf_at += W.buf.len; /* a paged file takes the events as they are */
	err = outq__submit(&W.buf, &W.trailer, final, behind);
	W.buf.len = 0;
	W.ev_start = 0;
	if (err)
		output_failed(err);
}

void checkpoint__write(bool final)
{
	checkpoint_write(final, false);
}

void checkpoint__write_behind(void)
{
	checkpoint_write(false, true); /* the next events formatted meanwhile */
}

void checkpoint__settle(void)
{
	int err = outq__wait();

	if (err)
		output_failed(err);
	else if (W.opened && !W.failed && !flight_mode())
		checkpoint_done(); /* a flight recorder's files are its dumps' */
}

void checkpoint__compact(void)
{
	int err;

	if (!W.opened || W.failed || flight_mode())
		return;
	if ((err = outq__wait()) || (err = out__compact(&W.out)))
		output_failed(err);
}

/* The losses, by reason, into a summary. */
static void summary_losses(struct summary *s)
{
	uint64_t full = ring_lost();

	if (full)
		summary__lost(s, "ring_full", full);
	for (int i = 0; i < GT_LOST_REASONS && atomic_load(&gt_st.lost_reason[i]); i++)
		if (atomic_load(&gt_st.lost_count[i]))
			summary__lost(s, gt_str_get(atomic_load(&gt_st.lost_reason[i]), NULL),
				      atomic_load(&gt_st.lost_count[i]));
}

static void summary_hints(struct summary *s)
{
	summary__set_hints(s, &(struct summary_hints){ .more = "GPUTRACE_SUMMARY_JSON",
						       .buffer = "GPUTRACE_BUFFER_KB=",
						       .buffer_kb = gt_cfg.buffer_kb,
						       .overflow = "GPUTRACE_OVERFLOW_MB=",
						       .overflow_mb = gt_cfg.overflow_mb });
}

/* No summary kept (GPUTRACE_SUMMARY=0): a summary of the losses alone, made
 * at exit, for their one line; none when nothing was lost. */
static void print_lost_line_only(bool written)
{
	struct summary *s;

	if (!lost_total() || !(s = summary__new()))
		return;
	summary_losses(s);
	if (gt_cfg.lossless_ms) {
		/* its advice offers --lossless only where it was off (it did, on) */
		uint64_t wait_ns, waits = ring_waits(&wait_ns);

		summary__waits(s, waits, wait_ns);
	}
	summary_hints(s);
	summary__print_lost_line(s, stderr, written && W.out.path[0] ? W.out.path : NULL);
	summary__free(s);
}

void checkpoint__check_removed(void)
{
	struct stat st;

	/* a file the program (or its harness, cleaning a folder) unlinked: the
	 * writes went on into an inode no name reaches, and the summary named a
	 * file that was not there, without a word */
	if (!W.opened || W.failed || !W.out.seekable || W.out.unpublished || !W.out.path[0] ||
	    fstat(W.out.fd, &st) || st.st_dev != W.out.dev || st.st_ino != W.out.ino ||
	    st.st_nlink)
		return;
	pr_err("the trace file '%.400s' was removed while the process ran: its events are in "
	       "no file", W.out.path);
	W.out.path[0] = '\0';
}

void checkpoint__summary(void)
{
	char json[PATH_MAX], host[256], rank[32];
	struct summary_process me;
	int err;
	/* a file that failed before it held anything (/dev/full) is no trace,
	 * as one that never opened: no summary names it */
	bool written = W.opened && !(W.failed && !W.out.size);

	/* nothing recorded: no summary anywhere (the shells of a job are not
	 * worth a line); under gputrace run, the run sums up every process */
	if (!checkpoint__anything(true) || gt_under_run() ||
	    (gt_cap.controlled && !W.opened))
		return;
	if (!W.sum) {
		/* GPUTRACE_SUMMARY=0, no JSON: one line all the same if events were
		 * lost, as gputrace run --no-summary says it */
		print_lost_line_only(written);
		return;
	}
	events__summary_flush();
	summary_losses(W.sum);
	for (int i = 0; i < GT_ADJUST_REASONS && atomic_load(&gt_st.adjust_reason[i]); i++)
		summary__adjusted(W.sum, gt_str_get(atomic_load(&gt_st.adjust_reason[i]), NULL),
				  atomic_load(&gt_st.adjust_count[i]),
				  atomic_load(&gt_st.adjust_max_ns[i]));
	/* the file's, as its trailer says them (written before this) */
	summary__flows_unmatched(W.sum, flows__unmatched());
	summary__stacks_dropped(W.sum, stacks__dropped());
	if (gt_cfg.lossless_ms) {
		uint64_t wait_ns, waits = ring_waits(&wait_ns);

		summary__waits(W.sum, waits, wait_ns);
	}
	/* the process's row gets its losses too (the same process: added) */
	me = this_process(host, sizeof(host), rank, sizeof(rank));
	me.lost = lost_total();
	summary__process(W.sum, &me);
	summary_hints(W.sum);
	if (gt_cfg.summary_json[0]) {
		/* a template too: s-%p.json gives each process its own */
		err = expand_path(gt_cfg.summary_json, json, sizeof(json));
		if (!err)
			err = summary__write_json(W.sum, json,
						  written && W.out.path[0] ? W.out.path : NULL,
						  W.out.size);
		/* -EEXIST: json holds a trace (this one's, GPUTRACE_OUTPUT naming
		 * the same file): kept */
		if (err)
			pr_err("GPUTRACE_SUMMARY_JSON: cannot write the summary to '%s': %s",
			       err == -ENAMETOOLONG ? gt_cfg.summary_json : json,
			       summary__strerror(err));
	}
	if (gt_cfg.summary && written)
		summary__print(W.sum, stderr, W.out.path[0] ? W.out.path : NULL, W.out.size);
	else if (!gt_cfg.summary) /* only the JSON: the losses' line all the same */
		summary__print_lost_line(W.sum, stderr,
					 written && W.out.path[0] ? W.out.path : NULL);
}
