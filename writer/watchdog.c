// SPDX-License-Identifier: MIT
/*
 * The hang watchdog's thread and report (inject/watchdog.h). One small
 * thread of ours, started with the drain thread (or, in a process paused
 * before its first capture window, with its first device wait), wakes
 * every quarter of SEC (0.1 s to 1 s), in capture windows and between
 * them, and looks at
 * - every thread's wait mark (ring.h): one inside a device wait for longer
 *   than SEC is blocked;
 * - the backends' pending device work (submitted, not finished): the same
 *   oldest item unfinished for SEC is work that made no progress.
 * Either writes one report, once per blockage (a wait is known by its
 * entry time, pending work by its correlation id). Not the drain thread
 * itself: in a hang its cycle may be the thing stuck (a backend's flush
 * inside the vendor's library), and a report must not wait for it.
 *
 * A blocked thread's host stack: it is sent a real-time signal of ours and
 * its handler unwinds itself (libunwind, loaded at start) into one
 * preallocated buffer; async-signal-safe, errno kept, SA_RESTART so the
 * program's wait goes on (a futex or condition wait restarts on its own).
 * The signal is one the program left at SIG_DFL when we started; if the
 * program installs its own handler on it later, we step aside (no stacks,
 * said in the report) and never chain into its handler with our signal.
 *
 * The report is JSON (the trace's name, .watchdog.json for .json): tools
 * and CI read it back like the trace and the summary, strings are escaped
 * exactly by the writer's own json__str, and a person reads it as easily
 * as text. It is written to a temporary name and renamed: a reader never
 * sees half of it. The regular trace is checkpointed first (everything up
 * to the hang is on disk), and the flight recorder's window is written when
 * the recorder is on (writer__flight_dump_now).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "inject/capture.h"
#include "inject/clock.h"
#include "inject/config.h"
#include "inject/registry.h"
#include "inject/shim.h"
#include "inject/stacks.h"
#include "inject/state.h"
#include "inject/watchdog.h"
#include "json.h"
#include "writer.h"

#define WD_THREADS_MAX 64  /* blocked threads in one report */
#define WD_PENDING_MAX 256 /* pending items in one report */
#define WD_STACK_MAX   GT_STACKS_MAX_DEPTH
#define WD_UNWIND_WAIT_MS 200
/* The longest an exit waits for a report under way (watchdog__end): its
 * checkpoint, flight recorder dump, unwinds (WD_UNWIND_WAIT_MS each) and
 * file, seconds when the drain is behind a busy program. */
#define WD_EXIT_WAIT_MS 5000

/* ---- unwinding another thread: it unwinds itself in our handler ---- */

static struct {
	int sig;                 /* 0: none free, no stacks */
	_Atomic pid_t target;    /* the thread asked to unwind itself */
	_Atomic int done;
	int n;
	void *pcs[WD_STACK_MAX];
} U;

static void on_unwind_signal(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;

	(void)sig;
	(void)uc;
	/* only our own request (sent by tgkill from this process) is ours */
	if (si->si_code == SI_TKILL && si->si_pid == gt_st.pid &&
	    atomic_load_explicit(&U.target, memory_order_acquire) == (pid_t)syscall(SYS_gettid)) {
		U.n = stacks__backtrace_now(U.pcs, WD_STACK_MAX);
		atomic_store_explicit(&U.done, 1, memory_order_release);
	}
	errno = saved;
}

/* A real-time signal the program has left alone, from the top (programs
 * and libraries that use one tend to take SIGRTMIN upwards), other than
 * the capture trigger's (GPUTRACE_CAPTURE_SIGNAL). sigaction by
 * its global name: a sanitizer's interceptor, when there is one, must know
 * the handler (ThreadSanitizer runs handlers itself, where they are safe),
 * else it is ours (lifecycle.c), which shows SIG_DFL where its fatal-signal
 * handler stands in and installs ours for real, as a program's. */
