/* ze_dlopen [bytes [library [dlmopen|probe]]]: loads libze_loader.so.1 (or the library
 * named, as a path to it by another name) with dlopen (dlmopen into a new namespace with
 * "dlmopen"; with "probe" only if dlsym(RTLD_DEFAULT, "zeInit") finds none, as a plug-in
 * host that uses the process's own Level Zero if it has one) and resolves every Level Zero function it calls with dlsym (no link-time
 * dependency on the loader, as plug-in hosts do), then runs a kernel and a copy on an
 * immediate list and synchronizes on an event. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>

#include "ze_app.h"

#define ZE_DLOPEN_FUNCS(X)							\
	X(zeInit) X(zeDriverGet) X(zeDeviceGet) X(zeDeviceGetProperties)	\
	X(zeContextCreate) X(zeContextDestroy) X(zeCommandListCreateImmediate)	\
	X(zeCommandListDestroy) X(zeModuleCreate) X(zeModuleDestroy) X(zeKernelCreate) \
	X(zeKernelDestroy) X(zeKernelSetGroupSize) X(zeKernelSetArgumentValue)	\
	X(zeEventPoolCreate) X(zeEventPoolDestroy) X(zeEventCreate) X(zeEventDestroy) \
	X(zeCommandListAppendLaunchKernel) X(zeCommandListAppendMemoryCopy)	\
	X(zeEventHostSynchronize) X(zeMemAllocHost) X(zeMemAllocDevice) X(zeMemFree)

/* typeof on the prototype keeps each pointer's type checked without linking the symbol. */
#define DECLARE_PTR(name) static __typeof__(&name) p_##name;
ZE_DLOPEN_FUNCS(DECLARE_PTR)

#define CALL(name, ...) ZE_CHECK(p_##name(__VA_ARGS__))

static void resolve(void *lib)
{
#define RESOLVE(name)								\
	p_##name = (__typeof__(p_##name))dlsym(lib, #name);			\
	APP_EXPECT(p_##name, "dlsym(%s): %s", #name, dlerror());
	ZE_DLOPEN_FUNCS(RESOLVE)
#undef RESOLVE
}

int main(int argc, char **argv)
{
	size_t n = test_arg(argc, argv, 1, 16384);
	const char *name = argc > 2 ? argv[2] : "libze_loader.so.1";
	const char *how = argc > 3 ? argv[3] : "";
	/* (RTLD_DEFAULT is NULL: the process's own, found by the probe) */
	bool own = !strcmp(how, "probe") && dlsym(RTLD_DEFAULT, "zeInit");
	void *lib = own ? RTLD_DEFAULT
		    : !strcmp(how, "dlmopen") ? dlmopen(LM_ID_NEWLM, name, RTLD_NOW | RTLD_LOCAL)
					      : dlopen(name, RTLD_NOW | RTLD_LOCAL);
	ze_driver_handle_t driver;
	ze_device_handle_t device;
	ze_context_handle_t ctx;
	ze_command_list_handle_t imm;
	ze_module_handle_t module;
	ze_kernel_handle_t kernel;
	ze_event_pool_handle_t pool;
	ze_event_handle_t done;
	uint32_t count = 1;
	static const uint8_t binary[] = { 0x03, 0x02, 0x23, 0x07 };
	ze_device_properties_t props = { ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES };
	ze_context_desc_t cdesc = { ZE_STRUCTURE_TYPE_CONTEXT_DESC, NULL, 0 };
	ze_command_queue_desc_t qdesc = { ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, NULL, 0, 0, 0,
					  ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS,
					  ZE_COMMAND_QUEUE_PRIORITY_NORMAL };
	ze_module_desc_t mdesc = { ZE_STRUCTURE_TYPE_MODULE_DESC, NULL, ZE_MODULE_FORMAT_IL_SPIRV,
				   sizeof(binary), binary, NULL, NULL };
	ze_kernel_desc_t kdesc = { ZE_STRUCTURE_TYPE_KERNEL_DESC, NULL, 0, "dlopen_kernel" };
	ze_event_pool_desc_t pdesc = { ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, NULL,
				       ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1 };
	ze_event_desc_t edesc = { ZE_STRUCTURE_TYPE_EVENT_DESC, NULL, 0, ZE_EVENT_SCOPE_FLAG_HOST,
				  ZE_EVENT_SCOPE_FLAG_HOST };
	ze_host_mem_alloc_desc_t hdesc = { ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, NULL, 0 };
	ze_device_mem_alloc_desc_t ddesc = { ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, NULL, 0, 0 };
	ze_group_count_t groups = { 8, 1, 1 };
	uint8_t *src, *dst;

	APP_EXPECT(lib || own, "dlopen(%s): %s", name, dlerror());
	resolve(lib);
	CALL(zeInit, ZE_INIT_FLAG_GPU_ONLY);
	CALL(zeDriverGet, &count, &driver);
	count = 1;
	CALL(zeDeviceGet, driver, &count, &device);
	CALL(zeDeviceGetProperties, device, &props);
	printf("device: %s\n", props.name);
	CALL(zeContextCreate, driver, &cdesc, &ctx);
	CALL(zeCommandListCreateImmediate, ctx, device, &qdesc, &imm);
	CALL(zeModuleCreate, ctx, device, &mdesc, &module, NULL);
	CALL(zeKernelCreate, module, &kdesc, &kernel);
	CALL(zeKernelSetGroupSize, kernel, 32, 1, 1);
	CALL(zeEventPoolCreate, ctx, &pdesc, 1, &device, &pool);
	CALL(zeEventCreate, pool, &edesc, &done);
	CALL(zeMemAllocHost, ctx, &hdesc, n, 64, (void **)&src);
	CALL(zeMemAllocDevice, ctx, &ddesc, n, 64, device, (void **)&dst);
	for (size_t i = 0; i < n; i++)
		src[i] = (uint8_t)(i * 31 + 5);
	CALL(zeKernelSetArgumentValue, kernel, 0, sizeof(dst), &dst);
	CALL(zeCommandListAppendLaunchKernel, imm, kernel, &groups, NULL, 0, NULL);
	CALL(zeCommandListAppendMemoryCopy, imm, dst, src, n, done, 0, NULL);
	CALL(zeEventHostSynchronize, done, UINT64_MAX);
	APP_EXPECT(memcmp(src, dst, n) == 0, "copy differs");
	printf("dlopen_kernel 8x1x1 groups of 32x1x1, copy %zu bytes checksum %016" PRIx64 " ok\n",
	       n, app_checksum(dst, n));
	CALL(zeMemFree, ctx, src);
	CALL(zeMemFree, ctx, dst);
	CALL(zeEventDestroy, done);
	CALL(zeEventPoolDestroy, pool);
	CALL(zeKernelDestroy, kernel);
	CALL(zeModuleDestroy, module);
	CALL(zeCommandListDestroy, imm);
	CALL(zeContextDestroy, ctx);
	printf("ze_dlopen: ok\n");
	return 0;
}
