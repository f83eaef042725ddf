// SPDX-License-Identifier: MIT
/*
 * The summary aggregator (writer/summary.c) and the tool's JSON reading
 * (scripts/tool/json.c), without a traced process: exact sums, busy time
 * as a union of overlapping and out-of-order spans, bounded rows, the JSON
 * read back with json-c; exact microsecond parsing; value boundaries.
 */
#include <check.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scripts/tool/json.h"
#include "writer/summary.h"
#include "../check_run.h"

static void add(struct summary *s, const char *cat, const char *name, uint64_t start,
		uint64_t dur, const char *device, uint64_t bytes, const char *kind)
{
	struct summary_span sp = { .cat = cat, .name = name, .start_ns = start, .dur_ns = dur,
				   .device = device, .bytes = bytes, .copy_kind = kind };

	summary__add(s, &sp);
}

/* s's JSON into a new temporary file at path (a mkstemp template) */
static void write_json_tmp(struct summary *s, char *path)
{
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(summary__write_json(s, path, "t.json", 1234), 0);
}

static json_object *to_json(struct summary *s)
{
	char path[] = "/tmp/gputrace-summary-XXXXXX";
	json_object *o;

	write_json_tmp(s, path);
	o = json_object_from_file(path);
	unlink(path);
	ck_assert_ptr_nonnull(o);
	return o;
}

static json_object *get(json_object *o, const char *key)
{
	json_object *v = NULL;

	ck_assert_msg(json_object_object_get_ex(o, key, &v), "no key %s", key);
	return v;
}

static int64_t geti(json_object *o, const char *key)
{
	return json_object_get_int64(get(o, key));
}

START_TEST(test_sums_and_order)
{
	struct summary *s = summary__new();
	json_object *o, *k, *row;

	add(s, "kernel", "small", 100, 10, "GPU 0", 0, NULL);
	add(s, "kernel", "big", 200, 1000, "GPU 0", 0, NULL);
	add(s, "kernel", "small", 1300, 30, "GPU 0", 0, NULL);
	add(s, "ze_api", "zeLaunch", 90, 5, NULL, 0, NULL);
	add(s, "gpu_memcpy", "Memcpy", 2000, 100, "GPU 0", 4096, "HtoD");
	add(s, "gpu_memcpy", "Memcpy", 2200, 300, "GPU 0", 8192, "HtoD");
	add(s, "gpu_memset", "Memset", 2600, 50, "GPU 0", 64, NULL);
	add(s, "user_annotation", "step", 0, 3000, NULL, 0, NULL);
	add(s, "overhead", "flush", 10, 7, NULL, 0, NULL);
	summary__lost(s, "ring_full", 4);
	summary__lost(s, "ring_full", 1);
	summary__lost(s, "cupti_dropped", 2);
	o = to_json(s);

	k = get(o, "kernels");
	ck_assert_int_eq(json_object_array_length(k), 2);
	row = json_object_array_get_idx(k, 0);
	ck_assert_str_eq(json_object_get_string(get(row, "name")), "big");
	row = json_object_array_get_idx(k, 1);
	ck_assert_str_eq(json_object_get_string(get(row, "name")), "small");
	ck_assert_int_eq(geti(row, "count"), 2);
	ck_assert_int_eq(geti(row, "total_ns"), 40);
	ck_assert_int_eq(geti(row, "mean_ns"), 20);
	ck_assert_int_eq(geti(row, "min_ns"), 10);
	ck_assert_int_eq(geti(row, "max_ns"), 30);
	ck_assert_double_eq_tol(json_object_get_double(get(row, "share")), 40.0 / 1040, 1e-6);

	row = json_object_array_get_idx(get(o, "api_calls"), 0);
	ck_assert_str_eq(json_object_get_string(get(row, "cat")), "ze_api");
	ck_assert_int_eq(json_object_array_length(get(o, "annotations")), 1);

	k = get(o, "copies");
	ck_assert_int_eq(json_object_array_length(k), 2);
	row = json_object_array_get_idx(k, 0);
	ck_assert_str_eq(json_object_get_string(get(row, "kind")), "HtoD");
	ck_assert_int_eq(geti(row, "bytes"), 12288);
	ck_assert_int_eq(geti(row, "total_ns"), 400);
	ck_assert_double_eq_tol(json_object_get_double(get(row, "bandwidth_bytes_per_s")),
				12288 * 1e9 / 400, 1e3);
	row = json_object_array_get_idx(k, 1);
	ck_assert_str_eq(json_object_get_string(get(row, "kind")), "memset");

	row = json_object_array_get_idx(get(o, "devices"), 0);
	ck_assert_int_eq(geti(row, "spans"), 6);
	ck_assert_int_eq(geti(row, "busy_ns"), 10 + 1000 + 30 + 100 + 300 + 50);
	ck_assert_int_eq(geti(get(get(o, "totals"), "overhead"), "total_ns"), 7);
	ck_assert_int_eq(geti(get(o, "lost"), "total"), 7);
	ck_assert_int_eq(geti(get(get(o, "lost"), "by_reason"), "ring_full"), 5);
	ck_assert_int_eq(geti(get(o, "window"), "start_ns"), 0);
	ck_assert_int_eq(geti(get(o, "window"), "end_ns"), 3000);
	json_object_put(o);
	summary__free(s);
}
END_TEST

