/* ze_shared_engine [rounds] [kernels] [groups_a] [groups_b] [pause_us] [b_delay_us]: two
 * threads, each with its own queue on the same engine (ordinal 0, index 0), as two parts of
 * a program that know nothing of each other. Each round thread A runs a list of `kernels`
 * launches of "ka" (groups_a groups of 256: 256 ns each on the simulated device) and,
 * while A is still in its call, thread B runs one of "kb" (groups_b groups) b_delay_us
 * after A's call began (default 1000), which the engine takes after A's. A main thread's
 * run comes first, so that with ZE_SIM_EXECUTE_STALL_US=US/2 every run of A's is an even
 * one: its call returns late, after B's. B pauses pause_us after each of its
 * synchronizes (the next round, whose runs read the last, starts that late). Prints the
 * launches made. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

#include "ze_app.h"

static struct app_ze z;
static unsigned long rounds, kernels, groups_a, groups_b, pause_us;
static unsigned long b_delay_us; /* B submits this long after A starts its call */
static ze_command_queue_handle_t queue_a, queue_b;
static ze_command_list_handle_t list_a, list_b;
static pthread_barrier_t round_start;
static atomic_ulong a_calling; /* the round whose run A is starting */
static atomic_ullong a_called_ns; /* when (app_now_ns) */

/* Each of A and B on a CPU of its own where there are two: on one, the spinning
 * simulator's stall of A's call kept B from its own call until A's returned (whole runs,
 * every round). */
static void pin_to(unsigned nth)
{
	cpu_set_t allowed, one;
	unsigned seen = 0;

	if (sched_getaffinity(0, sizeof(allowed), &allowed) || CPU_COUNT(&allowed) < 2)
		return;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (CPU_ISSET(cpu, &allowed) && seen++ == nth) {
			CPU_ZERO(&one);
			CPU_SET(cpu, &one);
			pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
			return;
		}
	}
}

static ze_command_list_handle_t kernels_list(ze_module_handle_t m, const char *name,
					     uint32_t ngroups, ze_kernel_handle_t *k_out)
{
	ze_kernel_handle_t k = *k_out = app_kernel(m, name, 256, 1, 1);
	ze_group_count_t groups = { ngroups, 1, 1 };
	ze_command_list_handle_t l = app_list(&z, 0);

	for (unsigned long i = 0; i < kernels; i++)
		ZE_CHECK(zeCommandListAppendLaunchKernel(l, k, &groups, NULL, 0, NULL));
	ZE_CHECK(zeCommandListClose(l));
	return l;
}

static void *thread_a(void *arg)
{
	(void)arg;
	pin_to(0);
	for (unsigned long r = 1; r <= rounds; r++) {
		pthread_barrier_wait(&round_start);
		atomic_store(&a_called_ns, app_now_ns());
		atomic_store(&a_calling, r);
		ZE_CHECK(zeCommandQueueExecuteCommandLists(queue_a, 1, &list_a, NULL));
		ZE_CHECK(zeCommandQueueSynchronize(queue_a, UINT64_MAX));
	}
	return NULL;
}

static void *thread_b(void *arg)
{
	(void)arg;
	pin_to(1);
	/* ZE_SIM_PAIR_SPLIT_THREAD=pair-split splits B's clock pairs only */
	pthread_setname_np(pthread_self(), "pair-split");
	for (unsigned long r = 1; r <= rounds; r++) {
		pthread_barrier_wait(&round_start);
		while (atomic_load(&a_calling) != r)
			;
		/* spun, not slept: a sleep's wake-up came up to 2 ms late here, after A's
		 * call had returned */
		while (app_now_ns() < atomic_load(&a_called_ns) + b_delay_us * 1000)
			;
		ZE_CHECK(zeCommandQueueExecuteCommandLists(queue_b, 1, &list_b, NULL));
		ZE_CHECK(zeCommandQueueSynchronize(queue_b, UINT64_MAX));
		if (pause_us)
			usleep((useconds_t)pause_us);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	ze_module_handle_t m;
	ze_kernel_handle_t ka, kb;

	rounds = test_arg(argc, argv, 1, 8);
	kernels = test_arg(argc, argv, 2, 16);
	groups_a = test_arg(argc, argv, 3, 1000); /* 256 us: B's run comes in A's */
	groups_b = test_arg(argc, argv, 4, 1000);
	pause_us = test_arg(argc, argv, 5, 0);
	b_delay_us = test_arg(argc, argv, 6, 1000);
	app_ze_setup(&z);
	m = app_module(&z);
	queue_a = app_queue(&z, 0, 0);
	queue_b = app_queue(&z, 0, 0);
	list_a = kernels_list(m, "ka", (uint32_t)groups_a, &ka);
	list_b = kernels_list(m, "kb", (uint32_t)groups_b, &kb);
	/* The process's first run (an odd one): A's are the even ones after it. */
	ZE_CHECK(zeCommandQueueExecuteCommandLists(queue_a, 1, &list_a, NULL));
	ZE_CHECK(zeCommandQueueSynchronize(queue_a, UINT64_MAX));
	app_run_two_threads(&round_start, thread_a, thread_b);
	ZE_CHECK(zeCommandListDestroy(list_a));
	ZE_CHECK(zeCommandListDestroy(list_b));
	ZE_CHECK(zeCommandQueueDestroy(queue_a));
	ZE_CHECK(zeCommandQueueDestroy(queue_b));
	ZE_CHECK(zeKernelDestroy(ka));
	ZE_CHECK(zeKernelDestroy(kb));
	ZE_CHECK(zeModuleDestroy(m));
	ZE_CHECK(zeContextDestroy(z.context));
	printf("launched %lu\n", (2 * rounds + 1) * kernels);
	return 0;
}
