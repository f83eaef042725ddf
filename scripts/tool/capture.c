// SPDX-License-Identifier: MIT
/*
 * gputrace capture [--duration SEC | --stop | --dump] PID... | --all
 *
 * Opens (or ends) a capture window in traced processes of the calling user,
 * or has their flight recorder write its window (--dump; any trigger does,
 * in a process that has one): each announces itself and its trigger signal
 * in the run directory (inject/rundir.h); the window's length in ms, or
 * RUNDIR_REQ_*, travels as sigqueue's value.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "inject/rundir.h"
#include "tool.h"

#define WHO "gputrace capture"

struct announce {
	int pid, sig;
	unsigned long long start, duration_ns; /* its --duration: an open's length */
	char mode[16], exe[256];
};

static int read_announce(const char *dir, int pid, struct announce *a)
{
	char path[PATH_MAX], line[320];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%d", dir, pid);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	memset(a, 0, sizeof(*a));
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (!strncmp(line, "pid ", 4))
			a->pid = atoi(line + 4);
		else if (!strncmp(line, "signal ", 7))
			a->sig = atoi(line + 7);
		else if (!strncmp(line, "start ", 6))
			a->start = strtoull(line + 6, NULL, 10);
		else if (!strncmp(line, "duration_ns ", 12))
			a->duration_ns = strtoull(line + 12, NULL, 10);
		else if (!strncmp(line, "mode ", 5))
			snprintf(a->mode, sizeof(a->mode), "%.15s", line + 5);
		else if (!strncmp(line, "exe ", 4))
			snprintf(a->exe, sizeof(a->exe), "%.255s", line + 4);
	}
	fclose(f);
	return a->pid == pid && a->sig > 0 ? 0 : -EINVAL;
}

/*
 * Whether every thread of the program blocks sig: then nothing takes it
 * but the program's own sigwait(), sigwaitinfo() or signalfd (a server's
 * signal thread), or nothing at all, and its use of the signal wins.
 * gputrace's own threads (named gputrace-*) block every signal: left out.
 * A thread gone meanwhile is left out; no thread read: not known (false).
 */
static bool program_blocks(int pid, int sig)
{
	char path[PATH_MAX], line[256];
	bool any = false, all = true;
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	while (d && all && (e = readdir(d))) {
		bool ours = false, blocked = false, seen = false;
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.32s/status", pid, e->d_name);
		f = fopen(path, "re");
		while (f && fgets(line, sizeof(line), f)) {
			if (!strncmp(line, "Name:\tgputrace-", 15)) {
				ours = true;
			} else if (!strncmp(line, "SigBlk:", 7)) {
				seen = true;
				blocked = strtoull(line + 7, NULL, 16) >> (sig - 1) & 1;
			}
		}
		if (f)
			fclose(f);
		if (ours || !seen)
			continue;
		any = true;
		all = blocked;
	}
	if (d)
		closedir(d);
	return any && all;
}

/*
 * Whether pid has ended and only waits for its parent to reap it (a
 * zombie): /proc and kill() still find it, and sigqueue() to it succeeds
 * for nothing (a rank the OOM killer ended, whose launcher has not waited
 * for it yet, was told "window opens", after a second's wait). A leader
 * that exited while other threads run is a zombie too, with more than one
 * thread: alive. Not readable: not known (false).
 */
static bool exited(int pid)
{
	char path[64], line[128];
	bool zombie = false;
	int threads = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "State:", 6)) {
			const char *c = line + 6 + strspn(line + 6, " \t");

			zombie = *c == 'Z' || *c == 'X';
		} else if (!strncmp(line, "Threads:", 8)) {
			threads = atoi(line + 8);
		}
	}
	fclose(f);
	return zombie && threads <= 1;
}

