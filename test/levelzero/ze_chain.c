/* ze_chain [kernels=6] [ns=2000000] [executions=2] [mode=0]: back-to-back kernels of `ns` ns
 * each (groups ns x 1 x 1 of size 1), so a run of them is longer than a wrap of a short
 * timestamp counter and every wrap falls inside some kernel. A regular list of them
 * executed `executions` times (Synchronize after each), then the same on an immediate list.
 * mode 0: the immediate list is asynchronous, waited with zeEventHostSynchronize on the
 * last kernel's event (from a pool without timestamps); 1: synchronous, no wait call;
 * 2: asynchronous and never waited for: the program sleeps past the kernels' end and
 * exits, leaving its objects alive; 3: each kernel signals one event of a pool WITH
 * timestamps, which the program waits for, reads (zeEventQueryKernelTimestamp: the
 * duration must be `ns` within a tick) and resets for the next kernel; 4: each kernel
 * signals its own event of a pool with timestamps that is NOT host-visible, and the
 * program reads their times on the device (zeCommandListAppendQueryKernelTimestamps into
 * host memory, checked as in 3): first in a regular list that queries them all after its
 * kernels and resets them, executed `executions` times, then on the immediate list, a
 * query after each kernel.
 * ZE_CHAIN_EXIT_ON=SIGNUM: a handler of that signal calls exit(9) (ZE_CHAIN_EXIT_HOW=_exit:
 * _exit(9)), as a program's timeout handler does, wherever the signal lands. */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <time.h>

#include "../apps/ze_app.h"

/* Each of n kernels' duration, from timestamps read on the device into ts. */
static void check_durations(struct app_ze *z, const ze_kernel_timestamp_result_t *ts,
			    unsigned long n, unsigned long ns, const char *where)
{
	ze_device_properties_t props = { ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2 };
	uint64_t mask;
	double tick;

	ZE_CHECK(zeDeviceGetProperties(z->device, &props));
	tick = 1e9 / (double)props.timerResolution;
	mask = props.kernelTimestampValidBits >= 64 ? ~0ull
						    : (1ull << props.kernelTimestampValidBits) - 1;
	for (unsigned long i = 0; i < n; i++) {
		double g = (double)((ts[i].global.kernelEnd - ts[i].global.kernelStart) & mask) * tick;
		double c = (double)((ts[i].context.kernelEnd - ts[i].context.kernelStart) & mask) *
			   tick;

		APP_EXPECT(g > (double)ns - tick - 1 && g < (double)ns + tick + 1 &&
				   c > (double)ns - tick - 1 && c < (double)ns + tick + 1,
			   "%s kernel %lu: %.0f ns (global), %.0f ns (context) by timestamps read "
			   "on the device", where, i, g, c);
	}
}

