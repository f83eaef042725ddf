/* SPDX-License-Identifier: MIT */
/*
 * The shim's core: constructor, per-thread rings, gt_emit, correlation ids,
 * backend start-up, logging. Life-cycle hooks (signals, fork, exec, exit)
 * are in lifecycle.c; the writer (drain thread, trace file) is reached
 * through the hooks it registers (hooks.h).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <limits.h>
#include <errno.h>
#include <gnu/libc-version.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "backends/backend.h"
#include "capture.h"
#include "clock.h"
#include "config.h"
#include "cstr.h"
#include "futex.h"
#include "hooks.h"
#include "injection.h"
#include "ranges.h"
#include "registry.h"
#include "emit.h"
#include "ring.h"
#include "shim.h"
#include "stacks.h"
#include "watchdog.h"
#include "state.h"
#include "tables.h"
#include "trigger.h"
#include "hash.h"

extern char **environ;

GT_HIDDEN GT_TLS int gt_in_tracer;
GT_HIDDEN GT_TLS uintptr_t gt_guard_sp;
GT_HIDDEN struct gt_state gt_st GT_STARTUP_BSS;

GT_HIDDEN GT_TLS struct ring *gt_tls_ring; /* inline readers: inject/emit.h */
static GT_TLS int tls_tid;
static GT_TLS unsigned char tls_release_rounds; /* ring_release's calls on this thread */
GT_HIDDEN GT_TLS uint64_t gt_tls_corr_next, gt_tls_corr_end;

/* A ring pointer that means "this thread has exited: record nothing more". */
#define RING_GONE ((struct ring *)1)
#define CORR_BLOCK 1024

static pthread_key_t ring_key GT_STARTUP_STATE;
/* made with the first ring: a process that records nothing makes none */
static pthread_once_t ring_key_once GT_STARTUP_STATE = PTHREAD_ONCE_INIT;
static _Atomic bool ring_key_made GT_STARTUP_STATE;

extern const struct gt_backend *const __start_gt_backends[] __attribute__((weak, visibility("hidden")));
extern const struct gt_backend *const __stop_gt_backends[] __attribute__((weak, visibility("hidden")));

#define for_each_backend(b)                                                                \
	for (const struct gt_backend *const *b##_it = __start_gt_backends;                 \
	     b##_it && b##_it < __stop_gt_backends && ((b) = *b##_it, 1); b##_it++)

/* ---- logging ---- */

/* <the run's state folder>/name into path[PATH_MAX]; false when not under
 * gputrace run or the path is too long */
static bool run_path(char *path, const char *name)
{
	return gt_under_run() &&
	       snprintf(path, PATH_MAX, "%s/%s", gt_cfg.run_state, name) < PATH_MAX;
}

/*
 * Under gputrace run, a line that every process of the run would print (a
 * broken plug-in, a library that is missing) is printed by the first one
 * only: one marker file per distinct line in the run's state folder.
 */
static bool said_in_run(const char *line, size_t n)
{
	char path[PATH_MAX], name[32];
	uint64_t h;
	int fd;

	/* not under it also before the configuration is read (a process not traced) */
	if (!gt_under_run())
		return false;
	h = gt_fnv1a64(line, n);
	snprintf(name, sizeof(name), "said-%016llx", (unsigned long long)h);
	if (!run_path(path, name))
		return false;
	fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
	if (fd >= 0) {
		close(fd);
		return false;
	}
	return errno == EEXIST;
}

/*
 * One write appended to a file of the run's state folder (O_APPEND keeps the
 * lines of concurrent processes whole). 0, also when not under gputrace run,
 * or -errno.
 */
static int run_append(const char *name, const struct iovec *iov, int iovcnt)
{
	char path[PATH_MAX];
	struct stat st;
	size_t n = 0;
	int fd, err = 0;

	if (!gt_under_run())
		return 0;
	if (!run_path(path, name))
		return -ENAMETOOLONG;
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	for (int i = 0; i < iovcnt; i++)
		n += iov[i].iov_len;
	/* the whole line within ulimit -f, or none (SIGXFSZ: gt_fsize_allows) */
	if (fstat(fd, &st))
		err = -errno;
	else if (!gt_fsize_allows((uint64_t)st.st_size + n))
		err = -EFBIG;
	else if (writev(fd, iov, iovcnt) < 0)
		err = -errno;
	close(fd);
	return err;
}

bool gt_fsize_allows(uint64_t size)
{
	struct rlimit rl;

	return getrlimit(RLIMIT_FSIZE, &rl) || rl.rlim_cur == RLIM_INFINITY ||
	       size <= (uint64_t)rl.rlim_cur;
}

/*
 * The program closed its stderr (coreutils' programs do at exit): under
 * gputrace run the line goes to the run's state folder, and gputrace run
 * prints it at the end (nowhere left to say it if that fails).
 */
static void tell_the_run(const char *line, size_t n)
{
	run_append("unsaid", &(struct iovec){ (void *)line, n }, 1);
}

/*
 * A line of the run's list ("<what>\t<pid>[\t<text>]"), read by gputrace run
 * at the end (scripts/tool/run_files.c): the traces written, capture windows,
 * telemetry.
 */
int gt_run_note(char what, const char *text)
{
	char head[32];
	int n = snprintf(head, sizeof(head), "%c\t%d%s", what, (int)gt_st.pid, text ? "\t" : "");
	struct iovec line[] = { { head, (size_t)n },
				{ (void *)(text ? text : ""), text ? strlen(text) : 0 },
				{ "\n", 1 } };

	return run_append("traces", line, 3);
}

/* From a lock file's open to its descriptor's record; and across fork() */
static pthread_mutex_t run_lock_opening = PTHREAD_MUTEX_INITIALIZER;

void shim__run_locks_fork_prepare(void)
{
	pthread_mutex_lock(&run_lock_opening);
}

GT_FORK_CODE void shim__run_locks_fork_done(void)
{
	pthread_mutex_unlock(&run_lock_opening);
}

bool gt_run_lock_hold(struct gt_run_lock *l, const char *name)
{
	char path[PATH_MAX];
	struct stat st;
	int fd;

	if (!gt_under_run() || l->fd >= 0 || !run_path(path, name))
		return true;
	/* known before it is locked, and before a fork can copy it: the child
	 * closes its copy (gt_run_lock_drop), which would otherwise hold the
	 * lock it shares with ours once we let go */
	pthread_mutex_lock(&run_lock_opening);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0 && fstat(fd, &st)) {
		close(fd);
		fd = -1;
	}
	if (fd >= 0) {
		l->dev = st.st_dev;
		l->ino = st.st_ino;
		l->fd = fd;
	}
	pthread_mutex_unlock(&run_lock_opening);
	if (fd < 0)
		return true; /* the series twice rather than none */
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		close(fd);
		l->fd = -1;
		return false;
	}
	return true;
}