/*
 * The process's handler takes a --stop's mark away, and makes an open's
 * (inject/trigger.c), when the signal is delivered, a moment after sigqueue()
 * returns: waited for (marked: until it is there), so that a capture right
 * after this one finds the window ended (an open at once was refused "a window
 * is open already", 1 run in 6 on a loaded machine), or open. Bounded: a
 * stopped process (SIGSTOP, a debugger) takes the request later; one that is
 * gone, or ends meanwhile, takes none (false).
 */
static bool wait_mark(const char *path, int pid, bool marked)
{
	struct timespec step = { 0, 200000 };

	for (int i = 0; i < 5000 && !access(path, F_OK) != marked; i++) {
		/* gone, or a zombie (looked at every 10 ms: /proc is read) */
		if ((kill(pid, 0) && errno == ESRCH) || (i % 50 == 49 && exited(pid)))
			return false;
		nanosleep(&step, NULL);
	}
	return true;
}

/*
 * Whether the program keeps the signal blocked: a thread being created is
 * started with every signal blocked, and its creator blocks them all while
 * it creates it (glibc's pthread_create; a sanitizer's waits there for the
 * thread to start), so a look at that moment found every thread blocking
 * (`capture --all`, 1 run in 10 under ThreadSanitizer). Looked at again for
 * 200 ms: a program that waits for the signal itself blocks it throughout.
 */
static bool program_blocks_for_good(int pid, int sig)
{
	for (int i = 0; i < 20; i++) {
		if (!program_blocks(pid, sig))
			return false;
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	}
	return true;
}

