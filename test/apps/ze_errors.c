/* ze_errors: calls Level Zero functions with NULL, garbage, destroyed and wrong-kind handles
 * and bad arguments; prints one line per call with the result code, and exits 1 if a code
 * differs from what the simulated device's contract promises. */
#include "ze_app.h"

static const char *result_name(ze_result_t r)
{
	switch (r) {
#define NAME(x) case x: return #x;
	NAME(ZE_RESULT_SUCCESS) NAME(ZE_RESULT_NOT_READY)
	NAME(ZE_RESULT_ERROR_UNINITIALIZED) NAME(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE)
	NAME(ZE_RESULT_ERROR_INVALID_ARGUMENT) NAME(ZE_RESULT_ERROR_INVALID_NULL_HANDLE)
	NAME(ZE_RESULT_ERROR_INVALID_NULL_POINTER) NAME(ZE_RESULT_ERROR_INVALID_SIZE)
	NAME(ZE_RESULT_ERROR_UNSUPPORTED_SIZE) NAME(ZE_RESULT_ERROR_INVALID_ENUMERATION)
	NAME(ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION)
	NAME(ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE) NAME(ZE_RESULT_ERROR_UNSUPPORTED_VERSION)
#undef NAME
	default: return "other";
	}
}

static int failures;

static void report(const char *what, ze_result_t got, ze_result_t want)
{
	printf("%s: %s (0x%x)%s\n", what, result_name(got), (unsigned)got,
	       got == want ? "" : " UNEXPECTED");
	if (got != want) {
		fprintf(stderr, "ze_errors: %s returned %s, expected %s\n", what, result_name(got),
			result_name(want));
		failures++;
	}
}

#define EXPECT(want, call) report(#call, (call), (want))

