/* SPDX-License-Identifier: MIT */
/*
 * The whole path inside one process: threads emit through gt_emit, the
 * drain thread writes JSON, and the file is read back with json-c: exact
 * counts, names, args, per-thread order, flows, rows, counters and the
 * lost-event accounting.
 */
#define _GNU_SOURCE
#include <json-c/json.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "inject/config.h"
#include "inject/clock.h"
#include "inject/event.h"
#include "inject/pages.h"
#include "inject/ring.h"
#include "inject/shim.h"
#include "unit.h"
#include "writer/internal.h"
#include "writer/writer.h"

void gt_test_start(char *const *envp);
int gt_flight_dump(const char *reason);

static char trace_path[256];

static void start_env(const char *buffer_kb, const char *ext, char *extra)
{
	static char out[300], buf[64];
	char *env[] = { out, "GPUTRACE_SUMMARY=0", buf, extra, NULL };

	snprintf(trace_path, sizeof(trace_path), "/tmp/gputrace-unit-%d%s", getpid(), ext);
	unlink(trace_path);
	snprintf(out, sizeof(out), "GPUTRACE_OUTPUT=%s", trace_path);
	snprintf(buf, sizeof(buf), "GPUTRACE_BUFFER_KB=%s", buffer_kb);
	gt_test_start(env);
}

static void start_ext(const char *buffer_kb, const char *ext)
{
	start_env(buffer_kb, ext, NULL);
}

static void start(const char *buffer_kb)
{
	start_ext(buffer_kb, ".json");
}

/* The whole file through zlib's reader, which takes gzip members in series. */
static struct json_object *load_gz(const char *path)
{
	gzFile f = gzopen(path, "rb");
	static char data[64 << 20];
	int n, len = 0;

	ck_assert_ptr_nonnull(f);
	while ((n = gzread(f, data + len, (unsigned)(sizeof(data) - 1 - len))) > 0)
		len += n;
	gzclose(f);
	data[len] = 0;
	return json_tokener_parse(data);
}

static struct json_object *finish_and_load(void)
{
	struct json_object *root;

	gt_finish("exit", 10000);
	root = strstr(trace_path, ".gz") ? load_gz(trace_path) : json_object_from_file(trace_path);
	ck_assert_msg(root != NULL, "trace %s does not parse", trace_path);
	unlink(trace_path);
	return root;
}

static struct json_object *get(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	ck_assert_msg(json_object_object_get_ex(o, key, &v), "no key %s", key);
	return v;
}

static const char *str(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : "";
}

/* How many of the events have key equal to value. */
static int count_events(struct json_object *evs, const char *key, const char *value)
{
	int n = 0;

	for (size_t i = 0; i < json_object_array_length(evs); i++)
		n += !strcmp(str(json_object_array_get_idx(evs, i), key), value);
	return n;
}

#define THREADS 4
#define PER_THREAD 20000

static uint32_t names[8], cat;

static void *emit_many(void *arg)
{
	uint64_t last = 0;

	for (int i = 0; i < PER_THREAD; i++) {
		uint64_t t0 = gt_clock_ns();
		struct gt_event ev = { .start_ns = t0, .end_ns = t0 + 100, .corr = gt_corr_next(),
				       .name = names[i % 8], .cat = cat, .type = GT_EV_HOST_SPAN };
		struct gt_arg args[6] = {
			{ GT_S_ARG_RESULT, GT_ARG_I64, { .i = -i } },
			{ GT_S_ARG_BYTES, GT_ARG_U64, { .u = (uint64_t)i * 1000 } },
			{ GT_S_ARG_KERNEL, GT_ARG_STR, { .u = names[(i + 1) % 8] } },
			{ GT_S_ARG_QUEUE, GT_ARG_HEX, { .u = 0xabcdef } },
			{ GT_S_ARG_DEVICE, GT_ARG_F64, { .f = 0.5 } },
			{ GT_S_ARG_STREAM, GT_ARG_U64, { .u = (uint64_t)i } },
		};
		ck_assert_uint_gt(ev.corr, last);
		last = ev.corr;
		ck_assert_int_eq(gt_emit(&ev, args, 6), 0);
	}
	return NULL;
}

/* A dump being written is valid but not complete: wait for its end. */
static struct json_object *load_dump(const char *path)
{
	struct json_object *root = NULL, *g, *c;

	for (int i = 0; i < 1000; i++, usleep(5000)) {
		if (root)
			json_object_put(root);
		root = access(path, F_OK) ? NULL : json_object_from_file(path);
		if (root && json_object_object_get_ex(root, "gputrace", &g) &&
		    json_object_object_get_ex(g, "complete", &c) && json_object_get_boolean(c))
			return root;
	}
	ck_abort_msg("no complete dump in %s", path);
	return NULL;
}

static void emit_spans(int n)
{
	for (int i = 0; i < n; i++) {
		uint64_t t0 = gt_clock_ns();
		struct gt_event ev = { .start_ns = t0, .end_ns = t0 + 100, .name = names[0],
				       .cat = cat, .type = GT_EV_HOST_SPAN };

		ck_assert_int_eq(gt_emit(&ev, NULL, 0), 0);
	}
}

/* A big dump is slow, not stuck: a sync made while the drain writes one (a fatal
 * signal's, waiting for its last cycle) is not given up on. flight__dump, parsing
 * every event of the window, said no progress: a SIGINT while a drain behind a
 * program calling flat out wrote a 200k-event dump waited 3 s, gave up, and the
 * process died with no dump of its own ("the last drain made no progress").
 * Counted, not timed: the drain's progress (what a sync's timeout counts from)
 * moves at least once every 512 KiB of the dump parsed. Timed with a 100 ms
 * timeout, a loaded ThreadSanitizer run stalled longer than that for reasons
 * of its own. */
START_TEST(test_flight_dump_is_progress)
{
	static char out[300];
	char *env[] = { out, "GPUTRACE_SUMMARY=0", "GPUTRACE_FLIGHT_RECORDER=64MB", NULL };
	struct stat st;

	snprintf(trace_path, sizeof(trace_path), "/tmp/gputrace-unit-frp-%d.json", getpid());
	unlink(trace_path);
	snprintf(out, sizeof(out), "GPUTRACE_OUTPUT=%s", trace_path);
	gt_test_start(env);
	names[0] = gt_str_intern("flightSpan");
	cat = gt_str_intern("test");
	for (int i = 0; i < 300; i++) {
		emit_spans(1000);
		ck_assert_int_eq(writer__sync(false, 10000), 0);
	}
	uint64_t before = atomic_load(&W.progress);

	ck_assert_int_eq(gt_flight_dump("request"), 0);
	ck_assert_int_eq(writer__sync(false, 10000), 0);
	uint64_t ticks = atomic_load(&W.progress) - before;

	json_object_put(load_dump(trace_path));
	ck_assert_int_eq(stat(trace_path, &st), 0);
	ck_assert_int_gt(st.st_size, 16 << 20); /* 300k events */
	ck_assert_msg(ticks >= (uint64_t)st.st_size / (512 << 10),
		      "the drain's progress moved %llu times while it wrote a %lld-byte dump",
		      (unsigned long long)ticks, (long long)st.st_size);
	unlink(trace_path);
	gt_finish("exit", 10000);
}
END_TEST

/* A dump on request (what the capture trigger calls): the drain thread writes the
 * window to a file of its own, the recorder goes on; a second dump takes the next
 * name; a clean exit writes nothing more. */
