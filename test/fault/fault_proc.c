/* SPDX-License-Identifier: MIT */
/*
 * Processes: fault_proc ACTION [N]. Each process reports "<role> calls N"
 * on stdout and "<pid> <role> N" in $FAULT_NOTES, so the test can match
 * every trace file to the process that made it.
 *   leaf N          init + N calls (the program others start)
 *   fork-mt N       3 hot threads call while main forks 3 children (N calls each)
 *   fork-race N [T F]  T threads (4) fork F children (5) each, at once (N calls each)
 *   chain D N       N calls, fork, the child execs "chain D-1 N"... to depth 0
 *   exec-self D N   N calls, then exec itself ("exec-self D-1 N") in the same pid
 *   exec-fail N     N calls, an exec that fails (no such file), N calls more
 *   spawn N         posix_spawn of "leaf N"
 *   vfork N         vfork + execv of "leaf N"
 *   exec-env N      fork + execve of "leaf N" with an environment without
 *                   LD_PRELOAD and GPUTRACE_* (the child is not traced)
 *   daemon N        double fork: the grandchild, detached, runs "leaf N"
 *   daemon-call N   daemon() before any traced call (its fork is libc's own): the
 *                   daemon makes init + N calls
 *   atfork-child N  a fork child handler, registered before any traced call, makes N
 *                   calls in the child of a fork
 *   system N        system("<self> leaf N")
 */
#include "fault.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

extern char **environ;

static const char *self = "/proc/self/exe";