void gt_run_lock_drop(struct gt_run_lock *l)
{
	struct stat st;

	if (l->fd >= 0 && !fstat(l->fd, &st) && st.st_dev == l->dev && st.st_ino == l->ino)
		close(l->fd); /* the next process of the run samples */
	l->fd = -1;
}

void gt_log(int level, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n, saved = errno;
	bool each = level & GT_LOG_EACH;

	level &= ~GT_LOG_EACH;
	if (level > gt_cfg.log_level)
		return;
	memcpy(buf, "gputrace: ", 10);
	va_start(ap, fmt);
	n = vsnprintf(buf + 10, sizeof(buf) - 11, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	n += 10;
	if (n > (int)sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	/* one write: the line stays whole among the program's own output */
	if ((each || !said_in_run(buf, (size_t)n)) && write(STDERR_FILENO, buf, n) < 0 &&
	    errno == EBADF)
		tell_the_run(buf, (size_t)n);
	errno = saved;
}

/* ---- the reentrancy guard's slow path ---- */

/*
 * The guard is held. A nested call (a signal handler, our own code) runs
 * strictly deeper on the stack than the wrapper that holds it; a caller at
 * or above that frame means the frame was unwound without leaving (a
 * longjmp out of a signal handler back to the program's loop, which calls
 * again from the same depth). A cancelled thread's cleanup handler usually
 * runs deeper: its call is counted lost instead. Handlers on an alternate
 * signal stack are nested whatever their address. Only wrappers set
 * gt_guard_sp: our own code never loses the guard.
 */
GT_STARTUP_CODE bool gt_guard_stale(uintptr_t sp)
{
	stack_t ss;

	if (!gt_guard_sp || sp < gt_guard_sp)
		return false;
	if (!sigaltstack(NULL, &ss) && (ss.ss_flags & SS_ONSTACK))
		return false;
	return true;
}

/* ---- threads and rings ---- */

int gt_gettid(void)
{
	if (gt_unlikely(!tls_tid))
		tls_tid = (int)gt_rawsys(SYS_gettid, 0, 0); /* at every exit: rawsys.h */
	return tls_tid;
}

GT_HIDDEN void (*_Atomic gt_thread_exit_hook)(void);

static void ring_release(void *arg)
{
	struct ring *r = arg;
	void (*hook)(void) = atomic_load_explicit(&gt_thread_exit_hook, memory_order_relaxed);

	if (hook && r && r != RING_GONE)
		hook();

	/* Destructors of keys made after ours (the program's, once it had traced)
	 * run after this one, and may still call the GPU (a per-thread cache
	 * freed): the ring stays, set again for glibc's next round, until the
	 * one before its last (PTHREAD_DESTRUCTOR_ITERATIONS). The last is a
	 * sanitizer's: ThreadSanitizer's key, made before ours, destroys the
	 * thread's state there, and our release after it crashed the thread. */
	if (r && r != RING_GONE && ++tls_release_rounds < PTHREAD_DESTRUCTOR_ITERATIONS - 1 &&
	    !pthread_setspecific(ring_key, r))
		return;
	/* The drain thread frees it once everything in it is written; the name
	 * goes with it (/proc/self/task/TID is gone by the time it is drained). */
	if (r && r != RING_GONE) {
		prctl(PR_GET_NAME, r->name_exit, 0, 0, 0);
		/* its ranges never ended are drawn up to here */
		atomic_store_explicit(&r->dead_ns, gt_clock_ns(), memory_order_relaxed);
		atomic_store_explicit(&r->dead, 1, memory_order_release);
	}
	gt_tls_ring = RING_GONE;
}

static void ring_key_make(void)
{
	if (!pthread_key_create(&ring_key, ring_release))
		atomic_store(&ring_key_made, true);
}

static void ring_register(struct ring *r)
{
	struct ring *head = atomic_load_explicit(&gt_st.rings, memory_order_relaxed);

	do
		r->next = head;
	while (!atomic_compare_exchange_weak_explicit(&gt_st.rings, &head, r, memory_order_release,
						      memory_order_relaxed));
}

/* This library's first byte (the linker's symbol): its link map entry is
 * the one loaded there. */
extern const char __ehdr_start[] GT_HIDDEN;

struct load_order {
	uintptr_t libc_fn; /* an address inside libc */
	int n, self, libc; /* positions in the loader's list, -1 not seen */
};

static bool object_holds(const struct dl_phdr_info *info, uintptr_t addr)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && addr >= lo && addr - lo < ph->p_memsz)
			return true;
	}
	return false;
}

static int note_load_order(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct load_order *o = arg;

	(void)size;
	if ((const char *)info->dlpi_addr == __ehdr_start)
		o->self = o->n;
	else if (o->libc < 0 && object_holds(info, o->libc_fn))
		o->libc = o->n;
	o->n++;
	return o->self >= 0 && o->libc >= 0;
}

/*
 * Whether our destructor runs while the vendor libraries still work. The
 * loader finalizes objects in its list's order, dependents first: a
 * preloaded library sits before libc and every library the program loads,
 * so its destructor runs right after the program's own and before theirs.
 * Loaded later (CUDA's injection, a dlopen), those before it end first.
 */
static bool loaded_before_libc(void)
{
	struct load_order o = { .libc_fn = (uintptr_t)gnu_get_libc_version, .self = -1,
				.libc = -1 };

	dl_iterate_phdr(note_load_order, &o);
	return o.self >= 0 && o.libc > o.self;
}