START_TEST(test_flight_dump_on_request)
{
	static char out[300];
	char *env[] = { out, "GPUTRACE_SUMMARY=0", "GPUTRACE_FLIGHT_RECORDER=64MB", NULL };
	char second[300];
	struct json_object *root, *fr;

	snprintf(trace_path, sizeof(trace_path), "/tmp/gputrace-unit-fr-%d.json", getpid());
	snprintf(second, sizeof(second), "/tmp/gputrace-unit-fr-%d.1.json", getpid());
	unlink(trace_path);
	unlink(second);
	snprintf(out, sizeof(out), "GPUTRACE_OUTPUT=%s", trace_path);
	gt_test_start(env);
	names[0] = gt_str_intern("flightSpan");
	cat = gt_str_intern("test");
	emit_spans(1000);
	ck_assert_int_eq(gt_flight_dump("request"), 0);
	root = load_dump(trace_path);
	fr = get(get(root, "gputrace"), "flight_recorder");
	ck_assert_str_eq(str(fr, "reason"), "request");
	ck_assert_int_eq(json_object_get_int(get(fr, "events_kept")), 1000);
	ck_assert_int_eq(json_object_get_int(get(fr, "events_aged_out")), 0);
	json_object_put(root);
	emit_spans(10);
	ck_assert_int_eq(gt_flight_dump("request"), 0);
	root = load_dump(second);
	fr = get(get(root, "gputrace"), "flight_recorder");
	ck_assert_int_eq(json_object_get_int(get(fr, "events_kept")), 1010);
	ck_assert_int_eq(json_object_get_int(get(fr, "dump")), 2);
	json_object_put(root);
	unlink(second);
	gt_finish("exit", 10000); /* status 0: no third file */
	snprintf(second, sizeof(second), "/tmp/gputrace-unit-fr-%d.2.json", getpid());
	ck_assert_msg(access(second, F_OK), "a clean exit wrote %s", second);
	unlink(trace_path);
}
END_TEST

START_TEST(test_threads_exact_counts)
{
	pthread_t th[THREADS];
	char name[32];

	start("4096");
	cat = gt_str_intern("test_api");
	for (int i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "call_%d \"quoted\"", i);
		names[i] = gt_str_intern(name);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, emit_many, NULL);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);

	struct json_object *root = finish_and_load(), *evs = get(root, "traceEvents");
	size_t n = json_object_array_length(evs);
	int spans = 0, per_name[8] = { 0 };
	struct {
		int tid, count;
		double last_ts;
	} tids[THREADS] = { 0 };

	for (size_t i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(evs, i);

		if (strcmp(str(e, "ph"), "X"))
			continue;
		spans++;
		ck_assert_str_eq(str(e, "cat"), "test_api");
		int k = atoi(str(e, "name") + 5);
		ck_assert_int_lt(k, 8);
		per_name[k]++;
		struct json_object *a = get(e, "args");
		ck_assert_int_le(json_object_get_int64(get(a, "result")), 0);
		ck_assert_str_eq(str(a, "queue"), "0xabcdef");
		ck_assert(json_object_get_double(get(a, "device")) == 0.5);
		ck_assert_int_gt(json_object_get_int64(get(a, "correlation")), 0);
		ck_assert(!strncmp(str(a, "kernel"), "call_", 5));
		ck_assert(strstr(str(a, "kernel"), " \"quoted\"") != NULL);
		/* per thread, in emission order */
		int tid = json_object_get_int(get(e, "tid")), t;
		for (t = 0; t < THREADS && tids[t].tid && tids[t].tid != tid; t++)
			;
		ck_assert_int_lt(t, THREADS);
		tids[t].tid = tid;
		double ts = json_object_get_double(get(e, "ts"));
		ck_assert(ts >= tids[t].last_ts);
		tids[t].last_ts = ts;
		ck_assert_int_eq(json_object_get_int64(get(a, "stream")), tids[t].count);
		tids[t].count++;
	}
	ck_assert_int_eq(spans, THREADS * PER_THREAD);
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(per_name[i], THREADS * PER_THREAD / 8);
	for (int t = 0; t < THREADS; t++)
		ck_assert_int_eq(tids[t].count, PER_THREAD);

	struct json_object *meta = get(root, "gputrace");
	ck_assert_int_eq(json_object_get_int64(get(meta, "events_recorded")), THREADS * PER_THREAD);
	ck_assert_int_eq(json_object_get_int64(get(meta, "events_lost")), 0);
	ck_assert(json_object_get_boolean(get(meta, "complete")));
	ck_assert_str_eq(str(meta, "clock"), "CLOCK_MONOTONIC_RAW");
	ck_assert_int_eq(json_object_array_length(get(meta, "threads")), THREADS);
	json_object_put(root);
}
END_TEST

START_TEST(test_lost_events_exact)
{
	/* 4 KB = 64 slots; 200k events from one thread outrun the drain */
	const int produced = 200000;
	int refused = 0;

	start("4");
	gt_cfg.overflow_mb = 0; /* a full ring drops: what this counts */
	cat = gt_str_intern("test_api");
	for (int i = 0; i < produced; i++) {
		struct gt_event ev = { .start_ns = gt_clock_ns(), .end_ns = gt_clock_ns(),
				       .name = cat, .cat = cat, .type = GT_EV_HOST_SPAN };
		if (gt_emit(&ev, NULL, 0))
			refused++;
	}
	struct json_object *root = finish_and_load(), *evs = get(root, "traceEvents");
	int spans = count_events(evs, "ph", "X");
	struct json_object *meta = get(root, "gputrace");
	int64_t lost = json_object_get_int64(get(meta, "events_lost"));
	struct json_object *th = json_object_array_get_idx(get(meta, "threads"), 0);

	ck_assert_int_gt(lost, 0);
	ck_assert_int_eq(lost, refused);
	ck_assert_int_eq(spans + lost, produced);
	ck_assert_int_eq(json_object_get_int64(get(meta, "events_recorded")), spans);
	ck_assert_int_eq(json_object_get_int64(get(th, "lost")), lost);
	ck_assert_int_eq(json_object_get_int64(get(th, "events")), spans);
	ck_assert_int_eq(json_object_get_int64(get(get(meta, "lost_by_reason"), "ring_full")), lost);
	json_object_put(root);
}
END_TEST

/* The same flood at default settings: the 64-slot ring overflows (inject/ring_overflow.c)
 * and every event reaches the file, in the order it was made, none lost. */
START_TEST(test_overflow_events_exact)
{
	const int produced = 200000;
	uint64_t prev = 0;
	int spans = 0, back = 0;

	start("4");
	cat = gt_str_intern("test_api");
	for (int i = 0; i < produced; i++) {
		struct gt_event ev = { .start_ns = (uint64_t)i + 1, .end_ns = (uint64_t)i + 1,
				       .name = cat, .cat = cat, .type = GT_EV_HOST_SPAN };
		ck_assert_int_eq(gt_emit(&ev, NULL, 0), 0);
	}
	struct json_object *root = finish_and_load(), *evs = get(root, "traceEvents");

	for (size_t i = 0; i < json_object_array_length(evs); i++) {
		struct json_object *e = json_object_array_get_idx(evs, i);
		if (strcmp(str(e, "ph"), "X"))
			continue;
		uint64_t ts = (uint64_t)(json_object_get_double(get(e, "ts")) * 1000 + 0.5);
		back += ts < prev;
		prev = ts;
		spans++;
	}
	struct json_object *meta = get(root, "gputrace");
	ck_assert_int_eq(spans, produced);
	ck_assert_int_eq(back, 0);
	ck_assert_int_eq(json_object_get_int64(get(meta, "events_lost")), 0);
	ck_assert_int_gt(json_object_get_int64(get(get(meta, "overflow"), "segments")), 0);
	json_object_put(root);
}
END_TEST