START_TEST(test_busy_is_a_union)
{
	struct summary *s = summary__new();
	json_object *o;
	uint64_t expect = 0;

	/* out of order and overlapping: [0,10) [20,30) [5,25) -> [0,30) */
	add(s, "kernel", "k", 0, 10, "A", 0, NULL);
	add(s, "kernel", "k", 20, 10, "A", 0, NULL);
	add(s, "kernel", "k", 5, 20, "A", 0, NULL);
	/* then 1000 disjoint spans in order, 2 queues interleaved (overlapping) */
	for (int i = 0; i < 1000; i++) {
		add(s, "kernel", "k", 1000 + i * 100ull, 50, "A", 0, NULL);
		add(s, "kernel", "k", 1000 + i * 100ull + 25, 50, "A", 0, NULL);
		expect += 75;
	}
	/* a second device is kept apart */
	add(s, "kernel", "k", 0, 5, "B", 0, NULL);
	o = to_json(s);
	json_object *dev = json_object_array_get_idx(get(o, "devices"), 0);
	ck_assert_str_eq(json_object_get_string(get(dev, "name")), "A");
	ck_assert_int_eq(geti(dev, "busy_ns"), 30 + expect);
	dev = json_object_array_get_idx(get(o, "devices"), 1);
	ck_assert_int_eq(geti(dev, "busy_ns"), 5);
	json_object_put(o);
	summary__free(s);
}
END_TEST

static char *print_to_text(struct summary *s);

START_TEST(test_rows_are_bounded)
{
	struct summary *s = summary__new();
	json_object *o, *k;
	char name[32];

	for (int i = 0; i < 70000; i++) {
		snprintf(name, sizeof(name), "kernel_%d", i);
		add(s, "kernel", name, (uint64_t)i, 1, "GPU", 0, NULL);
	}
	o = to_json(s);
	k = get(o, "kernels");
	/* 65536 names, then one "(other)" row with the rest */
	ck_assert_int_eq(json_object_array_length(k), 65537);
	json_object *first = json_object_array_get_idx(k, 0);
	ck_assert_str_eq(json_object_get_string(get(first, "name")), "(other)");
	ck_assert_int_eq(geti(first, "count"), 70000 - 65536);
	ck_assert_int_eq(geti(get(get(o, "totals"), "kernels"), "count"), 70000);
	json_object_put(o);
	/* the text does not count "(other)" as one more name */
	char *text = print_to_text(s);
	ck_assert_msg(strstr(text, "  kernels: over 65536 distinct (the rest in \"(other)\"), "
			      "70000 launches"), "%.300s", text);
	free(text);
	summary__free(s);
}
END_TEST

START_TEST(test_print_block_is_indented)
{
	struct summary *s = summary__new();
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	add(s, "kernel", "k", 0, 10, "GPU 0", 0, NULL);
	add(s, "ze_api", "zeX", 0, 10, NULL, 0, NULL);
	summary__lost(s, "ring_full", 2);
	summary__print(s, f, "/tmp/x.json", 100);
	fclose(f);
	ck_assert_msg(!strncmp(text, "gputrace summary: /tmp/x.json\n", 30), "%s", text);
	for (char *line = strchr(text, '\n') + 1; *line; line = strchr(line, '\n') + 1)
		ck_assert_msg(!strncmp(line, "  ", 2), "unindented line in:\n%s", text);
	ck_assert_ptr_nonnull(strstr(text, "lost events: 2 (ring_full 2)"));
	free(text);
	summary__free(s);
}
END_TEST

static char *print_to_text(struct summary *s)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	summary__print(s, f, "t.json", 100);
	fclose(f);
	return text;
}

/* One row of the kernels table, by the numbers that end it. */
static const char *row_with(const char *text, const char *tail)
{
	const char *p = strstr(text, tail);

	ck_assert_msg(p, "no row ending \"%s\" in:\n%s", tail, text);
	return p;
}

