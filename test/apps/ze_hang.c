/* ze_hang forever | ze_hang MS | ze_hang busy | ze_hang stdin: a kernel that waits for an
 * event nobody signals (the Level Zero spec: such work never completes), and the host
 * waiting for its queue. forever: nothing ever signals it (a hang; the caller kills us).
 * MS: a second thread signals the event from the host after MS milliseconds, the wait
 * returns, exit 0. busy: the host never waits, it works on (sleeps) forever, the kernel
 * stays stuck. stdin: prints "ready", then per line read: "ok" runs a kernel that
 * finishes and waits for it (prints "ok"), "hang" submits the stuck one and waits
 * forever (prints "waiting"): a hang at a time the caller picks (a capture window).
 * poll MS [LATE_MS]: the stuck kernel waited for by timed waits (zeCommandQueueSynchronize,
 * 0.8 s each, as a program that polls does) for MS, then the host signals it; twice, each
 * time a new launch (two hangs, each polled on), then exit 0. LATE_MS: each hang's first
 * wait begins that long after its submission (as on a loaded machine).
 * two: a second thread waits for the event from the start (zeEventHostSynchronize),
 * and 1.5 s later the host waits for its queue too: both forever.
 * exit: a second thread, every signal blocked, waits for the event from the start
 * (zeEventHostSynchronize, forever); the program exits (0) the moment the watchdog's
 * signal to unwind that thread is pending on it, that is while the report is being
 * written (its thread waits 0.2 s for an answer that never comes). */
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "ze_app.h"

static ze_event_handle_t gate;
static unsigned long signal_after_ms;

static void *signal_later(void *arg)
{
	struct timespec ts = { (time_t)(signal_after_ms / 1000), (long)(signal_after_ms % 1000) * 1000000l };

	(void)arg;
	nanosleep(&ts, NULL);
	ZE_CHECK(zeEventHostSignal(gate));
	return NULL;
}

static _Atomic pid_t waiter_tid;

static void *wait_for_gate(void *arg)
{
	if (arg) {
		sigset_t all;

		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, NULL);
		waiter_tid = (pid_t)syscall(SYS_gettid);
	}
	ZE_CHECK(zeEventHostSynchronize(gate, UINT64_MAX));
	return NULL;
}

/* A signal sent to the thread tid and not delivered (blocked): its SigPnd. */
static bool signal_pending_on(pid_t tid)
{
	char path[64], line[128];
	unsigned long long mask = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	if (!(f = fopen(path, "r")))
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "SigPnd: %llx", &mask) == 1)
			break;
	fclose(f);
	return mask != 0;
}

/* exit: leaves while the watchdog writes its report on the waiter (60 s at most) */
static int exit_during_report(void)
{
	APP_EXPECT(!pthread_create(&(pthread_t){ 0 }, NULL, wait_for_gate, &waiter_tid),
		   "pthread_create");
	printf("waiting\n");
	fflush(stdout);
	for (unsigned ms = 0; ms < 60000; ms++) {
		if (waiter_tid && signal_pending_on(waiter_tid)) {
			printf("exiting\n");
			fflush(stdout);
			return 0;
		}
		usleep(1000);
	}
	fprintf(stderr, "ze_hang: no unwind signal on the waiting thread in 60 s\n");
	return 1;
}

/* Named, not inlined: the watchdog's report must show who waits. */
__attribute__((noinline)) static void wait_for_device(ze_command_queue_handle_t q)
{
	ZE_CHECK(zeCommandQueueSynchronize(q, UINT64_MAX));
	__asm__ volatile("" ::: "memory"); /* no tail call: this frame stays */
}

int main(int argc, char **argv)
{
	struct app_ze z;
	ze_group_count_t groups = { 4, 1, 1 };
	pthread_t t;
	bool busy = argc > 1 && !strcmp(argv[1], "busy");
	bool lines = argc > 1 && !strcmp(argv[1], "stdin");
	bool poll = argc > 2 && !strcmp(argv[1], "poll");
	bool two = argc > 1 && !strcmp(argv[1], "two");
	bool leave = argc > 1 && !strcmp(argv[1], "exit");
	bool forever = busy || lines || two || leave || (argc > 1 && !strcmp(argv[1], "forever"));

	if (argc < 2 || (!forever && !(signal_after_ms = strtoul(argv[1 + poll], NULL, 10)))) {
		fprintf(stderr, "usage: ze_hang forever|MS|busy|stdin|two|exit|poll MS [LATE_MS]\n");
		return 2;
	}
	app_ze_setup(&z);
	ze_command_queue_handle_t queue = app_queue(&z, 0, 0);
	ze_command_list_handle_t list = app_list(&z, 0);
	ze_kernel_handle_t kernel = app_kernel(app_module(&z), "stuck_kernel", 64, 1, 1);
	ze_event_pool_handle_t pool = app_event_pool(&z, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 2);

	gate = app_event(pool, 0);
	if (leave)
		return exit_during_report();
	/* blocked before the kernel is submitted: the wait is the first hang seen */
	if (two)
		APP_EXPECT(!pthread_create(&t, NULL, wait_for_gate, NULL), "pthread_create");
	for (unsigned hang = 0; poll && hang < 2; hang++) {
		ze_command_list_handle_t stuck = app_list(&z, 0);
		ze_event_handle_t ev = hang ? app_event(pool, 1) : gate;
		uint64_t until = app_now_ns() + signal_after_ms * 1000000ull;

		ZE_CHECK(zeCommandListAppendLaunchKernel(stuck, kernel, &groups, NULL, 1, &ev));
		ZE_CHECK(zeCommandListClose(stuck));
		ZE_CHECK(zeCommandQueueExecuteCommandLists(queue, 1, &stuck, NULL));
		printf("waiting\n");
		fflush(stdout);
		usleep((useconds_t)test_arg(argc, argv, 3, 0) * 1000);
		while (app_now_ns() < until)
			APP_EXPECT(zeCommandQueueSynchronize(queue, 800000000ull) == ZE_RESULT_NOT_READY,
				   "the stuck kernel finished");
		ZE_CHECK(zeEventHostSignal(ev));
		wait_for_device(queue);
		if (hang)
			return printf("done\n") < 0;
	}
	if (lines) {
		ze_command_list_handle_t ok = app_list(&z, 0);
		ze_kernel_handle_t quick = app_kernel(app_module(&z), "quick_kernel", 64, 1, 1);
		char line[64];

		ZE_CHECK(zeCommandListAppendLaunchKernel(ok, quick, &groups, NULL, 0, NULL));
		ZE_CHECK(zeCommandListClose(ok));
		printf("ready\n");
		fflush(stdout);
		while (fgets(line, sizeof(line), stdin) && strcmp(line, "hang\n")) {
			ZE_CHECK(zeCommandQueueExecuteCommandLists(queue, 1, &ok, NULL));
			ZE_CHECK(zeCommandQueueSynchronize(queue, UINT64_MAX));
			printf("ok\n");
			fflush(stdout);
		}
	}
	ZE_CHECK(zeCommandListAppendLaunchKernel(list, kernel, &groups, NULL, 1, &gate));
	ZE_CHECK(zeCommandListClose(list));
	ZE_CHECK(zeCommandQueueExecuteCommandLists(queue, 1, &list, NULL));
	if (!forever)
		APP_EXPECT(!pthread_create(&t, NULL, signal_later, NULL), "pthread_create");
	printf("waiting\n");
	fflush(stdout);
	while (busy)
		sleep(1);
	if (two)
		usleep(1500000);
	wait_for_device(queue);
	if (!forever)
		pthread_join(t, NULL);
	printf("done\n");
	return 0;
}
