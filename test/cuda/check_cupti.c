/* SPDX-License-Identifier: MIT */
/*
 * The CUDA backend without a GPU: buffers of real CUPTI activity records
 * (the toolkit's structs, walked by the real libcupti) and simulated CUPTI
 * callbacks go through the backend, the tracer writes its JSON, and the
 * JSON is read back: names, args, rows, correlation, ac2g flows, times,
 * lost counts. The libcudart wrappers run against the fake libcudart.
 */
#define _GNU_SOURCE
#include <cupti.h>
#include <dlfcn.h>
#include <json-c/json.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backends/cuda/internal.h"
#include "inject/clock.h"
#include "inject/event.h"
#include "inject/shim.h"
#include "inject/watchdog.h"
#include "test/unit/unit.h"

void gt_test_start(char *const *envp);
extern void (*fake_cudart_hook)(const char *fn);
/* What a CUDA 13 program's cudaMalloc@libcudart.so.13 binds to (runtime.c) */
int gt_rt2_cudaMalloc(void **p, size_t n);
int gt_rt2_cudaFree(void *p);

static char trace_path[256];

static void start(void)
{
	static char out[300];
	char *env[] = { out, "GPUTRACE_SUMMARY=0", NULL };
	char lib[4096];

	snprintf(trace_path, sizeof(trace_path), "/tmp/gputrace-cupti-%d.json", getpid());
	unlink(trace_path);
	snprintf(out, sizeof(out), "GPUTRACE_OUTPUT=%s", trace_path);
	gt_test_start(env);
	/* the real record walker: works on synthetic buffers without a GPU */
	ck_assert_msg(cupti__load(lib, sizeof(lib)) == 0, "libcupti not found");
	/* no CUPTI session in these tests: nothing may start one */
	atomic_store(&cupti_state, CUPTI_UNAVAILABLE);
	cupti_backend_on = true;
}

static struct json_object *finish_and_load(void)
{
	struct json_object *root;

	gt_finish("exit", 10000);
	root = json_object_from_file(trace_path);
	ck_assert_msg(root != NULL, "trace %s does not parse", trace_path);
	unlink(trace_path);
	return root;
}

static struct json_object *get(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	ck_assert_msg(json_object_object_get_ex(o, key, &v), "no key %s in %s", key,
		      json_object_to_json_string(o));
	return v;
}

/* a member as compact JSON text */
static const char *plain(struct json_object *o, const char *key)
{
	return json_object_to_json_string_ext(get(o, key), JSON_C_TO_STRING_PLAIN);
}

static bool has(struct json_object *o, const char *key)
{
	return json_object_object_get_ex(o, key, NULL);
}

static const char *str(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : "";
}

static int64_t i64(struct json_object *o, const char *key)
{
	return json_object_get_int64(get(o, key));
}

static double num(struct json_object *o, const char *key)
{
	return json_object_get_double(get(o, key));
}

/* Events of a phase and category (NULL: any), in file order. */
static int find(struct json_object *root, const char *ph, const char *cat,
		struct json_object **out, int max)
{
	struct json_object *evs = get(root, "traceEvents");
	int n = 0;

	for (size_t i = 0; i < json_object_array_length(evs); i++) {
		struct json_object *e = json_object_array_get_idx(evs, i);
		if (strcmp(str(e, "ph"), ph) || (cat && strcmp(str(e, "cat"), cat)))
			continue;
		if (n < max)
			out[n] = e;
		n++;
	}
	return n;
}

static struct json_object *by_name(struct json_object **evs, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(str(evs[i], "name"), name))
			return evs[i];
	ck_abort_msg("no event named %s", name);
	return NULL;
}

/* The name a metadata event gives a (pid, tid). */
static const char *meta_name(struct json_object *root, const char *what, int64_t pid, int64_t tid)
{
	struct json_object *m[512];
	int n = find(root, "M", NULL, m, 512);

	for (int i = 0; i < n && i < 512; i++)
		if (!strcmp(str(m[i], "name"), what) && i64(m[i], "pid") == pid &&
		    (tid < 0 || i64(m[i], "tid") == tid))
			return str(get(m[i], "args"), "name");
	return "";
}

/* An ac2g flow leaves `host` (inside it, same thread) and ends where `dev` starts. */
static bool flow_between(struct json_object *root, struct json_object *host,
			 struct json_object *dev)
{
	struct json_object *s[256], *f[256];
	int ns = find(root, "s", "ac2g", s, 256), nf = find(root, "f", "ac2g", f, 256);

	for (int i = 0; i < ns && i < 256; i++) {
		double ts = num(s[i], "ts");
		if (i64(s[i], "tid") != i64(host, "tid") || ts < num(host, "ts") ||
		    ts > num(host, "ts") + num(host, "dur"))
			continue;
		for (int j = 0; j < nf && j < 256; j++)
			if (i64(f[j], "id") == i64(s[i], "id") && i64(f[j], "pid") == i64(dev, "pid") &&
			    i64(f[j], "tid") == i64(dev, "tid") && num(f[j], "ts") >= num(dev, "ts") &&
			    num(f[j], "ts") <= num(dev, "ts") + num(dev, "dur"))
				return true;
	}
	return false;
}

static int64_t lost(struct json_object *root, const char *reason)
{
	struct json_object *by = get(get(root, "gputrace"), "lost_by_reason");

	return has(by, reason) ? i64(by, reason) : 0;
}

/* ---- building buffers of records ---- */

struct buf {
	uint8_t *p;
	size_t len;
};

static uint8_t *new_buf(struct buf *b)
{
	static uint8_t store[4][1 << 16] __attribute__((aligned(8)));
	static int next;

	b->p = store[next++ % 4];
	b->len = 0;
	memset(b->p, 0, sizeof(store[0]));
	return b->p;
}

static void add(struct buf *b, const void *rec, size_t size)
{
	memcpy(b->p + b->len, rec, size);
	b->len += (size + 7) & ~(size_t)7;
}