START_TEST(test_device_rows_flows_counters)
{
	start("4096");
	uint32_t dev = gt_device_row("GPU 0: unit device");
	uint32_t q0 = gt_queue_row(dev, "queue 0", 0), q1 = gt_queue_row(dev, "queue 1", 1);
	uint32_t launch = gt_str_intern("launch"), kern = gt_str_intern("my_kernel");
	uint64_t t = gt_clock_ns();

	ck_assert_uint_eq(gt_queue_row(dev, "queue 0", 0), q0);
	for (int i = 0; i < 10; i++) {
		uint64_t corr = gt_corr_next();
		struct gt_event host = { .start_ns = t + i * 1000, .end_ns = t + i * 1000 + 500,
					 .corr = corr, .name = launch, .cat = GT_S_CAT_ZE_API,
					 .type = GT_EV_HOST_SPAN, .flags = GT_EVF_LAUNCH };
		struct gt_event devev = { .start_ns = t + i * 1000 + 600,
					  .end_ns = t + i * 1000 + 900, .corr = corr, .name = kern,
					  .cat = GT_S_CAT_KERNEL, .track = i % 2 ? q1 : q0,
					  .type = GT_EV_DEVICE_SPAN };
		/* the device event is emitted first on purpose: the writer must
		 * still put the host slice before the arrow */
		ck_assert_int_eq(gt_emit(&devev, NULL, 0), 0);
		if (i == 0)
			gt_flush_sync(5000); /* ...even when a drain cycle falls between */
		ck_assert_int_eq(gt_emit(&host, NULL, 0), 0);
	}
	struct gt_arg mem = { gt_str_intern("bytes_in_use"), GT_ARG_U64, { .u = 4096 } };
	struct gt_event ctr = { .start_ns = t, .end_ns = t, .name = gt_str_intern("device memory"),
				.cat = GT_S_CAT_COUNTER, .track = gt_device_track(dev),
				.type = GT_EV_COUNTER };
	ck_assert_int_eq(gt_emit(&ctr, &mem, 1), 0);

	struct json_object *root = finish_and_load(), *evs = get(root, "traceEvents");
	int kernels = 0, starts = 0, finishes = 0, counters = 0, host_seen = 0, names = 0;
	int64_t dev_pid = -1;

	for (size_t i = 0; i < json_object_array_length(evs); i++) {
		struct json_object *e = json_object_array_get_idx(evs, i);
		const char *ph = str(e, "ph");

		if (!strcmp(ph, "X") && !strcmp(str(e, "cat"), "ze_api")) {
			host_seen++;
		} else if (!strcmp(ph, "X") && !strcmp(str(e, "cat"), "kernel")) {
			kernels++;
			dev_pid = json_object_get_int64(get(e, "pid"));
			ck_assert_int_ne(dev_pid, getpid());
		} else if (!strcmp(ph, "s")) {
			starts++;
			ck_assert_str_eq(str(e, "cat"), "ac2g");
			ck_assert_int_eq(json_object_get_int64(get(e, "pid")), getpid());
			/* written after its host slice */
			ck_assert_int_ge(host_seen, starts);
		} else if (!strcmp(ph, "f")) {
			finishes++;
			ck_assert_str_eq(str(e, "bp"), "e");
			ck_assert_int_eq(json_object_get_int64(get(e, "pid")), dev_pid);
		} else if (!strcmp(ph, "C")) {
			counters++;
			ck_assert_str_eq(str(e, "name"), "device memory");
			ck_assert_int_eq(json_object_get_int64(get(get(e, "args"), "bytes_in_use")),
					 4096);
		} else if (!strcmp(ph, "M") && !strcmp(str(e, "name"), "thread_name") &&
			   json_object_get_int64(get(e, "pid")) != getpid()) {
			names++;
		}
	}
	ck_assert_int_eq(kernels, 10);
	ck_assert_int_eq(starts, 10);
	ck_assert_int_eq(finishes, 10);
	ck_assert_int_eq(counters, 1);
	ck_assert_int_eq(names, 2);
	json_object_put(root);
}
END_TEST

/* Launches [from, to) of a run 100 ns apart from t, ids in a row (synced every
 * sync_every when not 0): the first and last ids. */
static void emit_launches(uint64_t t, int from, int to, int sync_every, uint64_t *first,
			  uint64_t *last)
{
	uint32_t name = gt_str_intern("launch");

	for (int i = from; i < to; i++) {
		struct gt_event host = { .start_ns = t + i * 100ull, .end_ns = t + i * 100ull + 50,
					 .corr = gt_corr_next(), .name = name,
					 .cat = GT_S_CAT_ZE_API, .type = GT_EV_HOST_SPAN,
					 .flags = GT_EVF_LAUNCH };

		if (i == from)
			*first = host.corr;
		*last = host.corr;
		ck_assert_int_eq(gt_emit(&host, NULL, 0), 0);
		if (sync_every && i % sync_every == 0)
			gt_flush_sync(5000);
	}
}

/* A regular list replayed after 131071 other launches: its append's arrow is still drawn
 * (the table of launches holds the last 2^17 correlation ids; a hash of them lost one
 * entry in three by then). */
START_TEST(test_arrow_from_a_launch_131071_launches_back)
{
	start("65536");
	uint32_t dev = gt_device_row("GPU 0: unit device");
	uint32_t q = gt_queue_row(dev, "queue 0", 0);
	uint32_t kern = gt_str_intern("my_kernel");
	uint64_t t = gt_clock_ns(), append, run;

	emit_launches(t, 0, 131072, 16384, &append, &run);
	ck_assert_uint_eq(run - append, 131071);
	struct gt_event work = { .start_ns = t + 131072 * 100ull + 10,
				 .end_ns = t + 131072 * 100ull + 20, .corr = run, .corr2 = append,
				 .name = kern, .cat = GT_S_CAT_KERNEL, .track = q,
				 .type = GT_EV_DEVICE_SPAN };
	ck_assert_int_eq(gt_emit(&work, NULL, 0), 0);

	struct json_object *root = finish_and_load(), *evs = get(root, "traceEvents");
	int kernels = 0, finishes = 0;
	int64_t from_append = -1, from_run = -1;
	double append_ts = -1, run_ts = -1;

	for (size_t i = 0; i < json_object_array_length(evs); i++) {
		struct json_object *e = json_object_array_get_idx(evs, i), *a;
		const char *ph = str(e, "ph");

		if (!strcmp(ph, "X") && !strcmp(str(e, "cat"), "kernel")) {
			kernels++;
		} else if (!strcmp(ph, "f")) {
			finishes++;
		} else if (!strcmp(ph, "X") && json_object_object_get_ex(e, "args", &a)) {
			uint64_t c = (uint64_t)json_object_get_int64(get(a, "correlation"));

			if (c == append)
				append_ts = json_object_get_double(get(e, "ts"));
			if (c == run)
				run_ts = json_object_get_double(get(e, "ts"));
		}
	}
	/* each arrow starts inside its own launch */
	for (size_t i = 0; i < json_object_array_length(evs); i++) {
		struct json_object *e = json_object_array_get_idx(evs, i);
		double ts;

		if (strcmp(str(e, "ph"), "s"))
			continue;
		ts = json_object_get_double(get(e, "ts"));
		if (ts >= append_ts && ts <= append_ts + 0.05)
			from_append = json_object_get_int64(get(e, "id"));
		if (ts >= run_ts && ts <= run_ts + 0.05)
			from_run = json_object_get_int64(get(e, "id"));
	}
	ck_assert_int_eq(kernels, 1);
	ck_assert_int_eq(finishes, 2);
	ck_assert_int_ge(from_append, 1);
	ck_assert_int_ge(from_run, 1);
	ck_assert_int_ne(from_append, from_run);
	json_object_put(root);
}
END_TEST

