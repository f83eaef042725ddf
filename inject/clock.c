/* SPDX-License-Identifier: MIT */
/*
 * The TSC line behind gt_clock_ns() (see clock.h): how it is measured, kept
 * on CLOCK_MONOTONIC_RAW, and given up when it cannot be.
 *
 * CLOCK_MONOTONIC_RAW is, while the kernel's clocksource is the TSC, an
 * exact linear function of the TSC (never slewed). We measure that function:
 * anchors are (tsc, raw ns) pairs taken back to back; the rate is the slope
 * from the first anchor to the latest (its error shrinks as the baseline
 * grows), and the line is re-anchored every period (a quarter of the
 * baseline, 1 ms to 100 ms), bending towards the newest anchor over the next
 * period rather than jumping, so readings stay monotonic. Measured here: the
 * line stays within a few ns of the raw clock.
 *
 * All of it runs in the slow path of a reader that finds the period over,
 * under a try-lock: nobody waits, a reader that loses the race or arrives
 * mid-update reads clock_gettime itself.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"

#ifdef GT_CLOCK_TSC

GT_HIDDEN struct gt_tsc_clock gt_tsc;

enum { TSC_UNKNOWN, TSC_CALIBRATING, TSC_ON, TSC_UNUSABLE };

#define CALIBRATE_NS  10000000ull  /* first rate from this baseline */
#define PERIOD_MIN_NS 1000000ull
#define PERIOD_MAX_NS 100000000ull
#define TRIES         5            /* anchor pairs; the tightest is kept */
#define WINDOW_MAX    4000         /* ticks: a pair wider was interrupted */
#define ERR_FIXED_NS  2000.0       /* the line off by more (+ ERR_RATE of the gap) */
#define ERR_RATE      20e-6        /* means the TSC does not follow the raw clock */

/* check_clock's stand-ins for a loaded machine: an anchor's raw reading off
 * the line (within the pair's width), an updater preempted before it
 * publishes the new line, and a reader preempted while the line comes on;
 * and for a raw clock that went back (the line given up) */
#ifndef GT_CLOCK_AFTER_ANCHOR
#define GT_CLOCK_AFTER_ANCHOR(l, tsc, ns) ((void)0)
#endif
#ifndef GT_CLOCK_RAW_AFTER_GIVE_UP
#define GT_CLOCK_RAW_AFTER_GIVE_UP(ns) ((void)0)
#endif
#ifndef GT_CLOCK_GIVING_UP
#define GT_CLOCK_GIVING_UP(made_odd) ((void)0)
#endif
#ifndef GT_CLOCK_GIVE_UP_FINISHED_BY_READER
#define GT_CLOCK_GIVE_UP_FINISHED_BY_READER() ((void)0)
#endif
#ifndef GT_CLOCK_AFTER_STATE_READ
#define GT_CLOCK_AFTER_STATE_READ() ((void)0)
#endif
#ifndef GT_CLOCK_BEFORE_CALIBRATING_READ
#define GT_CLOCK_BEFORE_CALIBRATING_READ() ((void)0)
#endif

static _Atomic int state GT_STARTUP_BSS; /* read at every exit */
static atomic_flag updating GT_STARTUP_STATE = ATOMIC_FLAG_INIT;
/* under updating: */
static uint64_t first_tsc, first_ns, last_ns;
static double ns_per_tick;

/* The tightest of a few (rdtsc, clock_gettime, rdtsc) triples. */
static uint64_t window; /* its width in ticks */

static bool anchor(uint64_t *tsc, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < TRIES; i++) {
		uint64_t a = gt_rdtsc(), n = gt_clock_gettime_ns(), b = gt_rdtsc();

		if (b > a && b - a < best) {
			best = b - a;
			*tsc = a + (b - a) / 2;
			*ns = n;
		}
	}
	window = best;
	return best < WINDOW_MAX;
}

