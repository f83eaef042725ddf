/* sim_probe MODE [args]: prints the simulated device's raw values for test_sim.py.
 *   props              device properties (both timerResolution flavours), queue groups
 *   global             CLOCK_MONOTONIC_RAW before/after zeDeviceGetGlobalTimestamps
 *   timeline           kernels, copies, a fill and a barrier of known durations on one queue,
 *                      and a zeCommandListAppendWriteGlobalTimestamp after the first kernel
 *   kernels N NS       N back-to-back kernels of NS ns each on one queue
 *   concurrent NS [O1 I1 O2 I2]
 *                      one NS-ns kernel on each of two queues (ordinal, index; default the
 *                      two compute queues 0.0 and 0.1), submitted together
 *   counter            counter-based events: first state, the rules, the latest signal
 *   events             wait-event semantics and kernel-timestamp query result codes
 *   fork               use a queue in the parent, then in a forked child
 *   bigcopy MIB        one copy of MIB MiB between two fresh device allocations, timed
 *   reuse              a 2 ms kernel's event destroyed (with its pool) while it runs; new
 *                      events made until one takes the destroyed one's address, then the
 *                      kernel and one after it waited for: that new event's status
 * Timestamps are raw device ticks; every "cmd" line is: cmd <what> expect_ns=<n>
 * start=<ticks> end=<ticks>. */
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backends/levelzero/ze_newer.h"
#include "../../apps/ze_app.h"

static uint64_t raw_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static struct app_ze z;

struct probe_cmd {
	const char *what;
	uint64_t expect_ns;
	ze_event_handle_t ev;
};

static void print_cmd(const struct probe_cmd *c)
{
	ze_kernel_timestamp_result_t ts;

	ZE_CHECK(zeEventQueryKernelTimestamp(c->ev, &ts));
	APP_EXPECT(ts.context.kernelStart == ts.global.kernelStart &&
		   ts.context.kernelEnd == ts.global.kernelEnd, "context != global");
	printf("cmd %s expect_ns=%" PRIu64 " start=%" PRIu64 " end=%" PRIu64 "\n", c->what,
	       c->expect_ns, ts.global.kernelStart, ts.global.kernelEnd);
}

static void print_sync_point(const char *label)
{
	uint64_t host, dev;

	ZE_CHECK(zeDeviceGetGlobalTimestamps(z.device, &host, &dev));
	printf("%s host=%" PRIu64 " dev=%" PRIu64 "\n", label, host, dev);
}

static int mode_props(void)
{
	ze_device_properties_t legacy = { ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES };
	ze_device_properties_t v12 = { ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2 };
	ze_command_queue_group_properties_t groups[4];
	ze_api_version_t version;
	uint32_t n = 0;

	ZE_CHECK(zeDeviceGetProperties(z.device, &legacy));
	ZE_CHECK(zeDeviceGetProperties(z.device, &v12));
	ZE_CHECK(zeDriverGetApiVersion(z.driver, &version));
	printf("name=%s\n", legacy.name);
	printf("api=%u.%u\n", ZE_MAJOR_VERSION(version), ZE_MINOR_VERSION(version));
	printf("timer_ns=%" PRIu64 "\n", legacy.timerResolution);
	printf("timer_hz=%" PRIu64 "\n", v12.timerResolution);
	printf("valid_bits=%u kernel_valid_bits=%u\n", v12.timestampValidBits,
	       v12.kernelTimestampValidBits);
	ZE_CHECK(zeDeviceGetCommandQueueGroupProperties(z.device, &n, NULL));
	printf("groups=%u\n", n);
	for (uint32_t i = 0; i < n && i < 4; i++)
		groups[i] = (ze_command_queue_group_properties_t){
			ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES };
	ZE_CHECK(zeDeviceGetCommandQueueGroupProperties(z.device, &n, groups));
	for (uint32_t i = 0; i < n && i < 4; i++)
		printf("group%u flags=0x%x queues=%u fill_max=%zu\n", i, groups[i].flags,
		       groups[i].numQueues, groups[i].maxMemoryFillPatternSize);
	return 0;
}

