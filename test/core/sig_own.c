/* sig_own SIGNO MODE: a program with its own use of signal SIGNO.
 * MODE sigaction: installs a handler with sigaction(); signal, sigset, bsd_signal,
 * sysv_signal, __sysv_signal, ssignal, sigvec: with that call (glibc does each past its
 * sigaction); query: only asks what is installed (must be SIG_DFL) and leaves it;
 * sigwait: blocks it, as every thread it starts then, and one of them takes it with
 * sigwaitinfo() (a server's signal thread); block: blocks every signal, takes none;
 * semantics: after the line, prints what each of those calls returns and leaves installed.
 * Then prints "ready PID", reads one line from stdin (the test signals it meanwhile),
 * prints how many SIGNO it handled and exits 0. Untraced and traced it prints the same. */
#define _GNU_SOURCE /* sigset(), sysv_signal() */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* in no header: glibc keeps sigvec for old binaries only */
struct old_sigvec {
	void (*sv_handler)(int);
	int sv_mask, sv_flags;
};
#ifdef __x86_64__
/* bound as an old binary binds it (dlvsym would take libc's own) */
extern int old_sigvec(int, const struct old_sigvec *, struct old_sigvec *);
__asm__(".symver old_sigvec, sigvec@GLIBC_2.2.5");
#endif
extern __sighandler_t bsd_signal(int, __sighandler_t);
extern __sighandler_t __sysv_signal(int, __sighandler_t);

/* sigset() is what the test is about: glibc marks it deprecated */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

static atomic_int got;

static void on_sig(int sig)
{
	atomic_fetch_add(&got, 1);
}

static void *signal_thread(void *arg)
{
	const sigset_t *set = arg;
	siginfo_t si;

	for (;;)
		if (sigwaitinfo(set, &si) > 0)
			atomic_fetch_add(&got, 1);
	return NULL;
}

static const char *name(__sighandler_t h)
{
	return h == SIG_DFL ? "SIG_DFL" : h == SIG_IGN ? "SIG_IGN" : h == SIG_HOLD ? "SIG_HOLD"
	       : h == SIG_ERR ? "SIG_ERR" : h == on_sig ? "on_sig" : "other";
}

/* what is installed for sig, and whether this thread blocks it */
static void show(int sig, const char *call, __sighandler_t ret)
{
	struct sigaction cur;
	sigset_t mask;

	sigaction(sig, NULL, &cur);
	pthread_sigmask(SIG_BLOCK, NULL, &mask);
	printf("%s -> %s: %s restart %d resethand %d nodefer %d masks-self %d blocked %d\n", call,
	       name(ret), name(cur.sa_handler), !!(cur.sa_flags & SA_RESTART),
	       !!(cur.sa_flags & SA_RESETHAND), !!(cur.sa_flags & SA_NODEFER),
	       sigismember(&cur.sa_mask, sig), sigismember(&mask, sig));
}

static void semantics(int sig)
{
	show(sig, "sigset HOLD", sigset(sig, SIG_HOLD));
	show(sig, "sigset HOLD again", sigset(sig, SIG_HOLD));
	show(sig, "sigset DFL", sigset(sig, SIG_DFL));
	show(sig, "siginterrupt 1", siginterrupt(sig, 1) ? SIG_ERR : SIG_DFL);
	show(sig, "signal", signal(sig, on_sig));
	show(sig, "siginterrupt 0", siginterrupt(sig, 0) ? SIG_ERR : SIG_DFL);
	show(sig, "bsd_signal", bsd_signal(sig, on_sig));
	show(sig, "ssignal", ssignal(sig, SIG_DFL));
	show(sig, "sysv_signal", sysv_signal(sig, on_sig));
	show(sig, "sigset", sigset(sig, on_sig));
	show(sig, "sigignore", sigignore(sig) ? SIG_ERR : SIG_IGN);
	show(sig, "sigset ERR", sigset(sig, SIG_ERR));
	printf("EINVAL %d, signal 0: %s\n", errno == EINVAL, name(signal(0, on_sig)));
#ifdef __x86_64__
	struct old_sigvec vec = { .sv_handler = on_sig, .sv_mask = 1 << 1, .sv_flags = 2 | 4 };
	struct old_sigvec ovec;

	printf("sigvec %d", old_sigvec(sig, &vec, &ovec));
	printf(" old %s mask %#x flags %d", name(ovec.sv_handler), ovec.sv_mask, ovec.sv_flags);
	old_sigvec(sig, NULL, &ovec);
	printf(" now %s mask %#x flags %d\n", name(ovec.sv_handler), ovec.sv_mask, ovec.sv_flags);
#endif
}

int main(int argc, char **argv)
{
	int sig = argc > 1 ? atoi(argv[1]) : SIGRTMIN + 7;
	const char *mode = argc > 2 ? argv[2] : "sigaction";
	struct sigaction sa = { .sa_handler = on_sig, .sa_flags = SA_RESTART }, old;
	char line[64];

	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, NULL, &old) || old.sa_handler != SIG_DFL) {
		fprintf(stderr, "sig_own: signal %d is not at SIG_DFL\n", sig);
		return 1;
	}
	if (!strcmp(mode, "sigwait")) {
		static sigset_t set;
		pthread_t t;

		sigemptyset(&set);
		sigaddset(&set, sig);
		if (pthread_sigmask(SIG_BLOCK, &set, NULL) ||
		    pthread_create(&t, NULL, signal_thread, &set))
			return 1;
	} else if (!strcmp(mode, "block")) {
		sigset_t all;

		sigfillset(&all);
		if (pthread_sigmask(SIG_BLOCK, &all, NULL))
			return 1;
	} else if (!strcmp(mode, "sigaction")) {
		if (sigaction(sig, &sa, NULL))
			return 1;
	} else if (!strcmp(mode, "signal")) {
		if (signal(sig, on_sig) != SIG_DFL)
			return 1;
	} else if (!strcmp(mode, "sigset")) {
		if (sigset(sig, on_sig) != SIG_DFL)
			return 1;
	} else if (!strcmp(mode, "bsd_signal")) {
		if (bsd_signal(sig, on_sig) != SIG_DFL)
			return 1;
	} else if (!strcmp(mode, "sysv_signal")) {
		if (sysv_signal(sig, on_sig) != SIG_DFL)
			return 1;
	} else if (!strcmp(mode, "__sysv_signal")) {
		if (__sysv_signal(sig, on_sig) != SIG_DFL)
			return 1;
	} else if (!strcmp(mode, "ssignal")) {
		if (ssignal(sig, on_sig) != SIG_DFL)
			return 1;
#ifdef __x86_64__
	} else if (!strcmp(mode, "sigvec")) {
		struct old_sigvec vec = { .sv_handler = on_sig }, ovec;

		if (old_sigvec(sig, &vec, &ovec) || ovec.sv_handler != SIG_DFL)
			return 1;
#endif
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	/* a handler without SA_RESTART (ThreadSanitizer's signal() installs one) interrupts the read */
	while (!fgets(line, sizeof(line), stdin)) {
		if (errno != EINTR)
			return 1;
		clearerr(stdin);
	}
	if (!strcmp(mode, "semantics"))
		semantics(sig);
	printf("handled %d\n", atomic_load(&got));
	return 0;
}