/*
 * A KVM guest's kvm-clock is the host's scaling of the TSC (pvclock), one
 * function of it on every vCPU while the host keeps its master clock: it
 * says so with PVCLOCK_TSC_STABLE_BIT in the page the vDSO reads, which
 * clock_gettime then reads without a system call. Without the bit each
 * vCPU has its own scaling, and no one line fits them all. The page:
 * [vvar_vclock] (Linux 6.x), else the page after [vvar]. Probed through a
 * pipe (a page that is not there gives EFAULT, where a load would raise
 * SIGBUS), then read as the vDSO reads it, at every renewal of the line.
 */
#define PVCLOCK_FLAGS_AT       29 /* struct pvclock_vcpu_time_info.flags */
#define PVCLOCK_TSC_STABLE_BIT 1
static const volatile uint8_t *pvclock_flags;

/* Where the pvclock page is mapped, from /proc/self/maps; 0: nowhere. */
static uintptr_t pvclock_page(void)
{
	char buf[4096], line[256];
	size_t len = 0;
	uintptr_t vvar = 0, vclock = 0;
	ssize_t n;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] != '\n') {
				if (len < sizeof(line) - 1)
					line[len++] = buf[i];
				continue;
			}
			line[len] = 0;
			len = 0;
			if (strstr(line, " [vvar_vclock]"))
				vclock = (uintptr_t)strtoull(line, NULL, 16);
			else if (strstr(line, " [vvar]"))
				vvar = (uintptr_t)strtoull(line, NULL, 16) + 4096;
		}
	}
	close(fd);
	return vclock ? vclock : vvar;
}

static bool kvm_clock_stable(void)
{
	uintptr_t page = pvclock_page();
	uint8_t flags = 0;
	int fds[2];
	bool readable;

	if (!page || pipe2(fds, O_CLOEXEC))
		return false;
	readable = write(fds[1], (const void *)(page + PVCLOCK_FLAGS_AT), 1) == 1 &&
		   read(fds[0], &flags, 1) == 1;
	close(fds[0]);
	close(fds[1]);
	if (!readable || !(flags & PVCLOCK_TSC_STABLE_BIT))
		return false;
	pvclock_flags = (const volatile uint8_t *)(page + PVCLOCK_FLAGS_AT);
	return true;
}

/* The kernel keeps the raw clock on the TSC (itself, or a KVM host's stable
 * kvm-clock), and the TSC ticks at one rate in every power state: then, and
 * only then, the line can follow it. */
static bool tsc_usable(void)
{
	static const char path[] = "/sys/devices/system/clocksource/clocksource0/"
				   "current_clocksource";
	unsigned a, b, c, d;
	char buf[16] = "";
	ssize_t n;
	int fd, order;

	if (!__get_cpuid(0x80000007, &a, &b, &c, &d) || !(d & (1u << 8)))
		return false;
	/* reads ordered after earlier loads (gt_rdtsc): LFENCE, or RDTSCP */
	order = gt_tsc_use_lfence();
	if (order < 0)
		return false;
	gt_tsc.use_lfence = (uint32_t)order;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[buf[n - 1] == '\n' ? n - 1 : n] = 0;
	return !strcmp(buf, "tsc") || (!strcmp(buf, "kvm-clock") && kvm_clock_stable());
}

static void store_line(uint64_t tsc0, uint64_t ns0, double slope, uint64_t span)
{
	atomic_store_explicit(&gt_tsc.tsc0, tsc0, memory_order_relaxed);
	atomic_store_explicit(&gt_tsc.ns0, ns0, memory_order_relaxed);
	atomic_store_explicit(&gt_tsc.mult, (uint64_t)(slope * 4294967296.0), memory_order_relaxed);
	atomic_store_explicit(&gt_tsc.span, span, memory_order_relaxed);
}

