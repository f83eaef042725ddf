/* ze_lists [threads] [rounds] [kernels]: every thread, each round, makes a command list
 * (immediate on even rounds; regular, run on the thread's own queue, on odd ones),
 * appends `kernels` launches of its own kernel "k<thread>", waits for them (a barrier
 * signaling an event on the immediate list, a queue sync) and destroys the list, while
 * the other threads' lists come and go. Prints the launches made. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "ze_app.h"

static struct app_ze z;
static unsigned long rounds, kernels;
static ze_kernel_handle_t *kernel;
static atomic_ulong launched;

static void *worker(void *arg)
{
	unsigned long t = (unsigned long)(uintptr_t)arg;
	ze_command_queue_handle_t q = app_queue(&z, 0, (uint32_t)(t % 2));
	ze_group_count_t one = { 1, 1, 1 };
	ze_event_pool_handle_t pool = app_event_pool(&z, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1);
	ze_event_desc_t ed = { ZE_STRUCTURE_TYPE_EVENT_DESC, NULL, 0, ZE_EVENT_SCOPE_FLAG_HOST,
			       ZE_EVENT_SCOPE_FLAG_HOST };
	ze_event_handle_t done;

	ZE_CHECK(zeEventCreate(pool, &ed, &done));
	for (unsigned long r = 0; r < rounds; r++) {
		bool immediate = r % 2 == 0;
		ze_command_list_handle_t l = immediate ? app_immediate_list(&z, 0, (uint32_t)(t % 2))
						       : app_list(&z, 0);

		for (unsigned long i = 0; i < kernels; i++)
			ZE_CHECK(zeCommandListAppendLaunchKernel(l, kernel[t], &one, NULL, 0, NULL));
		if (immediate) {
			ZE_CHECK(zeCommandListAppendBarrier(l, done, 0, NULL));
			ZE_CHECK(zeEventHostSynchronize(done, UINT64_MAX));
			ZE_CHECK(zeEventHostReset(done));
		} else {
			ZE_CHECK(zeCommandListClose(l));
			ZE_CHECK(zeCommandQueueExecuteCommandLists(q, 1, &l, NULL));
			ZE_CHECK(zeCommandQueueSynchronize(q, UINT64_MAX));
		}
		ZE_CHECK(zeCommandListDestroy(l));
		atomic_fetch_add(&launched, kernels);
	}
	ZE_CHECK(zeEventDestroy(done));
	ZE_CHECK(zeEventPoolDestroy(pool));
	ZE_CHECK(zeCommandQueueDestroy(q));
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long n = test_arg(argc, argv, 1, 4);
	ze_module_handle_t m;
	pthread_t *t;

	rounds = test_arg(argc, argv, 2, 20);
	kernels = test_arg(argc, argv, 3, 16);
	t = calloc(n, sizeof(*t));
	kernel = calloc(n, sizeof(*kernel));
	APP_EXPECT(t && kernel, "calloc");
	app_ze_setup(&z);
	m = app_module(&z);
	for (unsigned long i = 0; i < n; i++) {
		char name[32];

		snprintf(name, sizeof(name), "k%lu", i);
		kernel[i] = app_kernel(m, name, 256, 1, 1); /* 256 ns: spans apart */
	}
	for (unsigned long i = 0; i < n; i++)
		APP_EXPECT(pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i) == 0,
			   "pthread_create");
	for (unsigned long i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	for (unsigned long i = 0; i < n; i++)
		ZE_CHECK(zeKernelDestroy(kernel[i]));
	ZE_CHECK(zeModuleDestroy(m));
	ZE_CHECK(zeContextDestroy(z.context));
	printf("launched %lu\n", (unsigned long)atomic_load(&launched));
	free(kernel);
	free(t);
	return 0;
}