static int mode_global(void)
{
	for (int i = 0; i < 3; i++) {
		uint64_t before = raw_ns(), host, dev, after;

		ZE_CHECK(zeDeviceGetGlobalTimestamps(z.device, &host, &dev));
		after = raw_ns();
		printf("before=%" PRIu64 " host=%" PRIu64 " after=%" PRIu64 " dev=%" PRIu64 "\n",
		       before, host, after, dev);
	}
	return 0;
}

static ze_kernel_handle_t kernel(const char *name, uint32_t sx, uint32_t sy, uint32_t sz)
{
	static ze_module_handle_t module;

	if (!module)
		module = app_module(&z);
	return app_kernel(module, name, sx, sy, sz);
}

/* Executes `list` on `queue` between two printed sync points, then prints each command. */
static void run_and_print(ze_command_queue_handle_t queue, ze_command_list_handle_t list,
			  struct probe_cmd *cmds, int n)
{
	uint64_t submit, done;

	ZE_CHECK(zeCommandListClose(list));
	print_sync_point("sync");
	submit = raw_ns();
	ZE_CHECK(zeCommandQueueExecuteCommandLists(queue, 1, &list, NULL));
	ZE_CHECK(zeCommandQueueSynchronize(queue, UINT64_MAX));
	done = raw_ns();
	printf("submit_ns=%" PRIu64 " done_ns=%" PRIu64 "\n", submit, done);
	for (int i = 0; i < n; i++)
		print_cmd(&cmds[i]);
}

static int mode_timeline(void)
{
	enum { N = 8 };
	ze_command_queue_handle_t queue = app_queue(&z, 0, 0);
	ze_command_list_handle_t list = app_list(&z, 0);
	ze_event_pool_handle_t pool = app_event_pool(
		&z, ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP | ZE_EVENT_POOL_FLAG_HOST_VISIBLE, N);
	ze_kernel_handle_t big = kernel("big", 100, 1, 1), odd = kernel("odd", 8, 4, 2);
	ze_kernel_handle_t unit = kernel("unit", 1, 1, 1);
	ze_group_count_t big_g = { 1000, 1, 1 }, odd_g = { 7, 3, 2 }, unit_g = { 1, 1, 1 };
	size_t large = 1000000;
	uint8_t *host = app_host_alloc(&z, large), *dev = app_device_alloc(&z, large);
	uint32_t pattern = 0x01020304;
	struct probe_cmd c[N] = {
		{ "kernel_big", 1000 * 100 }, { "copy_small", 1000 }, { "kernel_odd", 42 * 64 },
		{ "copy_large", 100000 }, { "fill", 20000 }, { "barrier", 0 },
		{ "kernel_unit", 1 }, { "copy_9999", 1000 },
	};

	for (int i = 0; i < N; i++)
		c[i].ev = app_event(pool, i);
	memset(host, 0x11, large);
	uint64_t *stamp = app_host_alloc(&z, sizeof(*stamp));

	ZE_CHECK(zeCommandListAppendLaunchKernel(list, big, &big_g, c[0].ev, 0, NULL));
	ZE_CHECK(zeCommandListAppendWriteGlobalTimestamp(list, stamp, NULL, 0, NULL));
	ZE_CHECK(zeCommandListAppendMemoryCopy(list, dev, host, 4096, c[1].ev, 0, NULL));
	ZE_CHECK(zeCommandListAppendLaunchKernel(list, odd, &odd_g, c[2].ev, 0, NULL));
	ZE_CHECK(zeCommandListAppendMemoryCopy(list, dev, host, large, c[3].ev, 0, NULL));
	ZE_CHECK(zeCommandListAppendMemoryFill(list, dev, &pattern, sizeof(pattern), 200000,
					       c[4].ev, 0, NULL));
	ZE_CHECK(zeCommandListAppendBarrier(list, c[5].ev, 0, NULL));
	ZE_CHECK(zeCommandListAppendLaunchKernel(list, unit, &unit_g, c[6].ev, 0, NULL));
	ZE_CHECK(zeCommandListAppendMemoryCopy(list, host, dev, 9999, c[7].ev, 0, NULL));
	run_and_print(queue, list, c, N);
	printf("write_global_timestamp=%" PRIu64 "\n", *stamp);
	/* The copy and the fill really moved the bytes. */
	for (size_t i = 0; i < 9999; i++)
		APP_EXPECT(host[i] == (i < 200000 ? ((uint8_t *)&pattern)[i % 4] : 0x11),
			   "byte %zu", i);
	printf("bytes ok\n");
	return 0;
}