static void pick_signal(void)
{
	struct sigaction sa = { .sa_sigaction = on_unwind_signal,
				.sa_flags = SA_SIGINFO | SA_RESTART };

	sigfillset(&sa.sa_mask);
	for (int sig = SIGRTMAX - 1; sig > SIGRTMIN + 2; sig--) {
		struct sigaction cur;

		/* never the capture trigger's: our sigaction shows it at SIG_DFL
		 * (the program's view), and taking it would unhook gputrace capture */
		if (sig == config__capture_signal(&gt_cfg))
			continue;
		if (sigaction(sig, NULL, &cur) || cur.sa_handler != SIG_DFL ||
		    (cur.sa_flags & SA_SIGINFO))
			continue;
		if (!sigaction(sig, &sa, NULL)) {
			U.sig = sig;
			return;
		}
	}
}

/* Still ours (the program may have installed its own handler since). */
static bool signal_still_ours(void)
{
	struct sigaction cur;

	return U.sig && !sigaction(U.sig, NULL, &cur) && (cur.sa_flags & SA_SIGINFO) &&
	       cur.sa_sigaction == on_unwind_signal;
}

static uint64_t unwind_thread(pid_t tid, const char **why)
{
	struct timespec ms = { 0, 1000000 };
	uintptr_t pcs[WD_STACK_MAX];
	int n;

	if (!signal_still_ours()) {
		*why = U.sig ? "the program installed its own handler on our signal"
			     : "no real-time signal was free";
		return 0;
	}
	atomic_store(&U.done, 0);
	U.n = 0;
	atomic_store_explicit(&U.target, tid, memory_order_release);
	if (syscall(SYS_tgkill, gt_st.pid, tid, U.sig)) {
		atomic_store(&U.target, 0);
		*why = "the thread is gone";
		return 0;
	}
	for (int i = 0; i < WD_UNWIND_WAIT_MS && !atomic_load_explicit(&U.done, memory_order_acquire); i++)
		nanosleep(&ms, NULL);
	atomic_store(&U.target, 0);
	if (!atomic_load_explicit(&U.done, memory_order_acquire)) {
		/* late: its handler may still write U; the next request waits */
		*why = "the thread did not answer (signal blocked?)";
		return 0;
	}
	n = U.n;
	for (int i = 0; i < n; i++)
		pcs[i] = (uintptr_t)U.pcs[i];
	if (n <= 0) {
		*why = "libunwind found no frames";
		return 0;
	}
	return stacks__intern_pcs(pcs, (unsigned)n);
}

/* ---- what is blocked ---- */

struct blocked {
	pid_t tid;
	uint32_t call;
	uint64_t since, handle;
	char name[16];
};

struct pending_list {
	struct gt_pending_work w[WD_PENDING_MAX];
	unsigned n;
	uint64_t more;
};

static bool pending_has(const struct pending_list *p, uint64_t corr)
{
	for (unsigned i = 0; i < p->n; i++)
		if (p->w[i].corr == corr)
			return true;
	return false;
}

/* A wait of the thread's last reported hang made again: the same call on the
 * same handle, with the device work that was oldest at its report still
 * pending. A program that polls a stuck kernel with timed waits
 * (zeCommandQueueSynchronize(q, 1 s) in a loop) got a report, a checkpoint and
 * a flight recorder dump for every wait longer than SEC, one a second for hours. */
static bool same_hang(const struct ring *r, uint32_t call, uint64_t handle,
		      const struct pending_list *pend)
{
	return r->wait_reported && r->wait_reported_corr && r->wait_reported_call == call &&
	       r->wait_reported_handle == handle && pending_has(pend, r->wait_reported_corr);
}

/* The threads in a wait longer than the threshold; fresh: one of them
 * not reported yet (nor a wait of its last hang made again; oldest: the
 * correlation of the oldest pending work, 0 if none), the first such at
 * b[*first]; waiting: a thread is in a wait shorter than the threshold;
 * alone: the correlation of work reported with no thread blocked (0: none),
 * whose first waiter blocked past the threshold is that hang (then 0).
 * Under the ring lock (rings are freed by the drain). */
