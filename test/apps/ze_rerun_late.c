/* ze_rerun_late [rounds=5] [wait=0]: one regular list of 4 kernels ("rerun_k", 10 us each)
 * run on two queues (compute 0.0 and 0.1, two engines) so that a run on 0.1, queued behind
 * 2 ms of other work there, signals the list's events after the run on 0.0 that followed it.
 * wait 0, the run on 0.0 waited for by synchronizes of its queue:
 *   execute(busy 2 ms, q1); execute(list, q1); execute(list, q0); synchronize(q0);
 *   execute(busy 4 ms, q0); synchronize(q0); synchronize(q1)
 * wait 1 (2), by its fence instead: zeFenceHostSynchronize (zeFenceQueryStatus until it
 * succeeds), then zeFenceReset:
 *   execute(busy 2 ms, q1); execute(list, q1); execute(list, q0, fence); the fence's wait;
 *   zeFenceReset(fence); synchronize(q1)
 * The list's run on q0 ends in 40 us and its wait returns then; the run on q1 ends 2 ms
 * later (before the second synchronize of q0 returns) and its times overwrite the events'
 * (Level Zero lets a program execute a list the device still references on another queue;
 * what the events then show is the program's problem). Prints the rounds. */
#include "ze_app.h"

int main(int argc, char **argv)
{
	unsigned long rounds = test_arg(argc, argv, 1, 5), wait = test_arg(argc, argv, 2, 0);
	const ze_group_count_t groups = { 40, 1, 1 }, busy1 = { 2000, 1, 1 }, busy2 = { 4000, 1, 1 };
	ze_fence_desc_t fdesc = { .stype = ZE_STRUCTURE_TYPE_FENCE_DESC };
	struct app_ze z;
	ze_command_queue_handle_t q0, q1;
	ze_command_list_handle_t list, long1, long2;
	ze_fence_handle_t fence = NULL;

	APP_EXPECT(wait <= 2, "wait 0 (synchronize), 1 (fence wait) or 2 (fence query)");
	app_ze_setup(&z);
	q0 = app_queue(&z, 0, 0);
	q1 = app_queue(&z, 0, 1);
	ze_module_handle_t m = app_module(&z);
	ze_kernel_handle_t k = app_kernel(m, "rerun_k", 256, 1, 1);
	ze_kernel_handle_t busy = app_kernel(m, "busy", 1024, 1, 1); /* 1 us a group */

	list = app_list(&z, 0);
	for (int i = 0; i < 4; i++)
		ZE_CHECK(zeCommandListAppendLaunchKernel(list, k, &groups, NULL, 0, NULL));
	ZE_CHECK(zeCommandListClose(list));
	long1 = app_list(&z, 0);
	ZE_CHECK(zeCommandListAppendLaunchKernel(long1, busy, &busy1, NULL, 0, NULL));
	ZE_CHECK(zeCommandListClose(long1));
	long2 = app_list(&z, 0);
	ZE_CHECK(zeCommandListAppendLaunchKernel(long2, busy, &busy2, NULL, 0, NULL));
	ZE_CHECK(zeCommandListClose(long2));
	if (wait)
		ZE_CHECK(zeFenceCreate(q0, &fdesc, &fence));
	for (unsigned long r = 0; r < rounds; r++) {
		ZE_CHECK(zeCommandQueueExecuteCommandLists(q1, 1, &long1, NULL));
		ZE_CHECK(zeCommandQueueExecuteCommandLists(q1, 1, &list, NULL));
		ZE_CHECK(zeCommandQueueExecuteCommandLists(q0, 1, &list, fence));
		if (wait == 2) {
			ze_result_t s;

			while ((s = zeFenceQueryStatus(fence)) == ZE_RESULT_NOT_READY)
				;
			ZE_CHECK(s);
		} else if (wait == 1) {
			ZE_CHECK(zeFenceHostSynchronize(fence, UINT64_MAX));
		} else {
			ZE_CHECK(zeCommandQueueSynchronize(q0, UINT64_MAX));
			ZE_CHECK(zeCommandQueueExecuteCommandLists(q0, 1, &long2, NULL));
			ZE_CHECK(zeCommandQueueSynchronize(q0, UINT64_MAX));
		}
		if (wait)
			ZE_CHECK(zeFenceReset(fence));
		ZE_CHECK(zeCommandQueueSynchronize(q1, UINT64_MAX));
	}
	if (fence)
		ZE_CHECK(zeFenceDestroy(fence));
	ZE_CHECK(zeCommandListDestroy(list));
	ZE_CHECK(zeCommandListDestroy(long1));
	ZE_CHECK(zeCommandListDestroy(long2));
	ZE_CHECK(zeCommandQueueDestroy(q0));
	ZE_CHECK(zeCommandQueueDestroy(q1));
	ZE_CHECK(zeKernelDestroy(k));
	ZE_CHECK(zeKernelDestroy(busy));
	ZE_CHECK(zeModuleDestroy(m));
	ZE_CHECK(zeContextDestroy(z.context));
	printf("ze_rerun_late: rounds=%lu wait=%lu\n", rounds, wait);
	return 0;
}
