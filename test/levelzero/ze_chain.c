/* ze_chain [kernels=6] [ns=2000000] [executions=2]: back-to-back kernels of `ns` ns each
 * (groups ns x 1 x 1 of size 1), so a run of them is longer than a wrap of a short
 * timestamp counter and every wrap falls inside some kernel. A regular list of them
 * executed `executions` times (Synchronize after each), then the same on an immediate list
 * (zeEventHostSynchronize on the last kernel's event, from a pool without timestamps). */
#include "../apps/ze_app.h"

int main(int argc, char **argv)
{
	unsigned long kernels = app_arg(argc, argv, 1, 6), ns = app_arg(argc, argv, 2, 2000000);
	unsigned long executions = app_arg(argc, argv, 3, 2);
	ze_group_count_t groups = { (uint32_t)ns, 1, 1 };
	struct app_ze z;

	if (!kernels || !ns || ns > UINT32_MAX) {
		fprintf(stderr, "ze_chain: kernels >= 1, 1 <= ns < 2^32\n");
		return 2;
	}
	app_ze_setup(&z);
	ze_command_queue_handle_t queue = app_queue(&z, 0, 0);
	ze_command_list_handle_t list = app_list(&z, 0);
	ze_module_handle_t module = app_module(&z);
	ze_kernel_handle_t k = app_kernel(module, "chain_kernel", 1, 1, 1);

	for (unsigned long i = 0; i < kernels; i++)
		ZE_CHECK(zeCommandListAppendLaunchKernel(list, k, &groups, NULL, 0, NULL));
	ZE_CHECK(zeCommandListClose(list));
	for (unsigned long it = 0; it < executions; it++) {
		ZE_CHECK(zeCommandQueueExecuteCommandLists(queue, 1, &list, NULL));
		ZE_CHECK(zeCommandQueueSynchronize(queue, UINT64_MAX));
		printf("execution %lu: %lu kernels of %lu ns\n", it, kernels, ns);
	}

	ze_command_list_handle_t imm = app_immediate_list(&z, 0, 1);
	ze_event_pool_handle_t pool = app_event_pool(&z, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1);
	ze_event_handle_t done = app_event(pool, 0);

	for (unsigned long i = 0; i < kernels; i++)
		ZE_CHECK(zeCommandListAppendLaunchKernel(imm, k, &groups, i + 1 == kernels ? done : NULL,
							 0, NULL));
	ZE_CHECK(zeEventHostSynchronize(done, UINT64_MAX));
	printf("immediate: %lu kernels of %lu ns\n", kernels, ns);

	ZE_CHECK(zeEventDestroy(done));
	ZE_CHECK(zeEventPoolDestroy(pool));
	ZE_CHECK(zeCommandListDestroy(imm));
	ZE_CHECK(zeKernelDestroy(k));
	ZE_CHECK(zeModuleDestroy(module));
	ZE_CHECK(zeCommandListDestroy(list));
	ZE_CHECK(zeCommandQueueDestroy(queue));
	ZE_CHECK(zeContextDestroy(z.context));
	printf("ze_chain: ok\n");
	return 0;
}
