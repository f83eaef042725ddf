// SPDX-License-Identifier: MIT
/*
 * stack_dl WAIT_MS LIB:FN...: for each library, dlopen it, launch through
 * its function FN, wait WAIT_MS (a checkpoint may name the stack while the
 * library is loaded), dlclose it. Prints where each FN was, so a test sees
 * two libraries loaded at the same address.
 */
#include "test/apps/ze_app.h"
#include <dlfcn.h>
#include <string.h>
#include <unistd.h>

typedef int (*launch_fn)(ze_command_list_handle_t, ze_kernel_handle_t);

int main(int argc, char **argv)
{
	struct app_ze z;
	int wait_ms = (int)test_arg(argc, argv, 1, 0);

	app_ze_setup(&z);
	ze_command_queue_handle_t q = app_queue(&z, 0, 0);
	ze_module_handle_t m = app_module(&z);
	ze_command_list_handle_t l = app_list(&z, 0);
	ze_kernel_handle_t k = app_kernel(m, "dl_kernel", 8, 1, 1);

	for (int i = 2; i < argc; i++) {
		char *fn = strchr(argv[i], ':');

		APP_EXPECT(fn, "LIB:FN, not %s", argv[i]);
		*fn++ = 0;
		void *h = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);
		APP_EXPECT(h, "dlopen %s: %s", argv[i], dlerror());
		launch_fn f = (launch_fn)dlsym(h, fn);
		APP_EXPECT(f, "dlsym %s", fn);
		printf("%s at %p\n", fn, (void *)f);
		ZE_CHECK(f(l, k));
		usleep((useconds_t)wait_ms * 1000);
		APP_EXPECT(!dlclose(h), "dlclose %s", argv[i]);
	}
	ZE_CHECK(zeCommandListClose(l));
	ZE_CHECK(zeCommandQueueExecuteCommandLists(q, 1, &l, NULL));
	ZE_CHECK(zeCommandQueueSynchronize(q, UINT64_MAX));
	printf("stack_dl: ok\n");
	return 0;
}