static int mode_kernels(unsigned long n, unsigned long ns)
{
	ze_command_queue_handle_t queue = app_queue(&z, 0, 0);
	ze_command_list_handle_t list = app_list(&z, 0);
	ze_event_pool_handle_t pool = app_event_pool(&z, ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP, n);
	ze_kernel_handle_t k = kernel("timed", 1, 1, 1);
	ze_group_count_t g = { (uint32_t)ns, 1, 1 };
	struct probe_cmd *c = calloc(n, sizeof(*c));

	APP_EXPECT(c && n > 0, "bad arguments");
	for (unsigned long i = 0; i < n; i++) {
		c[i] = (struct probe_cmd){ "kernel", ns, app_event(pool, i) };
		ZE_CHECK(zeCommandListAppendLaunchKernel(list, k, &g, c[i].ev, 0, NULL));
	}
	run_and_print(queue, list, c, n);
	return 0;
}

static int mode_concurrent(unsigned long ns, const uint32_t at[4])
{
	ze_command_queue_handle_t q[2] = { app_queue(&z, at[0], at[1]), app_queue(&z, at[2], at[3]) };
	ze_command_list_handle_t l[2] = { app_list(&z, at[0]), app_list(&z, at[2]) };
	ze_event_pool_handle_t pool = app_event_pool(&z, ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP, 2);
	ze_kernel_handle_t k = kernel("timed", 1, 1, 1);
	ze_group_count_t g = { (uint32_t)ns, 1, 1 };
	struct probe_cmd c[2];
	uint64_t t0, t1;

	for (int i = 0; i < 2; i++) {
		c[i] = (struct probe_cmd){ "kernel", ns, app_event(pool, i) };
		ZE_CHECK(zeCommandListAppendLaunchKernel(l[i], k, &g, c[i].ev, 0, NULL));
		ZE_CHECK(zeCommandListClose(l[i]));
	}
	print_sync_point("sync");
	t0 = raw_ns();
	for (int i = 0; i < 2; i++)
		ZE_CHECK(zeCommandQueueExecuteCommandLists(q[i], 1, &l[i], NULL));
	for (int i = 0; i < 2; i++)
		ZE_CHECK(zeCommandQueueSynchronize(q[i], UINT64_MAX));
	t1 = raw_ns();
	printf("submit_ns=%" PRIu64 " done_ns=%" PRIu64 "\n", t0, t1);
	for (int i = 0; i < 2; i++)
		print_cmd(&c[i]);
	return 0;
}

/* Counter-based events: complete before any signal; the host may neither reset nor signal
 * one; only an in-order list may signal it; a wait sees the latest signal. */
static int mode_counter(void)
{
	ze_command_queue_desc_t qd = { ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, NULL, 0, 0,
				       ZE_COMMAND_QUEUE_FLAG_IN_ORDER,
				       ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS,
				       ZE_COMMAND_QUEUE_PRIORITY_NORMAL };
	ze_event_pool_counter_based_exp_desc_t cb = {
		ZE_STRUCTURE_TYPE_COUNTER_BASED_EVENT_POOL_EXP_DESC, NULL, 0 };
	ze_event_pool_desc_t pd = { ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, &cb,
				    ZE_EVENT_POOL_FLAG_HOST_VISIBLE |
				    ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP, 1 };
	ze_command_list_handle_t in_order, plain = app_immediate_list(&z, 0, 1);
	ze_kernel_handle_t k = kernel("cb", 1, 1, 1);
	ze_group_count_t shortg = { 1000, 1, 1 }, longg = { 20000000, 1, 1 };
	ze_event_pool_handle_t pool;
	ze_event_handle_t ev;

	ZE_CHECK(zeCommandListCreateImmediate(z.context, z.device, &qd, &in_order));
	ZE_CHECK(zeEventPoolCreate(z.context, &pd, 1, &z.device, &pool));
	ev = app_event(pool, 0);
	printf("fresh_status=0x%x\n", (unsigned)zeEventQueryStatus(ev));
	printf("host_reset=0x%x\n", (unsigned)zeEventHostReset(ev));
	printf("host_signal=0x%x\n", (unsigned)zeEventHostSignal(ev));
	printf("append_reset=0x%x\n", (unsigned)zeCommandListAppendEventReset(in_order, ev));
	printf("out_of_order_signal=0x%x\n",
	       (unsigned)zeCommandListAppendLaunchKernel(plain, k, &shortg, ev, 0, NULL));
	/* A short kernel, then a 20 ms one, both signalling it: it completes with the second. */
	ZE_CHECK(zeCommandListAppendLaunchKernel(in_order, k, &shortg, ev, 0, NULL));
	ZE_CHECK(zeCommandListAppendLaunchKernel(in_order, k, &longg, ev, 0, NULL));
	usleep(5000);
	printf("status_during_second=0x%x\n", (unsigned)zeEventQueryStatus(ev));
	ZE_CHECK(zeEventHostSynchronize(ev, UINT64_MAX));
	print_cmd(&(struct probe_cmd){ "latest", 20000000, ev });
	return 0;
}

