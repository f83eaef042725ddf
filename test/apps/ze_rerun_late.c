/* ze_rerun_late [rounds=5]: one regular list of 4 kernels ("rerun_k", 10 us each) run on
 * two queues (compute 0.0 and 0.1, two engines) so that a run on 0.1, queued behind 2 ms of
 * other work there, signals the list's events after the run on 0.0 that followed it:
 *   execute(busy 2 ms, q1); execute(list, q1); execute(list, q0); synchronize(q0);
 *   execute(busy 4 ms, q0); synchronize(q0); synchronize(q1)
 * The list's run on q0 ends in 40 us and its synchronize returns then; the run on q1 ends
 * 2 ms later, before the second synchronize of q0 returns, and its times overwrite the
 * events' (Level Zero lets a program execute a list the device still references on
 * another queue; what the events then show is the program's problem). Prints the rounds. */
#include "ze_app.h"

int main(int argc, char **argv)
{
	unsigned long rounds = test_arg(argc, argv, 1, 5);
	const ze_group_count_t groups = { 40, 1, 1 }, busy1 = { 2000, 1, 1 }, busy2 = { 4000, 1, 1 };
	struct app_ze z;
	ze_command_queue_handle_t q0, q1;
	ze_command_list_handle_t list, long1, long2;

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
	for (unsigned long r = 0; r < rounds; r++) {
		ZE_CHECK(zeCommandQueueExecuteCommandLists(q1, 1, &long1, NULL));
		ZE_CHECK(zeCommandQueueExecuteCommandLists(q1, 1, &list, NULL));
		ZE_CHECK(zeCommandQueueExecuteCommandLists(q0, 1, &list, NULL));
		ZE_CHECK(zeCommandQueueSynchronize(q0, UINT64_MAX));
		ZE_CHECK(zeCommandQueueExecuteCommandLists(q0, 1, &long2, NULL));
		ZE_CHECK(zeCommandQueueSynchronize(q0, UINT64_MAX));
		ZE_CHECK(zeCommandQueueSynchronize(q1, UINT64_MAX));
	}
	ZE_CHECK(zeCommandListDestroy(list));
	ZE_CHECK(zeCommandListDestroy(long1));
	ZE_CHECK(zeCommandListDestroy(long2));
	ZE_CHECK(zeCommandQueueDestroy(q0));
	ZE_CHECK(zeCommandQueueDestroy(q1));
	ZE_CHECK(zeKernelDestroy(k));
	ZE_CHECK(zeKernelDestroy(busy));
	ZE_CHECK(zeModuleDestroy(m));
	ZE_CHECK(zeContextDestroy(z.context));
	printf("ze_rerun_late: rounds=%lu\n", rounds);
	return 0;
}