/* One process: 0 triggered, 1 refused or failed (one line said why). */
static int trigger_one(const char *dir, int pid, int ms, bool quiet_stale)
{
	char proc[64], path[PATH_MAX];
	struct announce a;
	struct stat st;
	union sigval v = { .sival_int = ms };
	bool taken = true;
	int err;

	snprintf(proc, sizeof(proc), "/proc/%d", pid);
	if (stat(proc, &st)) {
		if (!quiet_stale)
			fprintf(stderr, WHO ": no process %d\n", pid);
		goto stale;
	}
	if (exited(pid)) {
		/* its announcement (a SIGKILL leaves it) is stale */
		if (!quiet_stale)
			fprintf(stderr, WHO ": process %d has ended (its parent has not reaped it "
					"yet): nothing to trigger\n", pid);
		goto stale;
	}
	err = read_announce(dir, pid, &a);
	/* --all listed it, and its announcement is gone: it is exec'ing (the next
	 * image, if traced, announces itself in a moment: waited for, 1 s at most)
	 * or ending (a helper process that lived a moment, as a sanitizer's
	 * symbolizer): that one is left out without a word */
	for (int i = 0; quiet_stale && err == -ENOENT && i < 100 && !kill(pid, 0); i++) {
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
		err = read_announce(dir, pid, &a);
	}
	if (quiet_stale && err == -ENOENT)
		return -1;
	/* before the owner: a file left by a process that is gone, whose pid another
	 * user's process has now, is stale, not that user's */
	if (!err && a.start && a.start != rundir__start_time(pid)) {
		if (!quiet_stale)
			fprintf(stderr, WHO ": process %d is not traced by gputrace (its pid was "
					"reused)\n", pid);
		goto stale;
	}
	if (st.st_uid != geteuid()) {
		fprintf(stderr, WHO ": refused: process %d belongs to another user (uid %u); "
				"only your own processes can be triggered\n", pid, (unsigned)st.st_uid);
		return 1;
	}
	if (err) {
		fprintf(stderr, WHO ": process %d is not traced by gputrace, or cannot be triggered "
				"(no %s/%d: it handles the capture signal itself, or capture is off)\n",
			pid, dir, pid);
		return 1;
	}
	if (ms == RUNDIR_REQ_DUMP && strcmp(a.mode, "flight")) {
		fprintf(stderr, WHO ": %d (%s) has no flight recorder (--flight-recorder): "
				"nothing to dump\n", pid, a.exe);
		return 1;
	}
	if (!strcmp(a.mode, "whole")) {
		printf(WHO ": %d (%s): records its whole run already (started without --start "
			      "paused, --delay or --duration): nothing to do\n", pid, a.exe);
		return 0;
	}
	snprintf(path, sizeof(path), "%s/%d%s", dir, pid, RUNDIR_WINDOW_SUFFIX);
	if (ms == RUNDIR_REQ_STOP && access(path, F_OK)) {
		/* the process marks its open window (inject/trigger.c) */
		fprintf(stderr, WHO ": %d (%s): no window is open: nothing to end\n", pid, a.exe);
		return 1;
	}
	if (ms >= 0 && !access(path, F_OK)) {
		/* an open request while one is open (or asked for) changes nothing there:
		 * said, as --stop with none open is (it printed "window opens") */
		fprintf(stderr, WHO ": %d (%s): a window is open already: nothing to open "
				"(--stop ends it)\n", pid, a.exe);
		return 1;
	}
	if (program_blocks_for_good(pid, a.sig)) {
		/* the signal would wait, or go to the program's own sigwait */
		fprintf(stderr, WHO ": %d (%s): every thread of the program blocks signal %d (it "
				"waits for the signal itself, or keeps it out): cannot be triggered "
				"(GPUTRACE_CAPTURE_SIGNAL picks another)\n", pid, a.exe, a.sig);
		return 1;
	}
	if (sigqueue(pid, a.sig, v)) {
		fprintf(stderr, WHO ": cannot signal %d: %s\n", pid, strerror(errno));
		return 1;
	}
	/* a flight recorder marks no window (its dump is written in a cycle): each
	 * one was waited for 1 s for nothing (capture --all on 8 of them: 12 s) */
	if (ms == RUNDIR_REQ_STOP)
		taken = wait_mark(path, pid, false);
	else if (ms >= 0 && strcmp(a.mode, "flight"))
		/* the handler marks an open as it takes it: an open right after this one
		 * (capture PID PID, or two captures at once) was sent too, and said
		 * "window opens" for nothing, or moved the window's end; a window shorter
		 * than a look may end unseen: waited for, 1 s at most */
		taken = wait_mark(path, pid, true);
	if (!taken) {
		fprintf(stderr, WHO ": %d (%s) ended before it took the request\n", pid, a.exe);
		return 1;
	}
	if (!strcmp(a.mode, "flight"))
		printf(WHO ": %d (%s): flight recorder writes its window\n", pid, a.exe);
	else if (ms < 0)
		printf(WHO ": %d (%s): window ends\n", pid, a.exe);
	else if (ms)
		printf(WHO ": %d (%s): window of %d.%03d s\n", pid, a.exe, ms / 1000, ms % 1000);
	else if (a.duration_ns)
		/* its own --duration bounds the window */
		printf(WHO ": %d (%s): window of %g s (its --duration)\n", pid, a.exe,
		       a.duration_ns / 1e9);
	else
		printf(WHO ": %d (%s): window opens (until --stop or exit)\n", pid, a.exe);
	return 0;
stale:
	snprintf(path, sizeof(path), "%s/%d%s", dir, pid, RUNDIR_WINDOW_SUFFIX);
	unlink(path);
	snprintf(path, sizeof(path), "%s/%d", dir, pid);
	unlink(path); /* a process that is gone left its announcement (SIGKILL) */
	return quiet_stale ? -1 : 1;
}

/* A pid: digits only, 1 to INT_MAX (a larger number would wrap to another process's). */
static bool parse_pid(const char *s, int *pid)
{
	char *end;
	long long v;

	if (!*s || strspn(s, "0123456789") != strlen(s))
		return false;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || v < 1 || v > INT_MAX)
		return false;
	*pid = (int)v;
	return true;
}

