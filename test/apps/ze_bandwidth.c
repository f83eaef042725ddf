/* ze_bandwidth [bytes=1048576] [repeats=3]: what Level Zero's bandwidth test does,
 * written here. Host-to-device and device-to-host copies on the copy engine, each
 * measured by the program with an event of its own (kernel timestamps); then both
 * directions at once, "bidirectional", on two queues of the same copy engine (ordinal 1,
 * index 0), each batch with a fence. Prints sizes and checks, not speeds (they vary). */
#include "ze_app.h"

static double event_ns(ze_event_handle_t ev, const ze_device_properties_t *p)
{
	ze_kernel_timestamp_result_t ts;
	uint64_t mask = p->kernelTimestampValidBits >= 64 ? ~0ull :
			(1ull << p->kernelTimestampValidBits) - 1;

	ZE_CHECK(zeEventQueryKernelTimestamp(ev, &ts));
	return (double)((ts.global.kernelEnd - ts.global.kernelStart) & mask) * 1e9 /
	       (double)p->timerResolution;
}

int main(int argc, char **argv)
{
	size_t bytes = test_arg(argc, argv, 1, 1 << 20);
	unsigned long repeats = test_arg(argc, argv, 2, 3);
	ze_device_properties_t props = { ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2 };
	ze_fence_desc_t fdesc = { ZE_STRUCTURE_TYPE_FENCE_DESC };
	struct app_ze z;

	app_ze_setup(&z);
	ZE_CHECK(zeDeviceGetProperties(z.device, &props));
	ze_command_queue_handle_t up = app_queue(&z, 1, 0), down = app_queue(&z, 1, 0);
	ze_command_list_handle_t to_dev = app_list(&z, 1), to_host = app_list(&z, 1);
	ze_event_pool_handle_t pool = app_event_pool(&z, ZE_EVENT_POOL_FLAG_HOST_VISIBLE |
						     ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP, 2);
	ze_event_handle_t t_up = app_event(pool, 0), t_down = app_event(pool, 1);
	uint8_t *host = app_host_alloc(&z, bytes), *back = app_host_alloc(&z, bytes);
	void *dev = app_device_alloc(&z, bytes), *dev2 = app_device_alloc(&z, bytes);
	ze_fence_handle_t f_up, f_down;

	ZE_CHECK(zeFenceCreate(up, &fdesc, &f_up));
	ZE_CHECK(zeFenceCreate(down, &fdesc, &f_down));
	for (size_t i = 0; i < bytes; i++)
		host[i] = (uint8_t)(i * 13);
	ZE_CHECK(zeCommandListAppendMemoryCopy(to_dev, dev, host, bytes, t_up, 0, NULL));
	ZE_CHECK(zeCommandListClose(to_dev));
	ZE_CHECK(zeCommandListAppendMemoryCopy(to_host, back, dev2, bytes, t_down, 0, NULL));
	ZE_CHECK(zeCommandListClose(to_host));

	/* One direction at a time. */
	for (unsigned long r = 0; r < repeats; r++) {
		ZE_CHECK(zeCommandQueueExecuteCommandLists(up, 1, &to_dev, f_up));
		ZE_CHECK(zeFenceHostSynchronize(f_up, UINT64_MAX));
		APP_EXPECT(event_ns(t_up, &props) > 0, "no time");
		ZE_CHECK(zeFenceReset(f_up));
		ZE_CHECK(zeEventHostReset(t_up));
	}
	printf("HtoD: %lu x %zu bytes\n", repeats, bytes);
	ze_command_list_handle_t fill = app_list(&z, 1);
	const uint8_t pattern = 0x5a;

	ZE_CHECK(zeCommandListAppendMemoryFill(fill, dev2, &pattern, 1, bytes, NULL, 0, NULL));
	ZE_CHECK(zeCommandListClose(fill));
	ZE_CHECK(zeCommandQueueExecuteCommandLists(down, 1, &fill, NULL));
	ZE_CHECK(zeCommandQueueSynchronize(down, UINT64_MAX));
	ZE_CHECK(zeCommandListDestroy(fill));
	for (unsigned long r = 0; r < repeats; r++) {
		ZE_CHECK(zeCommandQueueExecuteCommandLists(down, 1, &to_host, f_down));
		ZE_CHECK(zeFenceHostSynchronize(f_down, UINT64_MAX));
		APP_EXPECT(event_ns(t_down, &props) > 0, "no time");
		ZE_CHECK(zeFenceReset(f_down));
		ZE_CHECK(zeEventHostReset(t_down));
	}
	APP_EXPECT(back[0] == 0x5a && back[bytes - 1] == 0x5a, "DtoH bytes");
	printf("DtoH: %lu x %zu bytes\n", repeats, bytes);

	/* Both at once: two queues, one copy engine. */
	for (unsigned long r = 0; r < repeats; r++) {
		ZE_CHECK(zeCommandQueueExecuteCommandLists(up, 1, &to_dev, f_up));
		ZE_CHECK(zeCommandQueueExecuteCommandLists(down, 1, &to_host, f_down));
		ZE_CHECK(zeFenceHostSynchronize(f_up, UINT64_MAX));
		ZE_CHECK(zeFenceHostSynchronize(f_down, UINT64_MAX));
		APP_EXPECT(event_ns(t_up, &props) > 0 && event_ns(t_down, &props) > 0, "no time");
		ZE_CHECK(zeFenceReset(f_up));
		ZE_CHECK(zeFenceReset(f_down));
		ZE_CHECK(zeEventHostReset(t_up));
		ZE_CHECK(zeEventHostReset(t_down));
	}
	printf("bidirectional: %lu x 2 x %zu bytes\n", repeats, bytes);

	ZE_CHECK(zeFenceDestroy(f_up));
	ZE_CHECK(zeFenceDestroy(f_down));
	ZE_CHECK(zeMemFree(z.context, dev2));
	ZE_CHECK(zeMemFree(z.context, dev));
	ZE_CHECK(zeMemFree(z.context, back));
	ZE_CHECK(zeMemFree(z.context, host));
	ZE_CHECK(zeEventDestroy(t_up));
	ZE_CHECK(zeEventDestroy(t_down));
	ZE_CHECK(zeEventPoolDestroy(pool));
	ZE_CHECK(zeCommandListDestroy(to_dev));
	ZE_CHECK(zeCommandListDestroy(to_host));
	ZE_CHECK(zeCommandQueueDestroy(up));
	ZE_CHECK(zeCommandQueueDestroy(down));
	ZE_CHECK(zeContextDestroy(z.context));
	return 0;
}
