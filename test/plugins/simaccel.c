// SPDX-License-Identifier: MIT
/*
 * SimAccel: a simulated accelerator as a gputrace plug-in, built against the
 * installed header only. It records a fixed, known set of events so the
 * tests can check the trace exactly:
 *
 *   device "SimAccel 0", queues "compute" (sort 0) and "copy" (sort 1);
 *   for i in 0..kernels-1, at base + i ms (base = gputrace's clock at start):
 *     host span  simLaunchKernel  +0..+20 us         correlation 1+i
 *     kernel     sim_kernel_<i>   +50 us, 100+10i us correlation 1+i (compute)
 *     host span  simMemcpyAsync   +200..+210 us      correlation 101+i
 *     copy       Memcpy HtoD      +300..+340 us      correlation 101+i (copy)
 *     counters   sim_memory {used_bytes, free_bytes}, sim_utilization {percent}
 *   one instant "sim_checkpoint" on the compute queue at base + 5 us.
 * Host spans are on the thread that created the plug-in (the program's
 * main thread). Spans come from a collector thread started by start();
 * counters come from the first flush, as a real plug-in would read its
 * device's buffers there.
 *
 * Configuration (GPUTRACE_PLUGIN_CONFIG="simaccel:key=value,..."):
 *   kernels=N       spans per queue (default 3)
 *   kinds_file=P    write the enabled kinds received by create to P
 *   all_kinds=1     emit every kind, enabled or not (the builder filters)
 *   at_stop=N       stop() hands over N more host spans "simLastRecord" (now, on the
 *                   host thread's row) from a thread of its own, then joins it: a
 *                   plug-in's last records, at exit after the program's end
 *   launch_after_ms=N  the device spans first, all of them, then N ms later the
 *                   host spans that launched them (a collector that reads the
 *                   device's buffer before the host's), and not before gputrace's
 *                   drain has read the device spans (three flushes have come since:
 *                   on a loaded machine a drain cycle can take longer than N ms)
 *   concurrent=1    also a queue "concurrent" whose kernels overlap, as a device
 *                   running kernels of one queue at once reports them, at
 *                   base + kernels ms: sim_first +0..+100 us, sim_after +100..+200
 *                   us (touching it), sim_inside +150..+180 us, sim_zero +170 us
 *                   (no length), sim_across +190..+300 us (no correlations)
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gputrace/gputrace_plugin.h>

#define US 1000ull
#define MS 1000000ull

struct simaccel {
	const struct gputrace_builder_api *api;
	gputrace_builder *b;
	uint32_t kinds;
	int all_kinds;
	int kernels;
	int at_stop;
	int launch_after_ms;
	int concurrent;
	int32_t host_tid;
	int32_t device, compute, copy, conc;
	uint64_t base;
	int counters_done;
	atomic_uint flushes;
	atomic_int stopping; /* stop() waits for the collector: it waits no more */
	pthread_t collector;
	int collector_running;
};

static int simaccel_query(struct gputrace_plugin_info *info)
{
	info->name = "simaccel";
	info->version = "1.0";
	info->kinds = GPUTRACE_KIND_RUNTIME | GPUTRACE_KIND_KERNEL | GPUTRACE_KIND_MEMCPY |
		      GPUTRACE_KIND_ANNOTATION | GPUTRACE_KIND_COUNTER;
	return 0;
}

static int enabled(const struct simaccel *s, uint32_t kind)
{
	return s->all_kinds || (s->kinds & kind);
}

static const char *const kind_names[] = { "runtime", "driver",     "kernel",  "memcpy",  "memset",
					  "sync",    "annotation", "counter", "overhead" };

static int write_kinds(const char *path, uint32_t kinds)
{
	FILE *f = fopen(path, "w");
	const char *sep = "";
	unsigned i;

	if (!f)
		return -errno;
	for (i = 0; i < sizeof(kind_names) / sizeof(kind_names[0]); i++) {
		if (kinds & (1u << i)) {
			fprintf(f, "%s%s", sep, kind_names[i]);
			sep = ",";
		}
	}
	fprintf(f, "\n");
	return fclose(f) ? -errno : 0;
}