/* Failed calls, by call and error name; a poll's "not ready", a warning or a plug-in's
 * span is not one. Their time is the API table's as any call's. */
START_TEST(test_failed_calls)
{
	static const struct {
		const char *cat, *name, *error;
	} calls[] = {
		{ "cuda_runtime", "cudaMalloc", "cudaErrorMemoryAllocation" },
		{ "cuda_runtime", "cudaMalloc", "cudaErrorMemoryAllocation" },
		{ "cuda_runtime", "cudaMalloc", NULL },
		{ "cuda_runtime", "cudaEventQuery", "cudaErrorNotReady" },
		{ "cuda_driver", "cuEventQuery", "CUDA_ERROR_NOT_READY" },
		{ "ze_api", "zeEventQueryStatus", "ZE_RESULT_NOT_READY" },
		{ "ze_api", "zeCommandListClose", "ZE_RESULT_ERROR_INVALID_ARGUMENT" },
		/* the call did its work; a plug-in's span is not a CUDA or Level Zero call */
		{ "ze_api", "zetMetricStreamerReadData", "ZE_RESULT_WARNING_DROPPED_DATA" },
		{ "simaccel_api", "simMemcpyAsync", "simErrorInvalid" },
	};
	struct summary *s = summary__new();
	json_object *o, *e, *row;
	char *text;

	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		struct summary_span sp = { .cat = calls[i].cat, .name = calls[i].name,
					   .start_ns = i, .dur_ns = 10, .error = calls[i].error };
		summary__add(s, &sp);
	}
	o = to_json(s);
	ck_assert_int_eq(geti(get(get(o, "totals"), "api_calls"), "count"), 9);
	e = get(o, "errors");
	ck_assert_int_eq(geti(e, "total"), 3);
	ck_assert_int_eq(json_object_array_length(get(e, "calls")), 2);
	row = json_object_array_get_idx(get(e, "calls"), 0);
	ck_assert_str_eq(json_object_get_string(get(row, "name")), "cudaMalloc");
	ck_assert_str_eq(json_object_get_string(get(row, "error")), "cudaErrorMemoryAllocation");
	ck_assert_int_eq(geti(row, "count"), 2);
	row = json_object_array_get_idx(get(e, "calls"), 1);
	ck_assert_str_eq(json_object_get_string(get(row, "name")), "zeCommandListClose");
	ck_assert_int_eq(geti(row, "count"), 1);
	json_object_put(o);
	text = print_to_text(s);
	ck_assert_ptr_nonnull(strstr(text, "  API errors: 3 calls failed\n"));
	ck_assert_msg(strstr(text, "cudaMalloc") < strstr(text, "zeCommandListClose"), "%s", text);
	ck_assert_ptr_null(strstr(text, "NOT_READY"));
	ck_assert_ptr_null(strstr(text, "cudaErrorNotReady"));
	free(text);
	summary__free(s);

	/* none failed: the member is there, 0; no line */
	s = summary__new();
	add(s, "ze_api", "zeX", 0, 10, NULL, 0, NULL);
	o = to_json(s);
	ck_assert_int_eq(geti(get(o, "errors"), "total"), 0);
	json_object_put(o);
	text = print_to_text(s);
	ck_assert_ptr_null(strstr(text, "API errors"));
	free(text);
	summary__free(s);
}
END_TEST

/* Bandwidth in a unit that never prints a slow copy as 0.00 GB/s; waits are not busy. */
START_TEST(test_bandwidth_units)
{
	struct summary *s = summary__new();
	char *text;

	add(s, "gpu_memcpy", "Memcpy HtoD", 0, 1000, "GPU 0", 8192, "HtoD");      /* 8.19 GB/s */
	add(s, "gpu_memcpy", "Memcpy DtoH", 0, 1000000, "GPU 0", 512000, "DtoH"); /* 512 MB/s */
	add(s, "gpu_memcpy", "Memcpy DtoD", 0, 1000000000, "GPU 0", 12345, "DtoD"); /* 12.3 KB/s */
	add(s, "gpu_memset", "Memset", 0, 4000000000, "GPU 0", 12, NULL);         /* 3.00 B/s */
	/* three digits where the value rounds up into the next format or unit */
	add(s, "gpu_memcpy", "Memcpy HtoH", 0, 1000, "GPU 0", 9996, "HtoH");      /* 10.0 GB/s */
	add(s, "gpu_memcpy", "Memcpy PtoP", 0, 1000000, "GPU 0", 999600, "PtoP"); /* 1.00 GB/s */
	add(s, "gpu_sync", "Wait event 1.0", 5000000000, 1000, "GPU 0", 0, NULL);
	text = print_to_text(s);
	ck_assert_ptr_nonnull(text);
	ck_assert_msg(strstr(text, " 8.19 GB/s\n") && strstr(text, " 512 MB/s\n") &&
		      strstr(text, " 12.3 KB/s\n") && strstr(text, " 3.00 B/s\n"), "%s", text);
	ck_assert_msg(!strstr(text, "0.00 GB/s"), "%s", text);
	ck_assert_msg(strstr(text, " 10.0 GB/s\n") && strstr(text, " 1.00 GB/s\n") &&
		      !strstr(text, "1000 MB/s"), "%s", text);
	/* the wait after the copies is no busy time, and no span of the device */
	ck_assert_msg(strstr(text, "busy 4000.000 ms of 5000.001 ms (80.0%), 6 spans"), "%s", text);
	free(text);
	summary__free(s);
}
END_TEST

