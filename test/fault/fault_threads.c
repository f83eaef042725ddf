/* SPDX-License-Identifier: MIT */
/*
 * Threads: fault_threads ACTION [ARGS]
 *   many T B K     T short-lived threads, B alive at a time, K calls each
 *   churn T B K    the same with long batches: threads die while the drain
 *                  thread is writing their rings (run it with a short
 *                  GPUTRACE_FLUSH_MS)
 *   hammer T K [MS]  T threads make K calls each at full speed (ring pressure),
 *                  after a pause of MS ms
 *   hammer-exec T K  hammer T K, the threads joined, then exec itself as
 *                  "hammer 0 0" (the drain still behind: their overflow unread)
 *   device-wait    a thread blocks in zeEventHostSynchronize(forever) on an
 *                  event nobody signals while main returns
 *   queue-wait     a thread blocks in zeCommandQueueSynchronize(forever): the
 *                  queue's kernel waits on an event nobody signals
 *   cancel         a thread blocked in zeEventHostSynchronize is cancelled; its
 *                  cleanup handler makes a call; main goes on calling
 *   exhaust T [K]  T short-lived threads (2 calls each), then the address space
 *                  left under RLIMIT_AS is mapped (the test sets it), then K calls
 *   slow K         K calls; prints nothing variable; notes the longest single
 *                  call and the whole loop, in ns (for the slow-output test)
 */
#include "fault.h"

#include <stdatomic.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static _Atomic uint64_t thread_calls;

static void *short_thread(void *arg)
{
	calls((int)(intptr_t)arg);
	atomic_fetch_add(&thread_calls, fault_unreported);
	fault_unreported = 0;
	return NULL;
}

/* Threads in waves of `batch`, joined wave by wave. */
static int waves(int total, int batch, int k)
{
	pthread_t *t = calloc((size_t)batch, sizeof(*t));
	pthread_attr_t attr;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	for (int done = 0; done < total; done += batch) {
		int n = total - done < batch ? total - done : batch;
		for (int i = 0; i < n; i++)
			fault_thread(&t[i], &attr, short_thread, (void *)(intptr_t)k);
		for (int i = 0; i < n; i++)
			pthread_join(t[i], NULL);
	}
	free(t);
	say("threads calls %llu\n", (unsigned long long)atomic_load(&thread_calls));
	note("threads", atomic_load(&thread_calls));
	return 0;
}

struct dev {
	ze_device_handle_t device;
	ze_context_handle_t context;
	ze_event_pool_handle_t pool;
	ze_event_handle_t event;
};

static void dev_setup(struct dev *d)
{
	uint32_t n = 1;
	ze_context_desc_t cdesc = { ZE_STRUCTURE_TYPE_CONTEXT_DESC, NULL, 0 };
	ze_event_pool_desc_t pdesc = { ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, NULL, 0, 4 };
	ze_event_desc_t edesc = { ZE_STRUCTURE_TYPE_EVENT_DESC, NULL, 0, 0, 0 };

	if (Z(zeDeviceGet(fault_driver, &n, &d->device)) ||
	    Z(zeContextCreate(fault_driver, &cdesc, &d->context)) ||
	    Z(zeEventPoolCreate(d->context, &pdesc, 1, &d->device, &d->pool)) ||
	    Z(zeEventCreate(d->pool, &edesc, &d->event))) {
		fault_write(2, "device set-up failed\n");
		exit(2);
	}
}

static struct dev dev;
static pthread_mutex_t wait_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wait_cond = PTHREAD_COND_INITIALIZER;
static int waiting;

static void announce_wait(void)
{
	pthread_mutex_lock(&wait_lock);
	waiting = 1;
	pthread_cond_broadcast(&wait_cond);
	pthread_mutex_unlock(&wait_lock);
}

static void await_waiter(void)
{
	pthread_mutex_lock(&wait_lock);
	while (!waiting)
		pthread_cond_wait(&wait_cond, &wait_lock);
	pthread_mutex_unlock(&wait_lock);
	sleep_ms(50); /* now inside the call */
}

static void *event_waiter(void *arg)
{
	(void)arg;
	announce_wait();
	/* never returns: nobody signals the event (not counted: not completed) */
	zeEventHostSynchronize(dev.event, UINT64_MAX);
	return NULL;
}

static ze_command_queue_handle_t queue;

static void *queue_waiter(void *arg)
{
	(void)arg;
	announce_wait();
	zeCommandQueueSynchronize(queue, UINT64_MAX);
	return NULL;
}

static int queue_wait(void)
{
	ze_command_queue_desc_t qdesc = { ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, NULL, 0, 0, 0,
					  ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS,
					  ZE_COMMAND_QUEUE_PRIORITY_NORMAL };
	ze_command_list_desc_t ldesc = { ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, NULL, 0, 0 };
	ze_module_desc_t mdesc = { ZE_STRUCTURE_TYPE_MODULE_DESC, NULL, ZE_MODULE_FORMAT_IL_SPIRV,
				   4, (const uint8_t *)"\x03\x02\x23\x07", NULL, NULL };
	ze_kernel_desc_t kdesc = { ZE_STRUCTURE_TYPE_KERNEL_DESC, NULL, 0, "stuck_kernel" };
	ze_group_count_t groups = { 1, 1, 1 };
	ze_command_list_handle_t list;
	ze_module_handle_t module;
	ze_kernel_handle_t kernel;
	pthread_t t;

	if (Z(zeCommandQueueCreate(dev.context, dev.device, &qdesc, &queue)) ||
	    Z(zeCommandListCreate(dev.context, dev.device, &ldesc, &list)) ||
	    Z(zeModuleCreate(dev.context, dev.device, &mdesc, &module, NULL)) ||
	    Z(zeKernelCreate(module, &kdesc, &kernel)) ||
	    Z(zeCommandListAppendLaunchKernel(list, kernel, &groups, NULL, 1, &dev.event)) ||
	    Z(zeCommandListClose(list)) ||
	    Z(zeCommandQueueExecuteCommandLists(queue, 1, &list, NULL))) {
		fault_write(2, "queue set-up failed\n");
		return 2;
	}
	report();
	fault_thread(&t, NULL, queue_waiter, NULL);
	await_waiter();
	calls(100);
	report();
	return 0;
}

