/* ze_event_reset [rounds=3]: what PTI-GPU's event reset sample does, written here. A
 * regular list records: kernel "reset_kernel" signalling event A, a wait on A, a copy,
 * a reset of A on the device (zeCommandListAppendEventReset) and a signal of event B.
 * Each round executes it, waits on B from the host, then resets B on the host
 * (zeEventHostReset). Events come from a pool without timestamps. */
#include "ze_app.h"

int main(int argc, char **argv)
{
	unsigned long rounds = test_arg(argc, argv, 1, 3);
	const size_t bytes = 20000;
	struct app_ze z;
	const ze_group_count_t groups = { 4, 1, 1 };

	app_ze_setup(&z);
	ze_command_queue_handle_t queue = app_queue(&z, 0, 0);
	ze_command_list_handle_t list = app_list(&z, 0);
	ze_module_handle_t module = app_module(&z);
	ze_kernel_handle_t kernel = app_kernel(module, "reset_kernel", 32, 1, 1);
	ze_event_pool_handle_t pool = app_event_pool(&z, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 2);
	ze_event_handle_t a = app_event(pool, 0), b = app_event(pool, 1);
	uint8_t *src = app_host_alloc(&z, bytes), *dst = app_host_alloc(&z, bytes);

	ZE_CHECK(zeCommandListAppendLaunchKernel(list, kernel, &groups, a, 0, NULL));
	ZE_CHECK(zeCommandListAppendWaitOnEvents(list, 1, &a));
	ZE_CHECK(zeCommandListAppendMemoryCopy(list, dst, src, bytes, NULL, 0, NULL));
	ZE_CHECK(zeCommandListAppendEventReset(list, a));
	ZE_CHECK(zeCommandListAppendSignalEvent(list, b));
	ZE_CHECK(zeCommandListClose(list));
	for (unsigned long r = 0; r < rounds; r++) {
		memset(src, (int)(r + 1), bytes);
		ZE_CHECK(zeCommandQueueExecuteCommandLists(queue, 1, &list, NULL));
		ZE_CHECK(zeEventHostSynchronize(b, UINT64_MAX));
		APP_EXPECT(memcmp(dst, src, bytes) == 0, "round %lu: copy not done", r);
		APP_EXPECT(zeEventQueryStatus(a) == ZE_RESULT_NOT_READY, "A not reset");
		ZE_CHECK(zeEventHostReset(b));
		printf("round %lu: done, A reset on the device, B reset on the host\n", r);
	}
	ZE_CHECK(zeCommandQueueSynchronize(queue, UINT64_MAX));
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