/* "key=value,key=value" */
static int parse_config(struct simaccel *s, const char *config)
{
	char buf[1024], *save = NULL, *item;

	if (strlen(config) >= sizeof(buf))
		return -E2BIG;
	strcpy(buf, config);
	for (item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '=');

		if (!eq)
			return -EINVAL;
		*eq++ = '\0';
		if (!strcmp(item, "kernels"))
			s->kernels = atoi(eq);
		else if (!strcmp(item, "all_kinds"))
			s->all_kinds = atoi(eq);
		else if (!strcmp(item, "at_stop"))
			s->at_stop = atoi(eq);
		else if (!strcmp(item, "launch_after_ms"))
			s->launch_after_ms = atoi(eq);
		else if (!strcmp(item, "concurrent"))
			s->concurrent = atoi(eq);
		else if (!strcmp(item, "kinds_file")) {
			int rc = write_kinds(eq, s->kinds);

			if (rc)
				return rc;
		} else
			return -EINVAL;
	}
	return s->kernels >= 0 && s->kernels <= 5000 && s->at_stop >= 0 &&
			       s->launch_after_ms >= 0
		       ? 0
		       : -EINVAL;
}

static int simaccel_create(const struct gputrace_plugin_setup *setup, void **state)
{
	struct simaccel *s = calloc(1, sizeof(*s));
	int rc;

	if (!s)
		return -ENOMEM;
	s->api = setup->api;
	s->b = setup->builder;
	s->kinds = setup->kinds;
	s->kernels = 3;
	s->host_tid = (int32_t)getpid(); /* create runs on the main thread */
	rc = parse_config(s, setup->config);
	if (rc) {
		free(s);
		return rc;
	}
	s->device = s->api->device(s->b, "SimAccel 0");
	s->compute = s->api->queue(s->b, s->device, "compute", 0);
	s->copy = s->api->queue(s->b, s->device, "copy", 1);
	if (s->concurrent)
		s->conc = s->api->queue(s->b, s->device, "concurrent", 2);
	if (s->device < 0 || s->compute < 0 || s->copy < 0 || s->conc < 0) {
		free(s);
		return -EIO;
	}
	*state = s;
	return 0;
}

static void span(struct simaccel *s, uint32_t kind, int32_t row, const char *name,
		 uint64_t start, uint64_t dur, uint64_t corr, const struct gputrace_arg *args,
		 uint32_t nargs)
{
	struct gputrace_event ev;

	if (!enabled(s, kind))
		return;
	GPUTRACE_INIT(ev);
	ev.kind = kind;
	ev.row = row;
	ev.tid = row == GPUTRACE_ROW_HOST ? s->host_tid : 0;
	ev.name = name;
	ev.start_ns = s->base + start;
	ev.end_ns = s->base + start + dur;
	ev.correlation = corr;
	ev.args = args;
	ev.nargs = nargs;
	s->api->span(s->b, &ev);
}

#define HOST_SPANS   1
#define DEVICE_SPANS 2

/* Kernel i's launch and copy: their host spans, their device spans, or both. */
static void kernel_spans(struct simaccel *s, int i, int which)
{
	char name[32];
	uint64_t at = (uint64_t)i * MS;
	struct gputrace_arg kargs[3], cargs[2];

	snprintf(name, sizeof(name), "sim_kernel_%d", i);
	kargs[0] = gputrace_arg_str("kernel", name);
	if (which & HOST_SPANS)
		span(s, GPUTRACE_KIND_RUNTIME, GPUTRACE_ROW_HOST, "simLaunchKernel", at, 20 * US,
		     1 + (uint64_t)i, kargs, 1);
	kargs[0] = gputrace_arg_u64("grid", 64 * (uint64_t)(i + 1));
	kargs[1] = gputrace_arg_u64("block", 256);
	kargs[2] = gputrace_arg_hex("stream", 0xc0ffee);
	if (which & DEVICE_SPANS)
		span(s, GPUTRACE_KIND_KERNEL, s->compute, name, at + 50 * US,
		     (100 + 10 * (uint64_t)i) * US, 1 + (uint64_t)i, kargs, 3);

	if (which & HOST_SPANS)
		span(s, GPUTRACE_KIND_RUNTIME, GPUTRACE_ROW_HOST, "simMemcpyAsync", at + 200 * US,
		     10 * US, 101 + (uint64_t)i, NULL, 0);
	cargs[0] = gputrace_arg_str("kind", "HtoD");
	cargs[1] = gputrace_arg_u64("bytes", 4096 * (uint64_t)(i + 1));
	if (which & DEVICE_SPANS)
		span(s, GPUTRACE_KIND_MEMCPY, s->copy, "Memcpy HtoD", at + 300 * US, 40 * US,
		     101 + (uint64_t)i, cargs, 2);
}

/* Overlapping kernels on one queue (concurrent=1): their times as reported. */
static void concurrent_spans(struct simaccel *s)
{
	static const struct {
		const char *name;
		uint64_t start, dur;
	} k[] = {
		{ "sim_first", 0, 100 * US },        { "sim_after", 100 * US, 100 * US },
		{ "sim_inside", 150 * US, 30 * US }, { "sim_zero", 170 * US, 0 },
		{ "sim_across", 190 * US, 110 * US },
	};
	unsigned i;

	for (i = 0; i < sizeof(k) / sizeof(k[0]); i++)
		span(s, GPUTRACE_KIND_KERNEL, s->conc, k[i].name,
		     (uint64_t)s->kernels * MS + k[i].start, k[i].dur, 0, NULL, 0);
}