int main(void)
{
	struct app_ze z;
	ze_api_version_t version;
	ze_device_properties_t props = { ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES };
	ze_context_desc_t cdesc = { ZE_STRUCTURE_TYPE_CONTEXT_DESC, NULL, 0 };
	ze_command_queue_desc_t bad_qdesc = { ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, NULL, 5, 0, 0,
					      ZE_COMMAND_QUEUE_MODE_DEFAULT,
					      ZE_COMMAND_QUEUE_PRIORITY_NORMAL };
	ze_module_desc_t empty_module = { ZE_STRUCTURE_TYPE_MODULE_DESC, NULL,
					  ZE_MODULE_FORMAT_IL_SPIRV, 0, (const uint8_t *)"", NULL,
					  NULL };
	ze_event_desc_t bad_edesc = { ZE_STRUCTURE_TYPE_EVENT_DESC, NULL, 7, 0, 0 };
	ze_host_mem_alloc_desc_t hdesc = { ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, NULL, 0 };
	ze_fence_desc_t fdesc = { ZE_STRUCTURE_TYPE_FENCE_DESC, NULL, 0 };
	ze_group_count_t groups = { 1, 1, 1 };
	ze_kernel_timestamp_result_t ts;
	ze_context_handle_t ctx_out;
	ze_command_queue_handle_t queue_out;
	ze_module_handle_t module_out;
	ze_event_handle_t event_out;
	ze_fence_handle_t fence;
	void *mem_out;
	ze_device_external_memory_properties_t ext_mem = { ZE_STRUCTURE_TYPE_DEVICE_EXTERNAL_MEMORY_PROPERTIES };
	/* Never a live object: the driver must reject it without dereferencing it. */
	ze_event_handle_t garbage_event = (ze_event_handle_t)(uintptr_t)0x1234;

	app_ze_setup(&z);
	ze_command_queue_handle_t queue = app_queue(&z, 0, 0);
	ze_command_list_handle_t open_list = app_list(&z, 0), copy_list = app_list(&z, 1);
	ze_module_handle_t module = app_module(&z);
	ze_kernel_handle_t kernel = app_kernel(module, "k", 1, 1, 1);
	ze_event_pool_handle_t pool = app_event_pool(&z, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 2);
	ze_event_handle_t plain = app_event(pool, 0), dead = app_event(pool, 1);
	ze_device_handle_t context_as_device = (ze_device_handle_t)z.context;

	ZE_CHECK(zeEventDestroy(dead));
	ZE_CHECK(zeFenceCreate(queue, &fdesc, &fence));
	ZE_CHECK(zeCommandListClose(copy_list));
	ZE_CHECK(zeEventHostSignal(plain));

	EXPECT(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, zeDriverGetApiVersion(NULL, &version));
	EXPECT(ZE_RESULT_ERROR_INVALID_NULL_POINTER, zeDriverGetApiVersion(z.driver, NULL));
	EXPECT(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, zeDeviceGetProperties(NULL, &props));
	EXPECT(ZE_RESULT_ERROR_INVALID_ARGUMENT, zeDeviceGetProperties(context_as_device, &props));
	EXPECT(ZE_RESULT_ERROR_INVALID_NULL_POINTER, zeDeviceGetProperties(z.device, NULL));
	EXPECT(ZE_RESULT_ERROR_INVALID_NULL_POINTER, zeContextCreate(z.driver, NULL, &ctx_out));
	EXPECT(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, zeContextCreate(NULL, &cdesc, &ctx_out));
	EXPECT(ZE_RESULT_ERROR_INVALID_ARGUMENT,
	       zeCommandQueueCreate(z.context, z.device, &bad_qdesc, &queue_out));
	EXPECT(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, zeCommandQueueSynchronize(NULL, 0));
	EXPECT(ZE_RESULT_ERROR_INVALID_ARGUMENT,
	       zeCommandQueueExecuteCommandLists(queue, 1, &open_list, NULL));
	EXPECT(ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE,
	       zeCommandQueueExecuteCommandLists(queue, 1, &copy_list, NULL));
	EXPECT(ZE_RESULT_ERROR_INVALID_NULL_HANDLE,
	       zeCommandListAppendLaunchKernel(open_list, NULL, &groups, NULL, 0, NULL));
	EXPECT(ZE_RESULT_ERROR_INVALID_NULL_POINTER,
	       zeCommandListAppendLaunchKernel(open_list, kernel, NULL, NULL, 0, NULL));
	EXPECT(ZE_RESULT_ERROR_INVALID_ARGUMENT,
	       zeCommandListAppendLaunchKernel(open_list, kernel, &groups, dead, 0, NULL));
	EXPECT(ZE_RESULT_ERROR_INVALID_SIZE,
	       zeCommandListAppendLaunchKernel(open_list, kernel, &groups, NULL, 1, NULL));
	EXPECT(ZE_RESULT_ERROR_INVALID_NULL_POINTER,
	       zeCommandListAppendMemoryCopy(open_list, NULL, &groups, 4, NULL, 0, NULL));
	EXPECT(ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION, zeKernelSetGroupSize(kernel, 0, 1, 1));
	EXPECT(ZE_RESULT_ERROR_INVALID_SIZE,
	       zeModuleCreate(z.context, z.device, &empty_module, &module_out, NULL));
	EXPECT(ZE_RESULT_ERROR_INVALID_ARGUMENT, zeEventCreate(pool, &bad_edesc, &event_out));
	EXPECT(ZE_RESULT_ERROR_INVALID_ARGUMENT, zeEventHostSynchronize(garbage_event, 0));
	EXPECT(ZE_RESULT_ERROR_INVALID_ARGUMENT, zeEventQueryStatus(dead));
	EXPECT(ZE_RESULT_ERROR_INVALID_ARGUMENT, zeEventQueryKernelTimestamp(plain, &ts));
	EXPECT(ZE_RESULT_ERROR_INVALID_ARGUMENT, zeMemFree(z.context, &groups));
	EXPECT(ZE_RESULT_ERROR_UNSUPPORTED_SIZE, zeMemAllocHost(z.context, &hdesc, 0, 64, &mem_out));
	EXPECT(ZE_RESULT_NOT_READY, zeFenceHostSynchronize(fence, 0));
	EXPECT(ZE_RESULT_SUCCESS, zeCommandQueueSynchronize(queue, 0));	/* idle queue */
	EXPECT(ZE_RESULT_ERROR_INVALID_ARGUMENT,
	       zeCommandListClose((ze_command_list_handle_t)queue));
	/* Entries the simulated driver leaves empty: the loader answers for it. */
	EXPECT(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE,
	       zeDeviceGetExternalMemoryProperties(z.device, &ext_mem));

	ZE_CHECK(zeFenceDestroy(fence));
	ZE_CHECK(zeEventDestroy(plain));
	ZE_CHECK(zeEventPoolDestroy(pool));
	ZE_CHECK(zeKernelDestroy(kernel));
	ZE_CHECK(zeModuleDestroy(module));
	ZE_CHECK(zeCommandListDestroy(open_list));
	ZE_CHECK(zeCommandListDestroy(copy_list));
	ZE_CHECK(zeCommandQueueDestroy(queue));
	ZE_CHECK(zeContextDestroy(z.context));
	printf("ze_errors: %s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}