static int mode_events(void)
{
	ze_command_list_handle_t imm = app_immediate_list(&z, 0, 0);
	ze_event_pool_handle_t ts_pool = app_event_pool(
		&z, ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP | ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 2);
	ze_event_pool_handle_t plain_pool = app_event_pool(&z, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 2);
	ze_event_handle_t gate = app_event(plain_pool, 0), plain = app_event(plain_pool, 1);
	ze_event_handle_t ts = app_event(ts_pool, 0);
	ze_kernel_handle_t k = kernel("gated", 1, 1, 1);
	ze_group_count_t g = { 1000, 1, 1 };
	ze_kernel_timestamp_result_t r;
	uint64_t signal_ns;

	/* The kernel waits on `gate`: it cannot start before the host signals it. */
	ZE_CHECK(zeCommandListAppendLaunchKernel(imm, k, &g, ts, 1, &gate));
	usleep(2000);
	printf("query_pending=0x%x\n", (unsigned)zeEventQueryKernelTimestamp(ts, &r));
	printf("status_pending=0x%x\n", (unsigned)zeEventQueryStatus(ts));
	printf("sync_timeout=0x%x\n", (unsigned)zeEventHostSynchronize(ts, 1000000));
	print_sync_point("sync");
	signal_ns = raw_ns();
	ZE_CHECK(zeEventHostSignal(gate));
	ZE_CHECK(zeEventHostSynchronize(ts, UINT64_MAX));
	printf("signal_ns=%" PRIu64 "\n", signal_ns);
	print_cmd(&(struct probe_cmd){ "gated", 1000, ts });
	printf("status_done=0x%x\n", (unsigned)zeEventQueryStatus(ts));
	ZE_CHECK(zeEventHostSignal(plain));
	printf("query_plain=0x%x\n", (unsigned)zeEventQueryKernelTimestamp(plain, &r));
	printf("query_null=0x%x\n", (unsigned)zeEventQueryKernelTimestamp(ts, NULL));
	ZE_CHECK(zeEventHostReset(ts));
	printf("status_reset=0x%x\n", (unsigned)zeEventQueryStatus(ts));
	ZE_CHECK(zeEventPoolDestroy(ts_pool));
	printf("status_after_pool_destroy=0x%x\n", (unsigned)zeEventQueryStatus(ts));
	return 0;
}

static void fork_work(const char *who, ze_command_queue_handle_t q, ze_command_list_handle_t l,
		      uint8_t *src, uint8_t *dst, size_t n)
{
	memset(dst, 0, n);
	ZE_CHECK(zeCommandQueueExecuteCommandLists(q, 1, &l, NULL));
	ZE_CHECK(zeCommandQueueSynchronize(q, UINT64_MAX));
	APP_EXPECT(memcmp(src, dst, n) == 0, "%s: copy differs", who);
	printf("%s ok\n", who);
	fflush(stdout);
}