static void *collector(void *arg)
{
	struct simaccel *s = arg;
	struct gputrace_event mark;
	int i;

	if (s->launch_after_ms) {
		struct timespec ts = { s->launch_after_ms / 1000,
				       (long)(s->launch_after_ms % 1000) * 1000000L };

		unsigned seen;

		for (i = 0; i < s->kernels; i++)
			kernel_spans(s, i, DEVICE_SPANS);
		seen = atomic_load(&s->flushes);
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
		while (atomic_load(&s->flushes) - seen < 3 && !atomic_load(&s->stopping)) {
			struct timespec ms = { 0, 1000000L };

			nanosleep(&ms, NULL);
		}
		for (i = 0; i < s->kernels; i++)
			kernel_spans(s, i, HOST_SPANS);
	} else {
		for (i = 0; i < s->kernels; i++)
			kernel_spans(s, i, HOST_SPANS | DEVICE_SPANS);
	}
	if (s->concurrent)
		concurrent_spans(s);
	if (enabled(s, GPUTRACE_KIND_ANNOTATION)) {
		GPUTRACE_INIT(mark);
		mark.kind = GPUTRACE_KIND_ANNOTATION;
		mark.row = s->compute;
		mark.name = "sim_checkpoint";
		mark.start_ns = s->base + 5 * US;
		s->api->instant(s->b, &mark);
	}
	return NULL;
}

static int simaccel_start(void *state)
{
	struct simaccel *s = state;

	s->base = s->api->now_ns();
	if (pthread_create(&s->collector, NULL, collector, s))
		return -EAGAIN;
	s->collector_running = 1;
	return 0;
}

static void *last_records(void *arg)
{
	struct simaccel *s = arg;
	struct gputrace_event ev;
	int i;

	for (i = 0; i < s->at_stop; i++) {
		GPUTRACE_INIT(ev);
		ev.kind = GPUTRACE_KIND_RUNTIME;
		ev.row = GPUTRACE_ROW_HOST;
		ev.tid = s->host_tid;
		ev.name = "simLastRecord";
		ev.start_ns = s->api->now_ns();
		ev.end_ns = s->api->now_ns();
		if (s->api->span(s->b, &ev))
			fprintf(stderr, "simaccel: simLastRecord %d refused\n", i);
	}
	return NULL;
}

static int simaccel_stop(void *state)
{
	struct simaccel *s = state;
	pthread_t t;

	atomic_store(&s->stopping, 1);
	if (s->collector_running)
		pthread_join(s->collector, NULL);
	s->collector_running = 0;
	if (s->at_stop > 0 && !pthread_create(&t, NULL, last_records, s))
		pthread_join(t, NULL);
	return 0;
}

static void counters(struct simaccel *s)
{
	const uint64_t total = 8ull << 20;
	int i;

	for (i = 0; i < s->kernels; i++) {
		struct gputrace_counter c;
		struct gputrace_arg v[2];
		uint64_t used = (uint64_t)(i + 1) << 20;

		GPUTRACE_INIT(c);
		c.row = s->device;
		c.time_ns = s->base + (uint64_t)i * MS;
		c.name = "sim_memory";
		v[0] = gputrace_arg_u64("used_bytes", used);
		v[1] = gputrace_arg_u64("free_bytes", total - used);
		c.values = v;
		c.nvalues = 2;
		s->api->counter(s->b, &c);

		c.name = "sim_utilization";
		v[0] = gputrace_arg_f64("percent", 12.5 * (i + 1));
		c.nvalues = 1;
		s->api->counter(s->b, &c);
	}
}

static int simaccel_flush(void *state, int final)
{
	struct simaccel *s = state;

	(void)final;
	if (!s->counters_done && enabled(s, GPUTRACE_KIND_COUNTER))
		counters(s);
	s->counters_done = 1;
	atomic_fetch_add(&s->flushes, 1);
	return 0;
}

static void simaccel_destroy(void *state)
{
	free(state);
}

static const struct gputrace_plugin simaccel_plugin = {
	GPUTRACE_PLUGIN_TABLE_HEAD,
	simaccel_query,
	simaccel_create,
	simaccel_start,
	simaccel_stop,
	simaccel_flush,
	simaccel_destroy,
};

GPUTRACE_PLUGIN_EXPORT(simaccel_plugin)