static int wait_child(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void exec_self(char *const argv[], char *const envp[])
{
	/* /proc/self/exe is the program, whatever argv[0] says */
	execve(self, argv, envp ? envp : environ);
	fault_write(2, "exec failed: %s\n", strerror(errno));
	_exit(127);
}

static int leaf(int n)
{
	fault_role = "leaf";
	fault_init();
	calls(n);
	report();
	return 0;
}

/* calls in a fork child's handler (atfork-child): before the child's own code runs */
static int handler_calls;

static void calls_in_child(void)
{
	calls(handler_calls);
}

/* A fork child: only the forking thread exists here, and it traces on its own. */
static __attribute__((noreturn)) void child(int n)
{
	fault_role = "child";
	calls(n);
	report();
	exit(0);
}

static int fork_mt(int n)
{
	pid_t kids[3];
	int bad = 0;

	start_hot(3);
	for (int i = 0; i < 3; i++) {
		kids[i] = fork();
		if (kids[i] == 0)
			child(n);
		/* one at a time: their report lines come in order */
		bad |= wait_child(kids[i]) != 0;
	}
	__atomic_store_n(&fault_stop, 1, __ATOMIC_SEQ_CST);
	/* hot threads stop between calls: wait until none is inside one */
	sleep_ms(20);
	while (FAULT_GET(&fault_shm->started) != FAULT_GET(&fault_shm->completed))
		sched_yield();
	take_snapshot();
	note("hot", FAULT_GET(&fault_shm->completed));
	return bad;
}

static int race_calls, race_forks;
static pthread_barrier_t race_start, race_end;

static void *forker(void *arg)
{
	intptr_t bad = 0;

	(void)arg;
	/* all at once, and only once every thread's start-up is over: under
	 * AddressSanitizer a thread allocates as it starts, and a fork made
	 * meanwhile leaves the child's allocator locked */
	pthread_barrier_wait(&race_start);
	for (int i = 0; i < race_forks; i++) {
		pid_t pid = fork();

		if (pid == 0)
			child(race_calls);
		bad |= wait_child(pid) != 0;
	}
	/* nor does one end while another forks: an ending thread hands its
	 * allocator cache back under the allocator's locks, and a child forked
	 * then had no trace (CI): its drain thread, new, waited for one forever */
	pthread_barrier_wait(&race_end);
	return (void *)bad;
}

static int fork_race(int n, int threads, int forks)
{
	pthread_t t[64];
	int bad = 0;

	if (threads < 1 || threads > 64)
		return 2;
	race_calls = n;
	race_forks = forks;
	pthread_barrier_init(&race_start, NULL, threads);
	pthread_barrier_init(&race_end, NULL, threads);
	for (int i = 0; i < threads; i++)
		fault_thread(&t[i], NULL, forker, NULL);
	for (int i = 0; i < threads; i++) {
		void *ret;

		pthread_join(t[i], &ret);
		bad |= ret != NULL;
	}
	return bad;
}

static int chain(int depth, int n, char **argv)
{
	char role[32], dbuf[16];
	pid_t pid;

	snprintf(role, sizeof(role), "level%d", depth);
	fault_role = role;
	fault_init();
	calls(n);
	report();
	if (!depth)
		return 0;
	snprintf(dbuf, sizeof(dbuf), "%d", depth - 1);
	pid = fork();
	if (pid == 0) {
		char *args[] = { argv[0], "chain", dbuf, argv[3], NULL };
		exec_self(args, NULL);
	}
	return wait_child(pid);
}

static int exec_self_chain(int depth, int n, char **argv)
{
	char role[32], dbuf[16];

	snprintf(role, sizeof(role), "gen%d", depth);
	fault_role = role;
	fault_init();
	calls(n);
	report();
	if (!depth)
		return 0;
	snprintf(dbuf, sizeof(dbuf), "%d", depth - 1);
	char *args[] = { argv[0], "exec-self", dbuf, argv[3], NULL };
	exec_self(args, NULL);
	return 1;
}

int main(int argc, char **argv)
{
	const char *action = argc > 1 ? argv[1] : "";
	int n = arg_int(argc, argv, 2, 100);
	char nbuf[16];
	pid_t pid;

	snprintf(nbuf, sizeof(nbuf), "%d", n);
	char *leaf_args[] = { argv[0], "leaf", nbuf, NULL };

	if (!strcmp(action, "leaf"))
		return leaf(n);
	if (!strcmp(action, "chain"))
		return chain(n, arg_int(argc, argv, 3, 100), argv);
	if (!strcmp(action, "exec-self"))
		return exec_self_chain(n, arg_int(argc, argv, 3, 100), argv);
	if (!strcmp(action, "exec-fail")) {
		char *args[] = { argv[0], NULL };

		fault_init();
		calls(n);
		report();
		if (!execve("/nonexistent/fault_proc", args, environ) || errno != ENOENT)
			return 3;
		calls(n);
		report();
		return 0;
	}
	if (!strcmp(action, "daemon-call")) {
		/* nothing recorded before: the parent leaves no trace */
		if (daemon(1, 0))
			return 3;
		sleep_ms(100); /* outlives its parent */
		fault_role = "daemon";
		fault_init();
		calls(n);
		report();
		return 0;
	}
	if (!strcmp(action, "atfork-child")) {
		/* as a library's constructor or main() registers, before any traced call */
		handler_calls = n;
		if (pthread_atfork(NULL, NULL, calls_in_child))
			return 3;
	}
	fault_init();
	calls(1000);
	report();
	if (!strcmp(action, "fork-mt"))
		return fork_mt(n);
	if (!strcmp(action, "fork-race"))
		return fork_race(n, arg_int(argc, argv, 3, 4), arg_int(argc, argv, 4, 5));
	if (!strcmp(action, "atfork-child")) {
		pid = fork();
		if (pid == 0) {
			fault_role = "child";
			report(); /* the handler's calls */
			_exit(0);
		}
		return wait_child(pid);
	}
	if (!strcmp(action, "spawn")) {
		if (posix_spawn(&pid, self, NULL, NULL, leaf_args, environ))
			return 3;
		return wait_child(pid);
	}
	if (!strcmp(action, "vfork")) {
		pid = vfork();
		if (pid == 0) {
			execv(self, leaf_args);
			_exit(127);
		}
		return wait_child(pid);
	}
	if (!strcmp(action, "exec-env")) {
		/* a clean environment, as programs build for their helpers */
		char *env[] = { "PATH=/usr/bin:/bin", NULL, NULL, NULL };
		int k = 1;
		for (char **e = environ; *e; e++)
			if (!strncmp(*e, "ZE_ENABLE_ALT_DRIVERS=", 22) ||
			    !strncmp(*e, "FAULT_NOTES=", 12))
				env[k++] = *e;
		pid = fork();
		if (pid == 0)
			exec_self(leaf_args, env);
		return wait_child(pid);
	}
	if (!strcmp(action, "daemon")) {
		pid = fork();
		if (pid == 0) {
			setsid();
			if (fork() == 0) {
				/* the daemon: no terminal, no parent, stdio closed */
				int null = open("/dev/null", O_RDWR);
				dup2(null, 0);
				dup2(null, 1);
				dup2(null, 2);
				close(null);
				sleep_ms(100); /* outlives its parents */
				exec_self(leaf_args, NULL);
			}
			_exit(0);
		}
		return wait_child(pid);
	}
	if (!strcmp(action, "system")) {
		char cmd[4200], exe[4096];
		ssize_t len = readlink(self, exe, sizeof(exe) - 1);

		if (len <= 0)
			return 3;
		exe[len] = 0;
		snprintf(cmd, sizeof(cmd), "'%s' leaf %d", exe, n);
		return system(cmd) == 0 ? 0 : 1;
	}
	fault_write(2, "unknown action %s\n", action);
	return 2;
}