/*
 * exit() runs atexit handlers in reverse order of registration, and the
 * loader's _dl_fini (every library destructor, the vendor runtimes' among
 * them) was registered when main() was entered. Ours, registered at the
 * first event, runs before those registered earlier (an early atexit, the
 * program's C++ static objects) and before every destructor: their GPU
 * calls were lost, uncounted. Preloaded, the trace is finished later, by
 * our destructor (vendor libraries still work then); else here.
 */
static void at_exit_finish(int status, void *unused)
{
	/* on_exit, not atexit: the flight recorder writes on a non-zero status */
	atomic_store(&gt_exit_status, status & 0xff);
	if (!loaded_before_libc())
		gt_finish("exit", 5000);
}

static void register_exit_handler(void)
{
	static _Atomic int registered GT_STARTUP_STATE;

	if (!atomic_exchange(&registered, 1))
		on_exit(at_exit_finish, NULL);
}

/* The process has had a first event (a first ring). */
static bool announce_late GT_STARTUP_STATE; /* trigger__announce at the first recording */
static _Atomic bool recording GT_STARTUP_STATE;

static struct ring *ring_for_thread(void)
{
	struct ring *r = gt_tls_ring;

	if (gt_likely(r != NULL))
		return r == RING_GONE ? NULL : r;
	r = ring__new(gt_cfg.buffer_kb * 1024, gt_gettid(),
		      atomic_fetch_add_explicit(&gt_st.thread_serial, 1, memory_order_relaxed) + 1);
	if (!r) {
		gt_tls_ring = RING_GONE;
		return NULL;
	}
	prctl(PR_GET_NAME, r->name_start, 0, 0, 0);
	gt_tls_ring = r;
	pthread_once(&ring_key_once, ring_key_make);
	if (atomic_load(&ring_key_made))
		pthread_setspecific(ring_key, r);
	ring_register(r);
	register_exit_handler();
	if (!atomic_exchange(&recording, true)) {
		lifecycle__hooks()->recording();
		if (announce_late)
			trigger__announce();
	}
	gt_start_writer();
	/* made while paused (an NVTX range keeps its stack here): no drain
	 * thread yet, and a window's first event, on this ring too, must start
	 * it. A limit of 0 sends the thread's next record to emit_slow. */
	if (!shim__writer_started())
		r->limit = 0;
	gt_range_fork_adopt(r);
	return r;
}

struct ring *shim__thread_ring(void)
{
	return ring_for_thread();
}

struct ring *shim__thread_ring_made(void)
{
	struct ring *r = gt_tls_ring;

	return (uintptr_t)r > 1 ? r : NULL;
}

/* (here, not in lifecycle.c: that file is built without the sanitizers,
 * whose builds have no TSC line for gt_clock_ns) */
GT_STARTUP_CODE GT_HIDDEN void shim__end_host(void)
{
	uint64_t expect = 0;

	atomic_store(&gt_st.host_end_tid, gt_gettid());
	/* a process that never read the clock does not start its line to end */
	atomic_compare_exchange_strong(&gt_st.host_end_ns, &expect, gt_clock_ns_unstarted());
	/* before the last reads of the rings: a launch returning now either sees the end or
	 * has its span read (cupti__launch_returned) */
	atomic_thread_fence(memory_order_seq_cst);
}

/* Called in a fork child: the parent's rings are not ours to drain. */
GT_FORK_CODE GT_HIDDEN void shim__forget_rings(void)
{
	struct ring *r = atomic_exchange(&gt_st.rings, NULL);

	gt_range_fork_carry(gt_tls_ring != RING_GONE ? gt_tls_ring : NULL);
	while (r) {
		struct ring *next = r->next;
		ring__free(r);
		r = next;
	}
	ring__overflow_forget();
	gt_tls_ring = NULL;
	tls_tid = 0;
	gt_tls_corr_next = gt_tls_corr_end = 0;
	/* the parent's corrections and gaps are not the child's */
	for (int i = 0; i < GT_ADJUST_REASONS; i++) {
		atomic_store(&gt_st.adjust_reason[i], 0);
		atomic_store(&gt_st.adjust_count[i], 0);
		atomic_store(&gt_st.adjust_max_ns[i], 0);
	}
	for (int i = 0; i < GT_GAPS_MAX; i++)
		atomic_store(&gt_st.gaps[i].reason, 0);
	atomic_store(&gt_st.ngaps, 0);
	/* else this thread's exit would mark the unmapped ring dead */
	if (atomic_load(&ring_key_made))
		pthread_setspecific(ring_key, NULL);
}


/* Slots a record of nargs arguments takes (nargs at most GT_ARGS_MAX). */
static inline unsigned record_slots(unsigned nargs)
{
	return 1 + (nargs > GT_ARGS_INLINE ? (nargs - GT_ARGS_INLINE + GT_ARGS_PER_EXT - 1) /
						     GT_ARGS_PER_EXT
					   : 0);
}

/* A record into nslots slots from seq of slots (mask: where they wrap; ~0 where they
 * do not), not yet published. */
static inline void record_fill(struct gt_event *slots, uint64_t mask, uint64_t seq,
			       const struct gt_event *ev, const struct gt_arg *args, unsigned nargs)
{
	struct gt_event *slot = &slots[seq & mask];
	unsigned a;

	/* the whole head (flags included), then this call's arg count over the caller's */
	memcpy(slot, ev, offsetof(struct gt_event, args));
	slot->nargs = (uint8_t)nargs;
	if (nargs)
		slot->args[0] = args[0];
	/* Continuation slots a whole slot at a time: its place once, not per argument. */
	for (a = GT_ARGS_INLINE; a < nargs; a += GT_ARGS_PER_EXT) {
		struct gt_arg *ext =
			(struct gt_arg *)&slots[(seq + 1 + (a - GT_ARGS_INLINE) / GT_ARGS_PER_EXT) & mask];
		const struct gt_arg *from = &args[a];

		_Static_assert(GT_ARGS_PER_EXT == 4, "one case per argument of a slot");
		switch (nargs - a) {
		default: ext[3] = from[3]; /* fall through */
		case 3: ext[2] = from[2]; /* fall through */
		case 2: ext[1] = from[1]; /* fall through */
		case 1: ext[0] = from[0];
		}
	}
}