/* The launch table starts small and doubles, in place, when a launch would take another's
 * slot: a few launches keep 1024 slots (40 KiB, not 5 MiB), 3000 in a row take 4096, and
 * a launch moved by the doubling still gets its arrow. */
START_TEST(test_launch_table_grows_with_its_launches)
{
	start("65536");
	uint32_t dev = gt_device_row("GPU 0: unit device");
	uint32_t q = gt_queue_row(dev, "queue 0", 0);
	uint32_t kern = gt_str_intern("my_kernel");
	uint64_t t = gt_clock_ns(), first, last, ten;

	emit_launches(t, 0, 10, 0, &first, &last);
	gt_flush_sync(5000);
	ck_assert(W.corr_made);
	ck_assert_uint_eq(W.corr_mask + 1, 1u << CORR_FIRST_BITS);
	emit_launches(t, 10, 3000, 0, &ten, &last);
	gt_flush_sync(5000);
	ck_assert_uint_eq(last - first, 2999);
	ck_assert_uint_eq(W.corr_mask + 1, 4096);
	for (int i = 0; i < 2; i++) {
		struct gt_event work = { .start_ns = t + 300000ull + i * 100, .end_ns = t + 300000ull + i * 100 + 10,
					 .corr = i ? last : first, .name = kern, .cat = GT_S_CAT_KERNEL,
					 .track = q, .type = GT_EV_DEVICE_SPAN };

		ck_assert_int_eq(gt_emit(&work, NULL, 0), 0);
	}

	struct json_object *root = finish_and_load(), *evs = get(root, "traceEvents");
	int kernels = 0, finishes = 0, starts = 0;

	for (size_t i = 0; i < json_object_array_length(evs); i++) {
		struct json_object *e = json_object_array_get_idx(evs, i);
		const char *ph = str(e, "ph");

		if (!strcmp(ph, "X") && !strcmp(str(e, "cat"), "kernel"))
			kernels++;
		finishes += !strcmp(ph, "f");
		starts += !strcmp(ph, "s");
	}
	ck_assert_int_eq(kernels, 2);
	ck_assert_int_eq(finishes, 2);
	ck_assert_int_eq(starts, 2);
	json_object_put(root);
}
END_TEST

/* Device times of one run of kernels, relative to t0: fifteen that take no time on one
 * tick, one from that tick to the next, three on the next (a device tick of 52 ns). */
#define RUN_KERNELS 19

static uint64_t run_kernel_start(int i)
{
	return i < 16 ? 0 : 52;
}

static uint64_t run_kernel_end(int i)
{
	return i < 15 ? 0 : 52;
}

/* Each kernel of the run with corr first..., its slice's ts and dur in the file (us). */
static void run_slices(struct json_object *evs, uint64_t first, double *ts, double *dur)
{
	int found = 0;

	for (size_t i = 0; i < json_object_array_length(evs); i++) {
		struct json_object *e = json_object_array_get_idx(evs, i);
		int64_t k;

		if (strcmp(str(e, "ph"), "X") || strcmp(str(e, "cat"), "kernel"))
			continue;
		k = json_object_get_int64(get(get(e, "args"), "correlation")) - (int64_t)first;
		if (k < 0 || k >= RUN_KERNELS)
			continue;
		ts[k] = json_object_get_double(get(e, "ts"));
		dur[k] = json_object_get_double(get(e, "dur"));
		found++;
	}
	ck_assert_int_eq(found, RUN_KERNELS);
}

/* A run of kernels read late, written after a later run on its row (two threads' runs,
 * or a wait's reads and the drain thread's): drawn as it is drawn in order, each kernel
 * after the one launched before it, none around another (a CI failure under ASan: the
 * longer kernel was drawn from the tick's start, around the zero-length ones moved 1 ns
 * off it). */
START_TEST(test_a_run_written_late_is_drawn_as_in_order)
{
	start("4096");
	uint32_t dev = gt_device_row("GPU 0: unit device");
	uint32_t q = gt_queue_row(dev, "queue 0", 0);
	uint32_t launch = gt_str_intern("launch"), kern = gt_str_intern("my_kernel");
	uint64_t t = gt_clock_ns(), first[2];
	double ts[2][RUN_KERNELS], dur[2][RUN_KERNELS];

	for (int run = 0; run < 2; run++)
		for (int i = 0; i < RUN_KERNELS; i++) {
			struct gt_event host = { .start_ns = t + (run * RUN_KERNELS + i) * 100ull,
						 .end_ns = t + (run * RUN_KERNELS + i) * 100ull + 50,
						 .corr = gt_corr_next(), .name = launch,
						 .cat = GT_S_CAT_ZE_API, .type = GT_EV_HOST_SPAN,
						 .flags = GT_EVF_LAUNCH };

			if (i == 0)
				first[run] = host.corr;
			ck_assert_int_eq(gt_emit(&host, NULL, 0), 0);
		}
	gt_flush_sync(5000);
	/* the later run (1) first */
	for (int run = 1; run >= 0; run--) {
		uint64_t t0 = t + 100000 + run * 100000ull;

		for (int i = 0; i < RUN_KERNELS; i++) {
			struct gt_event work = { .start_ns = t0 + run_kernel_start(i),
						 .end_ns = t0 + run_kernel_end(i),
						 .corr = first[run] + i, .name = kern,
						 .cat = GT_S_CAT_KERNEL, .track = q,
						 .type = GT_EV_DEVICE_SPAN };

			ck_assert_int_eq(gt_emit(&work, NULL, 0), 0);
		}
		gt_flush_sync(5000);
	}

	struct json_object *root = finish_and_load(), *evs = get(root, "traceEvents");

	run_slices(evs, first[0], ts[0], dur[0]);
	run_slices(evs, first[1], ts[1], dur[1]);
	for (int i = 0; i < RUN_KERNELS; i++) {
		/* placed alike, to the nanosecond */
		ck_assert_int_eq(llround((ts[0][i] - ts[0][0]) * 1000),
				 llround((ts[1][i] - ts[1][0]) * 1000));
		ck_assert_int_eq(llround(dur[0][i] * 1000), llround(dur[1][i] * 1000));
		/* as viewers add them: each ends where the next starts at the latest */
		if (i)
			ck_assert_msg(ts[0][i - 1] + dur[0][i - 1] <= ts[0][i],
				      "kernel %d: %.3f+%.3f after %.3f", i - 1, ts[0][i - 1],
				      dur[0][i - 1], ts[0][i]);
	}
	json_object_put(root);
}
END_TEST

/* Count the lines of text that start with prefix (one event a line; a hand-written scan:
 * a sanitizer checks the whole rest of the text on every strstr()). */