static unsigned find_blocked(struct blocked *b, uint64_t now, uint64_t limit, bool *fresh,
			     unsigned *first, const struct pending_list *pend, uint64_t oldest,
			     bool *waiting, uint64_t *alone)
{
	unsigned n = 0;

	*fresh = false;
	*first = 0;
	*waiting = false;
	if (writer__lock_rings(200))
		return 0;
	for (struct ring *r = atomic_load_explicit(&gt_st.rings, memory_order_acquire);
	     r && n < WD_THREADS_MAX; r = r->next) {
		uint64_t since = atomic_load_explicit(&r->wait_since, memory_order_acquire);

		if (since && since <= now && now - since < limit && !atomic_load(&r->dead))
			*waiting = true;
		/* since > now: a wait that began after we read the clock */
		if (!since || since > now || now - since < limit || atomic_load(&r->dead))
			continue;
		b[n].call = atomic_load_explicit(&r->wait_call, memory_order_relaxed);
		b[n].handle = atomic_load_explicit(&r->wait_handle, memory_order_relaxed);
		/* the same wait still (not a newer one half-written) */
		if (atomic_load_explicit(&r->wait_since, memory_order_acquire) != since)
			continue;
		b[n].since = since;
		b[n].tid = r->tid;
		memcpy(b[n].name, r->name_start, sizeof(b[n].name));
		b[n].name[sizeof(b[n].name) - 1] = 0;
		if (r->wait_reported != since && !same_hang(r, b[n].call, b[n].handle, pend)) {
			/* a wait begun after the work it waits behind was reported alone
			 * (a loaded machine held the program between its submission and
			 * its wait): that hang, not a second report of it */
			if (*alone && *alone == oldest) {
				*alone = 0;
			} else {
				if (!*fresh)
					*first = n;
				*fresh = true;
			}
			r->wait_reported_call = b[n].call;
			r->wait_reported_handle = b[n].handle;
			r->wait_reported_corr = oldest;
		}
		r->wait_reported = since;
		n++;
	}
	writer__unlock_rings();
	return n;
}

static void pending_add(void *arg, const struct gt_pending_work *w)
{
	struct pending_list *p = arg;

	if (p->n < WD_PENDING_MAX)
		p->w[p->n++] = *w;
	else
		p->more++;
}

static void find_pending(struct pending_list *p)
{
	p->n = 0;
	p->more = 0;
	shim__backends_pending(pending_add, p);
}

/* ---- the report ---- */

/* The thread's name now (programs name their threads after they start),
 * else as it was at its first event. */
static const char *thread_name(pid_t tid, const char *first)
{
	static char now[32];
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/comm", (int)tid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return first;
	n = read(fd, now, sizeof(now) - 1);
	close(fd);
	if (n <= 1)
		return first;
	now[n - (now[n - 1] == '\n')] = 0;
	return now;
}

static void put_str(struct jbuf *b, const char *s)
{
	json__str(b, s ? s : "", s ? strlen(s) : 0);
}

static void put_key(struct jbuf *b, const char *key)
{
	put_str(b, key);
	jbuf__ch(b, ':');
}

static void put_stack(struct jbuf *b, uint64_t id)
{
	char text[4096];
	char *frames[WD_STACK_MAX + 1];
	unsigned n = 0;

	jbuf__ch(b, '[');
	if (stacks__format(id, text, sizeof(text)) > 0) {
		for (char *p = text; p && n < WD_STACK_MAX + 1; n++) {
			frames[n] = p;
			if ((p = strchr(p, ';')) != NULL)
				*p++ = 0;
		}
		/* stored outermost first: innermost first here, as debuggers print */
		for (unsigned i = n; i-- > 0;) {
			put_str(b, frames[i]);
			if (i)
				jbuf__ch(b, ',');
		}
	}
	jbuf__ch(b, ']');
}