START_TEST(test_one_call_two_calls)
{
	struct summary *s = summary__new();
	char *text;

	add(s, "kernel", "k", 0, 10, "GPU 0", 0, NULL);
	add(s, "ze_api", "zeX", 0, 10, NULL, 0, NULL);
	add(s, "gpu_memset", "fill", 10, 10, "GPU 0", 64, NULL);
	text = print_to_text(s);
	ck_assert_ptr_nonnull(strstr(text, "  trace: 100 B, 3 spans over 20 ns\n"));
	ck_assert_ptr_nonnull(strstr(text, "  kernels: 1 distinct, 1 launch, 10 ns total\n"));
	ck_assert_ptr_nonnull(strstr(text, "  API calls: 1 distinct, 1 call, 10 ns total\n"));
	ck_assert_ptr_nonnull(strstr(text, "  copies and fills: 1 operation, 64 B, 10 ns total\n"));
	ck_assert_ptr_nonnull(strstr(text, "busy 20 ns of 20 ns (100.0%), 2 spans\n"));
	free(text);
	add(s, "ze_api", "zeX", 0, 10, NULL, 0, NULL);
	text = print_to_text(s);
	ck_assert_ptr_nonnull(strstr(text, "  API calls: 1 distinct, 2 calls, 20 ns total\n"));
	free(text);
	summary__free(s);
}
END_TEST

/* Templated kernel names longer than the column: never two rows that read
 * the same. Ends that differ survive the shortening; names that differ only
 * in the middle are printed whole. */
START_TEST(test_long_names_never_look_alike)
{
	static const char head[] = "void at::native::vectorized_elementwise_kernel<4, ";
	static const char mid1[] = "at::native::AddFunctor<float>";
	static const char mid2[] = "at::native::MulFunctor<float>";
	static const char tail[] = ", at::detail::Array<char*, 3> >(int, float*)";
	struct summary *s = summary__new();
	char a[256], b[256], c[256], d[256], *text;

	snprintf(a, sizeof(a), "%s%s%s", head, mid1, tail);
	snprintf(b, sizeof(b), "%s%s%s", head, mid2, tail);
	snprintf(c, sizeof(c), "%s%s, at::detail::Array<char*, 2> >(int, float*)", head, mid1);
	snprintf(d, sizeof(d), "%s%s, at::detail::Array<char*, 1> >(int, float*)", head, mid1);
	add(s, "kernel", a, 0, 1000, "GPU 0", 0, NULL);
	add(s, "kernel", b, 0, 2000, "GPU 0", 0, NULL);
	add(s, "kernel", c, 0, 3000, "GPU 0", 0, NULL);
	add(s, "kernel", d, 0, 4000, "GPU 0", 0, NULL);
	text = print_to_text(s);
	/* a and b differ in the middle only: each whole, on a line of its own */
	ck_assert_ptr_nonnull(strstr(text, "\n    void at::native::vectorized_elementwise_kernel<4, "
					   "at::native::AddFunctor<float>, at::detail::Array<char*, "
					   "3> >(int, float*)\n"));
	ck_assert_ptr_nonnull(strstr(text, "MulFunctor<float>, at::detail::Array<char*, 3> >(int, "
					   "float*)\n"));
	/* c and d keep their different ends, shortened in the middle */
	ck_assert_ptr_nonnull(row_with(text, "void at::native::v...har*, 2> >(int, float*)"));
	ck_assert_ptr_nonnull(row_with(text, "void at::native::v...har*, 1> >(int, float*)"));
	free(text);
	summary__free(s);
}
END_TEST

