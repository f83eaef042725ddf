/* ze_replay [runs=5] [host_visible=0] [reset_last=0]: a regular list recorded once
 * (a reset of event A, kernel "replay_kernel" (100x1x1 of 64x1x1) signalling A, a query of
 * A's timestamps into device memory of the run's own, a copy of them to the host) run
 * `runs` times back to back on an in-order immediate list
 * (zeCommandListImmediateAppendCommandListsExp, from zeDriverGetExtensionFunctionAddress),
 * as SYCL replays a graph; one host wait at the end. A comes from a pool with kernel
 * timestamps only the device reads, or (host_visible=1) the host too. reset_last=1: the
 * list resets A after the kernel instead (and waits for it first); reset_last=2: a second
 * list, run right after it in the same call, does. */
#include "backends/levelzero/ze_newer.h"
#include "ze_app.h"

int main(int argc, char **argv)
{
	unsigned long runs = test_arg(argc, argv, 1, 5), host_visible = test_arg(argc, argv, 2, 0),
		      reset_last = test_arg(argc, argv, 3, 0);
	const ze_group_count_t groups = { 100, 1, 1 };
	__typeof__(&zeCommandListImmediateAppendCommandListsExp) append_lists;
	struct app_ze z;

	app_ze_setup(&z);
	ZE_CHECK(zeDriverGetExtensionFunctionAddress(
		z.driver, "zeCommandListImmediateAppendCommandListsExp", (void **)&append_lists));
	ze_command_list_handle_t runner = app_in_order_list(&z, 0), lists[2] = { app_list(&z, 0),
									    app_list(&z, 0) };
	ze_command_list_handle_t list = lists[0], resetter = lists[reset_last == 2];
	ze_kernel_handle_t kernel = app_kernel(app_module(&z), "replay_kernel", 64, 1, 1);
	ze_event_pool_handle_t pool = app_event_pool(
		&z, ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP |
			    (host_visible ? ZE_EVENT_POOL_FLAG_HOST_VISIBLE : 0), 1);
	ze_event_pool_handle_t done_pool = app_event_pool(&z, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1);
	ze_event_handle_t a = app_event(pool, 0), done = app_event(done_pool, 0);
	ze_kernel_timestamp_result_t *dev = app_device_alloc(&z, sizeof(*dev)),
				     *host = app_host_alloc(&z, sizeof(*host));

	if (!reset_last)
		ZE_CHECK(zeCommandListAppendEventReset(list, a));
	ZE_CHECK(zeCommandListAppendLaunchKernel(list, kernel, &groups, a, 0, NULL));
	ZE_CHECK(zeCommandListAppendQueryKernelTimestamps(list, 1, &a, dev, NULL, NULL, 1, &a));
	ZE_CHECK(zeCommandListAppendMemoryCopy(list, host, dev, sizeof(*dev), NULL, 0, NULL));
	if (reset_last == 2)
		ZE_CHECK(zeCommandListAppendWaitOnEvents(resetter, 1, &a));
	if (reset_last)
		ZE_CHECK(zeCommandListAppendEventReset(resetter, a));
	ZE_CHECK(zeCommandListClose(lists[0]));
	ZE_CHECK(zeCommandListClose(lists[1]));
	for (unsigned long r = 0; r < runs; r++)
		ZE_CHECK(append_lists(runner, reset_last == 2 ? 2 : 1, lists,
				      r + 1 == runs ? done : NULL, 0, NULL));
	ZE_CHECK(zeEventHostSynchronize(done, UINT64_MAX));
	/* the last run's kernel, as the program read it (ticks of ~52 ns: 6400 ns) */
	uint64_t ns = (host->global.kernelEnd - host->global.kernelStart) * 52083 / 1000;
	APP_EXPECT(ns + 110 >= 6400 && ns <= 6400 + 110, "the kernel took %" PRIu64 " ns", ns);
	printf("%lu runs\n", runs);
	ZE_CHECK(zeCommandListDestroy(runner));
	ZE_CHECK(zeCommandListDestroy(lists[0]));
	ZE_CHECK(zeCommandListDestroy(lists[1]));
	ZE_CHECK(zeEventDestroy(a));
	ZE_CHECK(zeEventDestroy(done));
	ZE_CHECK(zeEventPoolDestroy(pool));
	ZE_CHECK(zeEventPoolDestroy(done_pool));
	ZE_CHECK(zeMemFree(z.context, dev));
	ZE_CHECK(zeMemFree(z.context, host));
	ZE_CHECK(zeContextDestroy(z.context));
	return 0;
}
