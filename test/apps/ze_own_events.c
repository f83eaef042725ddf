/* ze_own_events [kernels=50] [reset=0]: kernels "own_event_kernel" (64 x 64 items) on an
 * immediate list, each signaling a timestamped event of the program's own, waited for
 * from the host (zeEventHostSynchronize). reset=0: a fresh event per kernel; reset=1:
 * one event, reset from the host after each wait (as Level Zero's ze_peak and many
 * benchmarks do). */
#include "ze_app.h"

int main(int argc, char **argv)
{
	unsigned long kernels = test_arg(argc, argv, 1, 50), reset = test_arg(argc, argv, 2, 0);
	struct app_ze z;
	const ze_group_count_t groups = { 64, 1, 1 };

	if (!kernels || kernels > UINT32_MAX)
		return 2;
	app_ze_setup(&z);
	ze_command_list_handle_t list = app_immediate_list(&z, 0, 0);
	ze_kernel_handle_t kernel = app_kernel(app_module(&z), "own_event_kernel", 64, 1, 1);
	ze_event_pool_handle_t pool = app_event_pool(&z, ZE_EVENT_POOL_FLAG_HOST_VISIBLE |
						     ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP,
						     (uint32_t)kernels);
	ze_event_handle_t ev = app_event(pool, 0);

	for (unsigned long i = 0; i < kernels; i++) {
		if (!reset && i)
			ev = app_event(pool, (uint32_t)i);
		ZE_CHECK(zeCommandListAppendLaunchKernel(list, kernel, &groups, ev, 0, NULL));
		ZE_CHECK(zeEventHostSynchronize(ev, UINT64_MAX));
		if (reset)
			ZE_CHECK(zeEventHostReset(ev));
	}
	printf("%lu kernels\n", kernels);
	return 0;
}
