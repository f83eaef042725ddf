/* ze_dup SLEEP_US CALLS...: regular lists named more than once in one
 * zeCommandQueueExecuteCommandLists. List a: kernel "ka_long" (1250000x1x1 of 16x1x1:
 * 20 ms on the simulated device) then "ka_short" (100x1x1 of 64x1x1: 6.4 us); list b:
 * "kb" (6.4 us). Each CALLS argument is one execute on queue 0.0 of the lists its
 * letters name, in order ("aba": {a, b, a}), then SLEEP_US microseconds, then a
 * synchronize of the queue. Prints "N calls". */
#include <unistd.h>

#include "../apps/ze_app.h"

int main(int argc, char **argv)
{
	struct app_ze z;
	ze_group_count_t long_groups = { 1250000, 1, 1 }, short_groups = { 100, 1, 1 };
	ze_command_list_handle_t lists[16], a, b;
	ze_command_queue_handle_t q;
	ze_module_handle_t m;
	useconds_t sleep_us;

	if (argc < 3) {
		fprintf(stderr, "usage: ze_dup SLEEP_US CALLS...\n");
		return 2;
	}
	sleep_us = (useconds_t)atol(argv[1]);
	app_ze_setup(&z);
	m = app_module(&z);
	q = app_queue(&z, 0, 0);
	a = app_list(&z, 0);
	b = app_list(&z, 0);
	ZE_CHECK(zeCommandListAppendLaunchKernel(a, app_kernel(m, "ka_long", 16, 1, 1),
						 &long_groups, NULL, 0, NULL));
	ZE_CHECK(zeCommandListAppendLaunchKernel(a, app_kernel(m, "ka_short", 64, 1, 1),
						 &short_groups, NULL, 0, NULL));
	ZE_CHECK(zeCommandListAppendLaunchKernel(b, app_kernel(m, "kb", 64, 1, 1),
						 &short_groups, NULL, 0, NULL));
	ZE_CHECK(zeCommandListClose(a));
	ZE_CHECK(zeCommandListClose(b));
	for (int c = 2; c < argc; c++) {
		uint32_t n = 0;

		for (const char *s = argv[c]; *s && n < 16; s++)
			lists[n++] = *s == 'a' ? a : b;
		ZE_CHECK(zeCommandQueueExecuteCommandLists(q, n, lists, NULL));
		usleep(sleep_us);
		ZE_CHECK(zeCommandQueueSynchronize(q, UINT64_MAX));
	}
	printf("%d calls\n", argc - 2);
	return 0;
}
