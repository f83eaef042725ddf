/* ze_peak [groups=64]: what Level Zero's peak test does, written here. It asks the
 * device's module properties whether it has FP64 (a device without it skips that test)
 * and for the group size to use (zeKernelSuggestGroupSize), then times "peak_fp32" and,
 * with FP64, "peak_fp64" kernels with its own timestamped events on an immediate list,
 * four launches each, and checks the times against the work (the simulated device runs
 * a kernel groups x group size ns). */
#include "ze_app.h"

static ze_device_properties_t props = { ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2 };

static double run(struct app_ze *z, ze_command_list_handle_t list, ze_module_handle_t module,
		  const char *name, uint32_t groups, ze_event_handle_t ev)
{
	uint32_t gx, gy, gz;
	ze_kernel_handle_t k = app_kernel(module, name, 1, 1, 1);
	ze_group_count_t count = { groups, 1, 1 };
	ze_kernel_timestamp_result_t ts;
	uint64_t mask = props.kernelTimestampValidBits >= 64 ? ~0ull :
			(1ull << props.kernelTimestampValidBits) - 1;
	double ns = 0;

	ZE_CHECK(zeKernelSuggestGroupSize(k, groups * 64, 1, 1, &gx, &gy, &gz));
	ZE_CHECK(zeKernelSetGroupSize(k, gx, gy, gz));
	count.groupCountX = groups * 64 / gx;
	for (int i = 0; i < 4; i++) {
		ZE_CHECK(zeCommandListAppendLaunchKernel(list, k, &count, ev, 0, NULL));
		ZE_CHECK(zeEventHostSynchronize(ev, UINT64_MAX));
		ZE_CHECK(zeEventQueryKernelTimestamp(ev, &ts));
		ns += (double)((ts.global.kernelEnd - ts.global.kernelStart) & mask) * 1e9 /
		      (double)props.timerResolution;
		ZE_CHECK(zeEventHostReset(ev));
	}
	ZE_CHECK(zeKernelDestroy(k));
	return ns / 4;
}

int main(int argc, char **argv)
{
	uint32_t groups = (uint32_t)test_arg(argc, argv, 1, 64);
	ze_device_module_properties_t mp = { ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES };
	struct app_ze z;
	double ns, work = groups * 64.0;

	app_ze_setup(&z);
	ZE_CHECK(zeDeviceGetProperties(z.device, &props));
	ZE_CHECK(zeDeviceGetModuleProperties(z.device, &mp));
	ze_command_list_handle_t list = app_immediate_list(&z, 0, 0);
	ze_module_handle_t module = app_module(&z);
	ze_event_pool_handle_t pool = app_event_pool(&z, ZE_EVENT_POOL_FLAG_HOST_VISIBLE |
						     ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP, 1);
	ze_event_handle_t ev = app_event(pool, 0);

	ns = run(&z, list, module, "peak_fp32", groups, ev);
	APP_EXPECT(ns > work - 100 && ns < work + 100, "fp32: %.0f ns for %.0f", ns, work);
	printf("fp32: %u groups timed\n", groups);
	if (mp.flags & ZE_DEVICE_MODULE_FLAG_FP64) {
		ns = run(&z, list, module, "peak_fp64", groups, ev);
		APP_EXPECT(ns > work - 100 && ns < work + 100, "fp64: %.0f ns", ns);
		printf("fp64: %u groups timed\n", groups);
	} else {
		printf("fp64: not supported, skipped\n");
	}
	ZE_CHECK(zeEventDestroy(ev));
	ZE_CHECK(zeEventPoolDestroy(pool));
	ZE_CHECK(zeModuleDestroy(module));
	ZE_CHECK(zeCommandListDestroy(list));
	ZE_CHECK(zeContextDestroy(z.context));
	return 0;
}
