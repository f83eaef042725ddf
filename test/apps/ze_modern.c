/* ze_modern [iterations=3] [bytes=65536]: a program written for a current Level Zero stack
 * (spec 1.15+, as SYCL's Level Zero adapter and PyTorch XPU drive it), linked against a
 * newer loader's entry points:
 *  - zeInitDrivers for GPU drivers (count, then handles), then for NPU drivers (none);
 *  - an in-order immediate compute list; per iteration: copy HtoD, kernel "modern_scale"
 *    launched with zeCommandListAppendLaunchKernelWithArguments (16384x1x1 groups of
 *    64x1x1: 1 ms on the simulated device) signalling a counter-based event, a wait on that event on an in-order copy
 *    list, copy DtoH there signalling a second counter-based event, and
 *    zeCommandListHostSynchronize of the compute list, zeEventHostSynchronize of the copy;
 *  - an in-order regular list (kernel "modern_graph", 4x1x1 of 16x1x1, launched with
 *    zeCommandListAppendLaunchKernelWithParameters) run twice on the immediate list with
 *    zeCommandListImmediateAppendCommandListsExp; zeDeviceSynchronize at the end.
 * Counter-based events come from zeEventCounterBasedCreate (spec 1.15) when the driver
 * has it, else from a pool with the counter-based extension (spec 1.8).
 * Checks every byte; prints deterministic lines. */
#include "backends/levelzero/ze_newer.h"
#include "ze_app.h"

/* Two counter-based events for immediate lists, with device timestamps. */
static void counter_based_events(struct app_ze *z, ze_api_version_t api, ze_event_handle_t ev[2],
				 ze_event_pool_handle_t *pool)
{
	*pool = NULL;
	if (api >= ZE_MAKE_VERSION(1, 15)) {
		ze_event_counter_based_desc_t d = { ZE_STRUCTURE_TYPE_EVENT_COUNTER_BASED_DESC, NULL,
						    ZE_EVENT_COUNTER_BASED_FLAG_IMMEDIATE |
						    ZE_EVENT_COUNTER_BASED_FLAG_HOST_VISIBLE |
						    ZE_EVENT_COUNTER_BASED_FLAG_DEVICE_TIMESTAMP,
						    0, 0 };

		for (int i = 0; i < 2; i++)
			ZE_CHECK(zeEventCounterBasedCreate(z->context, z->device, &d, &ev[i]));
		printf("counter-based events: zeEventCounterBasedCreate\n");
		return;
	}
	*pool = app_counter_based_pool(z, 2);
	for (uint32_t i = 0; i < 2; i++)
		ev[i] = app_event(*pool, i);
	printf("counter-based events: event pool extension\n");
}