static size_t count_lines(const char *text, size_t len, const char *prefix)
{
	size_t n = 0, plen = strlen(prefix);

	for (const char *at = text; at < text + len; at++)
		if ((at == text || at[-1] == '\n') && !memcmp(at, prefix, plen))
			n++;
	return n;
}

/* A ring's worth of launches and their kernels, read in one cycle: every kernel and arrow
 * is written, and the writer's memory stays bounded: the JSON is written as it grows, and
 * the kernels waiting for their launches are written as they pile up (both grew with
 * the cycle before: 16 MiB of JSON buffer for 100k launches). */
START_TEST(test_a_ring_of_kernels_written_in_bounded_memory)
{
	const int launches = 40000;
	static char text[40 << 20];
	uint32_t dev, q, name, kern;
	struct ring *r;
	uint64_t t;
	size_t len;
	FILE *f;

	start_env("65536", ".json", "GPUTRACE_FLUSH_MS=60000");
	dev = gt_device_row("GPU 0: unit device");
	q = gt_queue_row(dev, "queue 0", 0);
	name = gt_str_intern("launch");
	kern = gt_str_intern("my_kernel");
	t = gt_clock_ns();
	for (int i = 0; i < launches; i++) {
		uint64_t at = t + i * 1000ull;
		struct gt_event host = { .start_ns = at, .end_ns = at + 100, .corr = gt_corr_next(),
					 .name = name, .cat = GT_S_CAT_ZE_API,
					 .type = GT_EV_HOST_SPAN, .flags = GT_EVF_LAUNCH };
		struct gt_event work = { .start_ns = at + 200, .end_ns = at + 300,
					 .corr = host.corr, .name = kern, .cat = GT_S_CAT_KERNEL,
					 .track = q, .type = GT_EV_DEVICE_SPAN };

		ck_assert_int_eq(gt_emit(&host, NULL, 0), 0);
		ck_assert_int_eq(gt_emit(&work, NULL, 0), 0);
	}
	r = shim__thread_ring();
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_ge(ring__used(r), 2 * (uint64_t)launches); /* none read yet */
	gt_finish("exit", 10000);

	ck_assert_uint_le(W.buf.cap, 4u << 20);
	/* a plain file is written from the drain's own buffer: no second one */
	ck_assert(!W.q.started);
	ck_assert_uint_eq(W.q.ev.cap, 0);
	ck_assert_uint_le(W.pend_cap, 2 * PENDING_FLUSH);

	f = fopen(trace_path, "r");
	ck_assert_ptr_nonnull(f);
	len = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	ck_assert_uint_lt(len, sizeof(text) - 1);
	text[len] = 0;
	ck_assert_uint_eq(count_lines(text, len, "{\"ph\":\"X\",\"cat\":\"kernel\""), launches);
	ck_assert_uint_eq(count_lines(text, len, "{\"ph\":\"X\",\"cat\":\"ze_api\""), launches);
	ck_assert_uint_eq(count_lines(text, len, "{\"ph\":\"s\",\"cat\":\"ac2g\""), launches);
	ck_assert_uint_eq(count_lines(text, len, "{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"ac2g\""),
			  launches);
	ck_assert_ptr_nonnull(strstr(text, "\"events_lost\":0,"));
	unlink(trace_path);
}
END_TEST

/* Spans whose args differ in one value only, in the middle (the same first key, the same
 * last value, so the same slot of the writer's kept args text): each is written with its
 * own, in the order they were made. */
START_TEST(test_args_alike_but_one_each_written_with_its_own)
{
	const int spans = 3000;
	uint32_t name, kern;

	start("4096");
	name = gt_str_intern("alike");
	kern = gt_str_intern("same_kernel");
	for (int i = 0; i < spans; i++) {
		uint64_t t0 = gt_clock_ns();
		struct gt_event ev = { .start_ns = t0, .end_ns = t0 + 100, .corr = gt_corr_next(),
				       .name = name, .cat = GT_S_CAT_ZE_API,
				       .type = GT_EV_HOST_SPAN };
		struct gt_arg args[3] = {
			{ GT_S_ARG_RESULT, GT_ARG_I64, { .i = 0 } },
			{ GT_S_ARG_BYTES, GT_ARG_U64, { .u = (uint64_t)(i % 3) * 1000 + 7 } },
			{ GT_S_ARG_KERNEL, GT_ARG_STR, { .u = kern } },
		};
		ck_assert_int_eq(gt_emit(&ev, args, 3), 0);
		if (i % 1000 == 999)
			gt_flush_sync(5000);
	}

	struct json_object *root = finish_and_load(), *evs = get(root, "traceEvents");
	int seen = 0;

	for (size_t i = 0; i < json_object_array_length(evs); i++) {
		struct json_object *e = json_object_array_get_idx(evs, i), *a;

		if (strcmp(str(e, "ph"), "X") || strcmp(str(e, "name"), "alike"))
			continue;
		a = get(e, "args");
		ck_assert_int_eq(json_object_get_int64(get(a, "bytes")), (seen % 3) * 1000 + 7);
		ck_assert_str_eq(str(a, "kernel"), "same_kernel");
		ck_assert_int_eq(json_object_get_int64(get(a, "result")), 0);
		seen++;
	}
	ck_assert_int_eq(seen, spans);
	json_object_put(root);
}
END_TEST

START_TEST(test_gzip_output_checkpointed)
{
	uint32_t name;

	start_ext("4096", ".json.gz");
	name = gt_str_intern("gz_call");
	for (int i = 0; i < 3000; i++) {
		struct gt_event ev = { .start_ns = gt_clock_ns(), .end_ns = gt_clock_ns(),
				       .name = name, .cat = GT_S_CAT_TEST, .type = GT_EV_HOST_SPAN };
		ck_assert_int_eq(gt_emit(&ev, NULL, 0), 0);
		if (i % 1000 == 999) {
			/* each checkpoint leaves a complete gzip file behind */
			gt_flush_sync(5000);
			struct json_object *mid = load_gz(trace_path);
			ck_assert_msg(mid != NULL, "checkpoint %d does not parse", i);
			json_object_put(mid);
		}
	}
	struct json_object *root = finish_and_load(), *evs = get(root, "traceEvents");
	ck_assert_int_eq(count_events(evs, "name", "gz_call"), 3000);
	ck_assert(json_object_get_boolean(get(get(root, "gputrace"), "complete")));
	json_object_put(root);
}
END_TEST

/* A .gz cycle of megabytes goes to the output thread 1 MiB at a time (it compresses
 * while the drain formats): every span is in the one gzip member, and the two
 * buffers that take turns stay bounded. */
START_TEST(test_gzip_big_cycle_on_the_output_thread)
{
	const int calls = 40000; /* ~6 MiB of JSON in one cycle */
	uint32_t name;

	start_env("65536", ".json.gz", "GPUTRACE_FLUSH_MS=60000");
	name = gt_str_intern("gz_big_call");
	for (int i = 0; i < calls; i++) {
		uint64_t at = gt_clock_ns();
		struct gt_event ev = { .start_ns = at, .end_ns = at + 100, .corr = gt_corr_next(),
				       .name = name, .cat = GT_S_CAT_TEST, .type = GT_EV_HOST_SPAN };
		ck_assert_int_eq(gt_emit(&ev, NULL, 0), 0);
	}
	struct json_object *root = finish_and_load(), *evs = get(root, "traceEvents");
	ck_assert(W.q.started);
	ck_assert_uint_gt(W.q.ev.cap, 0);
	ck_assert_uint_le(W.q.ev.cap, 4u << 20);
	ck_assert_uint_le(W.buf.cap, 4u << 20);
	ck_assert_int_eq(count_events(evs, "name", "gz_big_call"), calls);
	ck_assert_int_eq(json_object_get_int64(get(get(root, "gputrace"), "events_lost")), 0);
	json_object_put(root);
}
END_TEST