static int parse_ms(const char *s, int *ms)
{
	char *end;
	double v;

	/* a decimal number, as GPUTRACE_DURATION's (30, 0.5, 1e-3): strtod also
	 * took a blank before it, hex (0x0.4p0: 0.25 s) and inf */
	if (!*s || strspn(s, "0123456789.eE+-") != strlen(s) || *s == '+' || *s == '-')
		return -1;
	errno = 0;
	v = strtod(s, &end);
	/* at most 2e6 s: the request's value is the length in ms, an int */
	if (*end || errno || !(v >= 0.001) || v > 2e6)
		return -1;
	*ms = (int)(v * 1000 + 0.5);
	return *ms > 0 ? 0 : -1;
}

int cmd_capture(int argc, char **argv)
{
	char dir[PATH_MAX];
	bool all = false, bad = false, stop = false, dump = false;
	int ms = 0, rc = 0, n = 0, err, pid;
	const char *v;

	for (int i = 1; i < argc; i++) {
		if ((v = arg__value(argc, argv, &i, "--duration", WHO, &bad))) {
			if (bad)
				return 2;
			if (parse_ms(v, &ms)) {
				fprintf(stderr, WHO ": --duration wants seconds, a decimal number "
						"from 0.001 to 2000000 (such as 30 or 0.5), not '%s'\n", v);
				return 2;
			}
		} else if (!strcmp(argv[i], "--stop")) {
			stop = true;
		} else if (!strcmp(argv[i], "--dump")) {
			dump = true;
		} else if (!strcmp(argv[i], "--all")) {
			all = true;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf("usage: gputrace capture [--duration SEC | --stop | --dump] PID... | --all\n"
			       "  --duration SEC  the window lasts SEC seconds (default: the process's own\n"
			       "                  --duration, else until --stop or its exit)\n"
			       "  --stop          end the open window\n"
			       "  --dump          write the flight recorder's window (--flight-recorder)\n"
			       "  --all           every traced process of yours (the run directory's)\n");
			return 0;
		} else if (!parse_pid(argv[i], &pid)) {
			fprintf(stderr, WHO ": '%s' is not a pid (1 to %d); use PID..., --all, "
					"--duration SEC, --stop or --dump\n", argv[i], INT_MAX);
			return 2;
		}
	}
	if (stop + dump + !!ms > 1) {
		fprintf(stderr, WHO ": --stop, --duration and --dump do not go together\n");
		return 2;
	}
	if (stop)
		ms = RUNDIR_REQ_STOP;
	if (dump)
		ms = RUNDIR_REQ_DUMP;
	if ((err = rundir__path(dir, sizeof(dir)))) {
		fprintf(stderr, WHO ": the run directory's path is too long\n");
		return 1;
	}
	err = rundir__check(dir, false);
	if (err && err != -ENOENT) {
		fprintf(stderr, WHO ": refused: run directory %s is not yours alone (%s); it must "
				"be your own, mode 0700\n", dir, strerror(-err));
		return 1;
	}
	for (int i = 1; i < argc; i++) {
		if ((i == 1 || strcmp(argv[i - 1], "--duration")) && parse_pid(argv[i], &pid)) {
			n++;
			rc |= trigger_one(dir, pid, ms, false);
		}
	}
	if (all) {
		DIR *d = err ? NULL : opendir(dir);
		struct dirent *e;
		int found = 0;

		while (d && (e = readdir(d))) {
			if (strspn(e->d_name, "0123456789") != strlen(e->d_name))
				continue;
			int r = trigger_one(dir, atoi(e->d_name), ms, true);

			if (r >= 0) {
				found++;
				rc |= r;
			}
		}
		if (d)
			closedir(d);
		if (!found) {
			fprintf(stderr, WHO ": no traced process of yours can be triggered (%s lists "
					"none)\n", dir);
			return 1;
		}
		n += found;
	}
	if (!n) {
		fprintf(stderr, WHO ": give PID... or --all\n");
		return 2;
	}
	return rc ? 1 : 0;
}
