/* SPDX-License-Identifier: MIT */
/*
 * Crashes and signals: fault_crash ACTION [ARG] [WHERE]
 *   crash KIND WHERE   KIND: segv bus fpe abort assert ill, or a signal that ends
 *                      a process (pipe: a write to a pipe nobody reads; alrm,
 *                      vtalrm, prof: a timer; the others raised: usr1 usr2 xcpu
 *                      xfsz io pwr stkflt rtmin rt3 (SIGRTMIN+3) rtmax term int
 *                      hup quit); WHERE: main, worker (quiet workers hold
 *                      unwritten events), hot (in main while hot threads call),
 *                      worker-hot (in a worker, ditto)
 *   handled SIG        the program's own SA_SIGINFO handler for SIG (any of the
 *                      above) runs and _exits 40
 *   resumed SIG        the program's handler for SIG returns; it goes on tracing
 *   chained SIG        a crash reporter: its handler prints, resets SIG_DFL and
 *                      re-raises: the program dies by SIG
 *   ignored SIG        signal(SIG, SIG_IGN), raise: nothing happens (pipe: the
 *                      write to a pipe nobody reads fails with EPIPE)
 *   inherited SIG      SIG_IGN inherited from the parent holds (no signal() call)
 *   loop THREADS [paced]  hot threads (or bursts with pauses) until a signal
 *                      from outside ends it
 */
#include "fault.h"

#include <assert.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/time.h>

static const struct {
	const char *name;
	int sig;
} sig_names[] = {
	{ "segv", SIGSEGV }, { "bus", SIGBUS }, { "fpe", SIGFPE },   { "abort", SIGABRT },
	{ "term", SIGTERM }, { "int", SIGINT }, { "hup", SIGHUP },   { "quit", SIGQUIT },
	{ "ill", SIGILL },   { "usr1", SIGUSR1 }, { "usr2", SIGUSR2 }, { "pipe", SIGPIPE },
	{ "alrm", SIGALRM }, { "vtalrm", SIGVTALRM }, { "prof", SIGPROF }, { "xcpu", SIGXCPU },
	{ "xfsz", SIGXFSZ }, { "io", SIGIO }, { "pwr", SIGPWR }, { "stkflt", SIGSTKFLT },
};

static int sig_of(const char *name)
{
	/* real-time ones: SIGRTMIN is no constant */
	if (!strcmp(name, "rtmin"))
		return SIGRTMIN;
	if (!strcmp(name, "rt3"))
		return SIGRTMIN + 3;
	if (!strcmp(name, "rtmax"))
		return SIGRTMAX;
	for (size_t i = 0; i < sizeof(sig_names) / sizeof(sig_names[0]); i++)
		if (!strcmp(name, sig_names[i].name))
			return sig_names[i].sig;
	fault_write(2, "unknown signal %s\n", name);
	exit(2);
}

/* A write to a pipe whose reader is gone: SIGPIPE, or EPIPE where it is
 * ignored (the result). */
