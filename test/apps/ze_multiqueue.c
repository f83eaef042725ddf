/* ze_multiqueue [iterations] [bytes]: two compute queues and the copy queue work at the same
 * time, each batch tracked by a fence; a second copy batch reads the results back. */
#include "ze_app.h"

struct engine {
	ze_command_queue_handle_t queue;
	ze_command_list_handle_t list;
	ze_fence_handle_t fence;
};

static void engine_setup(struct app_ze *z, struct engine *e, uint32_t ordinal, uint32_t index)
{
	ze_fence_desc_t fdesc = { ZE_STRUCTURE_TYPE_FENCE_DESC, NULL, 0 };

	e->queue = app_queue(z, ordinal, index);
	e->list = app_list(z, ordinal);
	ZE_CHECK(zeFenceCreate(e->queue, &fdesc, &e->fence));
}

static void engine_submit(struct engine *e, ze_command_list_handle_t list)
{
	ZE_CHECK(zeCommandQueueExecuteCommandLists(e->queue, 1, &list, e->fence));
}

static void engine_wait(struct engine *e)
{
	ZE_CHECK(zeFenceHostSynchronize(e->fence, UINT64_MAX));
	ZE_CHECK(zeFenceQueryStatus(e->fence));
	ZE_CHECK(zeFenceReset(e->fence));
	APP_EXPECT(zeFenceQueryStatus(e->fence) == ZE_RESULT_NOT_READY, "fence still signaled");
}

static void expect_pattern(const uint8_t *p, size_t n, const uint8_t *pat, size_t pn,
			   const char *what)
{
	for (size_t i = 0; i < n; i++)
		APP_EXPECT(p[i] == pat[i % pn], "%s: byte %zu is 0x%02x", what, i, p[i]);
}

int main(int argc, char **argv)
{
	unsigned long iterations = test_arg(argc, argv, 1, 2);
	size_t n = test_arg(argc, argv, 2, 32768);
	static const uint8_t pat_a[1] = { 0xa1 }, pat_b[2] = { 0xb2, 0xb3 };
	struct app_ze z;
	struct engine a, b, copy;
	ze_command_list_handle_t readback;
	ze_group_count_t ga = { 64, 1, 1 }, gb = { 32, 2, 1 };

	APP_EXPECT(n >= 2 && n % 2 == 0, "bytes must be even");
	app_ze_setup(&z);
	engine_setup(&z, &a, 0, 0);
	engine_setup(&z, &b, 0, 1);
	engine_setup(&z, &copy, 1, 0);
	readback = app_list(&z, 1);

	ze_module_handle_t module = app_module(&z);
	ze_kernel_handle_t ka = app_kernel(module, "mq_kernel_a", 64, 1, 1);
	ze_kernel_handle_t kb = app_kernel(module, "mq_kernel_b", 32, 1, 1);
	uint8_t *src = app_host_alloc(&z, n);
	uint8_t *dev_a = app_device_alloc(&z, n), *dev_b = app_device_alloc(&z, n);
	uint8_t *dev_c = app_device_alloc(&z, n);
	uint8_t *out_a = app_host_alloc(&z, n), *out_b = app_host_alloc(&z, n);
	uint8_t *out_c = app_host_alloc(&z, n);

	ZE_CHECK(zeCommandListAppendLaunchKernel(a.list, ka, &ga, NULL, 0, NULL));
	ZE_CHECK(zeCommandListAppendMemoryFill(a.list, dev_a, pat_a, 1, n, NULL, 0, NULL));
	ZE_CHECK(zeCommandListClose(a.list));
	ZE_CHECK(zeCommandListAppendLaunchKernel(b.list, kb, &gb, NULL, 0, NULL));
	ZE_CHECK(zeCommandListAppendMemoryFill(b.list, dev_b, pat_b, 2, n, NULL, 0, NULL));
	ZE_CHECK(zeCommandListClose(b.list));
	ZE_CHECK(zeCommandListAppendMemoryCopy(copy.list, dev_c, src, n, NULL, 0, NULL));
	ZE_CHECK(zeCommandListClose(copy.list));
	ZE_CHECK(zeCommandListAppendMemoryCopy(readback, out_a, dev_a, n, NULL, 0, NULL));
	ZE_CHECK(zeCommandListAppendMemoryCopy(readback, out_b, dev_b, n, NULL, 0, NULL));
	ZE_CHECK(zeCommandListAppendMemoryCopy(readback, out_c, dev_c, n, NULL, 0, NULL));
	ZE_CHECK(zeCommandListClose(readback));

	for (unsigned long it = 0; it < iterations; it++) {
		for (size_t i = 0; i < n; i++)
			src[i] = (uint8_t)(i ^ (it * 0x5b));
		memset(out_a, 0, n);
		memset(out_b, 0, n);
		memset(out_c, 0, n);
		/* Three engines at once. */
		engine_submit(&a, a.list);
		engine_submit(&b, b.list);
		engine_submit(&copy, copy.list);
		engine_wait(&a);
		engine_wait(&b);
		engine_wait(&copy);
		engine_submit(&copy, readback);
		engine_wait(&copy);
		expect_pattern(out_a, n, pat_a, 1, "queue a");
		expect_pattern(out_b, n, pat_b, 2, "queue b");
		APP_EXPECT(memcmp(out_c, src, n) == 0, "copy queue result differs");
		printf("iteration %lu: a=%016" PRIx64 " b=%016" PRIx64 " copy=%016" PRIx64 " ok\n",
		       it, app_checksum(out_a, n), app_checksum(out_b, n), app_checksum(out_c, n));
	}

	struct engine *all[] = { &a, &b, &copy };
	for (int i = 0; i < 3; i++) {
		ZE_CHECK(zeFenceDestroy(all[i]->fence));
		ZE_CHECK(zeCommandListDestroy(all[i]->list));
		ZE_CHECK(zeCommandQueueDestroy(all[i]->queue));
	}
	ZE_CHECK(zeCommandListDestroy(readback));
	void *bufs[] = { src, dev_a, dev_b, dev_c, out_a, out_b, out_c };
	for (int i = 0; i < 7; i++)
		ZE_CHECK(zeMemFree(z.context, bufs[i]));
	ZE_CHECK(zeKernelDestroy(ka));
	ZE_CHECK(zeKernelDestroy(kb));
	ZE_CHECK(zeModuleDestroy(module));
	ZE_CHECK(zeContextDestroy(z.context));
	printf("ze_multiqueue: ok\n");
	return 0;
}
