/* ze_end MODE N: N rounds of {copy 4096 B, kernel `end_kernel`, event synchronize, reset} on
 * an immediate list, then the process ends by MODE:
 *   segv        a write to a page mapped without access (SIGSEGV)
 *   abort       abort() (SIGABRT)
 *   exitthread  3 threads loop the rounds; a 4th does N rounds, then exit(3)
 *   nojoin      3 threads loop the rounds; main does N, then returns 9 without joining
 *   flat        12 threads launch flat out, never waiting: a kernel appended to an immediate
 *               list, then a regular list of 4 kernels run on a queue, over and over, from
 *               when all are ready; main sleeps N ms from then, then returns 9 without
 *               joining
 * Prints "did N" before the end. */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../apps/ze_app.h"

/* more threads than cores: one is often stopped for milliseconds between two calls */
#define FLAT_THREADS 12

static struct app_ze z;
static atomic_int flat_started;
static atomic_bool flat_go;
static ze_module_handle_t module;
static long rounds;

static void work(long n)
{
	ze_command_list_handle_t l = app_immediate_list(&z, 0, 0);
	ze_kernel_handle_t k = app_kernel(module, "end_kernel", 1, 1, 1);
	void *h = app_host_alloc(&z, 4096), *d = app_device_alloc(&z, 4096);
	ze_group_count_t g = { 1000, 1, 1 };
	ze_event_pool_handle_t p = app_event_pool(&z, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1);
	ze_event_handle_t e = app_event(p, 0);

	for (long i = 0; i < n; i++) {
		ZE_CHECK(zeCommandListAppendMemoryCopy(l, d, h, 4096, NULL, 0, NULL));
		ZE_CHECK(zeCommandListAppendLaunchKernel(l, k, &g, e, 0, NULL));
		ZE_CHECK(zeEventHostSynchronize(e, UINT64_MAX));
		ZE_CHECK(zeEventHostReset(e));
	}
}

/* for ever: a kernel on an immediate list, a list of 4 kernels run on a queue */
static void flat(void)
{
	ze_command_list_handle_t l = app_immediate_list(&z, 0, 0), r = app_list(&z, 0);
	ze_command_queue_handle_t q = app_queue(&z, 0, 0);
	ze_kernel_handle_t k = app_kernel(module, "end_kernel", 1, 1, 1);
	ze_group_count_t g = { 200, 1, 1 };

	for (int i = 0; i < 4; i++)
		ZE_CHECK(zeCommandListAppendLaunchKernel(r, k, &g, NULL, 0, NULL));
	ZE_CHECK(zeCommandListClose(r));
	atomic_fetch_add(&flat_started, 1);
	while (!atomic_load(&flat_go))
		sched_yield();
	for (;;) {
		ZE_CHECK(zeCommandListAppendLaunchKernel(l, k, &g, NULL, 0, NULL));
		ZE_CHECK(zeCommandQueueExecuteCommandLists(q, 1, &r, NULL));
	}
}

static void *flat_loop(void *unused)
{
	flat();
	return NULL;
}

static void *loop(void *unused)
{
	for (;;)
		work(10);
	return NULL;
}

static void *work_then_exit(void *unused)
{
	work(rounds);
	printf("did %ld\n", rounds);
	exit(3);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "segv";
	pthread_t t;

	rounds = argc > 2 ? atol(argv[2]) : 20;
	setvbuf(stdout, NULL, _IONBF, 0);
	app_ze_setup(&z);
	module = app_module(&z);
	if (!strcmp(mode, "exitthread")) {
		for (int i = 0; i < 3; i++)
			pthread_create(&t, NULL, loop, NULL);
		pthread_create(&t, NULL, work_then_exit, NULL);
		for (;;)
			pause();
	}
	if (!strcmp(mode, "flat")) {
		for (int i = 0; i < FLAT_THREADS; i++)
			pthread_create(&t, NULL, flat_loop, NULL);
		while (atomic_load(&flat_started) < FLAT_THREADS)
			sched_yield();
		atomic_store(&flat_go, true);
		nanosleep(&(struct timespec){ rounds / 1000, rounds % 1000 * 1000000 }, NULL);
		printf("did %ld\n", rounds);
		return 9;
	}
	if (!strcmp(mode, "nojoin")) {
		for (int i = 0; i < 3; i++)
			pthread_create(&t, NULL, loop, NULL);
		work(rounds);
		printf("did %ld\n", rounds);
		return 9;
	}
	work(rounds);
	printf("did %ld\n", rounds);
	if (!strcmp(mode, "segv")) {
		/* a real fault, not raise(), and not a null store UBSan stops first */
		volatile int *p = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		*p = 1;
	}
	if (!strcmp(mode, "abort"))
		abort();
	return 1;
}
