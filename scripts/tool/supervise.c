// SPDX-License-Identifier: MIT
/*
 * gputrace run's hold on the command: it runs as our child, in our process
 * group, with our stdin, stdout and stderr, so a terminal's Ctrl-C, Ctrl-Z
 * and hang-up reach it directly, as they would untraced, and we stop and
 * go on with it. A signal sent to gputrace itself (kill PID, a batch
 * system's SIGTERM or SIGUSR1 before a time limit, sigqueue) is forwarded
 * to it; one the command got from the terminal too (the kernel sent it to
 * the whole group), or sent itself (kill(0, ...) reaches us as well), is
 * not sent again. We are the subreaper of what it starts, so processes
 * orphaned on the way are reaped here, and the run can wait for traced
 * ones that outlive the command. In the end we exit with its status, or
 * die by its signal.
 *
 * Signals are taken synchronously (blocked, read from a signalfd): no
 * handler runs, and the command inherits our dispositions untouched (a
 * SIG_IGN from nohup stays) and gets back the mask we were started with.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "inject/rundir.h"
#include "supervise.h"
#include "trace.h"

/* Signals that are the process's own doing (faults) or that only stop it
 * for the terminal: left alone. */
static bool leave_alone(int sig)
{
	switch (sig) {
	case SIGKILL: case SIGSTOP: case SIGSEGV: case SIGBUS: case SIGILL: case SIGFPE:
	case SIGTRAP: case SIGSYS: case SIGTTIN: case SIGTTOU:
		return true;
	}
	return false;
}

int sup__init(struct supervisor *s)
{
	memset(s, 0, sizeof(*s));
	s->child = -1;
	sigemptyset(&s->caught);
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction cur;

		if (leave_alone(sig) || sigaction(sig, NULL, &cur))
			continue;
		/* ignored when we were started (nohup): the command inherits
		 * that, and there is nothing to forward */
		if (!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_IGN)
			continue;
		sigaddset(&s->caught, sig);
	}
	sigaddset(&s->caught, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &s->caught, &s->old_mask))
		return -errno;
	s->sfd = signalfd(-1, &s->caught, SFD_CLOEXEC);
	if (s->sfd < 0)
		return -errno;
	/* orphans of the command's tree are reparented to us, and reaped */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	return 0;
}

int sup__spawn(struct supervisor *s, char *const argv[], char *const envp[])
{
	int pipefd[2], err = 0;
	ssize_t n;

	if (pipe2(pipefd, O_CLOEXEC))
		return -errno;
	fflush(NULL);
	s->child = fork();
	if (s->child < 0) {
		err = -errno;
		close(pipefd[0]);
		close(pipefd[1]);
		return err;
	}
	if (s->child == 0) {
		sigprocmask(SIG_SETMASK, &s->old_mask, NULL);
		execvpe(argv[0], argv, envp);
		/* the exec failed: tell the parent why (the pipe closes on a
		 * successful exec, so the parent reads nothing then) */
		err = errno;
		if (write(pipefd[1], &err, sizeof(err)) < 0)
			_exit(127);
		_exit(127);
	}
	close(pipefd[1]);
	do
		n = read(pipefd[0], &err, sizeof(err));
	while (n < 0 && errno == EINTR);
	close(pipefd[0]);
	if (n == (ssize_t)sizeof(err)) {
		waitpid(s->child, &s->status, 0);
		s->child_done = true;
		return -err;
	}
	return 0;
}

/* The parent of pid, from /proc (0 when it cannot be read). */
static pid_t parent_of(pid_t pid)
{
	char buf[512], *p = rundir__proc_stat((int)pid, buf, sizeof(buf));
	long ppid = 0;

	if (!p || sscanf(p, " %*c %ld", &ppid) != 1)
		return 0;
	return (pid_t)ppid;
}

bool sup__is_ours(pid_t pid)
{
	pid_t me = getpid();

	for (int depth = 0; pid > 1 && depth < 256; depth++) {
		if (pid == me)
			return true;
		pid = parent_of(pid);
	}
	return false;
}

