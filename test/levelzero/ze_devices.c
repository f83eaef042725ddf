/* ze_devices: on every device of every driver, a kernel `dev<i>_kernel` of (i+1) x 1000 ns on
 * an immediate list and a 4096-byte host-to-device copy, each device waited in turn.
 * With two drivers the loader wraps every handle (its intercept mode). */
#include "../apps/ze_app.h"

int main(void)
{
	static const uint8_t spirv[] = { 0x03, 0x02, 0x23, 0x07, 0x00, 0x00, 0x01, 0x00 };
	ze_driver_handle_t drivers[8];
	uint32_t ndrv = 8;
	int index = 0;

	ZE_CHECK(zeInit(0));
	ZE_CHECK(zeDriverGet(&ndrv, drivers));
	for (uint32_t d = 0; d < ndrv; d++) {
		ze_context_desc_t cdesc = { ZE_STRUCTURE_TYPE_CONTEXT_DESC, NULL, 0 };
		ze_device_handle_t devices[8];
		ze_context_handle_t ctx;
		uint32_t ndev = 8;

		ZE_CHECK(zeContextCreate(drivers[d], &cdesc, &ctx));
		ZE_CHECK(zeDeviceGet(drivers[d], &ndev, devices));
		for (uint32_t i = 0; i < ndev; i++, index++) {
			ze_command_queue_desc_t qd = { ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, NULL, 0, 0,
						       0, ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS,
						       ZE_COMMAND_QUEUE_PRIORITY_NORMAL };
			ze_module_desc_t md = { ZE_STRUCTURE_TYPE_MODULE_DESC, NULL,
						ZE_MODULE_FORMAT_IL_SPIRV, sizeof(spirv), spirv,
						NULL, NULL };
			ze_event_pool_desc_t pd = { ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, NULL,
						    ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1 };
			ze_event_desc_t ed = { ZE_STRUCTURE_TYPE_EVENT_DESC, NULL, 0,
					       ZE_EVENT_SCOPE_FLAG_HOST, ZE_EVENT_SCOPE_FLAG_HOST };
			ze_host_mem_alloc_desc_t hd = { ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, NULL, 0 };
			ze_device_mem_alloc_desc_t dd = { ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, NULL,
							  0, 0 };
			ze_group_count_t groups = { (uint32_t)(index + 1) * 1000, 1, 1 };
			ze_command_list_handle_t imm;
			ze_module_handle_t module;
			ze_kernel_handle_t kernel;
			ze_event_pool_handle_t pool;
			ze_event_handle_t done;
			char name[32];
			void *src, *dst;

			snprintf(name, sizeof(name), "dev%d_kernel", index);
			ze_kernel_desc_t kd = { ZE_STRUCTURE_TYPE_KERNEL_DESC, NULL, 0, name };

			ZE_CHECK(zeCommandListCreateImmediate(ctx, devices[i], &qd, &imm));
			ZE_CHECK(zeModuleCreate(ctx, devices[i], &md, &module, NULL));
			ZE_CHECK(zeKernelCreate(module, &kd, &kernel));
			ZE_CHECK(zeEventPoolCreate(ctx, &pd, 1, &devices[i], &pool));
			ZE_CHECK(zeEventCreate(pool, &ed, &done));
			ZE_CHECK(zeMemAllocHost(ctx, &hd, 4096, 64, &src));
			ZE_CHECK(zeMemAllocDevice(ctx, &dd, 4096, 64, devices[i], &dst));
			memset(src, index, 4096);
			ZE_CHECK(zeCommandListAppendLaunchKernel(imm, kernel, &groups, NULL, 0, NULL));
			ZE_CHECK(zeCommandListAppendMemoryCopy(imm, dst, src, 4096, done, 0, NULL));
			ZE_CHECK(zeEventHostSynchronize(done, UINT64_MAX));
			printf("device %d: %s done\n", index, name);
			ZE_CHECK(zeMemFree(ctx, src));
			ZE_CHECK(zeMemFree(ctx, dst));
			ZE_CHECK(zeEventDestroy(done));
			ZE_CHECK(zeEventPoolDestroy(pool));
			ZE_CHECK(zeKernelDestroy(kernel));
			ZE_CHECK(zeModuleDestroy(module));
			ZE_CHECK(zeCommandListDestroy(imm));
		}
		ZE_CHECK(zeContextDestroy(ctx));
	}
	printf("ze_devices: %d devices\n", index);
	return 0;
}