/* The first line: readers were on the raw clock until now. */
static void publish(uint64_t tsc0, uint64_t ns0, double slope, uint64_t span)
{
	uint32_t seq = atomic_load_explicit(&gt_tsc.seq, memory_order_relaxed);

	atomic_store_explicit(&gt_tsc.seq, seq + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	store_line(tsc0, ns0, slope, span);
	atomic_store_explicit(&gt_tsc.seq, seq + 2, memory_order_release);
}

struct line {
	uint64_t tsc0, ns0, mult, span;
	uint32_t seq;
};

/* A consistent copy of the line; false while it is being rewritten (a few
 * stores: waited for briefly, never for long). */
static bool read_line(struct line *l)
{
	for (int i = 0; i < 64; i++) {
		uint32_t seq = atomic_load_explicit(&gt_tsc.seq, memory_order_acquire);

		l->tsc0 = atomic_load_explicit(&gt_tsc.tsc0, memory_order_relaxed);
		l->ns0 = atomic_load_explicit(&gt_tsc.ns0, memory_order_relaxed);
		l->mult = atomic_load_explicit(&gt_tsc.mult, memory_order_relaxed);
		l->span = atomic_load_explicit(&gt_tsc.span, memory_order_relaxed);
		atomic_thread_fence(memory_order_acquire);
		if (!(seq & 1) && seq == atomic_load_explicit(&gt_tsc.seq, memory_order_relaxed)) {
			l->seq = seq;
			return true;
		}
	}
	return false;
}

/* The line at tsc, also before tsc0 (a CPU whose TSC reads a little behind). */
static uint64_t line_at(const struct line *l, uint64_t tsc)
{
	if (tsc >= l->tsc0)
		return l->ns0 + (uint64_t)(((unsigned __int128)(tsc - l->tsc0) * l->mult) >> 32);
	return l->ns0 - (uint64_t)(((unsigned __int128)(l->tsc0 - tsc) * l->mult) >> 32);
}

/* A reading at tsc can take the line: behind tsc0 (as line_at), or within its span. */
static bool line_holds(const struct line *l, uint64_t tsc)
{
	return tsc < l->tsc0 || tsc - l->tsc0 < l->span;
}

/*
 * A new line from the anchor (tsc, ns), starting where the old line is at the
 * moment it is replaced, never where it was at the anchor: until then readers
 * go on with the old line, and the updater may be preempted between the two
 * (this 2-core VM). A line bent down from the anchor's reading gave, after the
 * delay, values the old line had handed out already: a thread read 1647 ns
 * behind another's (check_clock, once in 35 runs). Its TSC is read once no
 * reader can take the old line any more (odd seq, then MFENCE and LFENCE:
 * neither read waits for earlier stores alone). It bends to meet the raw clock a period on, or
 * jumps to it (catch_up: behind, and unread since its period ended).
 * Returns where it starts.
 */
static uint64_t publish_from(const struct line *old, uint64_t tsc, uint64_t ns, uint64_t p,
			     bool catch_up)
{
	uint32_t seq = atomic_load_explicit(&gt_tsc.seq, memory_order_relaxed);
	uint64_t now, raw, start;
	double slope = ns_per_tick;

	atomic_store_explicit(&gt_tsc.seq, seq + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	_mm_lfence(); /* RDTSCP waits for no store: MFENCE, LFENCE, as the SDM has it */
	now = gt_rdtsc();
	raw = ns + (uint64_t)((double)(now > tsc ? now - tsc : 0) * ns_per_tick);
	start = line_at(old, now);
	if (catch_up && raw > start) {
		start = raw;
	} else {
		slope += ((double)raw - (double)start) / (double)p;
		if (slope < ns_per_tick / 2)
			slope = ns_per_tick / 2;
	}
	store_line(now, start, slope, p);
	atomic_store_explicit(&gt_tsc.seq, seq + 2, memory_order_release);
	return start;
}

static uint64_t period_ticks(uint64_t baseline_ns)
{
	uint64_t p = baseline_ns / 4;

	p = p < PERIOD_MIN_NS ? PERIOD_MIN_NS : p > PERIOD_MAX_NS ? PERIOD_MAX_NS : p;
	return (uint64_t)((double)p / ns_per_tick);
}

/*
 * Once the line is given up, no reading is below what it handed out (the
 * raw clock may be behind it by what made us give it up): readings stay
 * there until the raw clock passes it, as pvclock's own last value. That
 * floor is the given-up line at a TSC read after its sequence was made odd
 * for good: a reader's value counts only if the sequence was still even after
 * its TSC read (the fast path's check; the slow path checks again), so none
 * is past it. A reader that stops waiting for the give-up (its thread
 * preempted for WRITER_WAIT_NS; gone, in a child of fork) finishes it from
 * its own TSC read, later still: a floor taken before the sequence went odd
 * was short by what the line handed out meanwhile (5 ms, check_clock).
 */
static struct line given_up_line;       /* written once, before given_up_seq */
static _Atomic uint32_t given_up_seq;   /* odd: the sequence that gives the line up */
static _Atomic uint64_t given_up_floor; /* only rises */

static void finish_give_up(void)
{
	if (atomic_load_explicit(&given_up_seq, memory_order_acquire)) { /* the line was on */
		uint64_t floor = line_at(&given_up_line, gt_rdtsc()),
			 cur = atomic_load_explicit(&given_up_floor, memory_order_relaxed);

		while (cur < floor && !atomic_compare_exchange_weak_explicit(
					      &given_up_floor, &cur, floor, memory_order_relaxed,
					      memory_order_relaxed))
			;
	}
	/* the state first: a reader that finds the line off finds it given up,
	 * never calibrating (it would answer from the raw clock, below the floor) */
	atomic_store_explicit(&state, TSC_UNUSABLE, memory_order_release);
	atomic_store_explicit(&gt_tsc.on, 0, memory_order_release);
}

static void give_up(void)
{
	struct line l;

	if (atomic_load_explicit(&state, memory_order_relaxed) == TSC_ON && read_line(&l)) {
		given_up_line = l;
		atomic_store_explicit(&given_up_seq, l.seq + 1, memory_order_release);
		GT_CLOCK_GIVING_UP(0);
		/* release: a reader that finds it odd finds given_up_seq too */
		atomic_store_explicit(&gt_tsc.seq, l.seq + 1, memory_order_release);
		GT_CLOCK_GIVING_UP(1);
		atomic_thread_fence(memory_order_seq_cst);
		_mm_lfence();
	}
	finish_give_up();
}

static uint64_t raw_after_give_up(void)
{
	uint64_t ns = gt_clock_gettime_ns(),
		 floor = atomic_load_explicit(&given_up_floor, memory_order_acquire);

	GT_CLOCK_RAW_AFTER_GIVE_UP(ns);
	return ns > floor ? ns : floor;
}

/* Under updating. Returns the time to hand the caller. */
static uint64_t update(void)
{
	uint64_t tsc, ns, now, p;
	struct line l;

	switch (atomic_load_explicit(&state, memory_order_relaxed)) {
	case TSC_UNKNOWN:
		if (!tsc_usable() || !anchor(&first_tsc, &first_ns)) {
			give_up();
			return gt_clock_gettime_ns();
		}
		atomic_store_explicit(&state, TSC_CALIBRATING, memory_order_relaxed);
		return first_ns;
	case TSC_CALIBRATING:
		now = gt_clock_gettime_ns();
		if (now - first_ns < CALIBRATE_NS || !anchor(&tsc, &ns))
			return now;
		if (tsc <= first_tsc || ns <= first_ns) {
			give_up();
			return now;
		}
		ns_per_tick = (double)(ns - first_ns) / (double)(tsc - first_tsc);
		last_ns = ns;
		/* a little ahead of the raw readings just handed out, never behind
		 * them; the next period bends it back */
		ns += (uint64_t)((double)window * ns_per_tick / 2) + 1;
		p = period_ticks(ns - first_ns);
		publish(tsc, ns, ns_per_tick, p);
		atomic_store_explicit(&gt_tsc.on, 1, memory_order_release);
		atomic_store_explicit(&state, TSC_ON, memory_order_relaxed);
		return ns;
	case TSC_ON: {
		double err, allowed;

		if (!read_line(&l))
			return gt_clock_gettime_ns();
		/* No tight pair this time (a read preempted, on a loaded machine): the
		 * line goes on, past its period, to the next try. The raw clock could
		 * be a few ns behind what the line handed out. */
		if (!anchor(&tsc, &ns) || tsc <= first_tsc)
			return line_at(&l, gt_rdtsc());
		GT_CLOCK_AFTER_ANCHOR(l, tsc, ns);
		err = (double)ns - (double)line_at(&l, tsc);
		allowed = ERR_FIXED_NS + ERR_RATE * (double)(ns - last_ns);
		/* the TSC no longer follows the raw clock, or a KVM host says
		 * it may not */
		if (ns < last_ns || err > allowed || -err > allowed ||
		    (pvclock_flags && !(*pvclock_flags & PVCLOCK_TSC_STABLE_BIT))) {
			give_up();
			return raw_after_give_up();
		}
		ns_per_tick = (double)(ns - first_ns) / (double)(tsc - first_tsc);
		last_ns = ns;
		p = period_ticks(ns - first_ns);
		/* behind, and unread since its period ended: catch up at once; else
		 * bend to meet the raw clock one period on: no reading ever goes back */
		return publish_from(&l, tsc, ns, p, err > 0 && tsc - l.tsc0 > l.span + p);
	}
	default:
		return raw_after_give_up();
	}
}

/* Set while this thread rewrites the line: a signal handler interrupting it
 * must not wait for it. */
static __thread __attribute__((tls_model("initial-exec"))) int in_update;

#define WRITER_WAIT_NS 20000000ull /* then the writer is taken to be stopped */

/*
 * A consistent line, waiting for a writer preempted halfway through its few
 * stores rather than answering from the raw clock, which the line may be off
 * by up to half an anchor's window (hundreds of ns on a loaded machine):
 * either way, a raw answer could go back. Yields first, then sleeps, so a
 * writer waiting for a CPU gets one. A writer that never finishes (stopped
 * by a debugger; another thread's, caught mid-rewrite by fork) is given up
 * on after WRITER_WAIT_NS, once per rewrite: then false.
 */
static bool read_line_waiting(struct line *l)
{
	static _Atomic uint32_t abandoned_seq; /* odd: that rewrite is given up on */
	uint64_t until = 0;

	for (int tries = 0; !read_line(l); tries++) {
		uint32_t seq = atomic_load_explicit(&gt_tsc.seq, memory_order_acquire);
		uint64_t now;

		if (seq == atomic_load_explicit(&abandoned_seq, memory_order_acquire) ||
		    atomic_load_explicit(&state, memory_order_acquire) == TSC_UNUSABLE)
			return false;
		if (tries < 16) {
			sched_yield();
			continue;
		}
		now = gt_clock_gettime_ns();
		if (!until) {
			until = now + WRITER_WAIT_NS;
		} else if (now > until) {
			if (seq == atomic_load_explicit(&given_up_seq, memory_order_acquire)) {
				GT_CLOCK_GIVE_UP_FINISHED_BY_READER();
				finish_give_up();
			}
			/* release: who takes this shortcut finds the floor raised */
			atomic_store_explicit(&abandoned_seq, seq, memory_order_release);
			return false;
		}
		nanosleep(&(struct timespec){ 0, 50000 }, NULL);
	}
	return true;
}

/*
 * A fork child has only the thread that forked: another thread's renewal or
 * give-up never ends there. Without this its flag stayed held and the line
 * was never renewed again (drifting off the raw clock), and readers waited
 * 20 ms for a rewrite left odd. A give-up under way is finished (from this
 * later TSC read); a renewal cut between its stores left no line to trust, so
 * it is given up too (the raw clock, no floor: the fork took longer than the
 * few ns the line may have been ahead of it). A renewal of this
 * thread's own (a signal handler that forked) goes on in the child as it was.
 */
GT_FORK_CODE void gt_clock_fork_child(void)
{
	uint32_t seq = atomic_load_explicit(&gt_tsc.seq, memory_order_acquire);

	if (in_update)
		return;
	/* not once given up: the line, odd for good then, would be stretched to now */
	if (atomic_load_explicit(&state, memory_order_acquire) != TSC_UNUSABLE &&
	    ((seq & 1) || atomic_load_explicit(&given_up_seq, memory_order_acquire)))
		finish_give_up();
	atomic_flag_clear_explicit(&updating, memory_order_release);
}

/* (with the start and exit code: a process that records nothing runs it) */
GT_STARTUP_CODE uint64_t gt_clock_ns_unstarted(void)
{
	/* without libc's wrapper and the vDSO, whose pages such a process
	 * would touch for this alone (rawsys.h) */
	if (atomic_load_explicit(&state, memory_order_relaxed) == TSC_UNKNOWN)
		return gt_rawsys_clock_ns(GT_CLOCK_ID);
	return gt_clock_ns();
}

uint64_t gt_clock_slow(void)
{
	struct line l;
	uint64_t ns, tsc;

	if (atomic_load_explicit(&state, memory_order_acquire) == TSC_UNUSABLE)
		return raw_after_give_up();
	GT_CLOCK_AFTER_STATE_READ();
	/* a signal handler on the updater's thread: the old line, unless it
	 * came in the middle of the rewrite or there is none yet */
	if (in_update) {
		uint32_t given_up = atomic_load_explicit(&given_up_seq, memory_order_acquire);

		/* mid-give-up, past its odd sequence: finished here, from a TSC read
		 * later still (the floor only rises; the thread's own finish follows) */
		if (given_up && atomic_load_explicit(&gt_tsc.seq, memory_order_relaxed) == given_up) {
			finish_give_up();
			return raw_after_give_up();
		}
		return atomic_load_explicit(&gt_tsc.on, memory_order_acquire) && read_line(&l)
			       ? line_at(&l, gt_rdtsc())
			       : gt_clock_gettime_ns();
	}
	if (!atomic_load_explicit(&gt_tsc.on, memory_order_acquire)) {
		/* given up since this thread looked (finish_give_up turns the
		 * state before the line off) */
		if (atomic_load_explicit(&state, memory_order_acquire) == TSC_UNUSABLE)
			return raw_after_give_up();
		if (!atomic_flag_test_and_set_explicit(&updating, memory_order_acquire))
			goto update;
		/* calibrating: the raw clock, unless the line came on since
		 * this thread looked (preempted in between): by then the line
		 * may be behind the raw clock, and the next reading would go
		 * back */
		GT_CLOCK_BEFORE_CALIBRATING_READ();
		ns = gt_clock_gettime_ns();
		if (!atomic_load_explicit(&gt_tsc.on, memory_order_acquire))
			return atomic_load_explicit(&state, memory_order_acquire) == TSC_UNUSABLE
				       ? raw_after_give_up()
				       : ns;
	}
again:
	if (!read_line_waiting(&l))
		return raw_after_give_up();
	tsc = gt_rdtsc();
	/* rewritten or given up since: read again (give_up's floor) */
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&gt_tsc.seq, memory_order_relaxed) != l.seq)
		goto again;
	/* behind tsc0, or raced with a fresh line: the line still holds */
	if (line_holds(&l, tsc))
		return line_at(&l, tsc);
	/* the period is over: one reader renews it, the others go on with the
	 * old line (off by a few ns at most) while it is still the line: a
	 * reader preempted after reading it may find a newer one, which starts
	 * past the old line at tsc */
	while (atomic_flag_test_and_set_explicit(&updating, memory_order_acquire)) {
		struct line again;

		if (!read_line_waiting(&again))
			return raw_after_give_up();
		if (again.seq == l.seq)
			return line_at(&l, tsc);
		/* replaced (once the rewrite under way ends): the new line, unless
		 * it was rewritten or given up since (as above) */
		l = again;
		tsc = gt_rdtsc();
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&gt_tsc.seq, memory_order_relaxed) != l.seq)
			goto again;
		if (line_holds(&l, tsc))
			return line_at(&l, tsc);
	}
update:
	in_update = 1;
	ns = update();
	in_update = 0;
	atomic_flag_clear_explicit(&updating, memory_order_release);
	return ns;
}
#else
GT_FORK_CODE void gt_clock_fork_child(void)
{
}
#endif