int main(int argc, char **argv)
{
	unsigned long iterations = test_arg(argc, argv, 1, 3);
	size_t bytes = test_arg(argc, argv, 2, 65536);
	ze_init_driver_type_desc_t types = { ZE_STRUCTURE_TYPE_INIT_DRIVER_TYPE_DESC, NULL,
					     ZE_INIT_DRIVER_TYPE_FLAG_GPU };
	ze_context_desc_t cdesc = { ZE_STRUCTURE_TYPE_CONTEXT_DESC };
	ze_init_driver_type_desc_t npu_only = { ZE_STRUCTURE_TYPE_INIT_DRIVER_TYPE_DESC, NULL,
						ZE_INIT_DRIVER_TYPE_FLAG_NPU };
	uint32_t ndrivers = 0, nnpu = 0, ndev = 1;
	ze_event_pool_handle_t pool;
	ze_event_handle_t ev[2];
	ze_api_version_t api;
	struct app_ze z;

	ZE_CHECK(zeInitDrivers(&ndrivers, NULL, &types));
	APP_EXPECT(ndrivers >= 1, "no GPU driver");
	ndrivers = 1;
	ZE_CHECK(zeInitDrivers(&ndrivers, &z.driver, &types));
	/* Asked for NPUs only, the loader finds none (the driver is a GPU's). */
	ZE_CHECK(zeInitDrivers(&nnpu, NULL, &npu_only));
	APP_EXPECT(nnpu == 0, "an NPU driver: %u", nnpu);
	ZE_CHECK(zeDriverGetApiVersion(z.driver, &api));
	printf("drivers: %u, API %u.%u\n", ndrivers, ZE_MAJOR_VERSION(api), ZE_MINOR_VERSION(api));
	APP_EXPECT(api >= ZE_MAKE_VERSION(1, 14), "this program needs a driver of spec 1.14");
	ZE_CHECK(zeDeviceGet(z.driver, &ndev, &z.device));
	ZE_CHECK(zeContextCreate(z.driver, &cdesc, &z.context));

	ze_command_list_handle_t compute = app_in_order_list(&z, 0);
	ze_command_list_handle_t copy = app_in_order_list(&z, 1);
	ze_module_handle_t module = app_module(&z);
	ze_kernel_handle_t scale = app_kernel(module, "modern_scale", 1, 1, 1);
	ze_kernel_handle_t graph = app_kernel(module, "modern_graph", 16, 1, 1);
	uint8_t *host = app_host_alloc(&z, bytes), *back = app_host_alloc(&z, bytes);
	void *dev = app_device_alloc(&z, bytes);
	const ze_group_count_t groups = { 16384, 1, 1 }, graph_groups = { 4, 1, 1 };
	const ze_group_size_t size = { 64, 1, 1 };
	uint32_t factor = 3;
	void *args[] = { &dev, &factor };

	counter_based_events(&z, api, ev, &pool);
	for (unsigned long it = 0; it < iterations; it++) {
		for (size_t i = 0; i < bytes; i++)
			host[i] = (uint8_t)(i * 7 + it);
		memset(back, 0, bytes);
		ZE_CHECK(zeCommandListAppendMemoryCopy(compute, dev, host, bytes, NULL, 0, NULL));
		ZE_CHECK(zeCommandListAppendLaunchKernelWithArguments(compute, scale, groups, size,
								      args, NULL, ev[0], 0, NULL));
		/* The copy engine waits for the kernel: the event as that append left it. */
		ZE_CHECK(zeCommandListAppendWaitOnEvents(copy, 1, &ev[0]));
		ZE_CHECK(zeCommandListAppendMemoryCopy(copy, back, dev, bytes, ev[1], 0, NULL));
		ZE_CHECK(zeCommandListHostSynchronize(compute, UINT64_MAX));
		ZE_CHECK(zeEventHostSynchronize(ev[1], UINT64_MAX));
		APP_EXPECT(memcmp(host, back, bytes) == 0, "iteration %lu: bytes differ", it);
		printf("iteration %lu: %zu bytes there and back, checksum %016" PRIx64 "\n", it,
		       bytes, app_checksum(back, bytes));
	}

	/* A recorded in-order list, run twice on the immediate list (as SYCL graphs are). */
	ze_command_list_desc_t ldesc = { ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, NULL, 0,
					 ZE_COMMAND_LIST_FLAG_IN_ORDER };
	ze_command_list_handle_t recorded;

	ZE_CHECK(zeCommandListCreate(z.context, z.device, &ldesc, &recorded));
	ZE_CHECK(zeCommandListAppendLaunchKernelWithParameters(recorded, graph, &graph_groups,
							       NULL, NULL, 0, NULL));
	ZE_CHECK(zeCommandListClose(recorded));
	for (int run = 0; run < 2; run++)
		ZE_CHECK(zeCommandListImmediateAppendCommandListsExp(compute, 1, &recorded, NULL, 0,
								     NULL));
	ZE_CHECK(zeDeviceSynchronize(z.device));
	printf("recorded list: 2 runs done\n");

	ZE_CHECK(zeCommandListDestroy(recorded));
	for (int i = 0; i < 2; i++)
		ZE_CHECK(zeEventDestroy(ev[i]));
	if (pool)
		ZE_CHECK(zeEventPoolDestroy(pool));
	ZE_CHECK(zeMemFree(z.context, dev));
	ZE_CHECK(zeMemFree(z.context, back));
	ZE_CHECK(zeMemFree(z.context, host));
	ZE_CHECK(zeKernelDestroy(graph));
	ZE_CHECK(zeKernelDestroy(scale));
	ZE_CHECK(zeModuleDestroy(module));
	ZE_CHECK(zeCommandListDestroy(copy));
	ZE_CHECK(zeCommandListDestroy(compute));
	ZE_CHECK(zeContextDestroy(z.context));
	return 0;
}
