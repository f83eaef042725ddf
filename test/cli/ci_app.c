// SPDX-License-Identifier: MIT
/*
 * ci_app [steps=10] [gemm_groups=64] [extra=0] [nofile=0]: what a CI job
 * smoke-profiles.
 * Each step runs a regular list on a compute queue: copy 64 KiB HtoD, kernel
 * gemm_f32 (gemm_groups x 1 x 1 groups of 256: gemm_groups x 256 ns on the
 * simulated device), kernel bias_add (16 groups of 64: 1024 ns), copy DtoH,
 * then synchronizes. extra=1 adds a kernel softmax per step (a new kernel
 * for diffs). nofile=1: after the setup, one more descriptor can be opened
 * (RLIMIT_NOFILE just above the lowest free one): the trace takes it, and
 * the process cannot list its trace with gputrace run. Plain Level Zero, so
 * the tests can make a kernel slower with a bigger launch and nothing else
 * changed.
 */
#include <sys/resource.h>
#include <unistd.h>

#include "test/apps/ze_app.h"

int main(int argc, char **argv)
{
	unsigned long steps = test_arg(argc, argv, 1, 10);
	unsigned long groups = test_arg(argc, argv, 2, 64);
	unsigned long extra = test_arg(argc, argv, 3, 0);
	unsigned long nofile = test_arg(argc, argv, 4, 0);
	size_t n = 65536;
	struct app_ze z;
	ze_group_count_t gemm_groups = { (uint32_t)groups, 1, 1 }, bias_groups = { 16, 1, 1 };

	if (!groups || groups > 1u << 20) {
		fprintf(stderr, "ci_app: gemm_groups must be 1 to 1048576\n");
		return 2;
	}
	app_ze_setup(&z);
	ze_command_queue_handle_t queue = app_queue(&z, 0, 0);
	ze_command_list_handle_t list = app_list(&z, 0);
	ze_module_handle_t module = app_module(&z);
	ze_kernel_handle_t gemm = app_kernel(module, "gemm_f32", 256, 1, 1);
	ze_kernel_handle_t bias = app_kernel(module, "bias_add", 64, 1, 1);
	ze_kernel_handle_t softmax = app_kernel(module, "softmax", 32, 1, 1);
	uint8_t *host = app_host_alloc(&z, n), *dev = app_device_alloc(&z, n);

	if (nofile) {
		int lowest = dup(0);
		struct rlimit lim = { (rlim_t)lowest + 1, (rlim_t)lowest + 1 };

		close(lowest);
		APP_EXPECT(lowest > 0 && !setrlimit(RLIMIT_NOFILE, &lim), "setrlimit");
	}
	memset(host, 7, n);
	ZE_CHECK(zeCommandListAppendMemoryCopy(list, dev, host, n, NULL, 0, NULL));
	ZE_CHECK(zeCommandListAppendLaunchKernel(list, gemm, &gemm_groups, NULL, 0, NULL));
	ZE_CHECK(zeCommandListAppendLaunchKernel(list, bias, &bias_groups, NULL, 0, NULL));
	if (extra)
		ZE_CHECK(zeCommandListAppendLaunchKernel(list, softmax, &bias_groups, NULL, 0, NULL));
	ZE_CHECK(zeCommandListAppendMemoryCopy(list, host, dev, n, NULL, 0, NULL));
	ZE_CHECK(zeCommandListClose(list));
	for (unsigned long s = 0; s < steps; s++) {
		ZE_CHECK(zeCommandQueueExecuteCommandLists(queue, 1, &list, NULL));
		ZE_CHECK(zeCommandQueueSynchronize(queue, UINT64_MAX));
	}
	APP_EXPECT(host[0] == 7 && host[n - 1] == 7, "copy back differs");
	printf("ci_app: %lu steps, gemm_f32 %lu groups: ok\n", steps, groups);
	ZE_CHECK(zeMemFree(z.context, host));
	ZE_CHECK(zeMemFree(z.context, dev));
	ZE_CHECK(zeKernelDestroy(softmax));
	ZE_CHECK(zeKernelDestroy(bias));
	ZE_CHECK(zeKernelDestroy(gemm));
	ZE_CHECK(zeModuleDestroy(module));
	ZE_CHECK(zeCommandListDestroy(list));
	ZE_CHECK(zeCommandQueueDestroy(queue));
	ZE_CHECK(zeContextDestroy(z.context));
	return 0;
}