static void put_row(struct jbuf *b, const struct gt_pending_work *w)
{
	const struct gt_row *row = w->track ? registry__track(w->track) : NULL;
	const char *name = row ? gt_str_get(atomic_load(&row->name), NULL)
			       : w->row_name ? gt_str_get(w->row_name, NULL) : NULL;
	uint32_t device = row ? registry__device_name(row->device) : w->device_name;

	put_key(b, "row");
	put_str(b, name ? name : "?");
	if (device) {
		jbuf__lit(b, ",\"device\":");
		put_str(b, gt_str_get(device, NULL));
	}
}

_Atomic uint64_t gt_pending_untracked;

/* The run's trace that path, a file in a gputrace run's OUT.parts/ (OUT.parts.N/
 * when another run had OUT.parts/), is merged into (OUT); false for any other path. */
static bool run_trace_of(const char *path, char *out, size_t len)
{
	const char *slash = strrchr(path, '/'), *end = slash;

	if (!slash)
		return false;
	while (end > path && end[-1] >= '0' && end[-1] <= '9')
		end--;
	if (end < slash) { /* .parts.N */
		if (end == path || end[-1] != '.')
			return false;
		end--;
	}
	if (end - path <= 6 || strncmp(end - 6, ".parts", 6))
		return false;
	return snprintf(out, len, "%.*s", (int)(end - 6 - path), path) < (int)len;
}

/* A trace with no folder of its own to put a report beside: a device or a pipe
 * (-o /dev/stdout), or under gputrace run the run's private parts folder, which
 * holds that trace until the run hands it on (and is removed). */
static bool trace_without_folder(const char *trace)
{
	const char *state = gt_cfg.run_state;
	size_t n = state ? strlen(state) : 0;
	struct stat st;

	if (n && !strncmp(trace, state, n) && !strncmp(trace + n, "/parts/", 7))
		return true;
	/* a descriptor's name is no folder's, even for a file redirected there
	 * (> log); a regular file elsewhere under /dev is in a folder (/dev/shm:
	 * a tmpfs, whose reports went to the start folder) */
	return !strcmp(trace, "/dev/stdout") || !strcmp(trace, "/dev/stderr") ||
	       !strcmp(trace, "/dev/stdin") || !strncmp(trace, "/dev/fd/", 8) ||
	       !strncmp(trace, "/proc/", 6) || (!stat(trace, &st) && !S_ISREG(st.st_mode));
}

/* <trace without .json[.gz]>.watchdog[.N].json; beside the run's trace
 * when this process writes into a gputrace run's OUT.parts/ (merged and
 * removed at the end of the run); gputrace-<program>-<pid>.watchdog[.N].json
 * in the folder the process started in when the trace has no folder. */
