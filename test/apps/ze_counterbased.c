/* ze_counterbased [copies=4] [bytes=262144]: what PTI-GPU's counter-based events sample
 * does, written here. One counter-based event (a pool with the extension of spec 1.8,
 * with kernel timestamps) is the signal event of every copy on an in-order immediate
 * list: it completes with the last of them, so the host, waiting on it once, must find
 * every copy done. Then the program reads the event's own timestamps (the last copy's)
 * and checks the copy's simulated duration. Needs a driver of spec 1.8; links only what
 * Debian's loader has. */
#include "backends/levelzero/ze_newer.h"
#include "ze_app.h"

int main(int argc, char **argv)
{
	unsigned long copies = test_arg(argc, argv, 1, 4);
	size_t bytes = test_arg(argc, argv, 2, 262144);
	ze_device_properties_t props = { ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2 };
	ze_kernel_timestamp_result_t ts;
	ze_command_list_handle_t list;
	ze_event_pool_handle_t pool;
	ze_event_handle_t done;
	struct app_ze z;
	uint8_t **src, **dst;
	double ns;

	app_ze_setup(&z);
	ZE_CHECK(zeDeviceGetProperties(z.device, &props));
	list = app_in_order_list(&z, 1);
	pool = app_counter_based_pool(&z, 1);
	done = app_event(pool, 0);
	src = calloc(copies, sizeof(*src));
	dst = calloc(copies, sizeof(*dst));
	APP_EXPECT(src && dst, "calloc");
	for (unsigned long i = 0; i < copies; i++) {
		src[i] = app_host_alloc(&z, bytes);
		dst[i] = app_host_alloc(&z, bytes);
		memset(src[i], (int)(i + 1), bytes);
		memset(dst[i], 0, bytes);
	}
	for (unsigned long i = 0; i < copies; i++)
		ZE_CHECK(zeCommandListAppendMemoryCopy(list, dst[i], src[i], bytes, done, 0, NULL));
	ZE_CHECK(zeEventHostSynchronize(done, UINT64_MAX));
	/* Completed with the last copy: every copy is done now. */
	for (unsigned long i = 0; i < copies; i++)
		APP_EXPECT(memcmp(dst[i], src[i], bytes) == 0, "copy %lu not done when its "
			   "counter-based event was", i);
	printf("%lu copies of %zu bytes done when the event completed\n", copies, bytes);
	ZE_CHECK(zeEventQueryKernelTimestamp(done, &ts));
	ns = (double)((ts.global.kernelEnd - ts.global.kernelStart) &
		      (props.kernelTimestampValidBits >= 64 ? ~0ull :
		       (1ull << props.kernelTimestampValidBits) - 1)) * 1e9 /
	     (double)props.timerResolution;
	/* The simulated copy: max(1000, bytes / 10) ns, to a tick. */
	APP_EXPECT(ns > bytes / 10.0 - 100 && ns < bytes / 10.0 + 100, "last copy took %.0f ns", ns);
	printf("the event's timestamps are the last copy's\n");
	for (unsigned long i = 0; i < copies; i++) {
		ZE_CHECK(zeMemFree(z.context, src[i]));
		ZE_CHECK(zeMemFree(z.context, dst[i]));
	}
	free(src);
	free(dst);
	ZE_CHECK(zeEventDestroy(done));
	ZE_CHECK(zeEventPoolDestroy(pool));
	ZE_CHECK(zeCommandListDestroy(list));
	ZE_CHECK(zeContextDestroy(z.context));
	return 0;
}
