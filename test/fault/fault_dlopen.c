/* SPDX-License-Identifier: MIT */
/*
 * fault_dlopen ROUNDS N: dlopen the Level Zero loader, look every function up
 * with dlsym, zeInit + zeDriverGet + N calls, dlclose; ROUNDS times. Not
 * linked with the loader.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <level_zero/ze_api.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 20, n = argc > 2 ? atoi(argv[2]) : 100;
	unsigned long long made = 0;

	for (int r = 0; r < rounds; r++) {
		void *h = dlopen("libze_loader.so.1", RTLD_NOW | (r % 2 ? RTLD_GLOBAL : RTLD_LOCAL));
		if (!h) {
			fprintf(stderr, "dlopen: %s\n", dlerror());
			return 2;
		}
		__typeof__(zeInit) *init = (__typeof__(zeInit) *)dlsym(h, "zeInit");
		__typeof__(zeDriverGet) *get = (__typeof__(zeDriverGet) *)dlsym(h, "zeDriverGet");
		__typeof__(zeDriverGetApiVersion) *ver =
			(__typeof__(zeDriverGetApiVersion) *)dlsym(h, "zeDriverGetApiVersion");
		ze_driver_handle_t drv = NULL;
		ze_api_version_t v;
		uint32_t count = 1;

		if (!init || !get || !ver || init(0) || get(&count, &drv) || !drv) {
			fprintf(stderr, "round %d: no driver\n", r);
			return 2;
		}
		made += 2;
		for (int i = 0; i < n; i++, made++)
			if (ver(drv, &v)) {
				fprintf(stderr, "round %d: zeDriverGetApiVersion failed\n", r);
				return 1;
			}
		if (dlclose(h)) {
			fprintf(stderr, "dlclose: %s\n", dlerror());
			return 2;
		}
	}
	printf("main calls %llu\n", made);
	return 0;
}