static CUpti_ActivityKernel10 kernel(uint32_t corr, uint64_t start, uint64_t dur,
				     const char *name, uint32_t stream)
{
	return (CUpti_ActivityKernel10){
		.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
		.start = start, .end = start + dur, .deviceId = 0, .contextId = 1,
		.streamId = stream, .gridX = 4096, .gridY = 1, .gridZ = 1, .blockX = 256,
		.blockY = 1, .blockZ = 1, .registersPerThread = 16, .staticSharedMemory = 1024,
		.dynamicSharedMemory = 512, .correlationId = corr, .name = name,
	};
}

/* A runtime or driver call as CUPTI's callbacks report it. */
static void api(CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const char *name,
		uint32_t corr, int result, void (*inside)(void))
{
	CUpti_CallbackData d = { .callbackSite = CUPTI_API_ENTER, .functionName = name,
				 .functionReturnValue = &result, .correlationId = corr };

	cupti__callback(NULL, dom, cbid, &d);
	if (inside)
		inside();
	usleep(20);
	d.callbackSite = CUPTI_API_EXIT;
	cupti__callback(NULL, dom, cbid, &d);
}

#define RT  CUPTI_CB_DOMAIN_RUNTIME_API
#define DRV CUPTI_CB_DOMAIN_DRIVER_API
#define CB_LAUNCH CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000
#define CB_MEMCPY CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020

/* ---- tests ---- */

START_TEST(test_kernels)
{
	struct json_object *k[8], *h[8];
	struct buf b;
	uint64_t t0;

	/* demangled names come from the program's libstdc++ */
	ck_assert_ptr_nonnull(dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL));
	start();
	api(RT, CB_LAUNCH, "cudaLaunchKernel", 11, 0, NULL);
	api(RT, CB_LAUNCH, "cudaLaunchKernel", 12, 0, NULL);
	t0 = gt_clock_ns();
	new_buf(&b);
	CUpti_ActivityKernel10 k1 = kernel(11, t0 + 1000, 5000, "vec_add", 7);
	CUpti_ActivityKernel10 k2 = kernel(12, t0 + 7000, 3000, "_Z5scalePfi", 7);
	k1.gridY = 65535; /* the most the packed [x, y, z] holds */
	k2.gridX = 8;
	k2.gridY = 70000; /* more than any device allows: kept, as text */
	k2.blockY = 4;
	add(&b, &k1, sizeof(k1));
	add(&b, &k2, sizeof(k2));
	ck_assert_int_eq(cupti__process_buffer(b.p, b.len), 2);

	struct json_object *root = finish_and_load();
	ck_assert_int_eq(find(root, "X", "kernel", k, 8), 2);
	ck_assert_int_eq(find(root, "X", "cuda_runtime", h, 8), 2);
	struct json_object *a = by_name(k, 2, "vec_add"), *s = by_name(k, 2, "scale(float*, int)");
	struct json_object *args = get(a, "args");
	ck_assert_int_eq(i64(args, "device"), 0);
	ck_assert_int_eq(i64(args, "stream"), 7);
	/* arrays, as Kineto writes them */
	ck_assert_str_eq(plain(args, "grid"), "[4096,65535,1]");
	ck_assert_str_eq(plain(args, "block"), "[256,1,1]");
	ck_assert_int_eq(i64(args, "registers_per_thread"), 16);
	ck_assert_int_eq(i64(args, "shared_memory"), 1536);
	ck_assert(!has(args, "graph_id"));
	ck_assert_str_eq(str(get(s, "args"), "grid"), "[8, 70000, 1]");
	ck_assert_str_eq(plain(get(s, "args"), "block"), "[256,4,1]");
	/* the launch's correlation, and an arrow from it */
	for (int i = 0; i < 2; i++) {
		struct json_object *dev = i ? s : a, *host = h[i];
		ck_assert_str_eq(str(host, "name"), "cudaLaunchKernel");
		ck_assert_int_eq(i64(get(dev, "args"), "correlation"),
				 i64(get(host, "args"), "correlation"));
		ck_assert(flow_between(root, host, dev));
		ck_assert(num(dev, "ts") >= num(host, "ts"));
	}
	ck_assert_double_eq_tol(num(a, "dur"), 5.0, 0.001);
	ck_assert_double_eq_tol(num(s, "ts") - num(a, "ts"), 6.0, 0.001);
	ck_assert_str_eq(meta_name(root, "process_name", i64(a, "pid"), -1), "GPU 0");
	ck_assert_str_eq(meta_name(root, "thread_name", i64(a, "pid"), i64(a, "tid")), "stream 7");
	ck_assert_int_eq(i64(a, "tid"), i64(s, "tid"));
	json_object_put(root);
}
END_TEST

