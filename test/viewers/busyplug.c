// SPDX-License-Identifier: MIT
/*
 * A busy, awkward trace for the viewer checks (test_viewers.py), recorded by
 * a plug-in so every time is chosen: GPUTRACE_PLUGIN_CONFIG "busy:N" steps,
 * each
 *  - on the host thread: a "step" annotation around 8 launches, each
 *    launch right after a "prep" call that ends exactly where it starts;
 *    launch durations 0, 1, 2 ns among them;
 *  - on "queue 0": the 8 kernels/copies/fills back to back, each starting
 *    where the previous ended, with durations 0, 0, 1, 2, 3 ns among odd
 *    ones (two zero-length spans at the same time), and a device
 *    "phase" annotation around the first seven of every other step,
 *    written before them;
 * times at odd nanoseconds far from zero, so their decimals round in every
 * way a double can. "busy:N,thread" records all of it on a thread of its own,
 * which ends before the drain reads it.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <gputrace/gputrace_plugin.h>

struct state {
	const struct gputrace_builder_api *api;
	gputrace_builder *b;
	unsigned steps;
	bool thread;
};

static int query(struct gputrace_plugin_info *info)
{
	info->name = "busy";
	info->version = "1";
	info->kinds = GPUTRACE_KIND_ALL;
	return 0;
}

static int create(const struct gputrace_plugin_setup *setup, void **out)
{
	struct state *s = calloc(1, sizeof(*s));

	if (!s)
		return -12;
	s->api = setup->api;
	s->b = setup->builder;
	s->steps = setup->config && *setup->config ? (unsigned)atoi(setup->config) : 100;
	s->thread = setup->config && strstr(setup->config, "thread");
	*out = s;
	return 0;
}

static void span(struct state *s, uint32_t kind, int32_t row, const char *name, uint64_t start,
		 uint64_t dur, uint64_t corr, const struct gputrace_arg *args, uint32_t nargs)
{
	struct gputrace_event ev;

	GPUTRACE_INIT(ev);
	ev.kind = kind;
	ev.row = row;
	ev.name = name;
	ev.start_ns = start;
	ev.end_ns = start + dur;
	ev.correlation = corr;
	ev.args = args;
	ev.nargs = nargs;
	s->api->span(s->b, &ev);
}

static const uint64_t host_dur[8] = { 731, 0, 1209, 1, 2, 3313, 517, 2 };
static const uint64_t dev_dur[8] = { 2777, 0, 0, 1, 2, 3, 123457, 999 };

static void *record_steps(void *p)
{
	struct state *s = p;
	int32_t dev = s->api->device(s->b, "BusyDev 0");
	int32_t queue = s->api->queue(s->b, dev, "queue 0", 0);
	uint64_t t = s->api->now_ns() | 1, d = t + 100001;
	struct gputrace_arg copy[2] = { gputrace_arg_str("kind", "HtoD"),
					gputrace_arg_u64("bytes", 4096) };
	struct gputrace_arg fill = gputrace_arg_u64("bytes", 512);

	for (unsigned i = 0; i < s->steps; i++) {
		uint64_t step = t, phase = d;

		t += 17;
		/* around the first seven device spans, written before them */
		if (i % 2) {
			uint64_t len = 0;

			for (unsigned j = 0; j < 7; j++)
				len += dev_dur[j];
			len += 1000; /* and on, past the seventh */
			span(s, GPUTRACE_KIND_ANNOTATION, queue, "phase", phase, len, 0, NULL, 0);
		}
		for (unsigned j = 0; j < 8; j++) {
			uint64_t corr = (uint64_t)i * 8 + j + 1;

			span(s, GPUTRACE_KIND_RUNTIME, GPUTRACE_ROW_HOST, "busyPrep", t, 333, 0, NULL, 0);
			t += 333;
			span(s, GPUTRACE_KIND_RUNTIME, GPUTRACE_ROW_HOST, "busyLaunch", t, host_dur[j],
			     corr, NULL, 0);
			t += host_dur[j];
			if (j % 4 == 1)
				span(s, GPUTRACE_KIND_MEMCPY, queue, "Memcpy HtoD", d, dev_dur[j], corr,
				     copy, 2);
			else if (j % 4 == 2)
				span(s, GPUTRACE_KIND_MEMSET, queue, "Memset", d, dev_dur[j], corr, &fill, 1);
			else
				span(s, GPUTRACE_KIND_KERNEL, queue, "busy_kernel", d, dev_dur[j], corr,
				     NULL, 0);
			d += dev_dur[j];
			if (j == 6 && i % 2)
				d += 1000;
		}
		t += 29;
		span(s, GPUTRACE_KIND_ANNOTATION, GPUTRACE_ROW_HOST, "step", step, t - step, 0, NULL, 0);
		t += 1001;
	}
	return NULL;
}

static int start(void *p)
{
	struct state *s = p;
	pthread_t th;

	if (!s->thread) {
		record_steps(s);
		return 0;
	}
	if (pthread_create(&th, NULL, record_steps, s))
		return -1;
	pthread_join(th, NULL);
	return 0;
}

static void destroy(void *p)
{
	free(p);
}

static const struct gputrace_plugin me = { GPUTRACE_PLUGIN_TABLE_HEAD, query, create, start,
					   NULL, NULL, destroy };
GPUTRACE_PLUGIN_EXPORT(me)
