/* SPDX-License-Identifier: MIT */
/*
 * Preloaded after gputrace: the watchdog thread's first dl_iterate_phdr
 * (stacks__init, just before it registers fork handlers) returns 0.2 s late,
 * so the program's dlopen (atfork_ctor.so) holds the loader's lock when the
 * watchdog registers: the order a loaded CI machine once ran them in.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

typedef int iterate_fn(int (*)(struct dl_phdr_info *, size_t, void *), void *);

__attribute__((visibility("default"))) int
dl_iterate_phdr(int (*callback)(struct dl_phdr_info *, size_t, void *), void *data)
{
	static int delayed;
	iterate_fn *real = (iterate_fn *)dlsym(RTLD_NEXT, "dl_iterate_phdr");
	int r = real(callback, data);
	char name[16] = "";

	prctl(PR_GET_NAME, name, 0, 0, 0);
	if (!strcmp(name, "gputrace-wdog") && !__atomic_exchange_n(&delayed, 1, __ATOMIC_SEQ_CST))
		usleep(200000);
	return r;
}