START_TEST(test_copies_and_memsets)
{
	struct json_object *c[8], *m[8], *h[8];
	struct buf b;

	start();
	api(RT, CB_MEMCPY, "cudaMemcpy", 21, 0, NULL);
	api(RT, CB_MEMCPY, "cudaMemcpy", 30, 0, NULL);
	api(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020, "cudaMemset", 22, 0, NULL);
	uint64_t t0 = gt_clock_ns();
	new_buf(&b);
	CUpti_ActivityMemcpy6 c1 = {
		.kind = CUPTI_ACTIVITY_KIND_MEMCPY, .copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD,
		.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
		.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, .bytes = 1 << 20, .start = t0 + 100,
		.end = t0 + 2100, .deviceId = 0, .contextId = 1, .streamId = 7,
		.correlationId = 21, .runtimeCorrelationId = 21,
	};
	/* the driver's id differs from the runtime call's: linked through the latter */
	CUpti_ActivityMemcpy6 c2 = c1;
	c2.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
	c2.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	c2.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
	c2.bytes = 4096;
	c2.start = t0 + 3000;
	c2.end = t0 + 3500;
	c2.correlationId = 31;
	c2.runtimeCorrelationId = 30;
	CUpti_ActivityMemset4 s1 = {
		.kind = CUPTI_ACTIVITY_KIND_MEMSET, .value = 0, .bytes = 65536, .start = t0 + 2200,
		.end = t0 + 2400, .deviceId = 0, .contextId = 1, .streamId = 7,
		.correlationId = 22, .memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
	};
	add(&b, &c1, sizeof(c1));
	add(&b, &s1, sizeof(s1));
	add(&b, &c2, sizeof(c2));
	ck_assert_int_eq(cupti__process_buffer(b.p, b.len), 3);

	struct json_object *root = finish_and_load();
	ck_assert_int_eq(find(root, "X", "gpu_memcpy", c, 8), 2);
	ck_assert_int_eq(find(root, "X", "gpu_memset", m, 8), 1);
	ck_assert_int_eq(find(root, "X", "cuda_runtime", h, 8), 3);
	struct json_object *htod = by_name(c, 2, "Memcpy HtoD (Pageable -> Device)");
	struct json_object *dtoh = by_name(c, 2, "Memcpy DtoH (Device -> Pinned)");
	ck_assert_str_eq(str(get(htod, "args"), "kind"), "HtoD");
	ck_assert_int_eq(i64(get(htod, "args"), "bytes"), 1 << 20);
	ck_assert_str_eq(str(get(dtoh, "args"), "kind"), "DtoH");
	ck_assert_int_eq(i64(get(dtoh, "args"), "bytes"), 4096);
	ck_assert_str_eq(str(m[0], "name"), "Memset (Device)");
	ck_assert_int_eq(i64(get(m[0], "args"), "bytes"), 65536);
	ck_assert(flow_between(root, h[0], htod));
	ck_assert(flow_between(root, h[1], dtoh));
	ck_assert(flow_between(root, h[2], m[0]));
	ck_assert_int_eq(i64(get(htod, "args"), "correlation"), i64(get(h[0], "args"), "correlation"));
	json_object_put(root);
}
END_TEST

START_TEST(test_synchronization)
{
	struct json_object *s[8], *h[8];
	struct buf b;

	start();
	cupti__context_device(3, 2); /* context 3 lives on device 2 */
	api(RT, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, "cudaStreamSynchronize", 41,
	    0, NULL);
	api(RT, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, "cudaDeviceSynchronize", 42,
	    0, NULL);
	uint64_t t0 = gt_clock_ns();
	new_buf(&b);
	CUpti_ActivitySynchronization2 y1 = {
		.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
		.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, .start = t0,
		.end = t0 + 800, .correlationId = 41, .contextId = 3, .streamId = 9,
		.cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE,
	};
	CUpti_ActivitySynchronization2 y2 = y1;
	y2.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE;
	y2.streamId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
	y2.correlationId = 42;
	add(&b, &y1, sizeof(y1));
	add(&b, &y2, sizeof(y2));
	ck_assert_int_eq(cupti__process_buffer(b.p, b.len), 2);

	struct json_object *root = finish_and_load();
	ck_assert_int_eq(find(root, "X", "cuda_sync", s, 8), 2);
	ck_assert_int_eq(find(root, "X", "cuda_runtime", h, 8), 2);
	struct json_object *ss = by_name(s, 2, "Stream Sync"), *cs = by_name(s, 2, "Context Sync");
	ck_assert_int_eq(i64(get(ss, "args"), "device"), 2);
	ck_assert_int_eq(i64(get(ss, "args"), "stream"), 9);
	/* a context-wide sync: stream -1, as Kineto writes it */
	ck_assert_int_eq(i64(get(cs, "args"), "stream"), -1);
	ck_assert_str_eq(meta_name(root, "process_name", i64(ss, "pid"), -1), "GPU 2");
	ck_assert_str_eq(meta_name(root, "thread_name", i64(ss, "pid"), i64(ss, "tid")),
			 "stream 9 sync");
	ck_assert_str_eq(meta_name(root, "thread_name", i64(cs, "pid"), i64(cs, "tid")), "sync");
	ck_assert(flow_between(root, h[0], ss));
	ck_assert(flow_between(root, h[1], cs));
	json_object_put(root);
}
END_TEST

START_TEST(test_external_correlation_in_a_later_buffer)
{
	struct json_object *k[4];
	struct buf a, b;
	uint64_t t0;

	start();
	t0 = gt_clock_ns();
	new_buf(&a);
	new_buf(&b);
	CUpti_ActivityKernel10 k1 = kernel(40, t0, 1000, "tagged", 7);
	CUpti_ActivityKernel10 k2 = kernel(41, t0 + 2000, 1000, "untagged", 7);
	CUpti_ActivityExternalCorrelation x = {
		.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
		.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, .externalId = 9000,
		.correlationId = 40,
	};
	add(&a, &k1, sizeof(k1));
	add(&a, &k2, sizeof(k2));
	add(&b, &x, sizeof(x));
	uint8_t *bufs[2] = { a.p, b.p };
	size_t valid[2] = { a.len, b.len };
	ck_assert_int_eq(cupti__process_buffers(bufs, valid, 2), 3);

	struct json_object *root = finish_and_load();
	ck_assert_int_eq(find(root, "X", "kernel", k, 4), 2);
	ck_assert_int_eq(i64(get(by_name(k, 2, "tagged"), "args"), "external_id"), 9000);
	ck_assert(!has(get(by_name(k, 2, "untagged"), "args"), "external_id"));
	json_object_put(root);
}
END_TEST

START_TEST(test_graphs)
{
	struct json_object *k[4], *g[4], *h[4];
	struct buf b;

	start();
	api(RT, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, "cudaGraphLaunch", 50, 0, NULL);
	uint64_t t0 = gt_clock_ns();
	new_buf(&b);
	CUpti_ActivityKernel10 k1 = kernel(50, t0, 1000, "node_a", 7);
	k1.graphId = 5;
	k1.graphNodeId = 77;
	CUpti_ActivityGraphTrace2 gt = {
		.kind = CUPTI_ACTIVITY_KIND_GRAPH_TRACE, .correlationId = 50, .start = t0,
		.end = t0 + 1500, .deviceId = 0, .graphId = 5, .contextId = 1, .streamId = 7,
	};
	add(&b, &k1, sizeof(k1));
	add(&b, &gt, sizeof(gt));
	ck_assert_int_eq(cupti__process_buffer(b.p, b.len), 2);

	struct json_object *root = finish_and_load();
	ck_assert_int_eq(find(root, "X", "kernel", k, 4), 1);
	ck_assert_int_eq(find(root, "X", "cuda_graph", g, 4), 1);
	ck_assert_int_eq(find(root, "X", "cuda_runtime", h, 4), 1);
	ck_assert_int_eq(i64(get(k[0], "args"), "graph_id"), 5);
	ck_assert_int_eq(i64(get(k[0], "args"), "graph_node_id"), 77);
	ck_assert_str_eq(str(g[0], "name"), "CUDA graph 5");
	ck_assert_int_eq(i64(get(g[0], "args"), "graph_id"), 5);
	ck_assert_str_eq(str(h[0], "name"), "cudaGraphLaunch");
	ck_assert(flow_between(root, h[0], k[0]));
	ck_assert(flow_between(root, h[0], g[0]));
	json_object_put(root);
}
END_TEST

