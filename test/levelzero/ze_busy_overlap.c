/* A device's busy time when its spans are read out of time order: N short
 * kernels on engine 0.1, each held back by an event of its own and appended
 * first, then one kernel of MS ms on engine 0.0; the host releases the short
 * ones one by one while the long one runs. Every short kernel lies inside the
 * long one, which is read after them. Arguments: N (100), MS (50). */
#include "../apps/ze_app.h"
#include <unistd.h>

int main(int argc, char **argv)
{
	int short_kernels = argc > 1 ? atoi(argv[1]) : 100;
	uint32_t long_ms = argc > 2 ? (uint32_t)atoi(argv[2]) : 50;
	struct app_ze z;
	ze_event_handle_t *ev = calloc((size_t)short_kernels + 2, sizeof(*ev));
	/* groups of 1000 work items: 1 us each */
	ze_group_count_t long_groups = { 1000 * long_ms, 1, 1 }, short_groups = { 1, 1, 1 };

	app_ze_setup(&z);
	ze_module_handle_t m = app_module(&z);
	ze_kernel_handle_t k_long = app_kernel(m, "k_long", 1000, 1, 1);
	ze_kernel_handle_t k_short = app_kernel(m, "k_short", 1000, 1, 1);
	ze_command_list_handle_t a = app_immediate_list(&z, 0, 0);
	ze_command_list_handle_t b = app_immediate_list(&z, 0, 1);
	ze_event_pool_handle_t pool =
		app_event_pool(&z, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, short_kernels + 2);

	for (int i = 0; i < short_kernels + 2; i++) {
		ze_event_desc_t ed = { ZE_STRUCTURE_TYPE_EVENT_DESC, NULL, (uint32_t)i, 0,
				       ZE_EVENT_SCOPE_FLAG_HOST };
		ZE_CHECK(zeEventCreate(pool, &ed, &ev[i]));
	}
	for (int i = 0; i < short_kernels; i++)
		ZE_CHECK(zeCommandListAppendLaunchKernel(
			b, k_short, &short_groups,
			i == short_kernels - 1 ? ev[short_kernels + 1] : NULL, 1, &ev[i]));
	ZE_CHECK(zeCommandListAppendLaunchKernel(a, k_long, &long_groups, ev[short_kernels], 0,
						 NULL));
	for (int i = 0; i < short_kernels; i++) {
		ZE_CHECK(zeEventHostSignal(ev[i]));
		usleep(20);
	}
	ZE_CHECK(zeEventHostSynchronize(ev[short_kernels + 1], UINT64_MAX));
	ZE_CHECK(zeEventHostSynchronize(ev[short_kernels], UINT64_MAX));
	free(ev);
	printf("busy overlap ok\n");
	return 0;
}
