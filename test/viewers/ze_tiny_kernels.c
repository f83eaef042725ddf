/* Kernels of 8 ns, under one 52 ns tick of the simulated device, back to back
 * in a regular list run twice on queue 0.1: each tick holds a run of
 * zero-length kernels, then one that lasts to the next tick, all recorded with
 * the tick's start. Argument: kernels in the list (default 300). */
#include "../apps/ze_app.h"

int main(int argc, char **argv)
{
	int kernels = argc > 1 ? atoi(argv[1]) : 300;
	struct app_ze z;
	ze_group_count_t one = { 1, 1, 1 };

	app_ze_setup(&z);
	ze_module_handle_t m = app_module(&z);
	ze_kernel_handle_t k = app_kernel(m, "k_tiny", 8, 1, 1);
	ze_command_queue_handle_t q = app_queue(&z, 0, 1);
	ze_command_list_handle_t l = app_list(&z, 0);

	for (int i = 0; i < kernels; i++)
		ZE_CHECK(zeCommandListAppendLaunchKernel(l, k, &one, NULL, 0, NULL));
	ZE_CHECK(zeCommandListClose(l));
	for (int run = 0; run < 2; run++) {
		ZE_CHECK(zeCommandQueueExecuteCommandLists(q, 1, &l, NULL));
		ZE_CHECK(zeCommandQueueSynchronize(q, UINT64_MAX));
	}
	printf("tiny kernels ok\n");
	return 0;
}