/* Mode 4: the kernels' own timestamps, from events only the device may read. */
static void device_read_timestamps(struct app_ze *z, ze_command_list_handle_t imm,
				   ze_event_handle_t done, ze_kernel_handle_t k,
				   const ze_group_count_t *groups, unsigned long kernels,
				   unsigned long executions)
{
	ze_event_pool_handle_t dpool = app_event_pool(z, ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP,
						      (uint32_t)kernels);
	ze_command_queue_handle_t queue = app_queue(z, 0, 0);
	ze_command_list_handle_t list = app_list(z, 0);
	ze_host_mem_alloc_desc_t hd = { ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, NULL, 0 };
	ze_event_handle_t *ev = calloc(kernels, sizeof(*ev));
	ze_kernel_timestamp_result_t *ts;

	APP_EXPECT(ev != NULL, "calloc");
	ZE_CHECK(zeMemAllocHost(z->context, &hd, kernels * sizeof(*ts), 64, (void **)&ts));
	for (unsigned long i = 0; i < kernels; i++) {
		ze_event_desc_t d = { ZE_STRUCTURE_TYPE_EVENT_DESC, NULL, (uint32_t)i, 0, 0 };

		ZE_CHECK(zeEventCreate(dpool, &d, &ev[i]));
		ZE_CHECK(zeCommandListAppendLaunchKernel(list, k, groups, ev[i], 0, NULL));
	}
	ZE_CHECK(zeCommandListAppendQueryKernelTimestamps(list, (uint32_t)kernels, ev, ts, NULL,
							  NULL, (uint32_t)kernels, ev));
	for (unsigned long i = 0; i < kernels; i++)
		ZE_CHECK(zeCommandListAppendEventReset(list, ev[i]));
	ZE_CHECK(zeCommandListClose(list));
	for (unsigned long it = 0; it < executions; it++) {
		memset(ts, 0, kernels * sizeof(*ts));
		ZE_CHECK(zeCommandQueueExecuteCommandLists(queue, 1, &list, NULL));
		ZE_CHECK(zeCommandQueueSynchronize(queue, UINT64_MAX));
		check_durations(z, ts, kernels, groups->groupCountX, "regular list");
	}
	memset(ts, 0, kernels * sizeof(*ts));
	for (unsigned long i = 0; i < kernels; i++) {
		ZE_CHECK(zeCommandListAppendLaunchKernel(imm, k, groups, ev[i], 0, NULL));
		ZE_CHECK(zeCommandListAppendQueryKernelTimestamps(imm, 1, &ev[i], &ts[i], NULL,
								  i + 1 == kernels ? done : NULL,
								  1, &ev[i]));
	}
	ZE_CHECK(zeEventHostSynchronize(done, UINT64_MAX));
	ZE_CHECK(zeEventHostReset(done));
	check_durations(z, ts, kernels, groups->groupCountX, "immediate list");
	printf("timestamps read on the device: %lu kernels of %u ns\n", kernels,
	       groups->groupCountX);
	for (unsigned long i = 0; i < kernels; i++)
		ZE_CHECK(zeEventDestroy(ev[i]));
	free(ev);
	ZE_CHECK(zeMemFree(z->context, ts));
	ZE_CHECK(zeEventPoolDestroy(dpool));
	ZE_CHECK(zeCommandListDestroy(list));
	ZE_CHECK(zeCommandQueueDestroy(queue));
}

static void exit_handler(int sig)
{
	const char *how = getenv("ZE_CHAIN_EXIT_HOW");

	(void)sig;
	if (how && !strcmp(how, "_exit"))
		_exit(9);
	exit(9);
}

