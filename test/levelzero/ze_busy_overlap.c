/* A device's busy time when its spans are read out of time order: 100 short
 * kernels on engine 0.1, each held back by an event of its own and appended
 * first, then one 50 ms kernel on engine 0.0; the host releases the short ones
 * one by one while the long one runs. Every short kernel lies inside the long
 * one, which is read after them. */
#include "../apps/ze_app.h"
#include <unistd.h>

#define SHORT_KERNELS 100

int main(void)
{
	struct app_ze z;
	ze_event_handle_t ev[SHORT_KERNELS + 2];
	ze_group_count_t long_groups = { 50000, 1, 1 }, short_groups = { 1, 1, 1 };

	app_ze_setup(&z);
	ze_module_handle_t m = app_module(&z);
	ze_kernel_handle_t k_long = app_kernel(m, "k_long", 1000, 1, 1);
	ze_kernel_handle_t k_short = app_kernel(m, "k_short", 1000, 1, 1);
	ze_command_list_handle_t a = app_immediate_list(&z, 0, 0);
	ze_command_list_handle_t b = app_immediate_list(&z, 0, 1);
	ze_event_pool_handle_t pool =
		app_event_pool(&z, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, SHORT_KERNELS + 2);

	for (int i = 0; i < SHORT_KERNELS + 2; i++) {
		ze_event_desc_t ed = { ZE_STRUCTURE_TYPE_EVENT_DESC, NULL, (uint32_t)i, 0,
				       ZE_EVENT_SCOPE_FLAG_HOST };
		ZE_CHECK(zeEventCreate(pool, &ed, &ev[i]));
	}
	for (int i = 0; i < SHORT_KERNELS; i++)
		ZE_CHECK(zeCommandListAppendLaunchKernel(
			b, k_short, &short_groups,
			i == SHORT_KERNELS - 1 ? ev[SHORT_KERNELS + 1] : NULL, 1, &ev[i]));
	ZE_CHECK(zeCommandListAppendLaunchKernel(a, k_long, &long_groups, ev[SHORT_KERNELS], 0,
						 NULL));
	for (int i = 0; i < SHORT_KERNELS; i++) {
		ZE_CHECK(zeEventHostSignal(ev[i]));
		usleep(20);
	}
	ZE_CHECK(zeEventHostSynchronize(ev[SHORT_KERNELS + 1], UINT64_MAX));
	ZE_CHECK(zeEventHostSynchronize(ev[SHORT_KERNELS], UINT64_MAX));
	printf("busy overlap ok\n");
	return 0;
}