/* The exit's cycle gives a big ring's pages back as it reads them (ring__release), so
 * the kernel has them freed before the process's exit frees its memory; every event
 * is still written. */
START_TEST(test_last_cycle_gives_big_ring_back)
{
	/* 64 MiB: 1 Mi slots, over RING_RELEASE_MIN; the events stay under the
	 * high-water mark and the flush interval is long: the last cycle reads them all */
	const int produced = 200000;
	size_t page = (size_t)sysconf(_SC_PAGESIZE), pages = produced * sizeof(struct gt_event) / page;
	static unsigned char vec[(200000 * 64) / 4096 + 1];
	size_t resident = 0, spans = 0;
	struct ring *r;

	start_env("65536", ".json", "GPUTRACE_FLUSH_MS=60000");
	cat = gt_str_intern("test_api");
	emit_spans(produced);
	r = shim__thread_ring();
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_ge(r->mask + 1, RING_RELEASE_MIN);
	ck_assert_uint_eq(ring__used(r), produced);
	gt_finish("exit", 10000);

	ck_assert_int_eq(mincore(r->slots, pages * page, vec), 0);
	for (size_t i = 0; i < pages; i++)
		resident += vec[i] & 1;
	/* what is left: the slots past the last 2 MiB page's start (ring.c gives back whole
	 * 2 MiB pages only; a part of one given back could be collapsed whole again by
	 * khugepaged: 549 pages here once) */
	ck_assert_uint_le(resident, (produced - RING_POPULATE_AFTER) % (GT_HUGE_PAGE / sizeof(struct gt_event)) *
					    sizeof(struct gt_event) / page + 1);

	/* 30 MB of JSON: counted as text, the trailer parsed */
	FILE *f = fopen(trace_path, "r");
	static char text[48 << 20];
	size_t len;
	const char *at, *trailer, span[] = "{\"ph\":\"X\",\"cat\":\"test_api\"";

	ck_assert_ptr_nonnull(f);
	len = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	ck_assert_uint_lt(len, sizeof(text) - 1);
	text[len] = 0;
	/* one event a line; a hand-written scan: a sanitizer checks the whole
	 * rest of the text on every strstr() */
	for (at = text; at < text + len; at++)
		if ((at == text || at[-1] == '\n') && !memcmp(at, span, sizeof(span) - 1))
			spans++;
	ck_assert_uint_eq(spans, produced);
	trailer = strstr(text, "\n\"gputrace\":");
	ck_assert_ptr_nonnull(trailer);
	/* the trailer's object, without the file's closing brace */
	*strrchr(text, '}') = 0;
	struct json_object *meta = json_tokener_parse(trailer + strlen("\n\"gputrace\":"));

	ck_assert_ptr_nonnull(meta);
	ck_assert_int_eq(json_object_get_int64(get(meta, "events_recorded")), produced);
	ck_assert_int_eq(json_object_get_int64(get(meta, "events_lost")), 0);
	ck_assert(json_object_get_boolean(get(meta, "complete")));
	json_object_put(meta);
	unlink(trace_path);
}
END_TEST

/* Events formatted before the file exists (drained in the cycle that opens it: a
 * window's first) are placed for their offsets in it as every other is: none crosses a
 * page, which a kill that cuts the write would leave half-written (put in as they were
 * formatted, for no file, 5 of these 200 crossed one). */
START_TEST(test_events_formatted_before_the_file_are_placed_in_it)
{
	const int spans = 200;
	struct gt_arg arg = { GT_S_ARG_RESULT, GT_ARG_I64, { .i = 0 } };
	int crossing = 0, events = 0, seen = 0;
	uint32_t name;

	start("1024");
	name = gt_str_intern("before_the_file");
	/* and every tenth with a plug-in's JSON value over lines (a Kineto
	 * plug-in's pretty-printed metadata) */
	struct gt_arg json[2] = { arg, { GT_S_ARG_KERNEL, GT_ARG_JSON,
					 { .u = gt_str_intern("{\"a\": [12,\n 13]\r\n}") } } };
	ck_assert(!W.opened);
	for (int i = 0; i < spans; i++) {
		struct gt_event ev = { .start_ns = 1000000 + 1000 * (uint64_t)i,
				       .end_ns = 1000500 + 1000 * (uint64_t)i, .name = name,
				       .cat = GT_S_CAT_ZE_API, .type = GT_EV_HOST_SPAN };

		events__host(&ev, json, i % 10 ? 1 : 2, 7);
	}
	ck_assert(checkpoint__open() && W.paged);
	events__fit(); /* the last one, as a checkpoint does */
	/* every event, its ",\n" to its "}", within one page of the file */
	for (size_t at = 0, end; at < W.buf.len; at = end) {
		const char *nl = memchr(W.buf.p + at + 2, '\n', W.buf.len - at - 2);
		size_t last;

		end = nl ? (size_t)(nl - W.buf.p) - 1 : W.buf.len;
		for (last = end - 1; W.buf.p[last] == ' '; last--)
			;
		ck_assert_int_eq(W.buf.p[last], '}');
		crossing += (W.buf_at + at) / OUT_PAGE != (W.buf_at + last) / OUT_PAGE;
		events += memmem(W.buf.p + at, end - at, "before_the_file", 15) != NULL;
	}
	ck_assert_int_eq(crossing, 0);
	ck_assert_int_eq(events, spans);

	/* and the file holds them all, once each: the first recorded event starts the
	 * drain thread (the writer's state is its own from then on), the exit writes them */
	struct gt_event one = { .start_ns = gt_clock_ns(), .end_ns = gt_clock_ns() + 1,
				.name = name, .cat = GT_S_CAT_ZE_API, .type = GT_EV_HOST_SPAN };

	ck_assert_int_eq(gt_emit(&one, &arg, 1), 0);
	struct json_object *root = finish_and_load(), *evs = get(root, "traceEvents");

	for (size_t i = 0; i < json_object_array_length(evs); i++) {
		struct json_object *e = json_object_array_get_idx(evs, i), *a, *k;

		if (strcmp(str(e, "name"), "before_the_file"))
			continue;
		seen++;
		if (json_object_object_get_ex(get(e, "args"), "kernel", &k)) {
			a = get(k, "a"); /* the plug-in's value as it gave it */
			ck_assert_int_eq(json_object_array_length(a), 2);
			ck_assert_int_eq(json_object_get_int(json_object_array_get_idx(a, 1)), 13);
		}
	}
	ck_assert_int_eq(seen, spans + 1);
	json_object_put(root);
}
END_TEST

/* The span in W.buf from `from` on (after its thread's name, the first time), without
 * its ",\n", its page padding and its "ts" and "dur" numbers (which the slices' placing
 * moves), into out. */
static void event_text(size_t from, char *out, size_t cap)
{
	const char *x = memmem(W.buf.p + from, W.buf.len - from, "{\"ph\":\"X\"", 8);
	size_t n = 0, i = x ? (size_t)(x - W.buf.p) : W.buf.len;

	for (; i < W.buf.len && W.buf.p[i] != '\n' && n + 1 < cap; i++) {
		out[n++] = W.buf.p[i];
		if (n >= 5 && (!memcmp(out + n - 5, "\"ts\":", 5) ||
			       (n >= 6 && !memcmp(out + n - 6, "\"dur\":", 6))))
			while (i + 1 < W.buf.len && strchr("0123456789.", W.buf.p[i + 1]))
				i++;
	}
	while (n && (out[n - 1] == ' ' || out[n - 1] == ','))
		n--;
	out[n] = 0;
}