int main(int argc, char **argv)
{
	unsigned long kernels = test_arg(argc, argv, 1, 6), ns = test_arg(argc, argv, 2, 2000000);
	unsigned long executions = test_arg(argc, argv, 3, 2), mode = test_arg(argc, argv, 4, 0);
	ze_group_count_t groups = { (uint32_t)ns, 1, 1 };
	struct app_ze z;

	if (!kernels || !ns || ns > UINT32_MAX || mode > 4) {
		fprintf(stderr, "ze_chain: kernels >= 1, 1 <= ns < 2^32, mode 0 to 4\n");
		return 2;
	}
	if (getenv("ZE_CHAIN_EXIT_ON"))
		signal(atoi(getenv("ZE_CHAIN_EXIT_ON")), exit_handler);
	app_ze_setup(&z);
	ze_command_queue_handle_t queue = app_queue(&z, 0, 0);
	ze_command_list_handle_t list = app_list(&z, 0);
	ze_module_handle_t module = app_module(&z);
	ze_kernel_handle_t k = app_kernel(module, "chain_kernel", 1, 1, 1);

	for (unsigned long i = 0; i < kernels; i++)
		ZE_CHECK(zeCommandListAppendLaunchKernel(list, k, &groups, NULL, 0, NULL));
	ZE_CHECK(zeCommandListClose(list));
	for (unsigned long it = 0; it < executions; it++) {
		ZE_CHECK(zeCommandQueueExecuteCommandLists(queue, 1, &list, NULL));
		ZE_CHECK(zeCommandQueueSynchronize(queue, UINT64_MAX));
		printf("execution %lu: %lu kernels of %lu ns\n", it, kernels, ns);
	}

	ze_command_queue_desc_t d = { ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, NULL, 0, 1, 0,
				      mode == 1 ? ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS
						: ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS,
				      ZE_COMMAND_QUEUE_PRIORITY_NORMAL };
	ze_command_list_handle_t imm;
	ze_event_pool_handle_t pool = app_event_pool(&z, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1);
	ze_event_handle_t done = app_event(pool, 0);

	ZE_CHECK(zeCommandListCreateImmediate(z.context, z.device, &d, &imm));
	if (mode == 3) {
		ze_event_pool_handle_t tpool = app_event_pool(&z, ZE_EVENT_POOL_FLAG_HOST_VISIBLE |
								      ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP, 1);
		ze_event_handle_t stamped = app_event(tpool, 0);
		ze_device_properties_t props = { ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2 };
		uint64_t mask;
		double tick;

		ZE_CHECK(zeDeviceGetProperties(z.device, &props));
		tick = 1e9 / (double)props.timerResolution;
		mask = props.kernelTimestampValidBits >= 64 ? ~0ull
			: (1ull << props.kernelTimestampValidBits) - 1;
		for (unsigned long i = 0; i < kernels; i++) {
			ze_kernel_timestamp_result_t ts;
			double dur;

			ZE_CHECK(zeCommandListAppendLaunchKernel(imm, k, &groups, stamped, 0, NULL));
			ZE_CHECK(zeEventHostSynchronize(stamped, UINT64_MAX));
			ZE_CHECK(zeEventQueryKernelTimestamp(stamped, &ts));
			dur = (double)((ts.global.kernelEnd - ts.global.kernelStart) & mask) * tick;
			APP_EXPECT(dur > (double)ns - tick - 1 && dur < (double)ns + tick + 1,
				   "kernel %lu: %.0f ns by its own timestamps", i, dur);
			ZE_CHECK(zeEventHostReset(stamped));
		}
		printf("own timestamps: %lu kernels of %lu ns\n", kernels, ns);
		ZE_CHECK(zeEventDestroy(stamped));
		ZE_CHECK(zeEventPoolDestroy(tpool));
	}
	if (mode == 4)
		device_read_timestamps(&z, imm, done, k, &groups, kernels, executions);
	for (unsigned long i = 0; mode < 3 && i < kernels; i++)
		ZE_CHECK(zeCommandListAppendLaunchKernel(imm, k, &groups,
							 mode == 0 && i + 1 == kernels ? done : NULL,
							 0, NULL));
	if (mode == 0)
		ZE_CHECK(zeEventHostSynchronize(done, UINT64_MAX));
	printf("immediate: %lu kernels of %lu ns\n", kernels, ns);
	if (mode == 2) {
		/* Done on the device long before exit, but nobody asked. */
		struct timespec t = { 0, (long)(kernels * ns + 20000000) };

		while (t.tv_nsec >= 1000000000) {
			t.tv_sec++;
			t.tv_nsec -= 1000000000;
		}
		nanosleep(&t, NULL);
		printf("ze_chain: exit without waiting\n");
		return 0;
	}

	ZE_CHECK(zeEventDestroy(done));
	ZE_CHECK(zeEventPoolDestroy(pool));
	ZE_CHECK(zeCommandListDestroy(imm));
	ZE_CHECK(zeKernelDestroy(k));
	ZE_CHECK(zeModuleDestroy(module));
	ZE_CHECK(zeCommandListDestroy(list));
	ZE_CHECK(zeCommandQueueDestroy(queue));
	ZE_CHECK(zeContextDestroy(z.context));
	printf("ze_chain: ok\n");
	return 0;
}