/* Devices by process: each process's own kernels, calls and busy time. */
START_TEST(test_devices_by_process)
{
	struct summary *s = summary__new();
	struct summary_process p1 = { .pid = 10, .exe = "python", .host = "n1", .lost = 2 };
	struct summary_process p2 = { .pid = 11, .exe = "python", .host = "n1", .rank = "1" };
	int a = summary__process(s, &p1), b = summary__process(s, &p2);
	struct summary_span sp = { .cat = "kernel", .name = "k", .start_ns = 0, .dur_ns = 100,
				   .device = "n1: GPU 0", .process = a };
	json_object *o, *procs, *first, *dev;
	char *text;

	ck_assert_int_eq(a, 1);
	ck_assert_int_eq(b, 2);
	/* the same process (an exec'd image): the same row, named after it */
	p1.exe = "train";
	p1.lost = 1;
	ck_assert_int_eq(summary__process(s, &p1), a);
	summary__add(s, &sp);
	sp.start_ns = 50; /* overlaps the first: busy 150 for process a */
	summary__add(s, &sp);
	sp.process = b;
	sp.start_ns = 1000;
	summary__add(s, &sp);
	sp = (struct summary_span){ .cat = "ze_api", .name = "zeX", .start_ns = 0, .dur_ns = 7,
				    .process = b };
	summary__add(s, &sp);
	o = to_json(s);
	procs = get(o, "processes");
	ck_assert_int_eq(json_object_array_length(procs), 2);
	first = json_object_array_get_idx(procs, 0); /* most kernel time first */
	ck_assert_int_eq(geti(first, "pid"), 10);
	ck_assert_str_eq(json_object_get_string(get(first, "exe")), "train");
	ck_assert_str_eq(json_object_get_string(get(first, "host")), "n1");
	ck_assert(json_object_is_type(get(first, "rank"), json_type_null));
	ck_assert_int_eq(geti(first, "lost"), 3);
	ck_assert_int_eq(geti(get(first, "kernels"), "count"), 2);
	ck_assert_int_eq(geti(get(first, "kernels"), "total_ns"), 200);
	dev = json_object_array_get_idx(get(first, "devices"), 0);
	ck_assert_str_eq(json_object_get_string(get(dev, "name")), "n1: GPU 0");
	ck_assert_int_eq(geti(dev, "busy_ns"), 150);
	ck_assert_int_eq(geti(get(json_object_array_get_idx(procs, 1), "api_calls"), "count"), 1);
	ck_assert_str_eq(json_object_get_string(get(json_object_array_get_idx(procs, 1), "rank")),
			 "1");
	/* the device row is one, over both processes */
	ck_assert_int_eq(geti(json_object_array_get_idx(get(o, "devices"), 0), "busy_ns"), 250);
	json_object_put(o);
	text = print_to_text(s);
	ck_assert_ptr_nonnull(strstr(text, "  processes: 2\n    train (pid 10): 2 kernels 200 ns, "
					   "0 calls 0 ns, 3 lost\n      n1: GPU 0"));
	ck_assert_ptr_nonnull(strstr(text, "    rank 1: python (pid 11): 1 kernel 100 ns, 1 call "
					   "7 ns, 0 lost\n"));
	free(text);
	summary__free(s);
}
END_TEST