/* A host span the writer knows again (its head and its arg's key kept formatted: the
 * one cursor of put_span_fast) is written to the byte as the first, which the general
 * path wrote: one integer arg, of either type, with and without a correlation id. */
START_TEST(test_host_span_written_again_as_the_first)
{
	static const struct {
		uint8_t type;
		uint64_t v, corr;
		const char *text;
	} cases[] = {
		{ GT_ARG_I64, (uint64_t)-5, 0, "\"args\":{\"result\":-5}}" },
		{ GT_ARG_I64, 0, 4242, "\"args\":{\"result\":0,\"correlation\":4242}}" },
		{ GT_ARG_U64, UINT64_MAX, 99,
		  "\"args\":{\"bytes\":18446744073709551615,\"correlation\":99}}" },
	};
	uint32_t keys[] = { GT_S_ARG_RESULT, GT_S_ARG_RESULT, GT_S_ARG_BYTES };
	char first[512], again[512];

	start("1024");
	for (unsigned c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		char name[32];

		snprintf(name, sizeof(name), "again_%u", c);
		for (int i = 0; i < 4; i++) {
			struct gt_event ev = { .start_ns = 2000000 + 100000 * (uint64_t)(c * 4 + i),
					       .end_ns = 2000500 + 100000 * (uint64_t)(c * 4 + i),
					       .name = gt_str_intern(name), .corr = cases[c].corr,
					       .cat = GT_S_CAT_ZE_API, .type = GT_EV_HOST_SPAN };
			struct gt_arg arg = { keys[c], cases[c].type, { .u = cases[c].v } };
			size_t from = W.buf.len;

			events__host(&ev, &arg, 1, 7);
			event_text(from, i ? again : first, sizeof(first));
			if (i)
				ck_assert_str_eq(again, first);
		}
		ck_assert_msg(strstr(first, cases[c].text), "%s: no %s", first, cases[c].text);
		ck_assert_ptr_nonnull(strstr(first, "\"name\":\"again_"));
	}
	/* the drain thread started (the writer's state its own from then on) and the file
	 * written whole, as the exit writes it */
	struct gt_event one = { .start_ns = gt_clock_ns(), .end_ns = gt_clock_ns() + 1,
				.name = gt_str_intern("again_last"), .cat = GT_S_CAT_ZE_API,
				.type = GT_EV_HOST_SPAN };
	struct gt_arg arg = { GT_S_ARG_RESULT, GT_ARG_I64, { .i = 0 } };

	ck_assert_int_eq(gt_emit(&one, &arg, 1), 0);
	json_object_put(finish_and_load());
}
END_TEST

/* A backend caches a name's id for all threads with a relaxed atomic (ze__name, the
 * CUDA backend's name caches): a thread that finds another's id there and emits it
 * never synchronized with that thread's write of the string's entry, and the drain
 * thread reads the entry lock-free (TSan: gt_str_get's read of the entry raced with
 * intern_locked's write, ze_lists under load, 1 run in ~120). The entry must be
 * published by the registry itself, not only by the ring that carries its id. */
static _Atomic uint32_t cached_id;

static void *intern_and_cache(void *arg)
{
	atomic_store_explicit(&cached_id, gt_str_intern((const char *)arg), memory_order_relaxed);
	return NULL;
}

START_TEST(test_string_read_by_an_id_another_thread_cached)
{
	char name[64];
	pthread_t t;
	uint32_t id;
	size_t len;
	const char *s;

	snprintf(name, sizeof(name), "zeCachedName%d", getpid());
	atomic_store_explicit(&cached_id, 0, memory_order_relaxed);
	ck_assert_int_eq(pthread_create(&t, NULL, intern_and_cache, name), 0);
	/* no join, no lock between the two: the id arrives as a backend's cache hands it on */
	while (!(id = atomic_load_explicit(&cached_id, memory_order_relaxed)))
		sched_yield();
	s = gt_str_get(id, &len);
	ck_assert_str_eq(s, name);
	ck_assert_uint_eq(len, strlen(name));
	pthread_join(t, NULL);
}
END_TEST

/* Resident 4 KiB pages of [p, p + n). */
static size_t resident_pages(const void *p, size_t n)
{
	static unsigned char vec[1 << 12];
	size_t pages = (n + 4095) / 4096, in = 0;

	ck_assert_uint_le(pages, sizeof(vec));
	ck_assert_int_eq(mincore((void *)p, n, vec), 0);
	for (size_t i = 0; i < pages; i++)
		in += vec[i] & 1;
	return in;
}

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25 /* Linux 6.1 */
#endif

/* Does MADV_COLLAPSE make a 2 MiB page of a range with one 4 KiB page written (as
 * khugepaged does)? Not before Linux 6.1, nor without transparent huge pages. */