/* CUPTI hands buffers back per thread, in any order: the completion path. */
START_TEST(test_buffers_out_of_order)
{
	struct json_object *k[8], *h[8];
	uint8_t *b1, *b2, *again;
	size_t size, maxrec;
	struct buf w;

	start();
	for (uint32_t c = 60; c < 64; c++)
		api(RT, CB_LAUNCH, "cudaLaunchKernel", c, 0, NULL);
	uint64_t t0 = gt_clock_ns();
	cupti__buffer_requested(&b1, &size, &maxrec);
	cupti__buffer_requested(&b2, &size, &maxrec);
	ck_assert_ptr_nonnull(b1);
	ck_assert_ptr_ne(b1, b2);
	ck_assert_uint_eq(size, CUPTI_BUF_BYTES);
	ck_assert_uint_eq((uintptr_t)b1 % 8, 0);
	const char *names[4] = { "k60", "k61", "k62", "k63" };
	CUpti_ActivityKernel10 r[4];
	for (int i = 0; i < 4; i++)
		r[i] = kernel(60 + i, t0 + 1000 * (uint64_t)i, 800, names[i], 7);
	w.p = b1, w.len = 0;
	add(&w, &r[0], sizeof(r[0]));
	add(&w, &r[1], sizeof(r[1]));
	size_t len1 = w.len;
	w.p = b2, w.len = 0;
	add(&w, &r[2], sizeof(r[2]));
	add(&w, &r[3], sizeof(r[3]));
	/* the later buffer completes first; the drain thread processes both */
	cupti__buffer_completed(NULL, 0, b2, CUPTI_BUF_BYTES, w.len);
	cupti__buffer_completed(NULL, 0, b1, CUPTI_BUF_BYTES, len1);
	gt_flush_sync(5000);
	/* an emptied buffer is handed out again */
	cupti__buffer_requested(&again, &size, &maxrec);
	ck_assert(again == b1 || again == b2);

	struct json_object *root = finish_and_load();
	ck_assert_int_eq(find(root, "X", "kernel", k, 8), 4);
	ck_assert_int_eq(find(root, "X", "cuda_runtime", h, 8), 4);
	for (int i = 0; i < 4; i++) {
		struct json_object *dev = by_name(k, 4, names[i]);
		ck_assert_int_eq(i64(get(dev, "args"), "correlation"),
				 i64(get(h[i], "args"), "correlation"));
		ck_assert(flow_between(root, h[i], dev));
	}
	json_object_put(root);
}
END_TEST

START_TEST(test_record_without_timestamps)
{
	struct json_object *k[4];
	struct buf b;

	start();
	uint64_t t0 = gt_clock_ns();
	new_buf(&b);
	CUpti_ActivityKernel10 k0 = kernel(70, 0, 0, "no_time", 7);
	k0.end = 0;
	CUpti_ActivityKernel10 k1 = kernel(71, t0, 1000, "timed", 7);
	/* half-timestamped: a forced flush took one before its end; the
	 * other lost its start (neither may be drawn at time 0) */
	CUpti_ActivityKernel10 k2 = kernel(72, t0 + 2000, 0, "start_only", 7);
	k2.end = 0;
	CUpti_ActivityKernel10 k3 = kernel(73, 0, 0, "end_only", 7);
	k3.end = t0 + 5000;
	add(&b, &k0, sizeof(k0));
	add(&b, &k1, sizeof(k1));
	add(&b, &k2, sizeof(k2));
	add(&b, &k3, sizeof(k3));
	ck_assert_int_eq(cupti__process_buffer(b.p, b.len), 4);

	struct json_object *root = finish_and_load();
	ck_assert_int_eq(find(root, "X", "kernel", k, 4), 1);
	ck_assert_str_eq(str(k[0], "name"), "timed");
	ck_assert_int_eq(lost(root, "cupti_no_timestamp"), 3);
	ck_assert_int_eq(lost(root, "cupti_dropped"), 0);
	json_object_put(root);
}
END_TEST

static CUptiResult fake_dropped(CUcontext ctx, uint32_t stream, size_t *n)
{
	static size_t calls;

	*n = calls++ ? 0 : 42; /* CUPTI resets its count at each call */
	return CUPTI_SUCCESS;
}

START_TEST(test_dropped_records_counted)
{
	start();
	cupti_fn.cuptiActivityGetNumDroppedRecords = fake_dropped;
	cupti__count_dropped();
	cupti__count_dropped();
	struct json_object *root = finish_and_load();
	ck_assert_int_eq(lost(root, "cupti_dropped"), 42);
	json_object_put(root);
}
END_TEST

/* CUPTI's clock runs 5 s ahead of ours, and `ahead_ns` more from when a test sets it */
static _Atomic uint64_t ahead_ns;

static CUptiResult fake_timestamp(uint64_t *t)
{
	*t = gt_clock_ns() + 5000000000ull + atomic_load(&ahead_ns);
	return CUPTI_SUCCESS;
}