/* A record into its nslots reserved slots of the ring from seq, then published. */
static inline void record_write(struct ring *r, uint64_t seq, unsigned nslots,
				const struct gt_event *ev, const struct gt_arg *args,
				unsigned nargs)
{
	record_fill(r->slots, r->mask, seq, ev, args, nargs);
	ring__publish(r, seq + nslots);
}

/* A full ring's record into its overflow (ring_overflow.c): 0, or -ENOSPC when
 * there is none to be had (the caller waits or drops). */
static int overflow_write(struct ring *r, unsigned nslots, const struct gt_event *ev,
			  const struct gt_arg *args, unsigned nargs)
{
	bool wake;
	struct gt_event *slot = ring__overflow_reserve(r, nslots, &wake);

	if (wake)
		lifecycle__hooks()->wake();
	if (!slot)
		return -ENOSPC;
	record_fill(slot, ~0ull, 0, ev, args, nargs);
	ring__overflow_publish(r, nslots);
	return 0;
}

/* The record where order puts it: into the overflow while the thread overflows (on
 * until the drain has read it all), else into the ring. True: written; else *seq is
 * the first of the ring's slots reserved for it, or -1 (no room in either). */
static bool place(struct ring *r, unsigned nslots, const struct gt_event *ev,
		  const struct gt_arg *args, unsigned nargs, int64_t *seq)
{
	bool wake;

	*seq = -1;
	if (atomic_load_explicit(&r->overflowing, memory_order_relaxed) &&
	    !overflow_write(r, nslots, ev, args, nargs))
		return true;
	/* (the overflow read to its end, the thread is back on the ring) */
	if (atomic_load_explicit(&r->overflowing, memory_order_relaxed))
		return false;
	*seq = ring__reserve(r, nslots, &wake);
	if (wake)
		lifecycle__hooks()->wake();
	return false;
}

/* Everything but the common cases: the thread's first event, a thread that
 * has exited, a ring at its limit (the drain to wake, a full ring, its overflow). */
static __attribute__((noinline)) int emit_slow(const struct gt_event *ev,
					       const struct gt_arg *args, unsigned nargs)
{
	struct ring *r = ring_for_thread();
	unsigned nslots;
	int64_t seq;

	if (gt_unlikely(!r)) {
		/* its ring went at its exit (a key destructor of glibc's third
		 * or fourth round called the GPU), or could not be made: not silently */
		gt_lost_add(GT_S_LOST_NO_THREAD_RING, 1);
		return -ECANCELED;
	}
	/* a ring made while paused: this is the window's first event here */
	gt_start_writer();
	if (nargs > GT_ARGS_MAX)
		nargs = GT_ARGS_MAX;
	nslots = record_slots(nargs);
	if (place(r, nslots, ev, args, nargs, &seq))
		return 0;
	/* no drain thread yet (an event while paused: a range's end, a late one
	 * of a window that never started it): the next event comes here too */
	if (gt_unlikely(!shim__writer_started()))
		r->limit = 0;
	/* the ring full: the drain thread's own ring is drained there and then, any
	 * other thread's goes on in its overflow */
	if (seq < 0 && !atomic_load_explicit(&r->overflowing, memory_order_relaxed)) {
		if (lifecycle__hooks()->own_ring_full(r))
			place(r, nslots, ev, args, nargs, &seq);
		if (seq < 0 && !overflow_write(r, nslots, ev, args, nargs))
			return 0;
	}
	/* no overflow left: --lossless waits for the drain (for the ring, or for the
	 * overflow to be read), then the record goes where there is room */
	if (gt_unlikely(seq < 0) && gt_cfg.lossless_ms && !ring__wait_room(r, nslots) &&
	    place(r, nslots, ev, args, nargs, &seq))
		return 0;
	if (gt_unlikely(seq < 0)) {
		/* a range's begin record is no event of the trace (its end record
		 * draws the range whole, and counts as lost where it is dropped):
		 * counted, a range lost whole counted twice, and one drawn from its
		 * end alone counted lost all the same */
		if (ev->type != GT_EV_RANGE_BEGIN)
			/* single writer: plain load/store, no locked instruction */
			atomic_store_explicit(&r->lost,
					      atomic_load_explicit(&r->lost, memory_order_relaxed) + 1,
					      memory_order_relaxed);
		return -ENOSPC;
	}
	record_write(r, (uint64_t)seq, nslots, ev, args, nargs);
	return 0;
}

int gt_emit_cancelled(uint64_t start_ns, uint64_t corr, uint32_t name, uint32_t cat, bool launch)
{
	struct gt_arg cancelled = { .key = GT_S_ARG_CANCELLED, .type = GT_ARG_I64, .v.i = 1 };
	struct gt_event ev = { .start_ns = start_ns, .end_ns = gt_clock_ns(), .corr = corr,
			       .name = name, .cat = cat, .type = GT_EV_HOST_SPAN,
			       .flags = launch ? GT_EVF_LAUNCH : 0 };

	return gt_emit(&ev, &cancelled, 1);
}

/* Paused, but the event lies in the window that just closed (a device span
 * read at the window's end, a call that ended just before it): it belongs
 * to that window's file, which the writer has not ended yet (or has: the
 * writer counts it late). One of an older window, whose file is ended for
 * sure, is counted lost here; anything else is outside every window. */
static __attribute__((noinline)) bool late_inside_window(const struct gt_event *ev)
{
	if (atomic_load_explicit(&gt_phase, memory_order_relaxed) != GT_PHASE_PAUSED)
		return false;
	if (capture__inside(ev->start_ns, ev->end_ns))
		return true;
	if (capture__in_closed_window(ev->start_ns, ev->end_ns))
		gt_lost_add(GT_S_LOST_WINDOW_LATE, 1);
	return false;
}

