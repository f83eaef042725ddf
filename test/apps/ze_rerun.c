/* ze_rerun [threads=12] [rounds=20] [queues=2] [kernels=4]: one regular list of `kernels`
 * kernels ("rerun_k", 40 groups of 256: 10 us each), closed once and executed by every
 * thread at once, `rounds` times each, on its queue (thread t on queue t % queues: compute
 * 0.0, 0.1), each run followed by a synchronize of that queue. Level Zero lets threads
 * call zeCommandQueueExecuteCommandLists at once; that the device may not reference the
 * list meanwhile is the program's to ensure, which this one does not: runs of the list
 * overlap. Prints the runs made. */
#include <stdatomic.h>

#include "ze_app.h"

static struct app_ze z;
static ze_command_list_handle_t list;
static ze_command_queue_handle_t queues[2];
static unsigned long rounds, nqueues;
static atomic_ulong runs;
static pthread_barrier_t go;

static void *worker(void *arg)
{
	ze_command_queue_handle_t q = queues[(uintptr_t)arg % nqueues];

	pthread_barrier_wait(&go);
	for (unsigned long i = 0; i < rounds; i++) {
		ZE_CHECK(zeCommandQueueExecuteCommandLists(q, 1, &list, NULL));
		ZE_CHECK(zeCommandQueueSynchronize(q, UINT64_MAX));
		atomic_fetch_add(&runs, 1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long nthreads = test_arg(argc, argv, 1, 12), kernels;
	const ze_group_count_t groups = { 40, 1, 1 };
	pthread_t *t;

	rounds = test_arg(argc, argv, 2, 20);
	nqueues = test_arg(argc, argv, 3, 2);
	kernels = test_arg(argc, argv, 4, 4);
	APP_EXPECT(nthreads >= 1 && (nqueues == 1 || nqueues == 2), "threads >= 1, queues 1 or 2");
	t = calloc(nthreads, sizeof(*t));
	APP_EXPECT(t, "calloc");
	app_ze_setup(&z);
	for (unsigned long i = 0; i < nqueues; i++)
		queues[i] = app_queue(&z, 0, (uint32_t)i);
	list = app_list(&z, 0);
	ze_kernel_handle_t k = app_kernel(app_module(&z), "rerun_k", 256, 1, 1);
	for (unsigned long i = 0; i < kernels; i++)
		ZE_CHECK(zeCommandListAppendLaunchKernel(list, k, &groups, NULL, 0, NULL));
	ZE_CHECK(zeCommandListClose(list));
	APP_EXPECT(pthread_barrier_init(&go, NULL, (unsigned)nthreads) == 0, "barrier");
	for (unsigned long i = 0; i < nthreads; i++)
		APP_EXPECT(pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i) == 0,
			   "pthread_create");
	for (unsigned long i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&go);
	ZE_CHECK(zeCommandListDestroy(list));
	for (unsigned long i = 0; i < nqueues; i++)
		ZE_CHECK(zeCommandQueueDestroy(queues[i]));
	ZE_CHECK(zeKernelDestroy(k));
	ZE_CHECK(zeContextDestroy(z.context));
	printf("ze_rerun: threads=%lu rounds=%lu queues=%lu kernels=%lu runs=%lu\n", nthreads,
	       rounds, nqueues, kernels, (unsigned long)atomic_load(&runs));
	free(t);
	return 0;
}