static _Atomic int cleanup_calls;

static void cancel_cleanup(void *arg)
{
	ze_api_version_t v;

	(void)arg;
	zeDriverGetApiVersion(fault_driver, &v);
	atomic_fetch_add(&cleanup_calls, 1);
}

static void *cancel_waiter(void *arg)
{
	(void)arg;
	pthread_cleanup_push(cancel_cleanup, NULL);
	announce_wait();
	zeEventHostSynchronize(dev.event, UINT64_MAX);
	pthread_cleanup_pop(0);
	return NULL;
}

static int cancel(void)
{
	pthread_t t;
	void *ret;

	fault_thread(&t, NULL, cancel_waiter, NULL);
	await_waiter();
	pthread_cancel(t);
	pthread_join(t, &ret);
	say("waiter %s, cleanup calls %d\n", ret == PTHREAD_CANCELED ? "cancelled" : "returned",
	    atomic_load(&cleanup_calls));
	note("cleanup", atomic_load(&cleanup_calls));
	calls(500);
	report();
	return 0;
}

static int slow(int k)
{
	uint64_t worst = 0, t0 = now_ns();
	ze_api_version_t v;

	for (int i = 0; i < k; i++) {
		uint64_t a = now_ns();
		Z(zeDriverGetApiVersion(fault_driver, &v));
		uint64_t d = now_ns() - a;
		if (d > worst)
			worst = d;
	}
	note("loop_ns", now_ns() - t0);
	note("worst_ns", worst);
	report();
	return 0;
}

static void *hammer_thread(void *arg)
{
	calls((int)(intptr_t)arg);
	atomic_fetch_add(&thread_calls, fault_unreported);
	fault_unreported = 0;
	return NULL;
}

static int hammer(int threads, int k)
{
	pthread_t t[64];

	if (threads > 64)
		threads = 64;
	for (int i = 0; i < threads; i++)
		fault_thread(&t[i], NULL, hammer_thread, (void *)(intptr_t)k);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	say("threads calls %llu\n", (unsigned long long)atomic_load(&thread_calls));
	return 0;
}

/* The process's mapped size in pages (/proc/self/statm), 0 if unread. */
static unsigned long mapped_pages(void)
{
	unsigned long pages = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%lu", &pages) != 1)
			pages = 0;
		fclose(f);
	}
	return pages;
}

/* Every byte of address space RLIMIT_AS leaves mapped, none given back: the exit
 * finds no memory (a program that used it all up, under `ulimit -v`). */
static int exhaust(int threads, int k)
{
	unsigned long last, now;
	int still = 0;

	waves(threads, 100, 2);
	/* the exited threads' rings given back first, or the exit's drain frees them and
	 * its trailer finds room: 200 ms was too short for a drain held back by a loaded
	 * machine (a CI run: the whole list written). Until the mapped size has not
	 * shrunk for 300 ms (10 s at most). */
	last = mapped_pages();
	for (int polls = 0; polls < 1000 && still < 30; polls++) {
		sleep_ms(10);
		now = mapped_pages();
		still = now < last ? 0 : still + 1;
		last = now;
	}
	for (size_t sz = (size_t)1 << 30; sz >= 4096; sz >>= 1)
		while (mmap(NULL, sz, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
			    0) != MAP_FAILED)
			;
	calls(k);
	report();
	return 0;
}

int main(int argc, char **argv)
{
	const char *action = argc > 1 ? argv[1] : "";

	fault_init();
	calls(100);
	report();
	if (!strcmp(action, "many") || !strcmp(action, "churn"))
		return waves(arg_int(argc, argv, 2, 10000), arg_int(argc, argv, 3, 100),
			     arg_int(argc, argv, 4, 2));
	if (!strcmp(action, "hammer")) {
		/* an optional pause first: a first checkpoint with a few calls */
		sleep_ms((unsigned)arg_int(argc, argv, 4, 0));
		return hammer(arg_int(argc, argv, 2, 4), arg_int(argc, argv, 3, 50000));
	}
	if (!strcmp(action, "hammer-exec")) {
		char *args[] = { argv[0], "hammer", "0", "0", NULL };

		hammer(arg_int(argc, argv, 2, 4), arg_int(argc, argv, 3, 50000));
		execv("/proc/self/exe", args);
		fault_write(2, "exec failed: %s\n", strerror(errno));
		return 127;
	}
	if (!strcmp(action, "exhaust"))
		return exhaust(arg_int(argc, argv, 2, 8000), arg_int(argc, argv, 3, 0));
	if (!strcmp(action, "slow"))
		return slow(arg_int(argc, argv, 2, 200000));
	dev_setup(&dev);
	report();
	if (!strcmp(action, "device-wait")) {
		pthread_t t;
		fault_thread(&t, NULL, event_waiter, NULL);
		await_waiter();
		calls(100);
		report();
		return 0;
	}
	if (!strcmp(action, "queue-wait"))
		return queue_wait();
	if (!strcmp(action, "cancel"))
		return cancel();
	fault_write(2, "unknown action %s\n", action);
	return 2;
}