static int report_path(char *out, size_t len, unsigned nth)
{
	char trace[PATH_MAX], base[PATH_MAX];
	char *dot;

	if (writer__trace_name(trace, sizeof(trace)) || trace_without_folder(trace)) {
		const char *cwd = gt_start_cwd();
		size_t n = strlen(cwd);

		snprintf(trace, sizeof(trace), "%s%sgputrace-%s-%d.json", cwd,
			 n && cwd[n - 1] == '/' ? "" : "/", gt_exe(), (int)gt_st.pid);
	}
	snprintf(base, sizeof(base), "%s", trace);
	if (run_trace_of(trace, base, sizeof(base))) {
		/* run.json.parts/app-123.json -> run.app-123 */
		char part[PATH_MAX];

		snprintf(part, sizeof(part), "%s", strrchr(trace, '/') + 1);
		if ((dot = strstr(base, ".json")) && (!dot[5] || !strcmp(dot + 5, ".gz")))
			*dot = 0;
		if ((dot = strstr(part, ".json")))
			*dot = 0;
		if (strlen(base) + 1 + strlen(part) + 1 > sizeof(base))
			return -ENAMETOOLONG;
		strcat(base, ".");
		strcat(base, part);
	} else if ((dot = strrchr(base, '.')) && (!strcmp(dot, ".json") || !strcmp(dot, ".gz"))) {
		*dot = 0;
		if ((dot = strrchr(base, '.')) && !strcmp(dot, ".json"))
			*dot = 0;
	}
	if ((nth ? snprintf(out, len, "%s.watchdog.%u.json", base, nth)
		 : snprintf(out, len, "%s.watchdog.json", base)) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

static int write_file(const char *path, const struct jbuf *b)
{
	char tmp[PATH_MAX + 8];
	size_t off = 0;
	int fd, err = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	while (off < b->len) {
		ssize_t w = write(fd, b->p + off, b->len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			err = w < 0 ? -errno : -EIO;
			break;
		}
		off += (size_t)w;
	}
	if (close(fd) && !err)
		err = -errno;
	/* link() never replaces: another process's report of the same name
	 * (two ranks writing one trace name, each trace then its own) stays */
	if (!err && link(tmp, path))
		err = -errno;
	unlink(tmp);
	return err;
}

static unsigned reports_written;

/* The next free report name, taken: reports_written counts this process's, a
 * name taken by another process moves on to the next number. */
static int write_report(char *path, size_t len, const struct jbuf *b)
{
	int err = -EEXIST;

	for (unsigned tries = 0; err == -EEXIST && tries < 1000; tries++)
		if (!(err = report_path(path, len, reports_written)) &&
		    (err = write_file(path, b)) == -EEXIST)
			reports_written++;
	/* a name too long to make names none (the error line says "beside the trace") */
	if (err == -ENAMETOOLONG)
		path[0] = 0;
	return err;
}

static void report(const char *reason, const struct blocked *bl, unsigned nbl,
		   const struct pending_list *pend, uint64_t now, uint64_t began)
{
	struct jbuf b = { 0 };
	char path[PATH_MAX], flight[PATH_MAX] = "", merged[PATH_MAX];
	bool have_flight = false;
	int err;

	/* everything up to the hang on disk first; between capture windows
	 * every window's file is complete already (and a checkpoint would
	 * make none) */
	if (gt_tracing())
		gt_flush_sync(1000);
	/* with the recorder on, its window as the hang began (--flight-recorder),
	 * and since: asked for now, a window shorter than SEC held none of the
	 * calls that submitted the stuck work (0 events with 30 s and 300 s) */
	have_flight = !writer__flight_dump_now("watchdog", began, flight, sizeof(flight));
	jbuf__lit(&b, "{\"gputrace_watchdog\":1,");
	put_key(&b, "reason");
	put_str(&b, reason);
	jbuf__lit(&b, ",\"threshold_s\":");
	json__f64(&b, gt_cfg.watchdog_ms / 1000.0);
	jbuf__lit(&b, ",\"pid\":");
	json__u64(&b, (uint64_t)gt_st.pid);
	jbuf__lit(&b, ",\"program\":");
	put_str(&b, gt_exe());
	jbuf__lit(&b, ",\"time_us\":");
	json__us(&b, now);
	jbuf__lit(&b, ",\"flight_recorder\":");
	/* under gputrace run its part is merged into the run's trace, and removed */
	if (have_flight && run_trace_of(flight, merged, sizeof(merged)))
		snprintf(flight, sizeof(flight), "%s", merged);
	if (have_flight)
		put_str(&b, flight);
	else
		jbuf__lit(&b, "null");
	jbuf__lit(&b, ",\"blocked_threads\":[");
	for (unsigned i = 0; i < nbl; i++) {
		const char *why = NULL;
		uint64_t stack = unwind_thread(bl[i].tid, &why);

		if (i)
			jbuf__ch(&b, ',');
		jbuf__lit(&b, "{\"tid\":");
		json__u64(&b, (uint64_t)bl[i].tid);
		jbuf__lit(&b, ",\"thread\":");
		put_str(&b, thread_name(bl[i].tid, bl[i].name));
		jbuf__lit(&b, ",\"call\":");
		put_str(&b, gt_str_get(bl[i].call, NULL));
		jbuf__lit(&b, ",\"handle\":");
		json__hex(&b, bl[i].handle);
		jbuf__lit(&b, ",\"since_us\":");
		json__us(&b, bl[i].since & ~1ull);
		jbuf__lit(&b, ",\"blocked_s\":");
		json__f64(&b, (double)(now - bl[i].since) / 1e9);
		jbuf__lit(&b, ",\"stack\":");
		put_stack(&b, stack);
		if (!stack) {
			jbuf__lit(&b, ",\"no_stack\":");
			put_str(&b, why ? why : "the stack table is full");
		}
		jbuf__ch(&b, '}');
	}
	jbuf__lit(&b, "],\"pending\":[");
	for (unsigned i = 0; i < pend->n; i++) {
		const struct gt_pending_work *w = &pend->w[i];

		if (i)
			jbuf__ch(&b, ',');
		jbuf__ch(&b, '{');
		put_row(&b, w);
		jbuf__lit(&b, ",\"name\":");
		put_str(&b, gt_str_get(w->name, NULL));
		jbuf__lit(&b, ",\"correlation\":");
		json__u64(&b, w->corr);
		jbuf__lit(&b, ",\"submitted_us\":");
		json__us(&b, w->submitted_ns);
		jbuf__lit(&b, ",\"pending_s\":");
		json__f64(&b, now > w->submitted_ns ? (double)(now - w->submitted_ns) / 1e9 : 0);
		jbuf__ch(&b, '}');
	}
	jbuf__lit(&b, "],\"pending_not_listed\":");
	json__u64(&b, pend->more);
	jbuf__lit(&b, ",\"pending_not_tracked\":");
	json__u64(&b, atomic_load(&gt_pending_untracked));
	jbuf__lit(&b, "}\n");
	if (b.oom) {
		pr_err("watchdog: %s, but no memory for the report", reason);
	} else if ((err = write_report(path, sizeof(path), &b))) {
		size_t n = strlen(path);

		/* the file it tried, so the user knows which folder to fix; a very
		 * long name is shortened in the middle, the reason stays on the line */
		if (n)
			pr_err("watchdog: %s; could not write the report '%.*s%s%s': %s", reason,
			       n > 400 ? 300 : (int)n, path, n > 400 ? "..." : "",
			       n > 400 ? path + n - 80 : "", strerror(-err));
		else
			pr_err("watchdog: %s; could not write the report beside the trace: %s",
			       reason, strerror(-err));
	} else {
		reports_written++;
		gt_log(GT_LOG_ERROR, "watchdog: %s; report in %s%s%s", reason, path,
		       have_flight ? ", flight recorder window in " : "", have_flight ? flight : "");
	}
	jbuf__free(&b);
}

/* ---- the thread ---- */

/* The process is ending (watchdog__end): no look starts after this. */
static _Atomic bool closing;
/* the watchdog's thread, which an exit on it (a crash) does not wait for */
static _Atomic pid_t wd_tid;
/* The reason of the report under way ("" when none): what an exit that could
 * not wait for it says, as its stderr may already have the dump's line. */
static char reporting[160];
static _Atomic bool report_under_way;

static struct {
	uint64_t oldest_corr, oldest_seen, reported_corr;
	uint64_t alone_corr; /* reported with no thread blocked (find_blocked) */
} P;

/* The oldest unfinished work's submission as last looked (0: none), for the
 * flight recorder (watchdog__hang_since). */
static _Atomic uint64_t pending_since;

uint64_t watchdog__hang_since(void)
{
	uint64_t at = atomic_load_explicit(&pending_since, memory_order_relaxed);

	if (!gt_watchdog_on)
		return UINT64_MAX;
	if (!at)
		at = UINT64_MAX;
	for (struct ring *r = atomic_load_explicit(&gt_st.rings, memory_order_acquire); r;
	     r = r->next) {
		uint64_t since = atomic_load_explicit(&r->wait_since, memory_order_acquire);

		if (since && since < at && !atomic_load(&r->dead))
			at = since;
	}
	return at;
}

/* SEC as it was given, to the millisecond (1800, 2.5, 1.234): "%.3g" said
 * 1.8e+03, 8.64e+04 and 1.23 of them. */
static void threshold_text(char *out, size_t len)
{
	unsigned ms = gt_cfg.watchdog_ms, frac = ms % 1000;
	int n = snprintf(out, len, "%u", ms / 1000);

	if (frac && n > 0 && (size_t)n < len) {
		snprintf(out + n, len - (size_t)n, ".%03u", frac);
		for (size_t end = strlen(out); out[end - 1] == '0'; end--)
			out[end - 1] = 0;
	}
}

static void check(uint64_t limit)
{
	static struct blocked bl[WD_THREADS_MAX];
	static struct pending_list pend;
	uint64_t now = gt_clock_ns();
	bool fresh, stalled = false, waiting;
	const struct gt_pending_work *oldest = NULL;
	unsigned nbl, first;
	char reason[160], sec[24];

	/* the pending work first: a blocked thread's wait is told from a poll on
	 * the hang it was reported in by it */
	find_pending(&pend);
	for (unsigned i = 0; i < pend.n; i++)
		if (!oldest || pend.w[i].submitted_ns < oldest->submitted_ns)
			oldest = &pend.w[i];
	nbl = find_blocked(bl, now, limit, &fresh, &first, &pend, oldest ? oldest->corr : 0,
			   &waiting, &P.alone_corr);
	atomic_store_explicit(&pending_since, oldest ? oldest->submitted_ns : 0,
			      memory_order_relaxed);
	if (!oldest) {
		P.oldest_corr = 0;
	} else if (oldest->corr != P.oldest_corr) {
		P.oldest_corr = oldest->corr;
		P.oldest_seen = now;
	} else if (now - P.oldest_seen >= limit && P.reported_corr != oldest->corr &&
		   (!waiting || now - P.oldest_seen >= 2 * limit)) {
		/* Not while a thread is in a wait shorter than SEC: one that reaches SEC is
		 * reported with this work, naming the thread (a program that polls with
		 * waits shorter than SEC holds it back for one SEC more at most). A
		 * program on a loaded machine that began its wait a little after the
		 * submission got a report of the work and then one of its wait on it: the
		 * one hang reported twice. */
		stalled = true;
		P.reported_corr = oldest->corr;
	}
	if (!fresh && !stalled)
		return;
	threshold_text(sec, sizeof(sec));
	/* the call of the thread newly blocked: a thread reported before, listed
	 * first, named its own call again for another thread's new hang */
	if (fresh)
		snprintf(reason, sizeof(reason), "%u thread%s blocked in %s for over %s s", nbl,
			 nbl > 1 ? "s" : "", gt_str_get(bl[first].call, NULL), sec);
	else
		snprintf(reason, sizeof(reason), "device work not finished for over %s s (%s)",
			 sec, gt_str_get(oldest->name, NULL));
	/* the hang began with the stuck work's submission, or the new wait */
	uint64_t began = oldest ? oldest->submitted_ns : now;

	if (fresh && (bl[first].since & ~1ull) < began)
		began = bl[first].since & ~1ull;
	snprintf(reporting, sizeof(reporting), "%s", reason);
	atomic_store(&report_under_way, true);
	report(reason, bl, nbl, &pend, now, began);
	atomic_store(&report_under_way, false);
	/* the pending work is part of the hang just reported */
	if (oldest)
		P.reported_corr = oldest->corr;
	P.alone_corr = oldest && !nbl ? oldest->corr : 0;
}

static bool watching(void)
{
	return (gt_live() || atomic_load(&gt_watchdog_alone)) && !atomic_load(&gt_end_reason) &&
	       !atomic_load(&closing);
}

static void *watchdog_main(void *arg)
{
	uint64_t limit = gt_cfg.watchdog_ms * 1000000ull;
	uint64_t period = limit / 4;
	sigset_t all;

	(void)arg;
	lifecycle__thread_up();
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	prctl(PR_SET_NAME, "gputrace-wdog", 0, 0, 0);
	gt_in_tracer = 1; /* our vendor queries are not the program's */
	atomic_store(&wd_tid, gt_gettid());
	/* here, not in watchdog__start: that may run inside the program's
	 * first device wait (a paused process), which should not dlopen */
	if (stacks__init())
		pr_warn("watchdog: no libunwind: reports will have no host stacks");
	if (!U.sig)
		pick_signal();
	if (period < 100000000ull)
		period = 100000000ull;
	if (period > 1000000000ull)
		period = 1000000000ull;
	/* Between capture windows too (gt_live: recording or paused): the wait
	 * marks are kept while paused, and a hang does not wait for a window
	 * (nor does a wait that began in one end when it closes). Paused, this
	 * is one wake every `period`, nothing on the program's calls. And after
	 * a trace that could not be written (gt_watchdog_alone): the reports are
	 * files of their own. */
	while (watching()) {
		struct timespec ts = { (time_t)(period / 1000000000ull), (long)(period % 1000000000ull) };

		nanosleep(&ts, NULL);
		/* looking said before watching() is asked again: an exit that ends
		 * a watchdog left alone (lifecycle.c) sees one or the other */
		atomic_store(&gt_watchdog_looking, true);
		if (!watching()) {
			atomic_store(&gt_watchdog_looking, false);
			break;
		}
		check(limit);
		atomic_store(&gt_watchdog_looking, false);
	}
	return NULL;
}

static _Atomic bool started GT_STARTUP_STATE;

GT_FORK_CODE bool watchdog__started(void)
{
	return atomic_load_explicit(&started, memory_order_relaxed);
}

void watchdog__start(void)
{
	pthread_t t;

	if (!gt_watchdog_on || !gt_live() || atomic_load(&gt_end_reason) ||
	    atomic_exchange(&started, true))
		return;
	if (lifecycle__spawn(&t, watchdog_main)) {
		pr_warn("watchdog: could not start its thread; no hang reports");
		atomic_store(&started, false);
	}
}

GT_FORK_CODE void watchdog__forget(void)
{
	atomic_store(&started, false);
	atomic_store(&closing, false);
	atomic_store(&report_under_way, false);
	atomic_store(&wd_tid, 0);
	memset(&P, 0, sizeof(P));
	atomic_store(&pending_since, 0);
	reports_written = 0;
	atomic_store(&gt_pending_untracked, 0);
}

/*
 * The process ends (an exit, _exit, a fatal signal: lifecycle.c, finish()),
 * before its last drain: no look starts after this, and one under way ends
 * first, a report with its file and line. Until 2026-12-07 only a watchdog
 * left alone after a failed trace was waited for (300 ms); otherwise an exit
 * while a report was being written (the drain behind a busy program, its
 * dump's line already said) ended the process mid-report: no file, no line.
 * Bounded: a report stuck past WD_EXIT_WAIT_MS is said not to be, never
 * left half-said. Not on the watchdog's thread (it would wait for itself)
 * nor on the drain thread (the report waits for its cycles). Off the
 * start-up pages: only a process with the watchdog on gets here.
 */
__attribute__((noinline, cold)) void watchdog__end(void)
{
	unsigned ms = 0;

	/* closing said before looking is asked: the thread stores looking,
	 * then asks watching(); one of the two sees the other */
	atomic_store(&closing, true);
	atomic_store(&gt_watchdog_alone, false);
	if (!watchdog__started() || atomic_load(&wd_tid) == gt_gettid() ||
	    lifecycle__on_drain_thread())
		return;
	for (; ms < WD_EXIT_WAIT_MS && atomic_load(&gt_watchdog_looking); ms++)
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	/* said once: an exit and a signal may both have waited */
	if (atomic_load(&gt_watchdog_looking) && atomic_exchange(&report_under_way, false))
		pr_err("watchdog: %s; the process ended while its report was being written "
		       "(waited %u ms): no report", reporting, WD_EXIT_WAIT_MS);
}