/* Sent by someone else than us and the command's tree (which got it
 * already: kill(0, ...) or kill(-1, ...)), and not by the kernel (a
 * terminal sends to the whole foreground group, the command included). */
static bool from_outside(const struct signalfd_siginfo *si)
{
	int code = (int)si->ssi_code;

	if (code > 0) /* SI_KERNEL and the kernel's own codes */
		return false;
	return !si->ssi_pid || !sup__is_ours((pid_t)si->ssi_pid);
}

static void reap(struct supervisor *s)
{
	int st;
	pid_t pid;

	while ((pid = waitpid(-1, &st, WNOHANG | WUNTRACED)) > 0) {
		if (pid != s->child)
			continue;
		/* the command stopped (Ctrl-Z, a SIGTSTP or SIGSTOP sent to
		 * it or forwarded by us): stop with it, for the shell to see
		 * its job stopped; a SIGCONT (fg) goes on. Not on our own
		 * SIGTSTP: in an orphaned process group (a session of its own:
		 * ssh -t, setsid, a pty) the kernel leaves the command running,
		 * and we would stay stopped after it ended. */
		if (WIFSTOPPED(st)) {
			kill(getpid(), SIGSTOP);
			continue;
		}
		s->status = st;
		s->child_done = true;
	}
}

/* One signal: forwarded to targets (n pids) if it came from outside.
 * Returns its number, 0 for none. */
static int take_signal(struct supervisor *s, const pid_t *targets, size_t n)
{
	struct signalfd_siginfo si;
	ssize_t got = read(s->sfd, &si, sizeof(si));
	int sig;

	if (got != (ssize_t)sizeof(si))
		return 0;
	sig = (int)si.ssi_signo;
	if (sig == SIGCHLD) {
		reap(s);
		return sig;
	}
	if (from_outside(&si)) {
		for (size_t i = 0; i < n; i++) {
			if (si.ssi_code == SI_QUEUE) {
				union sigval v = { .sival_ptr = (void *)(uintptr_t)si.ssi_ptr };

				sigqueue(targets[i], sig, v);
			} else {
				kill(targets[i], sig);
			}
		}
	}
	/* Ctrl-Z or a SIGTSTP to us while the command runs: we stop when it
	 * does (reap); after it ended (waiting for stragglers) at once */
	if (sig == SIGTSTP && s->child_done)
		kill(getpid(), SIGSTOP);
	return sig;
}

void sup__wait_command(struct supervisor *s)
{
	reap(s);
	while (!s->child_done) {
		struct pollfd p = { .fd = s->sfd, .events = POLLIN };

		if (poll(&p, 1, -1) < 0 && errno != EINTR)
			break;
		if (p.revents & POLLIN)
			take_signal(s, &s->child, 1);
	}
}

bool sup__wait_others(struct supervisor *s, size_t (*alive)(void *ctx, pid_t *pids, size_t max),
		      void *ctx)
{
	pid_t pids[256];
	size_t n;

	while ((n = alive(ctx, pids, sizeof(pids) / sizeof(pids[0])))) {
		struct pollfd p = { .fd = s->sfd, .events = POLLIN };
		int sig;

		/* a process that is not our child (its parent still lives)
		 * ends without a SIGCHLD to us: look again now and then */
		if (poll(&p, 1, 200) < 0 && errno != EINTR)
			return false;
		if (!(p.revents & POLLIN))
			continue;
		sig = take_signal(s, pids, n);
		/* Ctrl-C (or a TERM, HUP, QUIT) while we wait: stop waiting */
		if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT)
			return false;
	}
	return true;
}

void sup__exit_as(int status)
{
	fflush(NULL);
	if (WIFEXITED(status))
		exit(WEXITSTATUS(status));
	/* die by the command's signal, for our parent to see; its core, if
	 * any, is the command's: none of ours */
	trace__die_by(WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL);
}
