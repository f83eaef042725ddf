/* SPDX-License-Identifier: MIT */
/*
 * env_app: a program that uses its environment hard after gputrace's
 * constructor has named the library in its injection variables (which it
 * does without setenv, inject/injection.c): it prints whether anything
 * used malloc before main, what it sees, sets
 * argv[1] variables of its own (glibc then copies and grows the array),
 * unsets one of ours, putenv()s one, checks every value it set, and execs
 * a shell that prints what a child inherits (a traced child names the
 * library again in a variable its parent unset).
 *
 * env_app --clear-then-load LIB: clearenv() (environ is NULL), then dlopen
 * the library, whose constructor names it in an environment of none.
 *
 * env_app --load-beside-a-thread LIB: dlopen the library while another thread
 * sets and unsets variables of its own (a CUDA injection, loaded by cuInit in
 * a program already running threads): prints where environ is (in the
 * library's pages, or the program's) and whether every variable was kept.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

static const char *show(const char *name)
{
	const char *v = getenv(name);

	return v ? v : "-";
}

static int clear_then_load(const char *lib)
{
	if (clearenv() || !dlopen(lib, RTLD_NOW)) {
		printf("dlopen: %s\n", dlerror());
		return 6;
	}
	printf("cuda %s\nitt %s\n", show("CUDA_INJECTION64_PATH"), show("INTEL_LIBITTNOTIFY64"));
	return 0;
}

static atomic_int started, loaded;

/* the program's own use of its environment, through libc (under its lock):
 * after the first round it only replaces values, which never moves the array */
static void *set_and_unset(void *arg)
{
	char value[32];
	int i = 0;

	(void)arg;
	do {
		snprintf(value, sizeof(value), "v%d", i++);
		if (setenv("ENV_APP_BUSY", value, 1) || unsetenv("ENV_APP_GONE") ||
		    setenv("ENV_APP_KEPT", "kept", 1))
			return (void *)1;
		atomic_store(&started, 1);
	} while (!atomic_load(&loaded) || i < 1000);
	return NULL;
}

static int load_beside_a_thread(const char *lib)
{
	pthread_t th;
	void *thread_failed;
	Dl_info where;
	bool in_library;

	if (pthread_create(&th, NULL, set_and_unset, NULL))
		return 7;
	while (!atomic_load(&started))
		usleep(100);
	if (!dlopen(lib, RTLD_NOW)) {
		printf("dlopen: %s\n", dlerror());
		return 6;
	}
	in_library = dladdr(environ, &where) && where.dli_fname &&
		     strstr(where.dli_fname, "gputrace");
	atomic_store(&loaded, 1);
	pthread_join(th, &thread_failed);
	printf("environ in %s\n", in_library ? "the library" : "the program");
	printf("cuda %s\nkept %s\nthread %s\n", show("CUDA_INJECTION64_PATH"), show("ENV_APP_KEPT"),
	       thread_failed ? "failed" : "ok");
	return 0;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 0, ours = 0;
	static char put[] = "ENV_APP_PUT=put";
	char name[32], value[32];
	/* before stdio's first buffer: did anything before main use malloc? */
	int heap = mallinfo2().arena != 0;

	if (argc > 2 && !strcmp(argv[1], "--clear-then-load"))
		return clear_then_load(argv[2]);
	if (argc > 2 && !strcmp(argv[1], "--load-beside-a-thread"))
		return load_beside_a_thread(argv[2]);

	printf("heap %s\n", heap ? "used" : "untouched");
	printf("cuda %s\nnvtx %s\nitt %s\ninjected %s\n", show("CUDA_INJECTION64_PATH"),
	       show("NVTX_INJECTION64_PATH"), show("INTEL_LIBITTNOTIFY64"),
	       show("GPUTRACE_INJECTED"));
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "ENV_APP_%d", i);
		snprintf(value, sizeof(value), "v%d", i);
		if (setenv(name, value, 1))
			return 2;
	}
	if (unsetenv("NVTX_INJECTION64_PATH") || putenv(put))
		return 3;
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "ENV_APP_%d", i);
		snprintf(value, sizeof(value), "v%d", i);
		if (!getenv(name) || strcmp(getenv(name), value)) {
			printf("%s lost\n", name);
			return 4;
		}
	}
	for (char **e = environ; *e; e++)
		ours += !strncmp(*e, "ENV_APP_", 8);
	printf("set %d\nnvtx after unset %s\n", ours, show("NVTX_INJECTION64_PATH"));
	fflush(stdout);
	execl("/bin/sh", "sh", "-c",
	      "echo child \"${CUDA_INJECTION64_PATH--}\" \"${NVTX_INJECTION64_PATH--}\" "
	      "\"${ENV_APP_PUT--}\" \"${ENV_APP_0--}\"",
	      (char *)NULL);
	return 5;
}