START_TEST(test_calibrated_clock)
{
	struct json_object *k[4];
	struct buf b;

	start();
	cupti_fn.cuptiGetTimestamp = fake_timestamp;
	cupti__clock_refit();
	uint64_t host = gt_clock_ns();
	new_buf(&b);
	CUpti_ActivityKernel10 k1 = kernel(80, host + 5000000000ull, 2000, "shifted", 7);
	add(&b, &k1, sizeof(k1));
	ck_assert_int_eq(cupti__process_buffer(b.p, b.len), 1);
	uint64_t host_ts_us = host / 1000;

	struct json_object *root = finish_and_load();
	ck_assert_int_eq(find(root, "X", "kernel", k, 4), 1);
	/* the file's ts are microseconds of the host clock (relative to nothing) */
	double ts = num(k[0], "ts"), expect = (double)host_ts_us;
	ck_assert_msg(ts > expect - 50 && ts < expect + 50, "kernel at %.3f, expected %.3f", ts,
		      expect);
	ck_assert_double_eq_tol(num(k[0], "dur"), 2.0, 0.001);
	json_object_put(root);
}
END_TEST

/* CUPTI's clock 5 s ahead of ours, read late or early within a 2 us read as
 * the test says: the midpoint of the read is off by ~1 us either way. */
static bool read_late;

static CUptiResult skewed_timestamp(uint64_t *t)
{
	uint64_t spin = gt_clock_ns() + 2000;

	if (read_late)
		while (gt_clock_ns() < spin)
			;
	*t = gt_clock_ns() + 5000000000ull;
	while (gt_clock_ns() < spin)
		;
	return CUPTI_SUCCESS;
}

START_TEST(test_read_noise_never_stretches_durations)
{
	struct json_object *k[4];
	struct buf b;

	start();
	cupti_fn.cuptiGetTimestamp = skewed_timestamp;
	cupti__clock_refit();
	uint64_t begin = gt_clock_ns() + 5000000000ull;
	for (int i = 1; i <= 4; i++) {
		usleep(12000); /* fits come 10 ms apart at the least */
		read_late = i & 1;
		cupti__clock_refit();
	}
	/* 40 ms across four fits whose reads err 1 us late, early, late, early */
	new_buf(&b);
	CUpti_ActivityKernel10 k1 = kernel(81, begin, 40000000, "long", 7);
	add(&b, &k1, sizeof(k1));
	ck_assert_int_eq(cupti__process_buffer(b.p, b.len), 1);

	struct json_object *root = finish_and_load();
	ck_assert_int_eq(find(root, "X", "kernel", k, 4), 1);
	ck_assert_double_eq_tol(num(k[0], "dur"), 40000.0, 0.001);
	json_object_put(root);
}
END_TEST

START_TEST(test_never_before_its_launch)
{
	struct json_object *k[4], *h[4];
	struct buf b;

	start();
	uint64_t before = gt_clock_ns();
	api(RT, CB_LAUNCH, "cudaLaunchKernel", 90, 0, NULL);
	api(RT, CB_LAUNCH, "cudaLaunchKernel", 91, 0, NULL);
	api(RT, CB_LAUNCH, "cudaLaunchKernel", 92, 0, NULL);
	uint64_t after = gt_clock_ns();
	new_buf(&b);
	/* A clock error would put the first 30 us before the call began: moved to it. The
	 * next ran right after it (queued, launched before that moved end): it follows, as
	 * far. The third began while the first ran, after its own launch: left where the
	 * clock put it. (The first lasts 20 ms past the launches, however long they took:
	 * under ThreadSanitizer on a busy machine they took over 10 ms.) */
	uint64_t long_ns = (after - before) + 20000000;
	CUpti_ActivityKernel10 k1 = kernel(90, before - 30000, long_ns, "early", 7);
	CUpti_ActivityKernel10 k3 = kernel(92, after + 1000000, 100000, "beside", 7);
	CUpti_ActivityKernel10 k2 = kernel(91, before - 30000 + long_ns, 4000, "next", 7);
	add(&b, &k1, sizeof(k1));
	add(&b, &k3, sizeof(k3));
	add(&b, &k2, sizeof(k2));
	ck_assert_int_eq(cupti__process_buffer(b.p, b.len), 3);

	struct json_object *root = finish_and_load();
	ck_assert_int_eq(find(root, "X", "kernel", k, 4), 3);
	ck_assert_int_eq(find(root, "X", "cuda_runtime", h, 4), 3);
	struct json_object *early = by_name(k, 3, "early"), *next = by_name(k, 3, "next");
	struct json_object *beside = by_name(k, 3, "beside");
	struct json_object *launch = h[0];
	double early_end = num(early, "ts") + num(early, "dur");

	for (int i = 1; i < 3; i++)
		if (num(h[i], "ts") < num(launch, "ts"))
			launch = h[i];
	ck_assert(num(early, "ts") >= num(launch, "ts"));
	ck_assert_double_eq_tol(num(early, "ts"), num(launch, "ts"), 0.002);
	ck_assert_double_eq_tol(num(early, "dur"), (double)long_ns / 1000, 0.001);
	ck_assert(num(next, "ts") >= early_end);
	ck_assert_double_eq_tol(num(next, "ts"), early_end, 0.002); /* (or 1 ns on) */
	ck_assert_double_eq_tol(num(next, "dur"), 4.0, 0.002);
	ck_assert(i64(get(next, "args"), "clamped_ns") > 30000);
	ck_assert_double_eq_tol(num(beside, "ts"), (double)(after + 1000000) / 1000, 0.002);
	ck_assert(!has(get(beside, "args"), "clamped_ns"));
	json_object_put(root);
}
END_TEST

/* CUPTI's clock 5 s ahead of ours, stepped back by 3 ms once `stepped` is set */
static _Atomic bool stepped;
static uint64_t inside_ns;

static CUptiResult stepping_timestamp(uint64_t *t)
{
	*t = gt_clock_ns() + 5000000000ull - (atomic_load(&stepped) ? 3000000 : 0);
	return CUPTI_SUCCESS;
}

static void note_inside(void)
{
	inside_ns = gt_clock_ns();
}

