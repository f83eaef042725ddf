/* SPDX-License-Identifier: MIT */
/*
 * bench_ze: a plain Level Zero program (links the loader, knows nothing of
 * gputrace) that times its own loops; run untraced, under gputrace, uftrace
 * or ltrace, on the simulated device.
 *
 *   bench_ze calls <threads> <calls> [burst] [pause_us] [nest]
 *	Each thread calls zeDriverGetApiVersion <calls> times (lock-free in the
 *	simulated driver: the cheapest real call through the loader), in bursts
 *	with a pause after each (see bench.h), from <nest> extra stack frames
 *	(what a call-stack capture walks).
 *   bench_ze launch <regular|immediate> <launches> [batch] [burst] [pause_us] [ranges]
 *	Kernel launches of one group of one work-item (1 ns on the device).
 *	ranges 1: each batch inside an ITT task "step" and each launch inside
 *	its own "layer" (through the static ITT part of test/annotations: a
 *	collector only when one is named, as in real programs).
 *	regular: append <batch> launches, close, execute on a queue,
 *	synchronize the queue, reset the list. immediate: <batch> launches on
 *	an immediate list, the last signalling an event the host waits for.
 *	The time per launch covers the whole cycle: what the program waits.
 *	A pause after every <burst> launches lets the tracer drain.
 *   bench_ze rate <calls_per_s> <ms>
 *	One thread calls zeDriverGetApiVersion at <calls_per_s> for <ms>, in
 *	chunks of 1000 paced by the clock (no sleep: a sustained rate, not
 *	bursts); 0 calls per second: flat out. Prints the calls made and the
 *	rate offered (a program the tracer slows offers less than asked).
 *   bench_ze exit <calls> [pause_us]
 *	<calls> calls, a pause (the tracer writes them meanwhile), then exit:
 *	prints the CLOCK_MONOTONIC time right before exit(), for the harness
 *	to measure how long the exit takes until the process is reaped.
 *   bench_ze idle <ms>
 *	zeInit, a context, then nothing for <ms>: the process's CPU time is what
 *	the tracer's own threads spent (sampling telemetry and metrics).
 */
#include <level_zero/ze_api.h>

#include "bench.h"
#include "../annotations/itt_static.h"

