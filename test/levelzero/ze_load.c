/* ze_load [kernel_ms=40] [idle_ms=30] [copies=4]: stretches of known work, for metrics
 * and telemetry to be checked against:
 *   1. idle: nothing on the device for idle_ms;
 *   2. kernels: a regular list of kernel_ms kernels of 1 ms each ("load_kernel", 1000
 *      groups of 1000 work-items), back to back, executed once and synchronized;
 *   3. idle again;
 *   4. copies: `copies` copies of 8 MiB, device to device, back to back on the same list
 *      kind (838860 ns each), executed and synchronized;
 *   5. an asynchronous immediate list: kernel "wait_kernel" (4 groups of 64) waits on an
 *      event the host signals 5 ms later; then kernel "imm_kernel" (2 groups of 512); the
 *      host waits for the last.
 * Output is deterministic; exit 0, or 1 on a failed call. */
#include <time.h>

#include "../apps/ze_app.h"

#define COPY_BYTES (8u << 20)

static void sleep_ms(unsigned long ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts))
		;
}

int main(int argc, char **argv)
{
	unsigned long kernel_ms = test_arg(argc, argv, 1, 40), idle_ms = test_arg(argc, argv, 2, 30);
	unsigned long copies = test_arg(argc, argv, 3, 4);
	ze_group_count_t thousand = { 1000, 1, 1 }, four = { 4, 1, 1 }, two = { 2, 1, 1 };
	struct app_ze z;

	if (kernel_ms > 10000 || idle_ms > 10000 || copies > 64) {
		fprintf(stderr, "ze_load: kernel_ms <= 10000, idle_ms <= 10000, copies <= 64\n");
		return 2;
	}
	app_ze_setup(&z);
	ze_command_queue_handle_t queue = app_queue(&z, 0, 0);
	ze_command_list_handle_t kernels = app_list(&z, 0), copy = app_list(&z, 0);
	ze_module_handle_t module = app_module(&z);
	ze_kernel_handle_t load = app_kernel(module, "load_kernel", 1000, 1, 1);
	ze_kernel_handle_t waiting = app_kernel(module, "wait_kernel", 64, 1, 1);
	ze_kernel_handle_t imm_k = app_kernel(module, "imm_kernel", 512, 1, 1);
	uint8_t *a = app_device_alloc(&z, COPY_BYTES), *b = app_device_alloc(&z, COPY_BYTES);

	sleep_ms(idle_ms);
	printf("idle: %lu ms\n", idle_ms);

	for (unsigned long i = 0; i < kernel_ms; i++)
		ZE_CHECK(zeCommandListAppendLaunchKernel(kernels, load, &thousand, NULL, 0, NULL));
	ZE_CHECK(zeCommandListClose(kernels));
	ZE_CHECK(zeCommandQueueExecuteCommandLists(queue, 1, &kernels, NULL));
	ZE_CHECK(zeCommandQueueSynchronize(queue, UINT64_MAX));
	printf("kernels: %lu of 1 ms\n", kernel_ms);

	sleep_ms(idle_ms);
	printf("idle: %lu ms\n", idle_ms);

	for (unsigned long i = 0; i < copies; i++)
		ZE_CHECK(zeCommandListAppendMemoryCopy(copy, i % 2 ? a : b, i % 2 ? b : a, COPY_BYTES,
						       NULL, 0, NULL));
	ZE_CHECK(zeCommandListClose(copy));
	ZE_CHECK(zeCommandQueueExecuteCommandLists(queue, 1, &copy, NULL));
	ZE_CHECK(zeCommandQueueSynchronize(queue, UINT64_MAX));
	printf("copies: %lu of %u bytes\n", copies, COPY_BYTES);

	ze_command_list_handle_t imm = app_immediate_list(&z, 0, 1);
	ze_event_pool_handle_t pool = app_event_pool(&z, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 2);
	ze_event_handle_t go = app_event(pool, 0), done = app_event(pool, 1);

	ZE_CHECK(zeCommandListAppendLaunchKernel(imm, waiting, &four, NULL, 1, &go));
	ZE_CHECK(zeCommandListAppendLaunchKernel(imm, imm_k, &two, done, 0, NULL));
	sleep_ms(5);
	ZE_CHECK(zeEventHostSignal(go));
	ZE_CHECK(zeEventHostSynchronize(done, UINT64_MAX));
	printf("immediate: wait_kernel after a host signal, imm_kernel\n");

	ZE_CHECK(zeEventDestroy(go));
	ZE_CHECK(zeEventDestroy(done));
	ZE_CHECK(zeEventPoolDestroy(pool));
	ZE_CHECK(zeCommandListDestroy(imm));
	ZE_CHECK(zeCommandListDestroy(kernels));
	ZE_CHECK(zeCommandListDestroy(copy));
	ZE_CHECK(zeMemFree(z.context, a));
	ZE_CHECK(zeMemFree(z.context, b));
	ZE_CHECK(zeKernelDestroy(load));
	ZE_CHECK(zeKernelDestroy(waiting));
	ZE_CHECK(zeKernelDestroy(imm_k));
	ZE_CHECK(zeModuleDestroy(module));
	ZE_CHECK(zeCommandQueueDestroy(queue));
	ZE_CHECK(zeContextDestroy(z.context));
	printf("ze_load: ok\n");
	return 0;
}