START_TEST(test_work_just_before_the_fit_ahead_of_a_step_back)
{
	struct json_object *s[4], *k[4], *h[4];
	struct buf b;

	start();
	cupti_fn.cuptiGetTimestamp = stepping_timestamp;
	cupti__clock_refit();
	usleep(12000); /* fits come 10 ms apart at the least */
	/* a sync and a kernel just before the fit (A) that precedes the step: their CUPTI
	 * times are also where the step's segment (A to B), on B's side, would put a time
	 * read up to 3 ms after A. The segment before A holds them, measured: there, not
	 * 3 ms later (past the sync's call, its kernel after the sync returned) */
	api(RT, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, "cudaStreamSynchronize", 61,
	    0, note_inside);
	uint64_t sync_at = inside_ns;
	api(RT, CB_LAUNCH, "cudaLaunchKernel", 62, 0, note_inside);
	uint64_t kernel_at = inside_ns;
	cupti__clock_refit();
	usleep(12000);
	atomic_store(&stepped, true);
	usleep(12000);
	cupti__clock_refit();

	new_buf(&b);
	CUpti_ActivitySynchronization2 y = {
		.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
		.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE,
		.start = sync_at + 5000000000ull, .end = sync_at + 5000000000ull + 500,
		.correlationId = 61, .contextId = 1, .streamId = 7,
		.cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE,
	};
	CUpti_ActivityKernel10 k1 = kernel(62, kernel_at + 5000000000ull, 1000, "before", 7);
	add(&b, &y, sizeof(y));
	add(&b, &k1, sizeof(k1));
	ck_assert_int_eq(cupti__process_buffer(b.p, b.len), 2);

	struct json_object *root = finish_and_load();
	ck_assert_int_eq(find(root, "X", "cuda_sync", s, 4), 1);
	ck_assert_int_eq(find(root, "X", "kernel", k, 4), 1);
	ck_assert_int_eq(find(root, "X", "cuda_runtime", h, 4), 2);
	ck_assert_int_eq(i64(get(get(get(root, "gputrace"), "adjusted"), "clock_step"), "count"),
			 1);
	/* within the fits' reads of where they ran (3 ms off before) */
	double sync_ts = num(s[0], "ts"), kernel_ts = num(k[0], "ts");
	ck_assert_msg(fabs(sync_ts - (double)sync_at / 1000) < 20, "sync at %.3f, ran at %.3f",
		      sync_ts, (double)sync_at / 1000);
	ck_assert_msg(fabs(kernel_ts - (double)kernel_at / 1000) < 20,
		      "kernel at %.3f, ran at %.3f", kernel_ts, (double)kernel_at / 1000);
	json_object_put(root);
}
END_TEST

START_TEST(test_back_to_back_work_converted_a_fit_apart_never_overlaps)
{
	struct json_object *k[4];
	struct buf b;

	start();
	atomic_store(&ahead_ns, 0);
	cupti_fn.cuptiGetTimestamp = fake_timestamp;
	cupti__clock_refit();
	usleep(12000); /* fits come 10 ms apart at the least */
	cupti__clock_refit();
	/* read past the last fit: placed at the line's rate */
	uint64_t at = gt_clock_ns() + 5000000000ull + 1000000;
	new_buf(&b);
	CUpti_ActivityKernel10 k1 = kernel(63, at, 5000000, "first", 7);
	add(&b, &k1, sizeof(k1));
	ck_assert_int_eq(cupti__process_buffer(b.p, b.len), 1);
	/* CUPTI's clock gains 8 us (under a step: a rate the next fit measures), and the
	 * kernel queued behind the first, read after that fit, is placed at that rate,
	 * ~3 us earlier than the line put the first one's end: they overlapped */
	usleep(12000);
	atomic_store(&ahead_ns, 8000);
	cupti__clock_refit();
	new_buf(&b);
	CUpti_ActivityKernel10 k2 = kernel(64, at + 5000000, 2000, "second", 7);
	add(&b, &k2, sizeof(k2));
	ck_assert_int_eq(cupti__process_buffer(b.p, b.len), 1);

	struct json_object *root = finish_and_load();
	ck_assert_int_eq(find(root, "X", "kernel", k, 4), 2);
	struct json_object *first = by_name(k, 2, "first"), *second = by_name(k, 2, "second");
	double first_end = num(first, "ts") + num(first, "dur");

	ck_assert_msg(num(second, "ts") >= first_end, "second at %.3f, first ended at %.3f",
		      num(second, "ts"), first_end);
	ck_assert_double_eq_tol(num(second, "ts"), first_end, 0.002); /* (or 1 ns on) */
	/* its length at the measured rate (8 us in ~12 ms: 2 ns shorter) */
	ck_assert_double_eq_tol(num(second, "dur"), 2.0, 0.005);
	json_object_put(root);
	atomic_store(&ahead_ns, 0);
}
END_TEST

START_TEST(test_work_of_a_launch_still_running_at_the_end_goes_with_it)
{
	struct json_object *k[4], *h[4];
	struct buf b;

	start();
	/* 71 returned; 70's call is still running as the process ends (another thread,
	 * descheduled inside it): CUPTI's exit flush hands over both kernels. 70's call,
	 * returning after the end, is left out of the trace: its kernel too, not drawn
	 * without it */
	api(RT, CB_LAUNCH, "cudaLaunchKernel", 71, 0, NULL);
	CUpti_CallbackData d = { .callbackSite = CUPTI_API_ENTER, .functionName = "cudaLaunchKernel",
				 .correlationId = 70 };
	cupti__callback(NULL, RT, CB_LAUNCH, &d);
	uint64_t t0 = gt_clock_ns();
	new_buf(&b);
	CUpti_ActivityKernel10 k1 = kernel(71, t0, 1000, "returned", 7);
	CUpti_ActivityKernel10 k2 = kernel(70, t0 + 2000, 1000, "running", 7);
	add(&b, &k1, sizeof(k1));
	add(&b, &k2, sizeof(k2));
	ck_assert_int_eq(cupti__process_buffer(b.p, b.len), 2);

	struct json_object *root = finish_and_load();
	ck_assert_int_eq(find(root, "X", "cuda_runtime", h, 4), 1);
	ck_assert_int_eq(find(root, "X", "kernel", k, 4), 1);
	ck_assert_str_eq(str(k[0], "name"), "returned");
	ck_assert(flow_between(root, h[0], k[0]));
	ck_assert_int_eq(i64(get(root, "gputrace"), "events_lost"), 0);
	json_object_put(root);
}
END_TEST

