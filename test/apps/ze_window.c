/* ze_window [ms] [batch] [late]: for about `ms` milliseconds, launches kernel "step" with gx = i + 1
 * on a regular list (executed and synchronized every `batch` launches) and kernel "imm" with
 * gx = i + 1 on an immediate list, one iteration every ~200 us; prints how many iterations
 * ran. Launch i is told apart by its group count: a capture window must hold a contiguous
 * run of them. With late = 1: appends one batch, sleeps `ms`, executes it and waits, sleeps
 * `ms` again (work appended in one window of time, run in another). Built also as
 * ze_window_nvtx, which first pushes and pops one NVTX range "init". ms = 0: until its stdin
 * ends (the test closes it when done with the process: a fixed length raced the test's own
 * steps, which a loaded machine stretches past it). */
#include <time.h>
#include <unistd.h>

#include "ze_app.h"
#ifdef ZE_WINDOW_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	unsigned long ms = test_arg(argc, argv, 1, 1000), batch = test_arg(argc, argv, 2, 8);
	unsigned long late = test_arg(argc, argv, 3, 0);
	struct app_ze z;
	unsigned long i = 0;
	double t0;

	app_ze_setup(&z);
	ze_command_queue_handle_t q = app_queue(&z, 0, 0);
	ze_command_list_handle_t list = app_list(&z, 0), imm = app_immediate_list(&z, 0, 1);
	ze_module_handle_t m = app_module(&z);
	ze_kernel_handle_t step = app_kernel(m, "step", 1, 1, 1), ik = app_kernel(m, "imm", 1, 1, 1);
	ze_event_pool_handle_t pool = app_event_pool(&z, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1);
	ze_event_handle_t done = app_event(pool, 0);

#ifdef ZE_WINDOW_NVTX
	/* ze_window_nvtx: one NVTX range before it is ready (a paused process's) */
	nvtxRangePushA("init");
	nvtxRangePop();
#endif
	printf("ze_window: ready\n");
	fflush(stdout);
	t0 = now_ms();
	if (late) {
		struct timespec nap = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000 };

		for (; i < batch; i++) {
			ze_group_count_t g = { (uint32_t)(i + 1), 1, 1 };

			ZE_CHECK(zeCommandListAppendLaunchKernel(list, step, &g, NULL, 0, NULL));
		}
		ZE_CHECK(zeCommandListClose(list));
		nanosleep(&nap, NULL);
		ZE_CHECK(zeCommandQueueExecuteCommandLists(q, 1, &list, NULL));
		ZE_CHECK(zeCommandQueueSynchronize(q, UINT64_MAX));
		nanosleep(&nap, NULL);
		ms = 0;
	}
	while (!late) {
		ze_group_count_t g = { (uint32_t)(i + 1), 1, 1 };
		struct timespec pause = { 0, 200000 };

		ZE_CHECK(zeCommandListAppendLaunchKernel(list, step, &g, NULL, 0, NULL));
		ZE_CHECK(zeCommandListAppendLaunchKernel(imm, ik, &g, done, 0, NULL));
		ZE_CHECK(zeEventHostSynchronize(done, UINT64_MAX));
		ZE_CHECK(zeEventHostReset(done));
		if (++i % batch == 0) {
			ZE_CHECK(zeCommandListClose(list));
			ZE_CHECK(zeCommandQueueExecuteCommandLists(q, 1, &list, NULL));
			ZE_CHECK(zeCommandQueueSynchronize(q, UINT64_MAX));
			ZE_CHECK(zeCommandListReset(list));
		}
		nanosleep(&pause, NULL);
		if (i % batch == 0 && (ms ? now_ms() - t0 >= ms : test_stdin_ended(0)))
			break;
	}
	printf("ze_window: iterations=%lu\n", i);
	ZE_CHECK(zeEventDestroy(done));
	ZE_CHECK(zeEventPoolDestroy(pool));
	ZE_CHECK(zeKernelDestroy(step));
	ZE_CHECK(zeKernelDestroy(ik));
	ZE_CHECK(zeModuleDestroy(m));
	ZE_CHECK(zeCommandListDestroy(list));
	ZE_CHECK(zeCommandListDestroy(imm));
	ZE_CHECK(zeCommandQueueDestroy(q));
	ZE_CHECK(zeContextDestroy(z.context));
	return 0;
}