static char *json_text(struct summary *s)
{
	char path[] = "/tmp/gputrace-summary-XXXXXX";
	char *text;
	FILE *f;
	long n;

	write_json_tmp(s, path);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	text = calloc(1, (size_t)n + 1);
	ck_assert_uint_eq(fread(text, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	unlink(path);
	return text;
}

/*
 * The drain's way with kernel spans (writer/events.c summarize_kernel): rows found once,
 * then summary__add_kernel, found again when a table grew. The same spans through
 * summary__add (which finds them for each span) give the same summary, to the byte: 200
 * kernel names (the kernels' table grows past 48, 96 and 192 rows, so kept rows go stale
 * in between), two processes, two devices, overlapping spans and more disjoint ones than a
 * device keeps open.
 */
START_TEST(test_kernel_rows_add_as_spans_do)
{
	static char names[200][16];
	struct summary *slow = summary__new(), *fast = summary__new();
	struct summary_kernel_rows kept[200][2][2];
	struct summary_process procs[2] = { { .pid = 1, .exe = "a" }, { .pid = 2, .exe = "b" } };
	const char *devices[2] = { "GPU 0: x", "GPU 1: y" };
	unsigned stale = 0, quick = 0;
	/* what each process and device must add up to, counted here apart */
	int64_t proc_spans[2] = { 0 }, proc_ns[2] = { 0 }, dev_spans[2] = { 0 }, dev_ns[2] = { 0 };
	json_object *o, *rows;
	int64_t count = 0;
	char *a, *b;

	memset(kept, 0, sizeof(kept));
	for (int p = 0; p < 2; p++) {
		ck_assert_int_eq(summary__process(slow, &procs[p]), p + 1);
		ck_assert_int_eq(summary__process(fast, &procs[p]), p + 1);
	}
	for (unsigned i = 0; i < 200; i++)
		snprintf(names[i], sizeof(names[i]), "k%u", i);
	for (unsigned i = 0; i < 20000; i++) {
		unsigned k = (i * 7 + i / 100) % (i < 10000 ? 40 + i / 100 : 200);
		unsigned d = (i / 3) % 2, p = (i / 5) % 2;
		/* runs that overlap and touch each other, then gaps */
		uint64_t start = (uint64_t)i * 100 - (i % 4 == 1 ? 150 : 0);
		struct summary_span sp = { .cat = "kernel", .name = names[k], .start_ns = start,
					   .dur_ns = i % 9 == 0 ? 0 : 30 + i % 200,
					   .bytes = i % 11 == 0 ? 64 : 0, .device = devices[d],
					   .process = (int)p + 1, .interned = true };
		struct summary_kernel_rows *r = &kept[k][d][p];

		proc_spans[p]++;
		proc_ns[p] += (int64_t)sp.dur_ns;
		dev_spans[d]++;
		dev_ns[d] += (int64_t)sp.dur_ns;
		summary__add(slow, &sp);
		if (summary__kernel_rows_fresh(fast, r)) {
			summary__add_kernel(fast, r, sp.start_ns, sp.dur_ns, sp.bytes);
			quick++;
			continue;
		}
		stale += r->moves != 0;
		summary__add(fast, &sp);
		ck_assert(summary__kernel_rows(fast, &sp, r));
		ck_assert(summary__kernel_rows_fresh(fast, r));
	}
	ck_assert_uint_gt(stale, 0);      /* rows moved under kept ones, and it was seen */
	ck_assert_uint_gt(quick, 17000); /* and most spans took the quick way */
	a = json_text(slow);
	b = json_text(fast);
	/* (whole texts of ~60 KiB: too long for ck_assert_str_eq's message) */
	ck_assert_msg(!strcmp(a, b), "the quick way's summary differs from summary__add's");
	o = to_json(fast);
	rows = get(o, "kernels");
	for (size_t i = 0; i < json_object_array_length(rows); i++)
		count += geti(json_object_array_get_idx(rows, i), "count");
	ck_assert_int_eq(count, 20000);
	ck_assert_int_eq(geti(o, "spans"), 20000);
	ck_assert_int_eq(geti(get(get(o, "totals"), "kernels"), "distinct"), 200);
	for (size_t i = 0; i < 2; i++) {
		json_object *proc = json_object_array_get_idx(get(o, "processes"), i);
		json_object *dev = json_object_array_get_idx(get(o, "devices"), i);
		int64_t pid = geti(proc, "pid");
		const char *name = json_object_get_string(get(dev, "name"));
		size_t di = strcmp(name, devices[0]) ? 1 : 0;

		ck_assert_int_eq(geti(proc, "spans"), proc_spans[pid - 1]);
		ck_assert_int_eq(geti(get(proc, "kernels"), "count"), proc_spans[pid - 1]);
		ck_assert_int_eq(geti(get(proc, "kernels"), "total_ns"), proc_ns[pid - 1]);
		ck_assert_int_eq(geti(dev, "spans"), dev_spans[di]);
		ck_assert_int_eq(geti(dev, "span_total_ns"), dev_ns[di]);
	}
	json_object_put(o);
	free(a);
	free(b);
	summary__free(slow);
	summary__free(fast);
}
END_TEST

/* Lost events: the line says what to do, with the caller's option. */
START_TEST(test_lost_events_advice)
{
	struct summary *s = summary__new();
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	summary__lost(s, "ring_full", 5);
	summary__lost(s, "cupti_dropped", 1);
	summary__set_hints(s, &(struct summary_hints){ .buffer = "--buffer-kb ", .buffer_kb = 4096 });
	f = open_memstream(&text, &len);
	summary__print_lost_line(s, f, "t.json");
	fclose(f);
	ck_assert_str_eq(text, "gputrace: 6 events lost (cupti_dropped 1, ring_full 5) in t.json; "
			       "a thread recorded faster than gputrace wrote: rerun with "
			       "--buffer-kb 16384 (now 4096 KiB per thread), or --lossless to make "
			       "it wait\n");
	free(text);
	text = print_to_text(s);
	ck_assert_ptr_nonnull(strstr(text, "  lost events: 6 (cupti_dropped 1, ring_full 5)\n    a "
					   "thread recorded faster than gputrace wrote: rerun with "
					   "--buffer-kb 16384 (now 4096 KiB per thread), or "
					   "--lossless to make it wait\n"));
	free(text);
	summary__free(s);
	/* nothing lost: no line */
	s = summary__new();
	text = NULL;
	f = open_memstream(&text, &len);
	summary__print_lost_line(s, f, "t.json");
	fclose(f);
	ck_assert_str_eq(text, "");
	free(text);
	summary__free(s);
}
END_TEST

static int64_t us_ns(const char *s)
{
	int64_t ns = -42;

	ck_assert_msg(jv_us_to_ns(s, s + strlen(s), &ns), "parse %s", s);
	return ns;
}

START_TEST(test_exact_microseconds)
{
	ck_assert_int_eq(us_ns("123.456"), 123456);
	ck_assert_int_eq(us_ns("12"), 12000);
	ck_assert_int_eq(us_ns("0.5"), 500);
	ck_assert_int_eq(us_ns("0.0005"), 1);
	ck_assert_int_eq(us_ns("-1.5"), -1500);
	ck_assert_int_eq(us_ns("1e3"), 1000000);
	ck_assert_int_eq(us_ns("\"7.001\""), 7001);
	/* 100 days of uptime in ns: beyond a double's exact integers */
	ck_assert_int_eq(us_ns("8640000000000.123"), 8640000000000123ll);
	int64_t x;
	ck_assert(!jv_us_to_ns("abc", "abc" + 3, &x));
	ck_assert(!jv_us_to_ns("", "", &x));

	struct buf b = { 0 };
	json_ns_as_us(&b, 8640000000000123ll);
	ck_assert_str_eq(b.p, "8640000000000.123");
	buf__reset(&b);
	json_ns_as_us(&b, -5);
	ck_assert_str_eq(b.p, "-0.005");
	buf__free(&b);
}
END_TEST

START_TEST(test_value_boundaries)
{
	const char *doc = "{\"a\":\"x}],\\\"y\",\"b\":[1,{\"c\":\"]\"}],\"n\":-1.5e2}";
	const char *e = doc + strlen(doc), *v, *ve;
	struct buf s = { 0 };

	ck_assert(jv_get(doc, e, "a", &v, &ve));
	ck_assert(jv_str(v, ve, &s));
	ck_assert_str_eq(s.p, "x}],\"y");
	ck_assert(jv_get(doc, e, "b", &v, &ve));
	ck_assert_int_eq((int)(ve - v), (int)strlen("[1,{\"c\":\"]\"}]"));
	ck_assert(jv_get(doc, e, "n", &v, &ve));
	ck_assert_int_eq((int)(ve - v), 6);
	ck_assert(!jv_get(doc, e, "zz", &v, &ve));
	const char *u = "\"caf\\u00e9 \\ud83d\\ude00\"";
	ck_assert(jv_str(u, u + strlen(u), &s));
	ck_assert_str_eq(s.p, "caf\xc3\xa9 \xf0\x9f\x98\x80");
	buf__free(&s);
}
END_TEST

/* The metrics section: mean/min/max per series and per kernel; NaN and Inf (a
 * driver's division by zero) are not samples, and the JSON stays valid. */
START_TEST(test_metrics_section)
{
	struct summary *s = summary__new();
	const struct summary_metric m1[] = { { "GpuBusy %", 100 }, { "GpuTime ns", 1000 } };
	const struct summary_metric m2[] = { { "GpuBusy %", 50 }, { "GpuTime ns", 1.0 / 0.0 } };
	const struct summary_metric m3[] = { { "GpuBusy %", 0.0 / 0.0 } };
	struct summary_span sp = { .cat = "kernel", .name = "k", .dur_ns = 10, .device = "GPU 0" };
	json_object *o, *rows, *row;

	summary__counter(s, "GPU 0", "power", "W", 20);
	summary__counter(s, "GPU 0", "power", "W", 100);
	summary__counter(s, "GPU 0", "power", "W", 0.0 / 0.0);
	summary__counter(s, "GPU 0", "power", "W", -1.0 / 0.0);
	sp.metrics = m1, sp.nmetrics = 2, sp.start_ns = 0;
	summary__add(s, &sp);
	sp.metrics = m2, sp.start_ns = 100;
	summary__add(s, &sp);
	sp.metrics = m3, sp.nmetrics = 1, sp.start_ns = 200;
	summary__add(s, &sp);
	sp.cat = "gpu_memcpy", sp.name = "Memcpy", sp.metrics = m1, sp.nmetrics = 2;
	summary__add(s, &sp); /* not a kernel: its metrics are not a kernel's */
	o = to_json(s);

	rows = get(get(o, "metrics"), "counters");
	ck_assert_int_eq(json_object_array_length(rows), 1);
	row = json_object_array_get_idx(rows, 0);
	ck_assert_str_eq(json_object_get_string(get(row, "device")), "GPU 0");
	ck_assert_str_eq(json_object_get_string(get(row, "counter")), "power");
	ck_assert_str_eq(json_object_get_string(get(row, "series")), "W");
	ck_assert_int_eq(geti(row, "samples"), 2);
	ck_assert_double_eq(json_object_get_double(get(row, "mean")), 60);
	ck_assert_double_eq(json_object_get_double(get(row, "min")), 20);
	ck_assert_double_eq(json_object_get_double(get(row, "max")), 100);

	rows = get(get(o, "metrics"), "kernels");
	ck_assert_int_eq(json_object_array_length(rows), 2);
	for (int i = 0; i < 2; i++) {
		const char *metric;

		row = json_object_array_get_idx(rows, i);
		metric = json_object_get_string(get(row, "metric"));
		ck_assert_str_eq(json_object_get_string(get(row, "kernel")), "k");
		if (!strcmp(metric, "GpuBusy %")) {
			ck_assert_int_eq(geti(row, "count"), 2);
			ck_assert_double_eq(json_object_get_double(get(row, "mean")), 75);
		} else {
			ck_assert_str_eq(metric, "GpuTime ns");
			ck_assert_int_eq(geti(row, "count"), 1);
			ck_assert_double_eq(json_object_get_double(get(row, "max")), 1000);
		}
	}
	json_object_put(o);
	summary__free(s);
}
END_TEST

START_TEST(test_stream_reader)
{
	char path[] = "/tmp/gputrace-jr-XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");
	struct jr r;
	struct buf v = { 0 };
	int n = 0;

	/* values longer than the reader's chunk, strings with brackets */
	fputs("[", f);
	for (int i = 0; i < 20000; i++)
		fprintf(f, "%s{\"name\":\"k]}%d\",\"args\":{\"s\":\"\\\"[\"}}", i ? ",\n" : "", i);
	fputs("]", f);
	fclose(f);
	ck_assert_int_eq(jr_open(&r, path), 0);
	ck_assert_int_eq(jr_peek(&r), '[');
	jr_take(&r);
	for (;;) {
		const char *nv, *ne;
		char want[32];

		buf__reset(&v);
		ck_assert_int_eq(jr_value(&r, &v), 0);
		ck_assert(jv_get(v.p, v.p + v.len, "name", &nv, &ne));
		snprintf(want, sizeof(want), "\"k]}%d\"", n);
		ck_assert_int_eq((int)(ne - nv), (int)strlen(want));
		ck_assert(!memcmp(nv, want, strlen(want)));
		n++;
		int c = jr_peek(&r);
		jr_take(&r);
		if (c == ']')
			break;
		ck_assert_int_eq(c, ',');
	}
	ck_assert_int_eq(n, 20000);
	ck_assert_int_eq(jr_peek(&r), -1);
	jr_close(&r);
	buf__free(&v);
	unlink(path);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("summary");
	TCase *tc = tcase_create("summary");

	tcase_add_test(tc, test_sums_and_order);
	tcase_add_test(tc, test_busy_is_a_union);
	tcase_add_test(tc, test_rows_are_bounded);
	tcase_add_test(tc, test_print_block_is_indented);
	tcase_add_test(tc, test_bandwidth_units);
	tcase_add_test(tc, test_failed_calls);
	tcase_add_test(tc, test_one_call_two_calls);
	tcase_add_test(tc, test_long_names_never_look_alike);
	tcase_add_test(tc, test_devices_by_process);
	tcase_add_test(tc, test_kernel_rows_add_as_spans_do);
	tcase_add_test(tc, test_lost_events_advice);
	tcase_add_test(tc, test_exact_microseconds);
	tcase_add_test(tc, test_value_boundaries);
	tcase_add_test(tc, test_stream_reader);
	tcase_add_test(tc, test_metrics_section);
	suite_add_tcase(s, tc);
	return check_run(s);
}
