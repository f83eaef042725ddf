/* ze_pingpong [rounds=8]: what Level Zero's ping-pong test does, written here. Two
 * immediate lists on two compute engines take turns: each round list A runs kernel
 * "ping" (500 us on the simulated device) and signals event P; list B waits for P, runs
 * "pong" (1.4 us) and signals Q; the host waits for Q and resets both events. */
#include "ze_app.h"

int main(int argc, char **argv)
{
	unsigned long rounds = test_arg(argc, argv, 1, 8);
	const ze_group_count_t ping_groups = { 1000, 1, 1 }, pong_groups = { 2, 1, 1 };
	struct app_ze z;

	app_ze_setup(&z);
	ze_command_list_handle_t a = app_immediate_list(&z, 0, 0), b = app_immediate_list(&z, 0, 1);
	ze_module_handle_t module = app_module(&z);
	ze_kernel_handle_t ping = app_kernel(module, "ping", 500, 1, 1);
	ze_kernel_handle_t pong = app_kernel(module, "pong", 700, 1, 1);
	ze_event_pool_handle_t pool = app_event_pool(&z, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 2);
	ze_event_handle_t p = app_event(pool, 0), q = app_event(pool, 1);

	for (unsigned long r = 0; r < rounds; r++) {
		ZE_CHECK(zeCommandListAppendLaunchKernel(a, ping, &ping_groups, p, 0, NULL));
		ZE_CHECK(zeCommandListAppendLaunchKernel(b, pong, &pong_groups, q, 1, &p));
		ZE_CHECK(zeEventHostSynchronize(q, UINT64_MAX));
		APP_EXPECT(zeEventQueryStatus(p) == ZE_RESULT_SUCCESS, "pong before ping");
		ZE_CHECK(zeEventHostReset(p));
		ZE_CHECK(zeEventHostReset(q));
	}
	printf("%lu rounds of ping and pong\n", rounds);
	ZE_CHECK(zeEventDestroy(p));
	ZE_CHECK(zeEventDestroy(q));
	ZE_CHECK(zeEventPoolDestroy(pool));
	ZE_CHECK(zeKernelDestroy(ping));
	ZE_CHECK(zeKernelDestroy(pong));
	ZE_CHECK(zeModuleDestroy(module));
	ZE_CHECK(zeCommandListDestroy(a));
	ZE_CHECK(zeCommandListDestroy(b));
	ZE_CHECK(zeContextDestroy(z.context));
	return 0;
}