static void driver_launch_inside(void)
{
	api(DRV, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel", 101, 0, NULL);
}

START_TEST(test_folded_nested_and_driver_calls)
{
	struct json_object *h[8], *d[8], *i[8];

	start();
	for (int n = 0; n < 50; n++)
		api(RT, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, "cudaGetDevice", 200 + n, 0,
		    NULL);
	for (int n = 0; n < 7; n++)
		api(DRV, CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent, "cuCtxGetCurrent", 300 + n, 0, NULL);
	/* the runtime's own driver call is covered by the runtime span */
	api(RT, CB_LAUNCH, "cudaLaunchKernel", 100, 0, driver_launch_inside);
	/* a driver call of the program's own is traced, with its error */
	api(DRV, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, "cuCtxSynchronize", 102, 700, NULL);

	struct json_object *root = finish_and_load();
	ck_assert_int_eq(find(root, "X", "cuda_runtime", h, 8), 1);
	ck_assert_str_eq(str(h[0], "name"), "cudaLaunchKernel");
	ck_assert_int_eq(find(root, "X", "cuda_driver", d, 8), 1);
	ck_assert_str_eq(str(d[0], "name"), "cuCtxSynchronize");
	ck_assert_int_eq(i64(get(d[0], "args"), "result"), 700);
	ck_assert_int_eq(find(root, "i", "cuda_runtime", i, 8), 1);
	ck_assert_str_eq(str(i[0], "name"), "folded CUDA API calls");
	ck_assert_int_eq(i64(get(i[0], "args"), "cudaGetDevice"), 50);
	ck_assert_int_eq(i64(get(i[0], "args"), "cuCtxGetCurrent"), 7);
	json_object_put(root);
}
END_TEST

/* A call CUPTI saw enter whose exit never came (a pthread_cancel inside it, where no
 * wrapper of gputrace's has a frame: a driver call, a static libcudart's runtime call):
 * drawn cancelled at the thread's next call of that API, which is drawn as usual, as is
 * a driver call of the program's own after the runtime's (its depth not left at 1). */
START_TEST(test_call_whose_exit_never_came_is_drawn_cancelled)
{
	struct json_object *h[8], *d[8];
	int result = 0;
	CUpti_CallbackData sync = { .callbackSite = CUPTI_API_ENTER,
				    .functionName = "cuCtxSynchronize",
				    .functionReturnValue = &result, .correlationId = 110 };
	CUpti_CallbackData rt_sync = { .callbackSite = CUPTI_API_ENTER,
				       .functionName = "cudaStreamSynchronize",
				       .functionReturnValue = &result, .correlationId = 120 };

	start();
	cupti__callback(NULL, DRV, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, &sync);
	usleep(20);
	api(DRV, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, "cuCtxSynchronize", 111, 0, NULL);
	cupti__callback(NULL, RT, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, &rt_sync);
	usleep(20);
	api(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, "cudaMalloc", 121, 0, NULL);
	api(DRV, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, "cuCtxSynchronize", 122, 0, NULL);

	struct json_object *root = finish_and_load();
	ck_assert_int_eq(find(root, "X", "cuda_driver", d, 8), 3);
	ck_assert_int_eq(find(root, "X", "cuda_runtime", h, 8), 2);
	ck_assert_int_eq(i64(get(d[0], "args"), "cancelled"), 1);
	ck_assert(!has(get(d[1], "args"), "cancelled") && !has(get(d[2], "args"), "cancelled"));
	ck_assert(!has(get(d[0], "args"), "result"));
	ck_assert_str_eq(str(h[0], "name"), "cudaStreamSynchronize");
	ck_assert_int_eq(i64(get(h[0], "args"), "cancelled"), 1);
	ck_assert_str_eq(str(h[1], "name"), "cudaMalloc");
	ck_assert(!has(get(h[1], "args"), "cancelled"));
	json_object_put(root);
}
END_TEST

/* What CUPTI's runtime callbacks would report for the call in progress. */
static void callbacks_inside(const char *fn)
{
	static uint32_t corr = 500;
	CUpti_CallbackData d = { .callbackSite = CUPTI_API_ENTER, .functionName = fn,
				 .correlationId = ++corr };
	int result = 0;

	d.functionReturnValue = &result;
	cupti__callback(NULL, RT, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, &d);
	d.callbackSite = CUPTI_API_EXIT;
	cupti__callback(NULL, RT, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, &d);
}

START_TEST(test_one_span_per_call)
{
	struct json_object *h[8];
	void *p;

	start();
	fake_cudart_hook = callbacks_inside;
	/* CUPTI's callbacks are not on: the wrapper is the source; a late
	 * callback of the same call (CUPTI started inside it) stays silent */
	ck_assert_int_eq(gt_rt2_cudaMalloc(&p, 64), 0);
	gt_rt2_cudaFree(p);
	/* CUPTI's callbacks are on: the wrapper only passes the call on */
	atomic_store(&cupti_rt_callbacks_on, true);
	ck_assert_int_eq(gt_rt2_cudaMalloc(&p, 64), 0);
	gt_rt2_cudaFree(p);
	atomic_store(&cupti_rt_callbacks_on, false);
	fake_cudart_hook = NULL;

	struct json_object *root = finish_and_load();
	int n = find(root, "X", "cuda_runtime", h, 8), mallocs = 0;
	for (int i = 0; i < n && i < 8; i++)
		mallocs += !strcmp(str(h[i], "name"), "cudaMalloc");
	ck_assert_int_eq(mallocs, 2);
	ck_assert_int_eq(n, 3); /* and the first cudaFree, through the wrapper */
	json_object_put(root);
}
END_TEST

/* ---- the hang watchdog's launch table (pending.c) ---- */

/* A driver call with its parameters, as CUPTI's driver callbacks give it. */
static void drv_call(CUpti_CallbackId cbid, const char *name, uint32_t corr, const void *params,
		     const char *symbol, int result)
{
	CUpti_CallbackData d = { .callbackSite = CUPTI_API_ENTER, .functionName = name,
				 .functionParams = params, .functionReturnValue = &result,
				 .correlationId = corr, .symbolName = symbol,
				 .context = (CUcontext)0x7000 };

	cupti__callback(NULL, DRV, cbid, &d);
	usleep(20);
	d.callbackSite = CUPTI_API_EXIT;
	cupti__callback(NULL, DRV, cbid, &d);
}

static void launch_on(uint32_t corr, CUstream s, int result)
{
	cuLaunchKernel_params p = { .gridDimX = 1, .blockDimX = 1, .hStream = s };

	drv_call(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel", corr, &p, "_Z4spinPi",
		 result);
}

struct listed {
	unsigned n;
	uint64_t corr[16];
	const char *name[16], *row[16];
};

static void note_listed(void *arg, const struct gt_pending_work *w)
{
	struct listed *l = arg;

	if (l->n < 16) {
		l->corr[l->n] = w->corr;
		l->name[l->n] = gt_str_get(w->name, NULL);
		l->row[l->n] = gt_str_get(w->row_name, NULL);
	}
	l->n++;
}

/* The correlation ids listed, as "11 12": what the report would name. */
static const char *listed(void)
{
	static char out[256];
	struct listed l = { 0 };
	size_t len = 0;

	cupti__pending(note_listed, &l);
	out[0] = 0;
	for (unsigned i = 0; i < l.n && i < 16; i++)
		len += (size_t)snprintf(out + len, sizeof(out) - len, "%s%llu", i ? " " : "",
					(unsigned long long)(l.corr[i] - gt_corr_foreign(GT_CORR_NS_CUPTI, 0)));
	return out;
}

START_TEST(test_watchdog_launch_table)
{
	CUstream s1 = (CUstream)0x1000, s2 = (CUstream)0x2000;
	cuMemcpyHtoDAsync_v2_params copy = { .ByteCount = 64, .hStream = s2 };
	cuStreamSynchronize_params sync1 = { .hStream = s1 };
	struct listed l = { 0 };
	struct buf b;

	start();
	/* this test is the watchdog: cupti__pending has one caller, the watchdog's
	 * thread (its table is static), which a synchronize below would start and
	 * which then looked every 100 ms beside the test's own calls (a data race
	 * under ThreadSanitizer when the test ran that long on a loaded host) */
	watchdog__end();
	gt_watchdog_on = true;
	cupti_drv_hooks = true; /* as the backend's init sets it from the watchdog's flag */
	atomic_store(&cupti_state, CUPTI_ON);
	launch_on(11, s1, 0);
	launch_on(12, s1, 0);
	launch_on(13, s2, 1); /* failed: nothing was queued */
	drv_call(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2, "cuMemcpyHtoDAsync_v2", 14, &copy,
		 NULL, 0);
	ck_assert_str_eq(listed(), "11 12 14");
	cupti__pending(note_listed, &l);
	/* demangled where the program has a C++ runtime (not this C test) */
	ck_assert(!strcmp(l.name[0], "spin(int*)") || !strcmp(l.name[0], "_Z4spinPi"));
	ck_assert_str_eq(l.name[2], "cuMemcpyHtoDAsync");

	/* the kernel's record, handed over on any thread, retires it */
	new_buf(&b);
	CUpti_ActivityKernel10 k = kernel(11, gt_clock_ns(), 100, "_Z4spinPi", 7);
	add(&b, &k, sizeof(k));
	cupti__retire_records(b.p, b.len);
	ck_assert_str_eq(listed(), "12 14");

	/* a stream synchronize that began after 12 returned: all of s1 before it is done,
	 * not what is launched after it, nor another stream's work */
	drv_call(CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, "cuStreamSynchronize", 15, &sync1,
		 NULL, 0);
	launch_on(16, s1, 0);
	ck_assert_str_eq(listed(), "14 16");
	/* a failed one says nothing */
	drv_call(CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, "cuStreamSynchronize", 17, &sync1,
		 NULL, 999);
	ck_assert_str_eq(listed(), "14 16");
	/* a context synchronize: everything of the context */
	drv_call(CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, "cuCtxSynchronize", 18, NULL, NULL, 0);
	ck_assert_str_eq(listed(), "");

	/* full: a launch whose slot holds one never retired replaces it, counted */
	ck_assert_uint_eq(atomic_load(&gt_pending_untracked), 0);
	launch_on(20, s2, 0);
	launch_on(20 + 4096, s2, 0);
	ck_assert_str_eq(listed(), "4116");
	ck_assert_uint_eq(atomic_load(&gt_pending_untracked), 1);

	gt_watchdog_on = false;
	cupti_drv_hooks = false;
	atomic_store(&cupti_state, CUPTI_UNAVAILABLE);
	json_object_put(finish_and_load());
}
END_TEST

static Suite *cupti_suite(void)
{
	Suite *s = suite_create("cupti");
	TCase *tc = tcase_create("records");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_kernels);
	tcase_add_test(tc, test_copies_and_memsets);
	tcase_add_test(tc, test_synchronization);
	tcase_add_test(tc, test_external_correlation_in_a_later_buffer);
	tcase_add_test(tc, test_graphs);
	tcase_add_test(tc, test_buffers_out_of_order);
	tcase_add_test(tc, test_record_without_timestamps);
	tcase_add_test(tc, test_dropped_records_counted);
	tcase_add_test(tc, test_calibrated_clock);
	tcase_add_test(tc, test_read_noise_never_stretches_durations);
	tcase_add_test(tc, test_never_before_its_launch);
	tcase_add_test(tc, test_work_just_before_the_fit_ahead_of_a_step_back);
	tcase_add_test(tc, test_work_of_a_launch_still_running_at_the_end_goes_with_it);
	tcase_add_test(tc, test_folded_nested_and_driver_calls);
	tcase_add_test(tc, test_one_span_per_call);
	tcase_add_test(tc, test_call_whose_exit_never_came_is_drawn_cancelled);
	tcase_add_test(tc, test_watchdog_launch_table);
	tcase_add_test(tc, test_back_to_back_work_converted_a_fit_apart_never_overlaps);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(cupti_suite)
