/* ze_info: what PTI-GPU's ze_info sample does, written here: every driver and device
 * property query a program makes to describe a GPU, each printed on one line. */
#include "ze_app.h"

int main(void)
{
	ze_device_properties_t dev = { ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES };
	ze_device_compute_properties_t compute = { ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES };
	ze_device_module_properties_t module = { ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES };
	ze_device_memory_access_properties_t access = {
		ZE_STRUCTURE_TYPE_DEVICE_MEMORY_ACCESS_PROPERTIES };
	ze_device_image_properties_t image = { ZE_STRUCTURE_TYPE_DEVICE_IMAGE_PROPERTIES };
	ze_driver_properties_t drv = { ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES };
	ze_device_memory_properties_t mem[4];
	ze_device_cache_properties_t cache[4];
	ze_command_queue_group_properties_t groups[8];
	uint32_t nmem = 0, ncache = 0, ngroups = 0, next = 0;
	ze_api_version_t api;
	struct app_ze z;

	app_ze_setup(&z);
	ZE_CHECK(zeDriverGetProperties(z.driver, &drv));
	ZE_CHECK(zeDriverGetApiVersion(z.driver, &api));
	ZE_CHECK(zeDriverGetExtensionProperties(z.driver, &next, NULL));
	printf("driver version %u, API %u.%u, %u extension(s)\n", drv.driverVersion,
	       ZE_MAJOR_VERSION(api), ZE_MINOR_VERSION(api), next);
	ZE_CHECK(zeDeviceGetProperties(z.device, &dev));
	printf("device %s: type %d, %u slices x %u subslices x %u EUs\n", dev.name, dev.type,
	       dev.numSlices, dev.numSubslicesPerSlice, dev.numEUsPerSubslice);
	ZE_CHECK(zeDeviceGetComputeProperties(z.device, &compute));
	printf("compute: max group size %u, shared local memory %u\n", compute.maxTotalGroupSize,
	       compute.maxSharedLocalMemory);
	ZE_CHECK(zeDeviceGetModuleProperties(z.device, &module));
	printf("module: SPIR-V %u.%u, fp16 %s, fp64 %s, max arguments %u bytes\n",
	       ZE_MAJOR_VERSION(module.spirvVersionSupported),
	       ZE_MINOR_VERSION(module.spirvVersionSupported),
	       module.flags & ZE_DEVICE_MODULE_FLAG_FP16 ? "yes" : "no",
	       module.flags & ZE_DEVICE_MODULE_FLAG_FP64 ? "yes" : "no", module.maxArgumentsSize);
	ZE_CHECK(zeDeviceGetMemoryProperties(z.device, &nmem, NULL));
	APP_EXPECT(nmem >= 1 && nmem <= 4, "%u memories", nmem);
	for (uint32_t i = 0; i < nmem; i++)
		mem[i] = (ze_device_memory_properties_t){ ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES };
	ZE_CHECK(zeDeviceGetMemoryProperties(z.device, &nmem, mem));
	for (uint32_t i = 0; i < nmem; i++)
		printf("memory %u: %s, %" PRIu64 " bytes\n", i, mem[i].name, mem[i].totalSize);
	ZE_CHECK(zeDeviceGetMemoryAccessProperties(z.device, &access));
	printf("memory access: host 0x%x, device 0x%x, shared 0x%x\n",
	       access.hostAllocCapabilities, access.deviceAllocCapabilities,
	       access.sharedSingleDeviceAllocCapabilities);
	ZE_CHECK(zeDeviceGetCacheProperties(z.device, &ncache, NULL));
	APP_EXPECT(ncache <= 4, "%u caches", ncache);
	for (uint32_t i = 0; i < ncache; i++)
		cache[i] = (ze_device_cache_properties_t){ ZE_STRUCTURE_TYPE_DEVICE_CACHE_PROPERTIES };
	ZE_CHECK(zeDeviceGetCacheProperties(z.device, &ncache, cache));
	for (uint32_t i = 0; i < ncache; i++)
		printf("cache %u: %zu bytes\n", i, cache[i].cacheSize);
	ZE_CHECK(zeDeviceGetImageProperties(z.device, &image));
	printf("images: %s\n", image.maxImageDims2D ? "supported" : "not supported");
	ZE_CHECK(zeDeviceGetCommandQueueGroupProperties(z.device, &ngroups, NULL));
	APP_EXPECT(ngroups <= 8, "%u groups", ngroups);
	for (uint32_t i = 0; i < ngroups; i++)
		groups[i] = (ze_command_queue_group_properties_t){
			ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES };
	ZE_CHECK(zeDeviceGetCommandQueueGroupProperties(z.device, &ngroups, groups));
	for (uint32_t i = 0; i < ngroups; i++)
		printf("queue group %u: flags 0x%x, %u queue(s)\n", i, groups[i].flags,
		       groups[i].numQueues);
	ZE_CHECK(zeContextDestroy(z.context));
	return 0;
}
