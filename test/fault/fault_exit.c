/* SPDX-License-Identifier: MIT */
/*
 * Ways out of a process: fault_exit ACTION [quiet|hot]
 *   worker-exit MODE    exit(3) from a worker while other threads are quiet
 *                       (holding unwritten events) or hot (calling)
 *   return MODE         return 0 from main with those threads still running
 *   _exit, _Exit        status 5, no atexit handlers
 *   quick_exit          status 6 after at_quick_exit handlers that make calls
 *   atexit-exit         exit(0) runs an atexit handler that calls, then exit(4)
 *   close-start         closes every descriptor but 0-2 first thing
 *   close-mid           ... after the trace file is open
 *   dup2                dup2s its own file over every descriptor from 3 up
 *                       (ours included), writes through them, checks its file
 *   fdflags             sets O_APPEND and O_NONBLOCK on every descriptor from 3 up
 *                       (ours included) and clears their close-on-exec flags
 *   unlink              removes the file $GPUTRACE_OUTPUT names once it is there
 */
#include "fault.h"

#include <dirent.h>
#include <sys/resource.h>

static int mode_hot(int argc, char **argv)
{
	return argc > 2 && !strcmp(argv[2], "hot");
}

static void *exit_worker(void *arg)
{
	(void)arg;
	calls(300);
	report();
	take_snapshot();
	exit(3);
}

static void quick_handler(void)
{
	fault_role = "at_quick_exit";
	calls(25);
	report();
}

static void atexit_inner(void)
{
	fault_role = "atexit";
	calls(30);
	report();
	exit(4); /* exit from inside an atexit handler: glibc runs the rest */
}

static void atexit_outer(void)
{
	fault_role = "atexit-outer";
	calls(20);
	report();
}

static void close_all_from(int lo)
{
	struct rlimit rl;

	getrlimit(RLIMIT_NOFILE, &rl);
	for (int fd = lo; fd < (int)rl.rlim_cur && fd < 65536; fd++)
		close(fd);
}

/* The trace file is opened at the first checkpoint (GPUTRACE_FLUSH_MS). */
static void let_tracer_checkpoint(void)
{
	sleep_ms(150);
}

static int do_dup2(void)
{
	char path[] = "/tmp/fault-own-XXXXXX";
	static const char line[] = "the program's own line\n";
	int fd = mkstemp(path), written = 0;
	struct rlimit rl;
	char buf[256];

	if (fd < 0)
		return 2;
	unlink(path);
	let_tracer_checkpoint();
	getrlimit(RLIMIT_NOFILE, &rl);
	for (int t = 3; t < (int)rl.rlim_cur && t < 600; t++) {
		if (t == fd)
			continue;
		if (dup2(fd, t) == t && t % 97 == 0) {
			/* through some of them, the program writes its own data */
			if (write(t, line, sizeof(line) - 1) == sizeof(line) - 1)
				written++;
		}
	}
	calls(1000);
	report();
	let_tracer_checkpoint();
	calls(1000);
	report();
	/* the file holds exactly what the program wrote, nothing of ours */
	off_t size = lseek(fd, 0, SEEK_END);
	bool intact = size == (off_t)(written * (sizeof(line) - 1));
	for (int i = 0; intact && i < written; i++)
		intact = pread(fd, buf, sizeof(line) - 1, i * (off_t)(sizeof(line) - 1)) ==
				 (ssize_t)(sizeof(line) - 1) &&
			 !memcmp(buf, line, sizeof(line) - 1);
	say("own file %s\n", intact ? "intact" : "changed");
	return intact ? 0 : 1;
}

/* A program that sets its descriptors' flags wholesale reaches ours too. */
static int do_fdflags(void)
{
	struct rlimit rl;

	let_tracer_checkpoint();
	getrlimit(RLIMIT_NOFILE, &rl);
	for (int t = 3; t < (int)rl.rlim_cur && t < 600; t++) {
		int fl = fcntl(t, F_GETFL);

		if (fl >= 0) {
			fcntl(t, F_SETFL, fl | O_APPEND | O_NONBLOCK);
			fcntl(t, F_SETFD, 0);
		}
	}
	calls(1000);
	report();
	let_tracer_checkpoint();
	calls(1000);
	report();
	return 0;
}

int main(int argc, char **argv)
{
	const char *action = argc > 1 ? argv[1] : "";

	if (!strcmp(action, "close-start"))
		close_all_from(3);
	fault_init();
	calls(1000);
	report();
	if (!strcmp(action, "worker-exit") || !strcmp(action, "return")) {
		start_quiet(3, 500);
		if (mode_hot(argc, argv))
			start_hot(3);
		if (!strcmp(action, "return")) {
			calls(100);
			report();
			take_snapshot();
			return 0;
		}
		pthread_t t;
		fault_thread(&t, NULL, exit_worker, NULL);
		pthread_join(t, NULL);
		return 1;
	}
	if (!strcmp(action, "_exit"))
		_exit(5);
	if (!strcmp(action, "_Exit"))
		_Exit(5);
	if (!strcmp(action, "quick_exit")) {
		at_quick_exit(quick_handler);
		quick_exit(6);
	}
	if (!strcmp(action, "atexit-exit")) {
		atexit(atexit_outer);
		atexit(atexit_inner);
		exit(0);
	}
	if (!strcmp(action, "close-start")) {
		calls(500);
		report();
		return 0;
	}
	if (!strcmp(action, "close-mid")) {
		let_tracer_checkpoint();
		close_all_from(3);
		calls(1000);
		report();
		let_tracer_checkpoint();
		calls(500);
		report();
		return 0;
	}
	if (!strcmp(action, "dup2"))
		return do_dup2();
	if (!strcmp(action, "fdflags"))
		return do_fdflags();
	if (!strcmp(action, "unlink")) {
		let_tracer_checkpoint();
		if (getenv("GPUTRACE_OUTPUT"))
			unlink(getenv("GPUTRACE_OUTPUT"));
		calls(500);
		report();
		return 0;
	}
	fault_write(2, "unknown action %s\n", action);
	return 2;
}
