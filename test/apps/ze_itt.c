/* ze_itt [steps [ms [calls]]]: an Intel program that marks what to profile with ITT's
 * collection control, through the suite's static ITT part (test/annotations/itt_static.c: it
 * loads the collector named by INTEL_LIBITTNOTIFY64, protocol 2 or, with ITT_TEST_PROTOCOL=1,
 * 1). Each step launches kernel "step" with gx = step on an immediate list and waits; steps
 * 3 and 5 run between __itt_resume() and __itt_pause(), each also sleeping ms (0) there. In
 * step 3 a thread also calls zeDriverGetApiVersion `calls` (0) times and exits, joined
 * before the pause (a thread gone in the first window); then it prints the calls made. */
#include <pthread.h>
#include <time.h>

#include "../annotations/itt_static.h"
#include "ze_app.h"

static struct app_ze z;
static unsigned long calls;

static void *call_driver(void *arg)
{
	for (unsigned long i = 0; i < calls; i++) {
		ze_api_version_t v = 0;

		ZE_CHECK(zeDriverGetApiVersion(z.driver, &v));
	}
	return arg;
}

int main(int argc, char **argv)
{
	unsigned long steps = test_arg(argc, argv, 1, 6);
	unsigned long ms = test_arg(argc, argv, 2, 0);
	struct timespec nap = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000 };

	calls = test_arg(argc, argv, 3, 0);
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
		if (s == 3 && calls) {
			pthread_t t;

			APP_EXPECT(pthread_create(&t, NULL, call_driver, NULL) == 0, "pthread_create");
			pthread_join(t, NULL);
		}
		ZE_CHECK(zeCommandListAppendLaunchKernel(imm, k, &g, done, 0, NULL));
		ZE_CHECK(zeEventHostSynchronize(done, UINT64_MAX));
		ZE_CHECK(zeEventHostReset(done));
		if (s == 3 || s == 5) {
			if (ms)
				nanosleep(&nap, NULL);
			itt_pause();
		}
	}
	printf("ze_itt: %lu steps, ITT protocol %d\n", steps, itt_test_protocol());
	if (calls)
		printf("ze_itt: a thread made %lu calls in step 3\n", calls);
	ZE_CHECK(zeEventDestroy(done));
	ZE_CHECK(zeEventPoolDestroy(pool));
	ZE_CHECK(zeKernelDestroy(k));
	ZE_CHECK(zeModuleDestroy(m));
	ZE_CHECK(zeCommandListDestroy(imm));
	ZE_CHECK(zeContextDestroy(z.context));
	return 0;
}