#define ZE_CHECK(call)                                                                     \
	do {                                                                               \
		ze_result_t r_ = (call);                                                   \
		if (r_ != ZE_RESULT_SUCCESS)                                               \
			BENCH_DIE("bench_ze: %s failed: 0x%x", #call, (unsigned)r_);       \
	} while (0)

static ze_driver_handle_t driver;
static ze_device_handle_t device;
static ze_context_handle_t context;

static void setup(void)
{
	ze_context_desc_t cdesc = { ZE_STRUCTURE_TYPE_CONTEXT_DESC, NULL, 0 };
	uint32_t n = 1;

	ZE_CHECK(zeInit(ZE_INIT_FLAG_GPU_ONLY));
	ZE_CHECK(zeDriverGet(&n, &driver));
	n = 1;
	ZE_CHECK(zeDeviceGet(driver, &n, &device));
	ZE_CHECK(zeContextCreate(driver, &cdesc, &context));
}

/* ---- calls ---- */

static unsigned long calls, burst, pause_us, nest;
static pthread_barrier_t start_line;
static struct bench_time *times;

static __attribute__((noinline)) unsigned long call_loop(unsigned long n)
{
	unsigned long ok = 0;

	for (unsigned long i = 0; i < n; i++) {
		ze_api_version_t v = 0;

		ok += zeDriverGetApiVersion(driver, &v) == ZE_RESULT_SUCCESS && v != 0;
	}
	return ok;
}

static void call_bursts(struct bench_time *t);

/* <depth> more frames, then the bursts (kept frames: no tail call) */
static __attribute__((noinline)) unsigned long nested(unsigned long depth, struct bench_time *t)
{
	volatile unsigned long keep = depth;

	if (depth)
		nested(depth - 1, t);
	else
		call_bursts(t);
	return keep;
}

static void *call_thread(void *arg)
{
	nested(nest, &times[(uintptr_t)arg]);
	return NULL;
}

static void call_bursts(struct bench_time *t)
{
	unsigned long ok = 0;

	call_loop(100); /* the thread's first traced call makes its ring */
	pthread_barrier_wait(&start_line);
	for (unsigned long done = 0; done < calls; done += burst) {
		unsigned long n = calls - done < burst ? calls - done : burst;
		uint64_t w = bench_wall(), c = bench_cpu();

		ok += call_loop(n);
		c = bench_cpu() - c;
		bench_burst(t, bench_wall() - w, c, n);
		bench_sleep_us(pause_us);
	}
	if (ok != calls)
		BENCH_DIE("bench_ze: %lu of %lu calls failed", calls - ok, calls);
}

static int bench_calls(unsigned nthreads)
{
	pthread_t *th = calloc(nthreads, sizeof(*th));
	uint64_t span;

	times = calloc(nthreads, sizeof(*times));
	if (!th || !times || pthread_barrier_init(&start_line, NULL, nthreads + 1))
		BENCH_DIE("bench_ze: out of memory");
	setup();
	for (unsigned i = 0; i < nthreads; i++)
		if (pthread_create(&th[i], NULL, call_thread, (void *)(uintptr_t)i))
			BENCH_DIE("bench_ze: pthread_create failed");
	pthread_barrier_wait(&start_line);
	span = bench_wall();
	for (unsigned i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	span = bench_wall() - span;
	bench_report("calls", nthreads, times, span, NULL);
	ZE_CHECK(zeContextDestroy(context));
	return 0;
}

/* ---- launches ---- */

static ze_kernel_handle_t make_kernel(void)
{
	static const uint8_t spirv[] = { 0x03, 0x02, 0x23, 0x07, 0x00, 0x00, 0x01, 0x00 };
	ze_module_desc_t md = { ZE_STRUCTURE_TYPE_MODULE_DESC, NULL, ZE_MODULE_FORMAT_IL_SPIRV,
				sizeof(spirv), spirv, NULL, NULL };
	ze_kernel_desc_t kd = { ZE_STRUCTURE_TYPE_KERNEL_DESC, NULL, 0, "bench_kernel" };
	ze_module_handle_t m;
	ze_kernel_handle_t k;

	ZE_CHECK(zeModuleCreate(context, device, &md, &m, NULL));
	ZE_CHECK(zeKernelCreate(m, &kd, &k));
	ZE_CHECK(zeKernelSetGroupSize(k, 1, 1, 1));
	return k;
}

static const ze_group_count_t one_group = { 1, 1, 1 };
static bool ranged;
static itt_domain *domain;
static itt_string_handle *step_name, *layer_name;

static void range_begin(itt_string_handle *name)
{
	if (ranged)
		itt_task_begin(domain, itt_null, itt_null, name);
}

static void range_end(void)
{
	if (ranged)
		itt_task_end(domain);
}

/* Out of line: make bench row 5k counts the append's instructions in it (callgrind). */
static __attribute__((noinline)) void launch(ze_command_list_handle_t l, ze_kernel_handle_t k,
					    ze_event_handle_t e)
{
	range_begin(layer_name);
	ZE_CHECK(zeCommandListAppendLaunchKernel(l, k, &one_group, e, 0, NULL));
	range_end();
}

static void regular_round(ze_command_queue_handle_t q, ze_command_list_handle_t l,
			  ze_kernel_handle_t k, unsigned long n)
{
	range_begin(step_name);
	for (unsigned long i = 0; i < n; i++)
		launch(l, k, NULL);
	range_end();
	ZE_CHECK(zeCommandListClose(l));
	ZE_CHECK(zeCommandQueueExecuteCommandLists(q, 1, &l, NULL));
	ZE_CHECK(zeCommandQueueSynchronize(q, UINT64_MAX));
	ZE_CHECK(zeCommandListReset(l));
}

static void immediate_round(ze_command_list_handle_t l, ze_kernel_handle_t k, ze_event_handle_t e,
			    unsigned long n)
{
	range_begin(step_name);
	for (unsigned long i = 0; i < n; i++)
		launch(l, k, i + 1 == n ? e : NULL);
	range_end();
	ZE_CHECK(zeEventHostSynchronize(e, UINT64_MAX));
	ZE_CHECK(zeEventHostReset(e));
}

static int bench_launch(const char *kind, unsigned long launches, unsigned long batch,
			unsigned long burst_launches, unsigned long pause, bool ranges)
{
	ze_command_queue_desc_t qd = { ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, NULL, 0, 0, 0,
				       ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS,
				       ZE_COMMAND_QUEUE_PRIORITY_NORMAL };
	ze_command_list_desc_t ld = { ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, NULL, 0, 0 };
	ze_event_pool_desc_t pd = { ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, NULL,
				    ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1 };
	ze_event_desc_t ed = { ZE_STRUCTURE_TYPE_EVENT_DESC, NULL, 0, ZE_EVENT_SCOPE_FLAG_HOST,
			       ZE_EVENT_SCOPE_FLAG_HOST };
	bool immediate = !strcmp(kind, "immediate");
	ze_command_queue_handle_t q = NULL;
	ze_command_list_handle_t l;
	ze_event_pool_handle_t pool = NULL;
	ze_event_handle_t e = NULL;
	ze_kernel_handle_t k;
	struct bench_time t = { 0 };

	if (!immediate && strcmp(kind, "regular"))
		BENCH_DIE("bench_ze: launch kind '%s': use regular or immediate", kind);
	if (!batch)
		BENCH_DIE("bench_ze: batch must be at least 1");
	ranged = ranges;
	if (ranged) {
		domain = itt_domain_create("bench");
		step_name = itt_string_handle_create("step");
		layer_name = itt_string_handle_create("layer");
	}
	setup();
	k = make_kernel();
	if (immediate) {
		ZE_CHECK(zeCommandListCreateImmediate(context, device, &qd, &l));
		ZE_CHECK(zeEventPoolCreate(context, &pd, 1, &device, &pool));
		ZE_CHECK(zeEventCreate(pool, &ed, &e));
		immediate_round(l, k, e, batch); /* warm: the tracer's pools exist */
	} else {
		ZE_CHECK(zeCommandQueueCreate(context, device, &qd, &q));
		ZE_CHECK(zeCommandListCreate(context, device, &ld, &l));
		regular_round(q, l, k, batch);
	}
	for (unsigned long done = 0, since_pause = 0; done < launches; done += batch) {
		unsigned long n = launches - done < batch ? launches - done : batch;
		uint64_t w = bench_wall(), c = bench_cpu();

		if (immediate)
			immediate_round(l, k, e, n);
		else
			regular_round(q, l, k, n);
		c = bench_cpu() - c;
		bench_burst(&t, bench_wall() - w, c, n);
		since_pause += n;
		if (burst_launches && since_pause >= burst_launches) {
			bench_sleep_us(pause);
			since_pause = 0;
		}
	}
	bench_report(immediate ? (ranged ? "launch_immediate_ranged" : "launch_immediate")
			       : (ranged ? "launch_regular_ranged" : "launch_regular"),
		     1, &t, t.wall_ns, NULL);
	if (e) {
		ZE_CHECK(zeEventDestroy(e));
		ZE_CHECK(zeEventPoolDestroy(pool));
	}
	ZE_CHECK(zeCommandListDestroy(l));
	if (q)
		ZE_CHECK(zeCommandQueueDestroy(q));
	ZE_CHECK(zeKernelDestroy(k));
	ZE_CHECK(zeContextDestroy(context));
	return 0;
}

/* The whole process's CPU time while the program itself sleeps. */
static int bench_idle(unsigned long ms)
{
	uint64_t cpu0, cpu1, wall0;

	setup();
	cpu0 = bench_ns(CLOCK_PROCESS_CPUTIME_ID);
	wall0 = bench_wall();
	bench_sleep_us(ms * 1000);
	cpu1 = bench_ns(CLOCK_PROCESS_CPUTIME_ID);
	printf("bench=idle wall_ns=%llu process_cpu_ns=%llu\n",
	       (unsigned long long)(bench_wall() - wall0), (unsigned long long)(cpu1 - cpu0));
	return 0;
}

/* ---- a sustained rate ---- */

#define RATE_CHUNK 1000

static int bench_rate(unsigned long per_s, unsigned long ms)
{
	uint64_t start, end, now, made = 0, cpu;
	double ns_per_call = per_s ? 1e9 / (double)per_s : 0;

	setup();
	call_loop(100); /* the ring exists */
	start = bench_wall();
	end = start + ms * 1000000ull;
	cpu = bench_cpu();
	for (now = start; now < end; now = bench_wall()) {
		/* the schedule: chunk k is due at start + k x chunk time */
		if (per_s && now < start + (uint64_t)(made * ns_per_call))
			continue;
		if (call_loop(RATE_CHUNK) != RATE_CHUNK)
			BENCH_DIE("bench_ze: calls failed");
		made += RATE_CHUNK;
	}
	cpu = bench_cpu() - cpu;
	printf("bench=rate calls=%llu wall_ns=%llu cpu_ns=%llu asked_per_s=%lu offered_per_s=%.0f\n",
	       (unsigned long long)made, (unsigned long long)(now - start),
	       (unsigned long long)cpu, per_s, made * 1e9 / (double)(now - start));
	ZE_CHECK(zeContextDestroy(context));
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	if (!strcmp(mode, "calls")) {
		unsigned nthreads = (unsigned)test_arg(argc, argv, 2, 1);

		calls = test_arg(argc, argv, 3, 1000000);
		burst = test_arg(argc, argv, 4, BENCH_BURST_DEFAULT);
		pause_us = test_arg(argc, argv, 5, 25000);
		nest = test_arg(argc, argv, 6, 0);
		if (!burst)
			burst = calls;
		if (!nthreads)
			BENCH_DIE("bench_ze: threads must be at least 1");
		return bench_calls(nthreads);
	}
	if (!strcmp(mode, "launch"))
		return bench_launch(argc > 2 ? argv[2] : "", test_arg(argc, argv, 3, 20000),
				    test_arg(argc, argv, 4, 64), test_arg(argc, argv, 5, 0),
				    test_arg(argc, argv, 6, 50000), test_arg(argc, argv, 7, 0));
	if (!strcmp(mode, "exit")) {
		unsigned long n = test_arg(argc, argv, 2, 1000);

		setup();
		if (call_loop(n) != n)
			BENCH_DIE("bench_ze: calls failed");
		bench_sleep_us(test_arg(argc, argv, 3, 0));
		printf("bench=exit calls=%lu exit_at_ns=%llu\n", n,
		       (unsigned long long)bench_wall());
		fflush(stdout);
		exit(0);
	}
	if (!strcmp(mode, "idle"))
		return bench_idle(test_arg(argc, argv, 2, 1000));
	if (!strcmp(mode, "rate"))
		return bench_rate(test_arg(argc, argv, 2, 8000000), test_arg(argc, argv, 3, 1000));
	BENCH_DIE("usage: bench_ze calls <threads> <calls> [burst] [pause_us] [nest]\n"
		  "       bench_ze launch <regular|immediate> <launches> [batch] [burst] [pause_us] "
		  "[ranges]\n"
		  "       bench_ze rate <calls_per_s> <ms>\n"
		  "       bench_ze exit <calls> [pause_us]\n"
		  "       bench_ze idle <ms>");
}
