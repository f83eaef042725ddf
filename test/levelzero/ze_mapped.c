/* ze_mapped [iterations=3]: events of a pool with ZE_EVENT_POOL_FLAG_KERNEL_MAPPED_TIMESTAMP
 * (spec 1.6: kernel timestamps in host time) time kernel `mapped_k` (100x1x1 groups of
 * 64x1x1: 6400 ns) on a regular list run on queue 0.0 and on an immediate list (0, 1); the
 * program reads each duration from its event, host-resets it and goes on. Prints one line
 * per kernel. */
#include "../apps/ze_app.h"

#define MAPPED 0x8u /* ZE_EVENT_POOL_FLAG_KERNEL_MAPPED_TIMESTAMP */
static struct app_ze z;

int main(int argc, char **argv)
{
	int reps = argc > 1 ? atoi(argv[1]) : 3;
	app_ze_setup(&z);
	ze_module_handle_t m = app_module(&z);
	ze_kernel_handle_t k = app_kernel(m, "mapped_k", 64, 1, 1);
	ze_group_count_t g = { 100, 1, 1 }; /* 6400 ns */
	ze_event_pool_handle_t p = app_event_pool(&z, ZE_EVENT_POOL_FLAG_HOST_VISIBLE | MAPPED, 2);
	ze_event_handle_t e0 = app_event(p, 0), e1 = app_event(p, 1);
	ze_command_queue_handle_t q = app_queue(&z, 0, 0);
	ze_command_list_handle_t l = app_list(&z, 0);
	ZE_CHECK(zeCommandListAppendLaunchKernel(l, k, &g, e0, 0, NULL));
	ZE_CHECK(zeCommandListClose(l));
	ze_command_list_handle_t imm = app_immediate_list(&z, 0, 1);
	for (int r = 0; r < reps; r++) {
		ze_kernel_timestamp_result_t ts;
		ZE_CHECK(zeCommandQueueExecuteCommandLists(q, 1, &l, NULL));
		ZE_CHECK(zeCommandQueueSynchronize(q, UINT64_MAX));
		ZE_CHECK(zeEventQueryKernelTimestamp(e0, &ts));
		printf("regular: %" PRIu64 " ns\n", ts.global.kernelEnd - ts.global.kernelStart);
		ZE_CHECK(zeEventHostReset(e0));
		ZE_CHECK(zeCommandListAppendLaunchKernel(imm, k, &g, e1, 0, NULL));
		ZE_CHECK(zeEventHostSynchronize(e1, UINT64_MAX));
		ZE_CHECK(zeEventQueryKernelTimestamp(e1, &ts));
		printf("immediate: %" PRIu64 " ns\n", ts.global.kernelEnd - ts.global.kernelStart);
		ZE_CHECK(zeEventHostReset(e1));
	}
	ZE_CHECK(zeContextDestroy(z.context));
	return 0;
}
