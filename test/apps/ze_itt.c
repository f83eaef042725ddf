/* ze_itt [steps]: an Intel program with ITT markers: as Intel's static ittnotify part does,
 * it dlopens the collector named by INTEL_LIBITTNOTIFY64, speaks protocol 1 when the
 * collector exports __itt_api_version (else 0; 2 with __itt_api_init, which it does not
 * speak) and looks __itt_pause / __itt_resume up by name; absent ones stay no-ops. Each step
 * launches kernel "step" with gx = step on an immediate list and waits; steps 3 and 5 run
 * between __itt_resume() and __itt_pause(). */
#include <dlfcn.h>

#include "ze_app.h"

static void nop(void)
{
}

int main(int argc, char **argv)
{
	unsigned long steps = test_arg(argc, argv, 1, 6);
	const char *lib = getenv("INTEL_LIBITTNOTIFY64");
	void (*itt_pause)(void) = nop, (*itt_resume)(void) = nop;
	struct app_ze z;

	if (lib) {
		void *h = dlopen(lib, RTLD_LAZY);

		APP_EXPECT(h, "dlopen %s: %s", lib, dlerror());
		APP_EXPECT(!dlsym(h, "__itt_api_init"), "protocol 2 not spoken here");
		if (dlsym(h, "__itt_api_version")) {
			void *p = dlsym(h, "__itt_pause"), *r = dlsym(h, "__itt_resume");

			if (p)
				itt_pause = (void (*)(void))p;
			if (r)
				itt_resume = (void (*)(void))r;
		}
	}
	app_ze_setup(&z);
	ze_command_list_handle_t imm = app_immediate_list(&z, 0, 0);
	ze_module_handle_t m = app_module(&z);
	ze_kernel_handle_t k = app_kernel(m, "step", 1, 1, 1);
	ze_event_pool_handle_t pool = app_event_pool(&z, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1);
	ze_event_handle_t done = app_event(pool, 0);

	for (unsigned long s = 1; s <= steps; s++) {
		ze_group_count_t g = { (uint32_t)s, 1, 1 };

		if (s == 3 || s == 5)
			itt_resume();
		ZE_CHECK(zeCommandListAppendLaunchKernel(imm, k, &g, done, 0, NULL));
		ZE_CHECK(zeEventHostSynchronize(done, UINT64_MAX));
		ZE_CHECK(zeEventHostReset(done));
		if (s == 3 || s == 5)
			itt_pause();
	}
	printf("ze_itt: %lu steps\n", steps);
	ZE_CHECK(zeEventDestroy(done));
	ZE_CHECK(zeEventPoolDestroy(pool));
	ZE_CHECK(zeKernelDestroy(k));
	ZE_CHECK(zeModuleDestroy(m));
	ZE_CHECK(zeCommandListDestroy(imm));
	ZE_CHECK(zeContextDestroy(z.context));
	return 0;
}