static bool collapse_works(void)
{
	char *m = mmap(NULL, 2 * GT_HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	char *p = (char *)(((uintptr_t)m + GT_HUGE_PAGE - 1) & ~(uintptr_t)(GT_HUGE_PAGE - 1));
	bool ok;

	ck_assert_ptr_ne(m, MAP_FAILED);
	madvise(p, GT_HUGE_PAGE, MADV_HUGEPAGE);
	p[0] = 1;
	ok = !madvise(p, GT_HUGE_PAGE, MADV_COLLAPSE) && resident_pages(p, GT_HUGE_PAGE) == 512;
	munmap(m, 2 * GT_HUGE_PAGE);
	if (!ok)
		fprintf(stderr, "note: no MADV_COLLAPSE here: khugepaged's refill not checked\n");
	return ok;
}

/* n kernels 1 us apart on row q from t, whose launches are never read: each waits
 * PENDING_MAX_AGE cycles, then is drawn alone */
static void emit_unlaunched_kernels(int n, uint64_t t, uint32_t q, uint32_t kern)
{
	for (int i = 0; i < n; i++) {
		struct gt_event work = { .start_ns = t + i * 1000ull, .end_ns = t + i * 1000ull + 500,
					 .corr = gt_corr_next(), .name = kern,
					 .cat = GT_S_CAT_KERNEL, .track = q,
					 .type = GT_EV_DEVICE_SPAN };

		ck_assert_int_eq(gt_emit(&work, NULL, 0), 0);
	}
}

/* A backlog of device work waiting for its launches (a drain held back) grows the
 * writer's waiting list into pages of their own; once a cycle needs few of them, they
 * go back to the system: a flight recorder's process stays flat after a busy moment,
 * and nothing waiting is lost meanwhile. */
START_TEST(test_a_backlog_gone_gives_its_waiting_lists_pages_back)
{
	const int kernels = 4000; /* one cycle's: under PENDING_FLUSH, all wait at once */
#if defined(__SANITIZE_ADDRESS__)
	const bool mapped = false; /* gt_grow keeps to malloc, where ASan sees overruns */
#else
	const bool mapped = true;
#endif
	uint32_t dev, q, kern;
	uint64_t t;
	size_t bytes;

	ck_assert_uint_gt(kernels * sizeof(struct pending), GT_GROW_BIG);
	start("4096");
	dev = gt_device_row("GPU 0: unit device");
	q = gt_queue_row(dev, "queue 0", 0);
	kern = gt_str_intern("my_kernel");
	t = gt_clock_ns();
	emit_unlaunched_kernels(kernels, t, q, kern);
	gt_flush_sync(5000);
	ck_assert_uint_eq(W.npend, kernels);
	ck_assert_uint_eq(W.pend_map > 0, mapped);
	bytes = kernels * sizeof(struct pending);
	if (mapped)
		ck_assert_uint_ge(resident_pages(W.pend, bytes), bytes / 4096);
	for (int cycle = 0; cycle < 6 && (W.npend || (mapped && resident_pages(W.pend, W.pend_map)));
	     cycle++)
		gt_flush_sync(5000);
	ck_assert_uint_eq(W.npend, 0);
	/* the whole mapping: a 2 MiB page is resident whole from its first write, past
	 * what ever waited (its tail stayed: 1584 KiB of a flight recorder's 2 MiB) */
	if (mapped)
		ck_assert_uint_eq(resident_pages(W.pend, W.pend_map), 0);

	/* A few wait again: their pages come back, and the kernel's khugepaged (which fills
	 * a 2 MiB range with one page of 512 in it: max_ptes_none 511 by default) must
	 * not make them a whole 2 MiB page again (it did within 2 s of a give back, here).
	 * MADV_COLLAPSE is its stand-in: it collapses where khugepaged may. */
	const int few = 100;

	emit_unlaunched_kernels(few, t, q, kern);
	gt_flush_sync(5000);
	ck_assert_uint_eq(W.npend, few);
	if (mapped && collapse_works())
		madvise(W.pend, W.pend_map, MADV_COLLAPSE);
	if (mapped)
		ck_assert_uint_le(resident_pages(W.pend, W.pend_map),
				  few * sizeof(struct pending) / 4096 + 2);

	struct json_object *root = finish_and_load(), *evs = get(root, "traceEvents");

	ck_assert_int_eq(count_events(evs, "name", "my_kernel"), kernels + few);
	json_object_put(root);
}
END_TEST

/* Where kernel name k is among the file's kernels (-1: not there). */
static int kernel_index(struct json_object *evs, const char *k)
{
	int n = 0;

	for (size_t i = 0; i < json_object_array_length(evs); i++) {
		struct json_object *e = json_object_array_get_idx(evs, i);

		if (strcmp(str(e, "ph"), "X") || strcmp(str(e, "cat"), "kernel"))
			continue;
		if (!strcmp(str(e, "name"), k))
			return n;
		n++;
	}
	return -1;
}

/* One cycle reads device work whose launches are already written with work that has
 * to wait for its launch, read later in the cycle: each row is written in time order.
 * On queue 0 the later kernel is read first (two threads taking turns on a stream,
 * handed over thread by thread); on queue 1 the one that waits started first. Work
 * written as soon as its launch was known (not waiting its turn with the row's other
 * work of the cycle) went out in the order read. */
START_TEST(test_ready_device_work_goes_out_in_order_with_work_that_waited)
{
	start_env("4096", ".json", "GPUTRACE_FLUSH_MS=60000");
	uint32_t dev = gt_device_row("GPU 0: unit device");
	uint32_t q[2] = { gt_queue_row(dev, "queue 0", 0), gt_queue_row(dev, "queue 1", 1) };
	uint32_t launch = gt_str_intern("launch");
	uint64_t t = gt_clock_ns(), corr[4];

	/* A, B, C written in a cycle of their own; D's launch comes after its kernel */
	for (int i = 0; i < 4; i++) {
		corr[i] = gt_corr_next();
		if (i == 3)
			break;
		struct gt_event host = { .start_ns = t + i * 100ull, .end_ns = t + i * 100ull + 50,
					 .corr = corr[i], .name = launch,
					 .cat = GT_S_CAT_ZE_API, .type = GT_EV_HOST_SPAN,
					 .flags = GT_EVF_LAUNCH };

		ck_assert_int_eq(gt_emit(&host, NULL, 0), 0);
	}
	gt_flush_sync(5000);
	/* read in this order, in one cycle: kB, kD (waits), kA, kC, then D's launch */
	static const struct {
		const char *name;
		int launch, queue;
		uint64_t start;
	} work[] = {
		{ "kB", 1, 0, 1300 }, { "kD", 3, 1, 1100 }, { "kA", 0, 0, 1200 }, { "kC", 2, 1, 1400 },
	};
	for (size_t i = 0; i < sizeof(work) / sizeof(work[0]); i++) {
		struct gt_event ev = { .start_ns = t + work[i].start, .end_ns = t + work[i].start + 50,
				       .corr = corr[work[i].launch],
				       .name = gt_str_intern(work[i].name), .cat = GT_S_CAT_KERNEL,
				       .track = q[work[i].queue], .type = GT_EV_DEVICE_SPAN };

		ck_assert_int_eq(gt_emit(&ev, NULL, 0), 0);
	}
	struct gt_event host = { .start_ns = t + 300, .end_ns = t + 350, .corr = corr[3],
				 .name = launch, .cat = GT_S_CAT_ZE_API, .type = GT_EV_HOST_SPAN,
				 .flags = GT_EVF_LAUNCH };

	ck_assert_int_eq(gt_emit(&host, NULL, 0), 0);
	gt_flush_sync(5000);

	struct json_object *root = finish_and_load(), *evs = get(root, "traceEvents");

	ck_assert_int_ge(kernel_index(evs, "kA"), 0);
	ck_assert_int_lt(kernel_index(evs, "kA"), kernel_index(evs, "kB"));
	ck_assert_int_ge(kernel_index(evs, "kD"), 0);
	ck_assert_int_lt(kernel_index(evs, "kD"), kernel_index(evs, "kC"));
	/* each with its arrow */
	ck_assert_int_eq(count_events(evs, "ph", "f"), 4);
	json_object_put(root);
}
END_TEST

static Suite *pipeline_suite(void)
{
	Suite *s = suite_create("pipeline");
	TCase *tc = tcase_create("pipeline");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_threads_exact_counts);
	tcase_add_test(tc, test_host_span_written_again_as_the_first);
	tcase_add_test(tc, test_flight_dump_on_request);
	tcase_add_test(tc, test_flight_dump_is_progress);
	tcase_add_test(tc, test_lost_events_exact);
	tcase_add_test(tc, test_overflow_events_exact);
	tcase_add_test(tc, test_device_rows_flows_counters);
	tcase_add_test(tc, test_arrow_from_a_launch_131071_launches_back);
	tcase_add_test(tc, test_launch_table_grows_with_its_launches);
	tcase_add_test(tc, test_a_run_written_late_is_drawn_as_in_order);
	tcase_add_test(tc, test_a_ring_of_kernels_written_in_bounded_memory);
	tcase_add_test(tc, test_args_alike_but_one_each_written_with_its_own);
	tcase_add_test(tc, test_gzip_output_checkpointed);
	tcase_add_test(tc, test_gzip_big_cycle_on_the_output_thread);
	tcase_add_test(tc, test_last_cycle_gives_big_ring_back);
	tcase_add_test(tc, test_events_formatted_before_the_file_are_placed_in_it);
	tcase_add_test(tc, test_string_read_by_an_id_another_thread_cached);
	tcase_add_test(tc, test_a_backlog_gone_gives_its_waiting_lists_pages_back);
	tcase_add_test(tc, test_ready_device_work_goes_out_in_order_with_work_that_waited);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(pipeline_suite)
