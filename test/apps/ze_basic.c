/* ze_basic [iterations] [bytes] [dir]: a regular command list (2 kernels, copies, a fill,
 * a barrier) executed `iterations` times on a compute queue, then an immediate list with
 * one kernel and one copy synchronized on an event from a pool without timestamps; then,
 * with dir, changes to that directory before it exits. */
#include <unistd.h>

#include "ze_app.h"

static const uint8_t fill_pattern[4] = { 0xde, 0xad, 0xbe, 0xef };

static void expected_result(uint8_t *out, const uint8_t *src, size_t n)
{
	memcpy(out, src, n / 2);
	for (size_t i = n / 2; i < n; i++)
		out[i] = fill_pattern[(i - n / 2) % sizeof(fill_pattern)];
}

int main(int argc, char **argv)
{
	unsigned long iterations = test_arg(argc, argv, 1, 3);
	size_t n = test_arg(argc, argv, 2, 65536);
	struct app_ze z;
	ze_device_properties_t props = { ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES };
	ze_group_count_t add_groups = { 4, 1, 1 }, scale_groups = { 8, 2, 1 }, imm_groups = { 2, 1, 1 };

	if (n < 8 || n % 8) {
		fprintf(stderr, "ze_basic: bytes must be a multiple of 8, at least 8\n");
		return 2;
	}
	app_ze_setup(&z);
	ZE_CHECK(zeDeviceGetProperties(z.device, &props));
	printf("device: %s\n", props.name);

	ze_command_queue_handle_t queue = app_queue(&z, 0, 0);
	ze_command_list_handle_t list = app_list(&z, 0);
	ze_module_handle_t module = app_module(&z);
	ze_kernel_handle_t vector_add = app_kernel(module, "vector_add", 64, 1, 1);
	ze_kernel_handle_t scale = app_kernel(module, "scale", 32, 1, 1);
	uint8_t *src = app_host_alloc(&z, n), *dst = app_host_alloc(&z, n);
	uint8_t *dev = app_device_alloc(&z, n), *expect = malloc(n);
	float factor = 2.0f;

	APP_EXPECT(expect, "malloc");
	ZE_CHECK(zeKernelSetArgumentValue(vector_add, 0, sizeof(dev), &dev));
	ZE_CHECK(zeKernelSetArgumentValue(scale, 0, sizeof(dev), &dev));
	ZE_CHECK(zeKernelSetArgumentValue(scale, 1, sizeof(factor), &factor));

	ZE_CHECK(zeCommandListAppendMemoryCopy(list, dev, src, n, NULL, 0, NULL));
	ZE_CHECK(zeCommandListAppendLaunchKernel(list, vector_add, &add_groups, NULL, 0, NULL));
	ZE_CHECK(zeCommandListAppendMemoryFill(list, dev + n / 2, fill_pattern,
					       sizeof(fill_pattern), n / 2, NULL, 0, NULL));
	ZE_CHECK(zeCommandListAppendBarrier(list, NULL, 0, NULL));
	ZE_CHECK(zeCommandListAppendLaunchKernel(list, scale, &scale_groups, NULL, 0, NULL));
	ZE_CHECK(zeCommandListAppendMemoryCopy(list, dst, dev, n, NULL, 0, NULL));
	ZE_CHECK(zeCommandListClose(list));
	printf("list: copy HtoD, vector_add 4x1x1 groups of 64x1x1, fill %zu bytes, barrier, "
	       "scale 8x2x1 groups of 32x1x1, copy DtoH\n", n / 2);

	for (unsigned long it = 0; it < iterations; it++) {
		for (size_t i = 0; i < n; i++)
			src[i] = (uint8_t)(i * 7 + it * 13);
		memset(dst, 0, n);
		ZE_CHECK(zeCommandQueueExecuteCommandLists(queue, 1, &list, NULL));
		ZE_CHECK(zeCommandQueueSynchronize(queue, UINT64_MAX));
		expected_result(expect, src, n);
		APP_EXPECT(memcmp(dst, expect, n) == 0, "iteration %lu: result differs", it);
		printf("iteration %lu: %zu bytes checksum %016" PRIx64 " ok\n", it, n,
		       app_checksum(dst, n));
	}

	/* Immediate list: work starts at append; completion is seen through an event. */
	ze_command_list_handle_t imm = app_immediate_list(&z, 0, 1);
	ze_kernel_handle_t imm_kernel = app_kernel(module, "imm_kernel", 16, 1, 1);
	ze_event_pool_handle_t pool = app_event_pool(&z, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1);
	ze_event_handle_t done = app_event(pool, 0);
	uint8_t *back = app_host_alloc(&z, n);

	ZE_CHECK(zeCommandListAppendLaunchKernel(imm, imm_kernel, &imm_groups, NULL, 0, NULL));
	ZE_CHECK(zeCommandListAppendMemoryCopy(imm, back, dev, n, done, 0, NULL));
	ZE_CHECK(zeEventHostSynchronize(done, UINT64_MAX));
	ZE_CHECK(zeEventQueryStatus(done));
	APP_EXPECT(memcmp(back, expect, n) == 0, "immediate copy differs");
	printf("immediate: imm_kernel 2x1x1 groups of 16x1x1, copy %zu bytes checksum %016" PRIx64
	       " ok\n", n, app_checksum(back, n));

	ZE_CHECK(zeEventDestroy(done));
	ZE_CHECK(zeEventPoolDestroy(pool));
	ZE_CHECK(zeCommandListDestroy(imm));
	ZE_CHECK(zeMemFree(z.context, back));
	ZE_CHECK(zeMemFree(z.context, src));
	ZE_CHECK(zeMemFree(z.context, dst));
	ZE_CHECK(zeMemFree(z.context, dev));
	ZE_CHECK(zeKernelDestroy(imm_kernel));
	ZE_CHECK(zeKernelDestroy(vector_add));
	ZE_CHECK(zeKernelDestroy(scale));
	ZE_CHECK(zeModuleDestroy(module));
	ZE_CHECK(zeCommandListDestroy(list));
	ZE_CHECK(zeCommandQueueDestroy(queue));
	ZE_CHECK(zeContextDestroy(z.context));
	free(expect);
	if (argc > 3 && chdir(argv[3])) {
		perror("ze_basic: chdir");
		return 1;
	}
	printf("ze_basic: ok\n");
	return 0;
}