int gt_emit(const struct gt_event *ev, const struct gt_arg *args, unsigned nargs)
{
	struct ring *r = gt_tls_ring;
	uint64_t head;

	if (gt_unlikely(!gt_tracing()) && !late_inside_window(ev))
		return -ECANCELED;
	if (gt_unlikely((uintptr_t)r <= 1))
		return emit_slow(ev, args, nargs);
	/* the common case in one slot: at most the inline argument, room */
	if (gt_likely(nargs <= GT_ARGS_INLINE)) {
		if (gt_unlikely(!ring__try_one(r, &head)))
			return emit_slow(ev, args, nargs);
		record_write(r, head, 1, ev, args, nargs);
		return 0;
	}
	/* continuation slots (a launch's arguments), below the ring's limit: no
	 * reservation to refresh, no call (callgrind, bench_ze launch immediate:
	 * 3308 -> 3235 instructions a launch, two such records) */
	if (gt_likely(nargs <= GT_ARGS_MAX)) {
		unsigned nslots = record_slots(nargs);

		if (gt_likely(ring__try(r, nslots, &head))) {
			record_write(r, head, nslots, ev, args, nargs);
			return 0;
		}
	}
	return emit_slow(ev, args, nargs);
}

int gt_emit_paused_too(const struct gt_event *ev, const struct gt_arg *args, unsigned nargs)
{
	if (gt_tracing())
		return gt_emit(ev, args, nargs);
	if (atomic_load_explicit(&gt_phase, memory_order_relaxed) != GT_PHASE_PAUSED)
		return -ECANCELED;
	return emit_slow(ev, args, nargs);
}

void gt_emit_wait_room(unsigned timeout_ms)
{
	struct ring *r = gt_tls_ring;

	if ((uintptr_t)r <= 1 ||
	    (ring__used(r) <= (r->mask + 1) / 2 &&
	     !atomic_load_explicit(&r->overflowing, memory_order_relaxed)) ||
	    !gt_tracing() ||
	    /* nested in our own code (a plug-in's call the drain waits for):
	     * the drain cannot make room, as for a full ring (ring_wait.c) */
	    gt_in_tracer > 1 || lifecycle__hooks()->is_own_thread())
		return;
	gt_flush_sync(timeout_ms);
}

uint64_t gt_corr_next(void)
{
	if (gt_unlikely(gt_tls_corr_next == gt_tls_corr_end)) {
		/* one shared atomic per CORR_BLOCK calls, not per call */
		gt_tls_corr_next = atomic_fetch_add_explicit(&gt_st.corr_blocks, CORR_BLOCK,
							  memory_order_relaxed) + 1;
		gt_tls_corr_end = gt_tls_corr_next + CORR_BLOCK;
	}
	return gt_tls_corr_next++;
}

void gt_lost_add(uint32_t reason, uint64_t n)
{
	for (int i = 0; i < GT_LOST_REASONS; i++) {
		uint32_t cur = atomic_load_explicit(&gt_st.lost_reason[i], memory_order_acquire);

		if (!cur && atomic_compare_exchange_strong(&gt_st.lost_reason[i], &cur, reason))
			cur = reason;
		if (cur == reason) {
			atomic_fetch_add(&gt_st.lost_count[i], n);
			return;
		}
	}
}

void gt_adjust_add(uint32_t reason, uint64_t n, uint64_t correction_ns)
{
	for (int i = 0; i < GT_ADJUST_REASONS; i++) {
		uint32_t cur = atomic_load_explicit(&gt_st.adjust_reason[i], memory_order_acquire);

		if (!cur && atomic_compare_exchange_strong(&gt_st.adjust_reason[i], &cur, reason))
			cur = reason;
		if (cur != reason)
			continue;
		atomic_fetch_add(&gt_st.adjust_count[i], n);
		uint64_t max = atomic_load(&gt_st.adjust_max_ns[i]);
		while (correction_ns > max &&
		       !atomic_compare_exchange_weak(&gt_st.adjust_max_ns[i], &max, correction_ns))
			;
		return;
	}
}

int gt_gap_begin(uint32_t reason, uint64_t start_ns)
{
	unsigned i = atomic_fetch_add(&gt_st.ngaps, 1);

	if (i >= GT_GAPS_MAX)
		return -1;
	atomic_store(&gt_st.gaps[i].start_ns, start_ns);
	atomic_store(&gt_st.gaps[i].end_ns, 0);
	atomic_store_explicit(&gt_st.gaps[i].reason, reason, memory_order_release);
	return (int)i;
}

void gt_gap_end(int gap, uint64_t end_ns)
{
	if (gap >= 0 && gap < GT_GAPS_MAX)
		atomic_store(&gt_st.gaps[gap].end_ns, end_ns ? end_ns : 1);
}

GT_HIDDEN _Atomic int gt_phase GT_STARTUP_STATE;


/* threads in gt_phase_wait_done: a phase change wakes them only when there
 * are any (most exits have none: no futex call, nothing to bind) */
static _Atomic int phase_waiters GT_STARTUP_STATE;