static int mode_fork(void)
{
	ze_command_queue_handle_t q = app_queue(&z, 1, 0);
	ze_command_list_handle_t l = app_list(&z, 1);
	size_t n = 4096;
	uint8_t *src = app_host_alloc(&z, n), *dst = app_host_alloc(&z, n);
	int status;
	pid_t pid;

	for (size_t i = 0; i < n; i++)
		src[i] = (uint8_t)i;
	ZE_CHECK(zeCommandListAppendMemoryCopy(l, dst, src, n, NULL, 0, NULL));
	ZE_CHECK(zeCommandListClose(l));
	fork_work("parent", q, l, src, dst, n);
	pid = fork();
	APP_EXPECT(pid >= 0, "fork");
	if (pid == 0) {
		fork_work("child", q, l, src, dst, n);
		_exit(0);
	}
	APP_EXPECT(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		   WEXITSTATUS(status) == 0, "child failed");
	fork_work("parent again", q, l, src, dst, n);
	return 0;
}

/* A copy of fresh memory: the host's wait ends when the copy's end timestamp says. */
static int mode_bigcopy(size_t mib)
{
	ze_command_queue_handle_t q = app_queue(&z, 1, 0);
	ze_command_list_handle_t l = app_list(&z, 1);
	ze_event_pool_handle_t pool = app_event_pool(&z, ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP, 1);
	size_t n = mib << 20;
	uint8_t *a = app_device_alloc(&z, n), *b = app_device_alloc(&z, n);
	struct probe_cmd c = { "copy", n / 10, app_event(pool, 0) };

	ZE_CHECK(zeCommandListAppendMemoryCopy(l, b, a, n, c.ev, 0, NULL));
	run_and_print(q, l, &c, 1);
	return 0;
}

/* The program's mistake (the spec: no event destroyed while the device references it),
 * but a tracer's own events go so with a context destroyed under running work. */
static int mode_reuse(void)
{
	ze_command_list_handle_t imm = app_immediate_list(&z, 0, 0);
	ze_event_pool_handle_t first = app_event_pool(&z, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 16);
	ze_event_pool_handle_t later = app_event_pool(&z, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 64);
	ze_kernel_handle_t k = kernel("long", 1, 1, 1);
	ze_group_count_t longg = { 2000000, 1, 1 }, shortg = { 64, 1, 1 };
	ze_event_handle_t ev[16], gone, fresh = NULL, done;

	for (uint32_t i = 0; i < 16; i++)
		ev[i] = app_event(first, i);
	gone = ev[15];
	ZE_CHECK(zeCommandListAppendLaunchKernel(imm, k, &longg, gone, 0, NULL));
	/* (all of them: freed last, the running one's memory is the next taken) */
	for (uint32_t i = 0; i < 16; i++)
		ZE_CHECK(zeEventDestroy(ev[i]));
	ZE_CHECK(zeEventPoolDestroy(first));
	for (uint32_t i = 0; i < 63 && fresh != gone; i++)
		fresh = app_event(later, i);
	printf("address_reused=%s\n", fresh == gone ? "yes" : "no");
	done = app_event(later, 63);
	ZE_CHECK(zeCommandListAppendLaunchKernel(imm, k, &shortg, done, 0, NULL));
	ZE_CHECK(zeEventHostSynchronize(done, UINT64_MAX));
	printf("new_event_status=0x%x\n", (unsigned)zeEventQueryStatus(fresh));
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "props";

	setvbuf(stdout, NULL, _IOLBF, 0);
	app_ze_setup(&z);
	if (!strcmp(mode, "props"))
		return mode_props();
	if (!strcmp(mode, "global"))
		return mode_global();
	if (!strcmp(mode, "timeline"))
		return mode_timeline();
	if (!strcmp(mode, "kernels"))
		return mode_kernels(test_arg(argc, argv, 2, 4), test_arg(argc, argv, 3, 1000000));
	if (!strcmp(mode, "concurrent")) {
		const uint32_t at[4] = { test_arg(argc, argv, 3, 0), test_arg(argc, argv, 4, 0),
					 test_arg(argc, argv, 5, 0), test_arg(argc, argv, 6, 1) };

		return mode_concurrent(test_arg(argc, argv, 2, 2000000), at);
	}
	if (!strcmp(mode, "counter"))
		return mode_counter();
	if (!strcmp(mode, "events"))
		return mode_events();
	if (!strcmp(mode, "fork"))
		return mode_fork();
	if (!strcmp(mode, "reuse"))
		return mode_reuse();
	if (!strcmp(mode, "bigcopy"))
		return mode_bigcopy(test_arg(argc, argv, 2, 32));
	fprintf(stderr, "sim_probe: unknown mode '%s'\n", mode);
	return 2;
}
