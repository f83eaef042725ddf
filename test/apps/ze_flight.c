/* ze_flight SECONDS END [PAUSE_US]: one kernel and one copy, executed and synchronized
 * over and over for SECONDS (PAUSE_US apart), then END: "ok" (exit 0), "exit3" (exit(3)), "segv" (a
 * null write), "abort". The last iteration is one that took under LAST_NS, END right after
 * it: a loaded machine holds a process for a second or more in a synchronize or a pause, and
 * the last iteration was then older than a short window (its dump at END held none of
 * them). Prints the iterations run and, just before END, the CLOCK_MONOTONIC_RAW time in ns
 * ("end_ns N"), so a test can tell which of the iterations a flight recorder kept. Built
 * again as ze_flight_nvtx: each iteration in an NVTX process range "iter" and a pushed
 * "step" (with ranges, device work waits a cycle for them before it is written). */
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "ze_app.h"
#ifdef ZE_FLIGHT_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

/* The longest the last iteration may take (the tests look for it within 100 ms of END). */
#define LAST_NS 20000000ull

/* The fault is the point: UBSan must not report it first. */
__attribute__((no_sanitize_undefined, noinline)) static void segv(uintptr_t zero)
{
	*(volatile int *)zero = 1; /* a write to address 0 */
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;
	const char *end = argc > 2 ? argv[2] : "ok";
	unsigned long pause_us = test_arg(argc, argv, 3, 0);
	size_t n = 4096;
	struct app_ze z;
	ze_group_count_t groups = { 4, 1, 1 };
	unsigned long it = 0;
	uint64_t until;

	app_ze_setup(&z);
	ze_command_queue_handle_t queue = app_queue(&z, 0, 0);
	ze_command_list_handle_t list = app_list(&z, 0);
	ze_module_handle_t module = app_module(&z);
	ze_kernel_handle_t kernel = app_kernel(module, "vector_add", 64, 1, 1);
	uint8_t *src = app_host_alloc(&z, n), *dev = app_device_alloc(&z, n);

	ZE_CHECK(zeKernelSetArgumentValue(kernel, 0, sizeof(dev), &dev));
	ZE_CHECK(zeCommandListAppendMemoryCopy(list, dev, src, n, NULL, 0, NULL));
	ZE_CHECK(zeCommandListAppendLaunchKernel(list, kernel, &groups, NULL, 0, NULL));
	ZE_CHECK(zeCommandListClose(list));
	until = app_now_ns() + (uint64_t)(seconds * 1e9);
	for (;;) {
		uint64_t start = app_now_ns(), now;

#ifdef ZE_FLIGHT_NVTX
		nvtxRangeId_t range = nvtxRangeStartA("iter");
		nvtxRangePushA("step");
#endif
		ZE_CHECK(zeCommandQueueExecuteCommandLists(queue, 1, &list, NULL));
		ZE_CHECK(zeCommandQueueSynchronize(queue, UINT64_MAX));
#ifdef ZE_FLIGHT_NVTX
		nvtxRangePop();
		nvtxRangeEnd(range);
#endif
		it++;
		now = app_now_ns();
		if (now >= until && now - start < LAST_NS)
			break;
		if (pause_us)
			usleep((useconds_t)pause_us);
	}
	printf("iterations %lu\nend_ns %llu\n", it, (unsigned long long)app_now_ns());
	fflush(stdout);
	if (!strcmp(end, "segv"))
		segv(argc < 0);
	if (!strcmp(end, "abort"))
		abort();
	if (!strcmp(end, "exit3"))
		exit(3);
	return 0;
}
