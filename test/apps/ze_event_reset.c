/* ze_event_reset [rounds=3] [timestamps=0] [immediate=0]: what PTI-GPU's event reset sample does, written here. A
 * regular list records: kernel "reset_kernel" signalling event A, a wait on A, a copy,
 * a reset of A on the device (zeCommandListAppendEventReset) and a signal of event B.
 * Each round executes it, waits on B from the host, then resets B on the host
 * (zeEventHostReset). Events come from a pool without timestamps, or with kernel
 * timestamps (timestamps=1: each round then checks A's times were the kernel's before
 * the reset). immediate=1: each round appends the same commands to an immediate list
 * instead, its kernel long enough (640 us) for the reset to be queued while it runs.
 * immediate=2: the regular list runs on an in-order immediate list each round
 * (zeCommandListImmediateAppendCommandListsExp, from zeDriverGetExtensionFunctionAddress). */
#include "backends/levelzero/ze_newer.h"
#include "ze_app.h"

int main(int argc, char **argv)
{
	unsigned long rounds = test_arg(argc, argv, 1, 3);
	unsigned long timestamps = test_arg(argc, argv, 2, 0), immediate = test_arg(argc, argv, 3, 0);
	const size_t bytes = 20000;
	struct app_ze z;
	const ze_group_count_t groups = { immediate == 1 ? 20000 : 4, 1, 1 };

	app_ze_setup(&z);
	ze_command_queue_handle_t queue = app_queue(&z, 0, 0);
	ze_command_list_handle_t list = immediate == 1 ? app_immediate_list(&z, 0, 0) : app_list(&z, 0);
	ze_command_list_handle_t runner = immediate == 2 ? app_in_order_list(&z, 0) : NULL;
	__typeof__(&zeCommandListImmediateAppendCommandListsExp) append_lists = NULL;

	if (runner)
		ZE_CHECK(zeDriverGetExtensionFunctionAddress(
			z.driver, "zeCommandListImmediateAppendCommandListsExp", (void **)&append_lists));
	ze_module_handle_t module = app_module(&z);
	ze_kernel_handle_t kernel = app_kernel(module, "reset_kernel", 32, 1, 1);
	ze_event_pool_handle_t pool = app_event_pool(
		&z, ZE_EVENT_POOL_FLAG_HOST_VISIBLE |
			    (timestamps ? ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP : 0), 2);
	ze_event_handle_t a = app_event(pool, 0), b = app_event(pool, 1);
	uint8_t *src = app_host_alloc(&z, bytes), *dst = app_host_alloc(&z, bytes);
	ze_kernel_timestamp_result_t *times = app_host_alloc(&z, sizeof(*times));

	for (unsigned long r = 0; r < rounds; r++) {
		if (r == 0 || immediate == 1) {
			ZE_CHECK(zeCommandListAppendLaunchKernel(list, kernel, &groups, a, 0, NULL));
			ZE_CHECK(zeCommandListAppendWaitOnEvents(list, 1, &a));
			if (timestamps)
				ZE_CHECK(zeCommandListAppendQueryKernelTimestamps(list, 1, &a, times,
										  NULL, NULL, 0,
										  NULL));
			if (immediate == 1)
				memset(src, (int)(r + 1), bytes);
			ZE_CHECK(zeCommandListAppendMemoryCopy(list, dst, src, bytes, NULL, 0,
							       NULL));
			ZE_CHECK(zeCommandListAppendEventReset(list, a));
			ZE_CHECK(zeCommandListAppendSignalEvent(list, b));
		}
		if (immediate != 1) {
			if (r == 0)
				ZE_CHECK(zeCommandListClose(list));
			memset(src, (int)(r + 1), bytes);
			if (runner)
				ZE_CHECK(append_lists(runner, 1, &list, NULL, 0, NULL));
			else
				ZE_CHECK(zeCommandQueueExecuteCommandLists(queue, 1, &list, NULL));
		}
		ZE_CHECK(zeEventHostSynchronize(b, UINT64_MAX));
		/* the kernel's own times (ticks of ~52 ns), as the program read them */
		uint64_t ns = (times->global.kernelEnd - times->global.kernelStart) * 52083 / 1000,
			 want = groups.groupCountX * 32;
		APP_EXPECT(!timestamps || (ns + 110 >= want && ns <= want + 110),
			   "round %lu: A's times are not the kernel's", r);
		APP_EXPECT(memcmp(dst, src, bytes) == 0, "round %lu: copy not done", r);
		APP_EXPECT(zeEventQueryStatus(a) == ZE_RESULT_NOT_READY, "A not reset");
		ZE_CHECK(zeEventHostReset(b));
		printf("round %lu: done, A reset on the device, B reset on the host\n", r);
	}
	ZE_CHECK(zeCommandQueueSynchronize(queue, UINT64_MAX));
	if (runner)
		ZE_CHECK(zeCommandListDestroy(runner));
	ZE_CHECK(zeMemFree(z.context, src));
	ZE_CHECK(zeMemFree(z.context, dst));
	ZE_CHECK(zeEventDestroy(a));
	ZE_CHECK(zeEventDestroy(b));
	ZE_CHECK(zeEventPoolDestroy(pool));
	ZE_CHECK(zeKernelDestroy(kernel));
	ZE_CHECK(zeModuleDestroy(module));
	ZE_CHECK(zeCommandListDestroy(list));
	ZE_CHECK(zeCommandQueueDestroy(queue));
	ZE_CHECK(zeContextDestroy(z.context));
	return 0;
}
