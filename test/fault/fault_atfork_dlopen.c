/* SPDX-License-Identifier: MIT */
/*
 * fault_atfork_dlopen LIB: zeInit (a traced call: gputrace's threads start,
 * and the watchdog's registers fork handlers), 0.1 s later dlopen LIB
 * (atfork_ctor.so: its constructor registers fork handlers 0.3 s in, under
 * the loader's lock, as a Level Zero driver loaded inside zeInit does), then
 * say so. With slow_phdr.so the watchdog registers inside that dlopen.
 */
#include <dlfcn.h>
#include <level_zero/ze_api.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	ze_result_t init = zeInit(0);

	usleep(100000);
	if (argc < 2 || !dlopen(argv[1], RTLD_NOW)) {
		fprintf(stderr, "dlopen: %s\n", argc < 2 ? "no library named" : dlerror());
		return 2;
	}
	printf("loaded (zeInit %s)\n", init == ZE_RESULT_SUCCESS ? "ok" : "failed");
	return 0;
}
