/* A library linked to the Level Zero loader that looks its functions up with
 * dlsym(RTLD_DEFAULT), as a plug-in's adapter may: loaded RTLD_LOCAL (ctypes), the
 * loader is in its own scope only, which RTLD_DEFAULT searches too. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <level_zero/ze_api.h>

__attribute__((visibility("default"))) int adapter_run(void)
{
	__typeof__(&zeInit) init = (__typeof__(&zeInit))dlsym(RTLD_DEFAULT, "zeInit");
	__typeof__(&zeDriverGet) get = (__typeof__(&zeDriverGet))dlsym(RTLD_DEFAULT, "zeDriverGet");
	uint32_t n = 0;

	if (!init || !get) {
		printf("adapter: RTLD_DEFAULT has no zeInit\n");
		return 1;
	}
	if (init(ZE_INIT_FLAG_GPU_ONLY) != ZE_RESULT_SUCCESS || get(&n, NULL) != ZE_RESULT_SUCCESS)
		return 2;
	printf("adapter: %u driver(s)\n", n);
	return 0;
}

/* the link to the loader, kept */
__attribute__((visibility("default"))) void *adapter_linked(void)
{
	return (void *)zeInit;
}