static ssize_t write_to_closed_pipe(void)
{
	int fds[2];

	if (pipe(fds))
		exit(2);
	close(fds[0]);
	return write(fds[1], "x", 1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A timer of `which` that fires in 10 ms (a CPU timer's: of CPU time spent
 * here); 5 s without it is a failure (status 1). */
static void timer_fires(int which)
{
	struct itimerval it = { .it_value = { 0, 10000 } };
	uint64_t until = now_ns() + 5000000000ull;

	setitimer(which, &it, NULL);
	while (now_ns() < until)
		if (which == ITIMER_REAL)
			pause();
}

/* Each fault the way real programs hit it, not by raise(). */
static void fault(int sig)
{
	switch (sig) {
	case SIGPIPE:
		write_to_closed_pipe();
		break;
	case SIGALRM:
		timer_fires(ITIMER_REAL);
		break;
	case SIGVTALRM:
		timer_fires(ITIMER_VIRTUAL);
		break;
	case SIGPROF:
		timer_fires(ITIMER_PROF);
		break;
	case SIGSEGV: {
		volatile int *p = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		*p = 1;
		break;
	}
	case SIGBUS: {
		/* a mapped file that shrank under the mapping */
		int fd = memfd_create("fault", 0);
		volatile char *p;

		if (fd < 0 || ftruncate(fd, 4096) < 0)
			exit(2);
		p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED || ftruncate(fd, 0) < 0)
			exit(2);
		p[0] = 1;
		break;
	}
	case SIGFPE:
#if defined(__x86_64__)
		/* integer division by zero in the CPU, not a UB the compiler sees */
		__asm__ volatile("xorl %%ecx, %%ecx\n\tmovl $1, %%eax\n\tcltd\n\tidivl %%ecx"
				 ::: "eax", "ecx", "edx", "cc");
#else
		raise(SIGFPE);
#endif
		break;
	case SIGILL:
		__builtin_trap();
		break;
	case SIGABRT:
		abort();
	default:
		raise(sig);
	}
}

static void crash(const char *kind)
{
	if (!strcmp(kind, "assert")) {
		volatile int calls_left = 0;
		assert(calls_left > 0);
	}
	fault(sig_of(kind));
}

struct crash_arg {
	const char *kind;
	bool hot;
};

static void *crash_worker(void *p)
{
	struct crash_arg *a = p;

	calls(300);
	report();
	if (a->hot)
		take_snapshot();
	crash(a->kind);
	return NULL;
}

static int do_crash(const char *kind, const char *where)
{
	bool hot = strstr(where, "hot") != NULL;
	struct crash_arg a = { kind, hot };

	start_quiet(3, 500);
	if (hot)
		start_hot(3);
	if (!strncmp(where, "worker", 6)) {
		pthread_t t;
		fault_thread(&t, NULL, crash_worker, &a);
		pthread_join(t, NULL);
		return 1;
	}
	calls(200);
	report();
	if (hot)
		take_snapshot();
	crash(kind);
	return 1;
}

static void on_signal_exit(int sig, siginfo_t *si, void *uc)
{
	(void)si, (void)uc;
	say("handled %s\n", strsignal(sig));
	_exit(40);
}

static volatile sig_atomic_t resumed;

static void on_signal_resume(int sig)
{
	(void)sig;
	resumed++;
}

static void on_signal_chain(int sig)
{
	/* what crash reporters do: tell, then let the default action happen */
	say("reporter saw %s\n", strsignal(sig));
	signal(sig, SIG_DFL);
	raise(sig);
}

/* A program of ordinary pace: bursts of calls, then a little sleep. */
static void *paced_thread(void *arg)
{
	(void)arg;
	for (;;) {
		for (int i = 0; i < 100; i++)
			hot_call();
		usleep(500);
	}
	return NULL;
}

static int do_loop(int threads, bool paced)
{
	if (paced) {
		for (int i = 0; i < threads; i++) {
			pthread_t t;
			fault_thread(&t, NULL, paced_thread, NULL);
		}
		while (FAULT_GET(&fault_shm->completed) < 100u * threads)
			sched_yield();
	} else {
		start_hot(threads);
	}
	say("ready\n");
	for (;;)
		pause();
	return 0;
}

int main(int argc, char **argv)
{
	const char *action = argc > 1 ? argv[1] : "";
	const char *arg = argc > 2 ? argv[2] : "segv";
	struct sigaction sa;

	fault_init();
	calls(1000);
	report();
	if (!strcmp(action, "crash"))
		return do_crash(arg, argc > 3 ? argv[3] : "main");
	if (!strcmp(action, "loop"))
		return do_loop(atoi(arg), argc > 3 && !strcmp(argv[3], "paced"));
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	if (!strcmp(action, "handled")) {
		sa.sa_sigaction = on_signal_exit;
		sa.sa_flags = SA_SIGINFO;
		sigaction(sig_of(arg), &sa, NULL);
		calls(10);
		report();
		fault(sig_of(arg));
		return 1;
	}
	if (!strcmp(action, "resumed")) {
		int sig = sig_of(arg);
		struct sigaction back;

		sa.sa_handler = on_signal_resume;
		sigaction(sig, &sa, NULL);
		raise(sig);
		raise(sig);
		/* it reads back its own handler, not ours */
		sigaction(sig, NULL, &back);
		say("handler ran %d times, reads back %s\n", (int)resumed,
		    back.sa_handler == on_signal_resume ? "its own" : "another");
		calls(10);
		report();
		return 0;
	}
	if (!strcmp(action, "chained")) {
		signal(sig_of(arg), on_signal_chain);
		calls(10);
		report();
		fault(sig_of(arg));
		return 1;
	}
	if (!strcmp(action, "ignored") || !strcmp(action, "inherited")) {
		int sig = sig_of(arg);
		struct sigaction cur;

		if (!strcmp(action, "ignored"))
			signal(sig, SIG_IGN);
		sigaction(sig, NULL, &cur);
		say("reads back %s\n", cur.sa_handler == SIG_IGN ? "SIG_IGN" : "another");
		if (sig == SIGPIPE) {
			ssize_t w = write_to_closed_pipe();

			say("write to a closed pipe: %s\n",
			    w < 0 && errno == EPIPE ? "EPIPE" : "not EPIPE");
		}
		raise(sig);
		kill(getpid(), sig);
		calls(10);
		report();
		return 0;
	}
	fault_write(2, "unknown action %s\n", action);
	return 2;
}