GT_STARTUP_CODE void gt_phase_set(int phase)
{
	atomic_store(&gt_phase, phase);
	/* a second exit() waits for the first one's finish (lifecycle.c); the
	 * waiter counts itself before it reads the phase, we read the count
	 * after the store: one of us sees the other */
	if (atomic_load(&phase_waiters))
		gt_futex(&gt_phase, FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
}

bool gt_phase_wait_done(unsigned timeout_ms)
{
	uint64_t end = gt_clock_ns() + timeout_ms * 1000000ull;
	bool done = true;
	int phase;

	atomic_fetch_add(&phase_waiters, 1);
	while ((phase = atomic_load(&gt_phase)) == GT_PHASE_RUNNING || phase == GT_PHASE_PAUSED ||
	       phase == GT_PHASE_FINISHING) {
		uint64_t now = gt_clock_ns();

		if (now >= end) {
			done = false;
			break;
		}
		gt_futex_wait_ns(&gt_phase, phase, end - now);
	}
	atomic_fetch_sub(&phase_waiters, 1);
	return done;
}

/*
 * The drain thread starts with the process's first event (a thread's first
 * ring, or a backend that begins recording on its own), not at load: a
 * process that never makes a traced call (the shells, compilers and tools
 * of a job) gets no thread, no file and no wait at exit. Not once the
 * process is ending: what its last cycle finds is written by the thread
 * that ends it.
 */
static _Atomic bool writer_started GT_STARTUP_STATE;

bool shim__writer_started(void)
{
	return atomic_load(&writer_started);
}

/* The wall clock and ours, read together: the raw clock itself (the TSC line
 * is measured at the first event). Once a process (and a fork child). */
GT_STARTUP_SELDOM void shim__take_anchor(void)
{
	struct gt_clock_pair anchor;

	if (gt_st.anchor_clock_ns)
		return;
	anchor = gt_clock_pair_of(gt_clock_gettime_ns);
	gt_st.anchor_realtime_ns = (uint64_t)anchor.realtime_ns;
	gt_st.anchor_clock_ns = anchor.clock_ns;
}

/* The drain thread, started once: the anchor is read before its first cycle. */
static int start_drain(void)
{
	shim__take_anchor();
	return lifecycle__hooks()->start();
}

void gt_start_writer_paused(void)
{
	if (!gt_live() || atomic_load(&gt_end_reason) || atomic_exchange(&writer_started, true))
		return;
	lifecycle__arm_signals();
	if (start_drain())
		pr_warn("could not start the drain thread; recording what fits in the buffers");
}

void gt_start_writer(void)
{
	if (atomic_load_explicit(&writer_started, memory_order_relaxed) ||
	    atomic_load(&gt_end_reason) || !gt_tracing() || atomic_exchange(&writer_started, true))
		return;
	lifecycle__arm_signals();
	if (start_drain())
		pr_warn("could not start the drain thread; recording what fits in the buffers");
}

/* ---- backends ---- */

_Atomic unsigned gt_telemetry_devices;
_Atomic unsigned gt_ze_metric_devices;

GT_STARTUP_CODE bool gt_backend_enabled(unsigned enabled_by)
{
	/* the ITT collector records annotations whatever the GPU backends, and
	 * its __itt_resume/__itt_pause mark capture ranges */
	if (enabled_by == GT_BACKEND_ITT)
		return (gt_cfg.kinds & GT_KIND(ANNOTATION)) ||
		       gt_cfg.capture_range == GT_RANGE_PROFILER;
	return gt_cfg.backends & enabled_by;
}

void shim__backends_pending(void (*fn)(void *arg, const struct gt_pending_work *w), void *arg)
{
	const struct gt_backend *b;

	for_each_backend(b)
		if (b->pending && gt_backend_enabled(b->enabled_by))
			b->pending(fn, arg);
}

/* Start and exit, every process's, and a fork child's: functions of their
 * own, with no switch, whose jump table would be in .rodata
 * (GT_STARTUP_CONST). */
GT_STARTUP_CODE static __attribute__((noinline)) void backends_start_or_stop(bool start)
{
	const struct gt_backend *b;

	for_each_backend(b) {
		if (!gt_backend_enabled(b->enabled_by))
			continue;
		if (start) {
			if (b->init && b->init() < 0)
				pr_dbg("backend %s did not start", b->name);
		} else if (b->stop) {
			b->stop();
		}
	}
}

/* exec: not a hook of shim__backends_call, whose code every process runs at
 * start (its pages are counted) */
void shim__backends_exec(bool failed)
{
	const struct gt_backend *b;

	for_each_backend(b)
		if (b->exec && gt_backend_enabled(b->enabled_by))
			b->exec(failed);
}

/* release: not a hook of shim__backends_call either (a case there more than
 * doubled that start-up function's code) */
void shim__backends_release(void)
{
	const struct gt_backend *b;

	for_each_backend(b)
		if (b->release && gt_backend_enabled(b->enabled_by))
			b->release();
}

GT_FORK_CODE void shim__backends_fork_child(void)
{
	const struct gt_backend *b;

	for_each_backend(b)
		if (b->atfork_child && gt_backend_enabled(b->enabled_by))
			b->atfork_child();
}

/* The backend whose flush the drain thread is in, for the line of an exit that
 * gave up waiting for it: "the driver" blamed a plug-in's own wait. */
static const struct gt_backend *_Atomic flushing;

GT_HIDDEN const char *shim__flushing_backend(void)
{
	const struct gt_backend *b = atomic_load(&flushing);

	if (!b)
		return "the driver";
	if (!strcmp(b->name, "ze"))
		return "the Level Zero driver";
	if (!strcmp(b->name, "cupti"))
		return "CUPTI";
	if (!strcmp(b->name, "plugins"))
		return "a plug-in";
	return b->name;
}

/* out of the start-up stretch: no process that records nothing flushes */
static __attribute__((noinline)) void backend_flush(const struct gt_backend *b, bool final)
{
	atomic_store(&flushing, b);
	b->flush(final);
	atomic_store(&flushing, NULL);
}

GT_STARTUP_CODE GT_HIDDEN void shim__backends_call(enum gt_backend_hook hook, const char *path, void *handle)
{
	const struct gt_backend *b;

	if (hook == GT_HOOK_INIT || hook == GT_HOOK_STOP) {
		backends_start_or_stop(hook == GT_HOOK_INIT);
		return;
	}
	for_each_backend(b) {
		if (!gt_backend_enabled(b->enabled_by))
			continue;
		switch (hook) {
		case GT_HOOK_INIT:
		case GT_HOOK_STOP:
			break;
		case GT_HOOK_DLOPEN:
			if (b->on_dlopen)
				b->on_dlopen(path, handle);
			break;
		case GT_HOOK_FLUSH:
		case GT_HOOK_FLUSH_FINAL:
			if (b->flush)
				backend_flush(b, hook == GT_HOOK_FLUSH_FINAL);
			break;
		case GT_HOOK_WINDOW_OPEN:
		case GT_HOOK_WINDOW_CLOSE:
			if (b->window)
				b->window(hook == GT_HOOK_WINDOW_OPEN);
			break;
		case GT_HOOK_WINDOW_END:
			if (b->window_end)
				b->window_end();
			break;
		}
	}
}

/* When each registered backend's sample() is due next (1: never again); the
 * drain thread's own, started afresh with each process (a fork child's
 * backends sample anew). */
static uint64_t sample_due_at[64];
static bool sampled GT_STARTUP_STATE; /* sample_due_at is not all zero */

GT_HIDDEN uint64_t shim__backends_sample(uint64_t now_ns)
{
	uint64_t *due = sample_due_at;
	const struct gt_backend *b;
	uint64_t next = UINT64_MAX;
	unsigned i = 0;

	sampled = true;
	for_each_backend(b) {
		if (i >= sizeof(sample_due_at) / sizeof(sample_due_at[0]))
			break;
		if (b->sample && gt_backend_enabled(b->enabled_by) && due[i] != 1 && due[i] <= now_ns) {
			due[i] = b->sample(now_ns);
			if (!due[i])
				due[i] = 1; /* never again */
		}
		if (due[i] > 1 && due[i] < next)
			next = due[i];
		i++;
	}
	return next;
}

GT_HIDDEN void *shim__wrapper_for(const char *symbol)
{
	const struct gt_backend *b;

	for_each_backend(b) {
		void *w;
		if (gt_backend_enabled(b->enabled_by) && b->wrapper_for && (w = b->wrapper_for(symbol)))
			return w;
	}
	return NULL;
}

/* ---- real functions ---- */

void *gt_real(const char *symbol)
{
	/* the program may see a wrapped dlsym; this is the real one */
	return gt_dlsym_real(RTLD_NEXT, symbol);
}

/* ---- start-up ---- */

static void exe_name(char *out, size_t len)
{
	char path[4096];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
	const char *base = program_invocation_short_name;

	size_t k;

	if (n > 0) {
		path[n] = 0;
		base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	}
	if (!base || !*base)
		base = "unknown";
	/* no snprintf: its code is pages a program that prints nothing never touches */
	k = strnlen(base, len - 1);
	memcpy(out, base, k);
	out[k] = 0;
}

/* The program's name, read the first time it is needed (readlink of
 * /proc/self/exe costs ~6 us: not for a process that records nothing); a
 * fork child's is its parent's. */
const char *gt_exe(void)
{
	static char exe[256];

	if (!exe[0])
		exe_name(exe, sizeof(exe));
	return exe;
}

/* A start folder longer than gt_st.cwd (rare): on a page of its own. */
static char long_cwd[PATH_MAX];

const char *gt_start_cwd(void)
{
	return gt_st.cwd[0] ? gt_st.cwd : long_cwd;
}

/* Also the fork child's re-start: fresh identity, fresh file, fresh thread. */
GT_STARTUP_CODE GT_HIDDEN void shim__start_process(void)
{
	/* system calls of our own here (rawsys.h): no page of libc to touch */
	gt_st.pid = (pid_t)gt_rawsys(SYS_getpid, 0, 0);
	gt_st.start_realtime_ns = gt_rawsys_clock_ns(CLOCK_REALTIME);
	/* the anchor waits for the drain's start (start_drain): a process that
	 * records nothing reads no clock through libc and the vDSO, whose pages
	 * it would fault in for it */
	gt_st.anchor_realtime_ns = gt_st.anchor_clock_ns = 0;
	if (capture__wanted())
		shim__take_anchor();
	/* the file is opened later, maybe after the program changed directory */
	long cwd_len = gt_rawsys(SYS_getcwd, (long)gt_st.cwd, sizeof(gt_st.cwd));

	/* (not a path: the kernel's "(unreachable)", which getcwd() refuses) */
	if (cwd_len <= 0 || gt_st.cwd[0] != '/') {
		gt_st.cwd[0] = 0;
		if (cwd_len != -ERANGE || !getcwd(long_cwd, sizeof(long_cwd)))
			long_cwd[0] = 0;
	}
	lifecycle__hooks()->init();
	atomic_store(&writer_started, false);
	atomic_store(&recording, false);
	atomic_store(&gt_phase, capture__start(gt_st.anchor_clock_ns));
	/* Telemetry and time-based metrics are sampled by the drain thread,
	 * also in a process that makes no traced call (an idle program shows
	 * the GPUs' telemetry all the same): asked for, it starts now (in a
	 * paused process, with the first window). Its first sample, once the
	 * backends are initialized, makes the file. */
	if (sampled) { /* a fork child of a sampling parent */
		memset(sample_due_at, 0, sizeof(sample_due_at));
		sampled = false;
	}
	if (gt_sampling_wanted(&gt_cfg))
		gt_start_writer();
	/* a process that records its whole run is told of a trigger only to say
	 * so: it announces itself with its first recording, so the many that
	 * never record (shells, compilers) make no file in the run directory */
	announce_late = !gt_cap.controlled && !gt_cfg.flight_bytes;
	if (!announce_late)
		trigger__announce();
	/* a --delay window opens on the drain thread, at its time: that process
	 * needs one before its first event (a paused one gets it with its
	 * first window, capture__unwritten_request) */
	if (atomic_load(&gt_cap.start_at_ns) && !atomic_exchange(&writer_started, true) &&
	    start_drain())
		pr_warn("could not start the drain thread; recording what fits in the buffers");
}

GT_STARTUP_CODE bool shim__has_events(void)
{
	return atomic_load(&recording) || atomic_load(&gt_st.lost_reason[0]);
}

GT_STARTUP_CODE bool shim__recorded_anything(void)
{
	return atomic_load(&writer_started) || shim__has_events();
}

GT_STARTUP_CODE static int find_self(struct dl_phdr_info *info, size_t size, void *name)
{
	if ((const char *)info->dlpi_addr != __ehdr_start)
		return 0;
	*(const char **)name = info->dlpi_name;
	return 1;
}

/* Not dladdr(): it scans every symbol of the library for the nearest one,
 * in every process at start, GPU or not. Looked up once: the loader's
 * string lives as long as the library, which is never unloaded. */
GT_STARTUP_CODE const char *shim__self_name(void)
{
	static const char *_Atomic self_name GT_STARTUP_STATE;
	const char *name = atomic_load_explicit(&self_name, memory_order_relaxed);

	if (!name && dl_iterate_phdr(find_self, &name) && name && *name)
		atomic_store_explicit(&self_name, name, memory_order_relaxed);
	return name && *name ? name : NULL;
}

/* Whether an entry of list names the library name by another path (a
 * link, a relative path). Apart, not inlined: its 12 KiB of buffers would
 * put the common case's calls three pages down a stack that has not been
 * touched there yet. */
static __attribute__((noinline)) bool preloaded_by_realpath(const char *list, const char *name)
{
	char self[PATH_MAX], entry[PATH_MAX], real[PATH_MAX];
	const char *p;
	size_t n;

	if (!realpath(name, self))
		return false;
	for (p = list; *p; p += n + (p[n] != 0)) {
		n = gt_cstr_preload_entry_len(p);
		if (n && n < sizeof(entry)) {
			memcpy(entry, p, n);
			entry[n] = 0;
			if (realpath(entry, real) && !strcmp(real, self))
				return true;
		}
	}
	return false;
}

/* Whether an LD_PRELOAD entry is this library: the loader names a preloaded
 * library by its entry, so the same text answers without a syscall; else by
 * realpath. Plain loops (cstr.h), as in all of start-up. */
GT_STARTUP_CODE static bool preloaded(void)
{
	const char *list = gt_cstr_env(environ, gt_preload_var), *name = shim__self_name(), *p;
	size_t n, name_len;

	if (!list || !name)
		return false;
	name_len = gt_cstr_len(name);
	for (p = list; *p; p += n + (p[n] != 0)) {
		n = gt_cstr_preload_entry_len(p);
		if (n && n == name_len && gt_cstr_eq_n(p, name, n))
			return true;
	}
	return preloaded_by_realpath(list, name);
}

/*
 * A traced process points CUDA_INJECTION64_PATH and NVTX_INJECTION64_PATH at
 * this library and marks that it did (GPUTRACE_INJECTED=1). A child given an
 * environment without LD_PRELOAD keeps those, and the CUDA driver or NVTX
 * loads us into it anyway: such a child was not meant to be traced, and is
 * not (no file, no thread; the injection entry points only answer).
 */
GT_STARTUP_CODE static bool inherited_injection(void)
{
	const char *mark = gt_cstr_env(environ, gt_injected_var);

	return mark && gt_cstr_eq(mark, gt_injected_value) && !preloaded();
}

GT_STARTUP_CODE static void gt_init(void)
{
	int err = gt_tables__map();

	/* before anything that may use a table, entry points that only answer too */
	if (err) {
		pr_err("cannot map memory for the tracer's tables (%s): this process is not "
		       "traced", strerror(-err));
		return;
	}
	if (inherited_injection())
		return;
	config__parse(&gt_cfg, environ);
	gt_watchdog_on = gt_cfg.watchdog_ms != 0;
	lifecycle__init();
	/* libunwind is opened now, not inside the program's first call */
	if (gt_cfg.stacks)
		stacks__init();
	shim__start_process();
	shim__backends_call(GT_HOOK_INIT, NULL, NULL);
}

GT_STARTUP_CODE void gt_ensure_init_slow(void)
{
	int expect = 0;

	if (atomic_compare_exchange_strong(&gt_st.init_state, &expect, 1)) {
		gt_in_tracer++;
		gt_init();
		gt_in_tracer--;
		atomic_store_explicit(&gt_st.init_state, 2, memory_order_release);
	}
	/* init_state 1: another thread (or our own init, re-entered) is at
	 * work; the caller's event is skipped by gt_tracing() until it ends. */
}

/* Unit tests link the objects statically and start the tracer themselves. */
extern int gt_unit_test __attribute__((weak, visibility("hidden")));

/* The start-up stretch (event.h) begins on a page of its own: the code and
 * constants a process that records nothing runs fill three pages, and,
 * started anywhere in a page, would spread over four (a first touch each,
 * which costs on some VMs; the kernel maps the pages around a fault, so the
 * page faults stay the same). */
__asm__(".pushsection .text.sorted.gt_0page,\"ax\",@progbits\n\t.balign 4096\n"
	"gt_startup_begin:\n\t.popsection");
/* Where the constants end (gt_2end sorts right after gt_2const): local labels, in
 * the symbol table only, for the test that holds the stretch to its pages
 * (test_lifecycle.py). */
__asm__(".pushsection .text.sorted.gt_2end,\"ax\",@progbits\n"
	"gt_startup_end:\n\t.popsection");

/*
 * Preloaded, the trace ends in our destructor, inside the loader's
 * _dl_fini. A destructor run before ours (the program's own) that calls
 * exit() again ends the process from inside _dl_fini: glibc runs the exit
 * handlers still to run, and ours never comes (nor in a child forked
 * there). This handler, registered before the loader's (a preloaded
 * library's constructor runs before __libc_start_main registers _dl_fini),
 * runs after it: there it finishes the trace; after a whole _dl_fini,
 * whose destructors ran ours, it has nothing to do.
 */
static _Atomic bool destructor_ran GT_STARTUP_STATE;

GT_STARTUP_CODE static void exit_inside_destructors(int status, void *unused)
{
	if (atomic_load(&destructor_ran))
		return;
	atomic_store(&gt_exit_status, status & 0xff);
	gt_finish("exit", 5000);
}

GT_STARTUP_CODE __attribute__((constructor(101))) static void gt_constructor(void)
{
	if (&gt_unit_test && gt_unit_test)
		return;
	on_exit(exit_inside_destructors, NULL);
	gt_ensure_init();
}

/* For unit tests: start with this environment instead of the process's. */
GT_HIDDEN void gt_test_start(char *const *envp)
{
	config__parse(&gt_cfg, envp);
	gt_str_intern("");
	shim__start_process();
	atomic_store(&gt_st.init_state, 2);
}

/* DT_FINI (the Makefile's -fini): the loader calls it at every exit, and
 * crti's _fini sits at the far end of the text, a page fault of its own
 * in a process that records nothing. Both are empty; this one lies in the
 * start-up text, which the exit runs anyway. */
GT_STARTUP_CODE GT_HIDDEN void gt_fini(void)
{
}

GT_STARTUP_CODE __attribute__((destructor(101))) static void gt_destructor(void)
{
	atomic_store(&destructor_ran, true);
	gt_finish("exit", 5000);
}
