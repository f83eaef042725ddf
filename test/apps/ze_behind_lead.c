/* ze_behind_lead [rounds]: two threads, each with its own queue on the same engine (ordinal
 * 0, index 0). Each round thread A runs a lead list L (4 kernels "kl" of 400 groups: 102 us
 * each) and, while L runs, a list P of 16 short kernels "kp" (0.26 us each) on the same
 * queue, which the engine takes right after L. Thread B, named "pair-split" (for the
 * simulator's ZE_SIM_PAIR_SPLIT_THREAD), runs a list Q of 16 short kernels "kq" 1 ms after
 * A's first call began, long after L and P ended, and synchronizes. A main thread's run
 * comes first, so that with ZE_SIM_EXECUTE_STALL_US=US/3 every run of P is a third one: its
 * call returns late, after B's synchronize. Prints the launches made. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>

#include "ze_app.h"

#define LEAD_KERNELS 4
#define SHORT_KERNELS 16

static struct app_ze z;
static unsigned long rounds;
static ze_command_queue_handle_t queue_a, queue_b;
static ze_command_list_handle_t list_l, list_p, list_q;
static pthread_barrier_t round_start;
static atomic_ulong a_calling; /* the round whose lead run A is starting */
static atomic_ullong a_called_ns; /* when (app_now_ns) */

static ze_command_list_handle_t kernels_list(ze_module_handle_t m, const char *name,
					     uint32_t ngroups, unsigned n, ze_kernel_handle_t *k_out)
{
	ze_kernel_handle_t k = *k_out = app_kernel(m, name, 256, 1, 1);
	ze_group_count_t groups = { ngroups, 1, 1 };
	ze_command_list_handle_t l = app_list(&z, 0);

	for (unsigned i = 0; i < n; i++)
		ZE_CHECK(zeCommandListAppendLaunchKernel(l, k, &groups, NULL, 0, NULL));
	ZE_CHECK(zeCommandListClose(l));
	return l;
}

static void *thread_a(void *arg)
{
	(void)arg;
	for (unsigned long r = 1; r <= rounds; r++) {
		pthread_barrier_wait(&round_start);
		atomic_store(&a_called_ns, app_now_ns());
		atomic_store(&a_calling, r);
		ZE_CHECK(zeCommandQueueExecuteCommandLists(queue_a, 1, &list_l, NULL));
		ZE_CHECK(zeCommandQueueExecuteCommandLists(queue_a, 1, &list_p, NULL));
		ZE_CHECK(zeCommandQueueSynchronize(queue_a, UINT64_MAX));
	}
	return NULL;
}

static void *thread_b(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "pair-split");
	for (unsigned long r = 1; r <= rounds; r++) {
		pthread_barrier_wait(&round_start);
		while (atomic_load(&a_calling) != r)
			;
		/* spun, not slept: a sleep's wake-up may come milliseconds late */
		while (app_now_ns() < atomic_load(&a_called_ns) + 1000000)
			;
		ZE_CHECK(zeCommandQueueExecuteCommandLists(queue_b, 1, &list_q, NULL));
		ZE_CHECK(zeCommandQueueSynchronize(queue_b, UINT64_MAX));
	}
	return NULL;
}

int main(int argc, char **argv)
{
	ze_module_handle_t m;
	ze_kernel_handle_t kl, kp, kq;

	rounds = test_arg(argc, argv, 1, 6);
	app_ze_setup(&z);
	m = app_module(&z);
	queue_a = app_queue(&z, 0, 0);
	queue_b = app_queue(&z, 0, 0);
	list_l = kernels_list(m, "kl", 400, LEAD_KERNELS, &kl);
	list_p = kernels_list(m, "kp", 1, SHORT_KERNELS, &kp);
	list_q = kernels_list(m, "kq", 1, SHORT_KERNELS, &kq);
	/* The process's first run: A's runs of P are the third ones after it. */
	ZE_CHECK(zeCommandQueueExecuteCommandLists(queue_a, 1, &list_q, NULL));
	ZE_CHECK(zeCommandQueueSynchronize(queue_a, UINT64_MAX));
	app_run_two_threads(&round_start, thread_a, thread_b);
	ZE_CHECK(zeCommandListDestroy(list_l));
	ZE_CHECK(zeCommandListDestroy(list_p));
	ZE_CHECK(zeCommandListDestroy(list_q));
	ZE_CHECK(zeCommandQueueDestroy(queue_a));
	ZE_CHECK(zeCommandQueueDestroy(queue_b));
	ZE_CHECK(zeKernelDestroy(kl));
	ZE_CHECK(zeKernelDestroy(kp));
	ZE_CHECK(zeKernelDestroy(kq));
	ZE_CHECK(zeModuleDestroy(m));
	ZE_CHECK(zeContextDestroy(z.context));
	printf("launched %lu\n", rounds * (LEAD_KERNELS + 2 * SHORT_KERNELS) + SHORT_KERNELS);
	return 0;
}
