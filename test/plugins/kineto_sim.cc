// SPDX-License-Identifier: MIT
/*
 * KinetoSim: profilers written for Kineto's dynamic plug-in ABI (PR 1148),
 * as a vendor writes them: C++, against "KinetoDynamicPluginInterface.h"
 * (here gputrace's declarations of it, installed under Kineto's name), with
 * no knowledge of gputrace. One build per behaviour (-DKSIM_<variant>):
 *
 *   npu           the reference: query, create (logs the enabled types),
 *                 start, stop, processEvents emitting on a device "NPU 0"
 *                 (rows compute, copy): for i < $KSIM_KERNELS (3), at
 *                 start + i ms (UTC): host privateuse1_runtime
 *                 npuLaunchKernel +0..20 us (flow ASYNC_CPU_GPU 1+i start),
 *                 kernel npu_kernel_<i> +50 us, 100+10i us (flow end), copy
 *                 +300..340 us, fill +400..410 us, a gpu_user_annotation,
 *                 a GPU_PM_COUNTER sample npu_util {busy_pct, sm_active};
 *                 two cpu_ops joined by a FWD_BWD flow; metadata of every
 *                 JSON kind on the kernels
 *   late_info     the same, with addDeviceInfo/addResourceInfo after the events
 *   corr          push/pop: a device span npu_work per push, from push to
 *                 pop (UTC), with "External id" = the pushed id
 *   threads       processEvents adds events from 4 threads at once
 *   rev1          the PR's first revision: 56-byte interface and builder,
 *                 types numbered 0-14, nothing in query or create; the
 *                 reference batch with cuda_runtime calls and a cuda_sync
 *   newer         a later revision: every struct bigger than today's
 * broken ones:
 *   register_fails, create_fails, start_fails, process_fails (after two
 *   events), push_fails, wrong_size (a 40-byte interface), no_stop (no
 *   profilerStop), null_handle, bad_json (metadata that is not JSON, and
 *   JSON's edge cases), bad_calls (the builder misused), crash (a fault in
 *   processEvents after 5 kernels), process_hangs (processEvents never
 *   returns after 3 kernels), start_hangs (profilerStart never returns),
 *   late_call (the reference batch, then a kernel added through its builder
 *   in profilerDestroy, after processEvents returned), destroy_hangs
 *   (profilerDestroy never returns)
 *
 * $KSIM_ALL_TYPES: query names every type of the latest revision.
 * $KSIM_LONG_NAMES: device and compute row names longer than a row's name
 * holds, and a kernel metadata value (not JSON) longer than 4096 bytes, all
 * of 2-byte and 3-byte characters.
 * $KSIM_INSTANT_FLOW: the reference batch adds a cpu_instant_event f_instant
 * starting flow ASYNC_CPU_GPU 100, which ends at kernel f_kernel.
 * $KSIM_ROWS=N: the reference batch adds a kernel row_kernel_<r> on each of N
 * more resources of NPU 0 (ids 1000 + r, each named "row <r>" first), at
 * start + r us, 500 ns long.
 *
 * Every profiler call appends "<call> <details>" to $KSIM_LOG; "main" or
 * "other": whether the program's main thread made it.
 */
#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "KinetoDynamicPluginInterface.h"

namespace {

const int64_t US = 1000, MS = 1000000;

int64_t utc_now()
{
	return std::chrono::duration_cast<std::chrono::nanoseconds>(
		       std::chrono::system_clock::now().time_since_epoch())
		.count();
}

bool on_main()
{
	return syscall(SYS_gettid) == getpid();
}

std::mutex log_lock;

void note(const char *fmt, ...)
{
	const char *path = getenv("KSIM_LOG");
	char line[512];
	va_list ap;

	if (!path)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	std::lock_guard<std::mutex> g(log_lock);
	FILE *f = fopen(path, "a");
	if (!f)
		return;
	fprintf(f, "%s %s\n", line, on_main() ? "main" : "other");
	fclose(f);
}

[[maybe_unused]] int kernels()
{
	const char *k = getenv("KSIM_KERNELS");
	return k ? atoi(k) : 3;
}

struct Pushed {
	uint64_t id;
	int64_t push_utc, pop_utc;
	int32_t tid;
};

struct Sim {
	int64_t base = 0;
	int32_t main_tid = 0;
	int batch = 0;
	std::mutex lock;
	std::vector<Pushed> pushed;
};

[[maybe_unused]] thread_local std::vector<size_t> stack; // indexes into Sim::pushed

Sim *sim_of(KinetoPlugin_ProfilerHandle *h)
{
	return reinterpret_cast<Sim *>(h);
}

/* ---- the builder, as a vendor's code calls it ---- */

#ifdef KSIM_rev1
/* The first revision's builder: no addDeviceInfo. */
struct Builder {
	size_t unpaddedStructSize;
	KinetoPlugin_TraceBuilderHandle *pTraceBuilderHandle;
	int (*addEvent)(KinetoPlugin_TraceBuilderHandle *, const KinetoPlugin_ProfileEvent *);
	int (*setLastEventName)(KinetoPlugin_TraceBuilderHandle *, const char *);
	int (*setLastEventFlow)(KinetoPlugin_TraceBuilderHandle *,
				const KinetoPlugin_ProfileEventFlow *);
	int (*addLastEventMetadata)(KinetoPlugin_TraceBuilderHandle *, const char *, const char *);
	int (*addResourceInfo)(KinetoPlugin_TraceBuilderHandle *,
			       const KinetoPlugin_ProfileResourceInfo *);
};
static_assert(sizeof(Builder) == 56, "first revision builder");
/* its numbering */
const int CUDA_SYNC_REV1 = 13, GPU_PM_COUNTER_REV1 = 14;
#else
typedef KinetoPlugin_TraceBuilder Builder;
#endif

/* Hands s to call as this revision lays it out. A later revision's struct
 * has grown a field at its end (and says so in its size). */
template <typename T, typename Call> int send(T s, Call call)
{
#ifdef KSIM_newer
	struct {
		T v;
		uint64_t laterField;
	} newer;
	newer.v = s;
	newer.v.unpaddedStructSize = sizeof(newer);
	newer.laterField = ~0ull;
	return call(&newer.v);
#else
	return call(&s);
#endif
}

struct Out {
	const Builder *b;

	int event(int type, int64_t start, int64_t end, int32_t dev, int32_t res, const char *name)
	{
		KinetoPlugin_ProfileEvent e;
		memset(&e, 0, sizeof(e));
		e.unpaddedStructSize = KINETO_PLUGIN_PROFILE_EVENT_UNPADDED_STRUCT_SIZE;
		e.eventType = (KinetoPlugin_ProfileEventType)type;
		e.startTimeUtcNs = start;
		e.endTimeUtcNs = end;
		e.eventId = 1;
		e.deviceId = dev;
		e.resourceId = res;
		int rc = send(e, [this](const KinetoPlugin_ProfileEvent *p) {
			return b->addEvent(b->pTraceBuilderHandle, p);
		});
		if (rc)
			return rc;
		return b->setLastEventName(b->pTraceBuilderHandle, name);
	}

	int flow(int type, uint32_t id, bool start)
	{
		KinetoPlugin_ProfileEventFlow f;
		memset(&f, 0, sizeof(f));
		f.unpaddedStructSize = KINETO_PLUGIN_PROFILE_EVENT_FLOW_UNPADDED_STRUCT_SIZE;
		f.flowType = (KinetoPlugin_ProfileEventFlowType)type;
		f.flowId = id;
		f.isStartPoint = start;
		return send(f, [this](const KinetoPlugin_ProfileEventFlow *p) {
			return b->setLastEventFlow(b->pTraceBuilderHandle, p);
		});
	}

	int meta(const char *key, const char *value)
	{
		return b->addLastEventMetadata(b->pTraceBuilderHandle, key, value);
	}

	int device(int64_t id, const char *name, const char *label)
	{
#ifdef KSIM_rev1
		(void)id, (void)name, (void)label;
		return 0;
#else
		KinetoPlugin_ProfileDeviceInfo d;
		memset(&d, 0, sizeof(d));
		d.unpaddedStructSize = KINETO_PLUGIN_PROFILE_DEVICE_INFO_UNPADDED_STRUCT_SIZE;
		d.deviceId = id;
		d.sortIndex = id;
		d.pName = name;
		d.pLabel = label;
		return send(d, [this](const KinetoPlugin_ProfileDeviceInfo *p) {
			return b->addDeviceInfo(b->pTraceBuilderHandle, p);
		});
#endif
	}

	int resource(int32_t dev, int32_t id, int32_t order, const char *name)
	{
		KinetoPlugin_ProfileResourceInfo r;
		memset(&r, 0, sizeof(r));
		r.unpaddedStructSize = KINETO_PLUGIN_PROFILE_RESOURCE_INFO_UNPADDED_STRUCT_SIZE;
		r.deviceId = dev;
		r.resourceId = id;
		r.displayOrder = order;
		r.pName = name;
		return send(r, [this](const KinetoPlugin_ProfileResourceInfo *p) {
			return b->addResourceInfo(b->pTraceBuilderHandle, p);
		});
	}
};

const int32_t NPU = 0, COMPUTE = 1, COPY = 2;

[[maybe_unused]] void rows(Out &o)
{
	if (getenv("KSIM_LONG_NAMES")) {
		/* longer than a row's name holds: cut inside a character */
		std::string dev = "NP", queue = "q";

		for (int i = 0; i < 60; i++)
			dev += "\u00e9", queue += "\u20ac";
		o.device(NPU, dev.c_str(), "KinetoSim");
		o.resource(NPU, COMPUTE, 0, queue.c_str());
	} else {
		o.device(NPU, "NPU 0", "KinetoSim");
		o.resource(NPU, COMPUTE, 0, "compute");
	}
	o.resource(NPU, COPY, 1, "copy");
}

/* The reference batch (see the top of the file). */
[[maybe_unused]] void npu_batch(Out &o, Sim *s)
{
	int n = kernels();
	int64_t b = s->base;
#ifdef KSIM_rev1
	const int counter = GPU_PM_COUNTER_REV1;
	const int runtime = KINETO_PLUGIN_PROFILE_EVENT_TYPE_CUDA_RUNTIME; /* no privateuse1 yet */
#else
	const int counter = KINETO_PLUGIN_PROFILE_EVENT_TYPE_GPU_PM_COUNTER;
	const int runtime = KINETO_PLUGIN_PROFILE_EVENT_TYPE_PRIVATEUSE1_RUNTIME;
#endif

#ifndef KSIM_late_info
	rows(o);
#endif
	for (int r = 0; getenv("KSIM_ROWS") && r < atoi(getenv("KSIM_ROWS")); r++) {
		char name[32];

		snprintf(name, sizeof(name), "row %d", r);
		o.resource(NPU, 1000 + r, 10 + r, name);
		snprintf(name, sizeof(name), "row_kernel_%d", r);
		o.event(KINETO_PLUGIN_PROFILE_EVENT_TYPE_CONCURRENT_KERNEL, b + r * US,
			b + r * US + 500, NPU, 1000 + r, name);
	}
	for (int i = 0; i < n; i++) {
		int64_t at = b + i * MS;
		char name[32], value[64];

		snprintf(name, sizeof(name), "npu_kernel_%d", i);
		if (getenv("KSIM_RANGES"))
			o.event(KINETO_PLUGIN_PROFILE_EVENT_TYPE_USER_ANNOTATION, at - 10 * US,
				at + 30 * US, getpid(), s->main_tid, "npu step");
		o.event(runtime, at, at + 20 * US, getpid(), s->main_tid, "npuLaunchKernel");
		o.flow(KINETO_PLUGIN_PROFILE_EVENT_FLOW_TYPE_ASYNC_CPU_GPU, 1 + i, true);
		snprintf(value, sizeof(value), "\"%s\"", name);
		o.meta("kernel", value);

		o.event(KINETO_PLUGIN_PROFILE_EVENT_TYPE_CONCURRENT_KERNEL, at + 50 * US,
			at + (150 + 10 * i) * US, NPU, COMPUTE, name);
		o.flow(KINETO_PLUGIN_PROFILE_EVENT_FLOW_TYPE_ASYNC_CPU_GPU, 1 + i, false);
		o.meta("grid", "[64, 1, 1]");
		snprintf(value, sizeof(value), "%d", 32 + i);
		o.meta("registers", value);
		o.meta("occupancy", "0.75");
		o.meta("stream", "\"compute\"");
		o.meta("queued", "true");
		o.meta("context", "null");
		o.meta("shape", "{\"x\": [1, 2], \"y\": \"z\"}");
		o.meta("escaped", "\"tab\\there \\u00e9\"");
		if (getenv("KSIM_LONG_NAMES")) {
			/* not JSON, longer than a value is kept: cut inside a character */
			std::string v = "x";

			for (int j = 0; j < 2100; j++)
				v += "\u00e9";
			o.meta("cut_utf8", v.c_str());
		}

		o.event(KINETO_PLUGIN_PROFILE_EVENT_TYPE_GPU_MEMCPY, at + 300 * US, at + 340 * US, NPU,
			COPY, "Memcpy HtoD");
		snprintf(value, sizeof(value), "%d", 4096 * (i + 1));
		o.meta("bytes", value);
		o.meta("kind", "\"HtoD\"");

		o.event(KINETO_PLUGIN_PROFILE_EVENT_TYPE_GPU_MEMSET, at + 400 * US, at + 410 * US, NPU,
			COPY, "Memset");
		o.meta("bytes", "512");

		o.event(counter, at, at, NPU, 0, "npu_util");
		snprintf(value, sizeof(value), "%g", 12.5 * (i + 1));
		o.meta("busy_pct", value);
		snprintf(value, sizeof(value), "%d", 10 * (i + 1));
		o.meta("sm_active", value);
		o.meta("note", "\"not a number: not a series\"");
	}
	o.event(KINETO_PLUGIN_PROFILE_EVENT_TYPE_GPU_USER_ANNOTATION, b + 40 * US,
		b + (n ? (n - 1) * MS + 200 * US : 200 * US), NPU, COMPUTE, "npu_region");
	/* a forward op and its backward, on the main thread */
	o.event(KINETO_PLUGIN_PROFILE_EVENT_TYPE_CPU_OP, b + 500 * US, b + 600 * US, getpid(),
		s->main_tid, "aten::mm");
	o.flow(KINETO_PLUGIN_PROFILE_EVENT_FLOW_TYPE_FWD_BWD, 77, true);
	o.event(KINETO_PLUGIN_PROFILE_EVENT_TYPE_CPU_OP, b + 700 * US, b + 900 * US, getpid(),
		s->main_tid, "MmBackward0");
	o.flow(KINETO_PLUGIN_PROFILE_EVENT_FLOW_TYPE_FWD_BWD, 77, false);
	if (getenv("KSIM_INSTANT_FLOW")) {
		/* a flow from an instant on the main thread to a kernel */
		o.event(KINETO_PLUGIN_PROFILE_EVENT_TYPE_CPU_INSTANT_EVENT, b + 800 * US,
			b + 800 * US, getpid(), s->main_tid, "f_instant");
		o.flow(KINETO_PLUGIN_PROFILE_EVENT_FLOW_TYPE_ASYNC_CPU_GPU, 100, true);
		o.event(KINETO_PLUGIN_PROFILE_EVENT_TYPE_CONCURRENT_KERNEL, b + 850 * US,
			b + 870 * US, NPU, COMPUTE, "f_kernel");
		o.flow(KINETO_PLUGIN_PROFILE_EVENT_FLOW_TYPE_ASYNC_CPU_GPU, 100, false);
	}
#ifdef KSIM_rev1
	o.event(CUDA_SYNC_REV1, b + 950 * US, b + 960 * US, NPU, COMPUTE, "npuSynchronize");
#endif
#ifdef KSIM_late_info
	/* long enough for gputrace to have written the rows under their first names */
	if (getenv("KSIM_INFO_DELAY_MS"))
		std::this_thread::sleep_for(std::chrono::milliseconds(atoi(getenv("KSIM_INFO_DELAY_MS"))));
	rows(o);
#endif
}

/* ---- the profiler ---- */

std::atomic<int> created;

int create(KinetoPlugin_ProfilerCreate_Params *p)
{
	std::string types;

#ifndef KSIM_rev1
	for (size_t i = 0; i < p->enabledActivityTypesMaxLen; i++)
		types += " " + std::to_string((int)p->pEnabledActivityTypes[i]);
#endif
	note("create size=%zu types=%s", p->unpaddedStructSize, types.empty() ? " -" : types.c_str());
#ifdef KSIM_create_fails
	return -1;
#endif
	Sim *s = new Sim;
	s->main_tid = (int32_t)syscall(SYS_gettid);
	created++;
#ifdef KSIM_null_handle
	delete s;
	p->pProfilerHandle = nullptr;
	return 0;
#endif
	p->pProfilerHandle = reinterpret_cast<KinetoPlugin_ProfilerHandle *>(s);
	return 0;
}

const Builder *kept; /* a builder used after processEvents returned */
#ifdef KSIM_late_call
const Builder *kept_late; /* the reference batch's builder, used after it */
#endif

int destroy(KinetoPlugin_ProfilerDestroy_Params *p)
{
	note("destroy");
	if (kept)
		note("rc stale-builder %d", kept->addEvent(kept->pTraceBuilderHandle, nullptr));
#ifdef KSIM_destroy_hangs
	for (;;)
		pause(); /* a vendor library stuck as it ends */
#endif
#ifdef KSIM_late_call
	/* a collector of the profiler's handing a kernel over late */
	note("rc late-event %d",
	     Out{ kept_late }.event(KINETO_PLUGIN_PROFILE_EVENT_TYPE_CONCURRENT_KERNEL,
				    utc_now() - MS, utc_now() - MS + 10 * US, NPU, COMPUTE, "late"));
#endif
	delete sim_of(p->pProfilerHandle);
	return 0;
}

int query(KinetoPlugin_ProfilerQuery_Params *p)
{
	note("query handle=%s size=%zu", p->pProfilerHandle ? "set" : "null", p->unpaddedStructSize);
	strncpy(p->pProfilerName, "KinetoSim", p->profilerNameMaxLen);
	p->pProfilerName[p->profilerNameMaxLen] = '\0';
#ifndef KSIM_rev1
	static const KinetoPlugin_ProfileEventType mine[] = {
		KINETO_PLUGIN_PROFILE_EVENT_TYPE_PRIVATEUSE1_RUNTIME,
		KINETO_PLUGIN_PROFILE_EVENT_TYPE_CONCURRENT_KERNEL,
		KINETO_PLUGIN_PROFILE_EVENT_TYPE_GPU_MEMCPY,
		KINETO_PLUGIN_PROFILE_EVENT_TYPE_GPU_MEMSET,
		KINETO_PLUGIN_PROFILE_EVENT_TYPE_GPU_USER_ANNOTATION,
		KINETO_PLUGIN_PROFILE_EVENT_TYPE_CPU_OP,
		KINETO_PLUGIN_PROFILE_EVENT_TYPE_GPU_PM_COUNTER,
	};
	if (p->unpaddedStructSize >= KINETO_PLUGIN_PROFILER_QUERY_PARAMS_UNPADDED_STRUCT_SIZE &&
	    p->pSupportedActivityTypes)
		for (size_t i = 0; i < sizeof(mine) / sizeof(mine[0]) &&
				   i < p->supportedActivityTypesMaxLen;
		     i++)
			p->pSupportedActivityTypes[i] = mine[i];
	/* KSIM_ALL_TYPES: every type of the latest revision, as a profiler of
	 * everything would say */
	if (getenv("KSIM_ALL_TYPES") && p->pSupportedActivityTypes)
		for (size_t i = 1; i < KINETO_PLUGIN_PROFILE_EVENT_NUM_TYPES &&
				   i <= p->supportedActivityTypesMaxLen;
		     i++)
			p->pSupportedActivityTypes[i - 1] = (KinetoPlugin_ProfileEventType)i;
	/* KSIM_RANGES: user annotations around the launches too */
	size_t nmine = sizeof(mine) / sizeof(mine[0]);
	if (getenv("KSIM_RANGES") && p->pSupportedActivityTypes &&
	    nmine < p->supportedActivityTypesMaxLen)
		p->pSupportedActivityTypes[nmine] = KINETO_PLUGIN_PROFILE_EVENT_TYPE_USER_ANNOTATION;
#endif
	return 0;
}

int start(KinetoPlugin_ProfilerStart_Params *p)
{
	Sim *s = sim_of(p->pProfilerHandle);

#ifdef KSIM_start_fails
	note("start");
	return 3;
#endif
#ifdef KSIM_start_hangs
	note("start");
	for (;;)
		pause(); /* a vendor library stuck as it starts */
#endif
	s->base = utc_now();
	note("start utc=%lld", (long long)s->base);
	return 0;
}

int stop(KinetoPlugin_ProfilerStop_Params *p)
{
	note("stop");
	(void)p;
	return 0;
}

#ifdef KSIM_threads
void threads_batch(Out &o, Sim *s)
{
	std::mutex describing; // "last event" is the builder's: one description at a time
	std::vector<std::thread> ts;

	rows(o);
	for (int t = 0; t < 4; t++)
		ts.emplace_back([&, t] {
			for (int i = 0; i < 250; i++) {
				char name[32];
				std::lock_guard<std::mutex> g(describing);

				snprintf(name, sizeof(name), "t%d_kernel", t);
				int64_t at = s->base + (t * 250 + i) * 10 * US;
				o.event(KINETO_PLUGIN_PROFILE_EVENT_TYPE_CONCURRENT_KERNEL, at,
					at + 5 * US, NPU, t % 2 ? COPY : COMPUTE, name);
				o.meta("i", std::to_string(i).c_str());
			}
		});
	for (auto &t : ts)
		t.join();
}
#endif

#if defined(KSIM_corr) || defined(KSIM_push_fails)
void corr_batch(Out &o, Sim *s)
{
	std::lock_guard<std::mutex> g(s->lock);

	rows(o);
	for (const Pushed &p : s->pushed) {
		char id[32];

		o.event(KINETO_PLUGIN_PROFILE_EVENT_TYPE_CONCURRENT_KERNEL, p.push_utc, p.pop_utc, NPU,
			COMPUTE, "npu_work");
		snprintf(id, sizeof(id), "%llu", (unsigned long long)p.id);
		o.meta("External id", id);
		/* a push its pop never followed is named: the span above ends at 0 */
		note("pushed %llu tid %d%s", (unsigned long long)p.id, p.tid,
		     p.pop_utc ? "" : " unpopped");
	}
	s->pushed.clear();
}

int push(KinetoPlugin_ProfilerPushCorrelationId_Params *p)
{
	Sim *s = sim_of(p->pProfilerHandle);
	std::lock_guard<std::mutex> g(s->lock);

#ifdef KSIM_push_fails
	return 9;
#endif
	stack.push_back(s->pushed.size());
	s->pushed.push_back(Pushed{ p->correlationId, utc_now(), 0, (int32_t)syscall(SYS_gettid) });
	return 0;
}

int pop(KinetoPlugin_ProfilerPopCorrelationId_Params *p)
{
	Sim *s = sim_of(p->pProfilerHandle);
	std::lock_guard<std::mutex> g(s->lock);

	if (stack.empty()) {
		note("pop without push");
		return 0;
	}
	s->pushed[stack.back()].pop_utc = utc_now();
	stack.pop_back();
	return 0;
}
#endif

#ifdef KSIM_bad_json
void bad_json_batch(Out &o, Sim *s)
{
	static const char *const values[] = {
		"not json", "{\"a\":", "\"unterminated", "\xff\xfe", "[1,2]]", "NaN", "01", "+1",
		"'single'", "\"ctl\x01\"", "[1,]", "{\"k\" 1}", "tru", "1.", "\"bad \\x escape\"",
		"\"\\ud800 lone surrogate escape\"", /* valid JSON text */
		"1e400", "-0", "  [ ]  ", "{}", "\"\\u00e9\"", "12345678901234567890123",
	};
	std::string deep(64, '['), too_deep(65, '[');

	deep += std::string(64, ']');
	too_deep += std::string(65, ']');
	rows(o);
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		char name[32];

		snprintf(name, sizeof(name), "bad_%zu", i);
		o.event(KINETO_PLUGIN_PROFILE_EVENT_TYPE_CONCURRENT_KERNEL, s->base + (int64_t)i * US,
			s->base + (int64_t)i * US + 500, NPU, COMPUTE, name);
		o.meta("value", values[i]);
	}
	o.event(KINETO_PLUGIN_PROFILE_EVENT_TYPE_CONCURRENT_KERNEL, s->base + 100 * US,
		s->base + 101 * US, NPU, COMPUTE, "deep");
	o.meta("deep", deep.c_str());
	o.meta("too_deep", too_deep.c_str());
	/* more metadata than an event holds (17 args): the first 17 stay */
	o.event(KINETO_PLUGIN_PROFILE_EVENT_TYPE_CONCURRENT_KERNEL, s->base + 200 * US,
		s->base + 201 * US, NPU, COMPUTE, "many");
	for (int i = 0; i < 20; i++)
		o.meta(("k" + std::to_string(i)).c_str(), std::to_string(i).c_str());
}
#endif

#ifdef KSIM_bad_calls
void bad_calls_batch(Out &o, Sim *s)
{
	const Builder *b = o.b;
	KinetoPlugin_TraceBuilderHandle *h = b->pTraceBuilderHandle;
	KinetoPlugin_ProfileEvent small;
	KinetoPlugin_ProfileEventFlow flow;

	memset(&small, 0, sizeof(small));
	memset(&flow, 0, sizeof(flow));
	/* before any event: the last-event calls are refused */
	note("rc name-first %d", b->setLastEventName(h, "x"));
	note("rc meta-first %d", b->addLastEventMetadata(h, "k", "1"));
	note("rc null-event %d", b->addEvent(h, nullptr));
	small.unpaddedStructSize = 24; /* an event struct that is not one */
	small.eventType = KINETO_PLUGIN_PROFILE_EVENT_TYPE_CONCURRENT_KERNEL;
	note("rc small-event %d", b->addEvent(h, &small));
	rows(o);
	note("rc ok-event %d", o.event(KINETO_PLUGIN_PROFILE_EVENT_TYPE_CONCURRENT_KERNEL,
				       s->base, s->base + 10 * US, NPU, COMPUTE, "good"));
	note("rc null-name %d", b->setLastEventName(h, nullptr));
	note("rc null-meta %d", b->addLastEventMetadata(h, "k", nullptr));
	flow.unpaddedStructSize = 8;
	note("rc small-flow %d", b->setLastEventFlow(h, &flow));
	note("rc null-device %d", b->addDeviceInfo(h, nullptr));
	/* a time UTC cannot place (before the clock's zero) */
	note("rc zero-time %d", o.event(KINETO_PLUGIN_PROFILE_EVENT_TYPE_CONCURRENT_KERNEL, 0, 10,
				       NPU, COMPUTE, "at_zero"));
	/* end before start: drawn with no duration, as Kineto does */
	note("rc backwards %d", o.event(KINETO_PLUGIN_PROFILE_EVENT_TYPE_CONCURRENT_KERNEL,
				       s->base + 50 * US, s->base + 40 * US, NPU, COMPUTE,
				       "backwards"));
	/* a type no revision has: a kernel, as Kineto takes it */
	note("rc unknown-type %d", o.event(99, s->base + 60 * US, s->base + 70 * US, NPU, COMPUTE,
					  "unknown_type"));
	/* times that are no time of this run: INT64_MAX, and an end there */
	note("rc far-start %d", o.event(KINETO_PLUGIN_PROFILE_EVENT_TYPE_CONCURRENT_KERNEL,
				       INT64_MAX - 10, INT64_MAX, NPU, COMPUTE, "far_start"));
	note("rc far-end %d", o.event(KINETO_PLUGIN_PROFILE_EVENT_TYPE_CONCURRENT_KERNEL,
				     s->base + 80 * US, INT64_MAX, NPU, COMPUTE, "far_end"));
	/* a row name with no NUL, right before an unmapped page: a name is kept
	 * to 95 bytes, so no more is read (4096: the bytes and the guard page) */
	char *page = static_cast<char *>(mmap(nullptr, 2 * 4096, PROT_READ | PROT_WRITE,
					      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
	mprotect(page + 4096, 4096, PROT_NONE);
	memset(page, 'u', 4096);
	note("rc unterminated-row %d", o.resource(NPU, 9, 9, page));
	note("rc on-unterminated-row %d",
	     o.event(KINETO_PLUGIN_PROFILE_EVENT_TYPE_CONCURRENT_KERNEL, s->base + 90 * US,
		     s->base + 95 * US, NPU, 9, "on_unterminated_row"));
}
#endif

#ifdef KSIM_crash
/* A real fault (SIGSEGV), not a sanitizer's report of one. */
__attribute__((no_sanitize("undefined"), noinline)) void fault()
{
	volatile int *volatile bug = nullptr;

	*bug = 1;
}
#endif

int process(KinetoPlugin_ProfilerProcessEvents_Params *p)
{
	Sim *s = sim_of(p->pProfilerHandle);
	Out o{ reinterpret_cast<const Builder *>(p->pTraceBuilder) };

	note("process batch=%d builder=%zu", ++s->batch, o.b->unpaddedStructSize);
#if defined(KSIM_threads)
	threads_batch(o, s);
#elif defined(KSIM_corr) || defined(KSIM_push_fails)
	corr_batch(o, s);
#elif defined(KSIM_bad_json)
	bad_json_batch(o, s);
#elif defined(KSIM_bad_calls)
	bad_calls_batch(o, s);
	kept = o.b;
#elif defined(KSIM_process_fails)
	rows(o);
	o.event(KINETO_PLUGIN_PROFILE_EVENT_TYPE_CONCURRENT_KERNEL, s->base, s->base + 10 * US, NPU,
		COMPUTE, "before_failure_0");
	o.event(KINETO_PLUGIN_PROFILE_EVENT_TYPE_CONCURRENT_KERNEL, s->base + 20 * US,
		s->base + 30 * US, NPU, COMPUTE, "before_failure_1");
	return 7;
#elif defined(KSIM_process_hangs)
	rows(o);
	for (int i = 0; i < 3; i++)
		o.event(KINETO_PLUGIN_PROFILE_EVENT_TYPE_CONCURRENT_KERNEL, s->base + i * 10 * US,
			s->base + i * 10 * US + 5 * US, NPU, COMPUTE, "before_hang");
	for (;;)
		pause(); /* a vendor library stuck at exit */
#elif defined(KSIM_crash)
	rows(o);
	for (int i = 0; i < 5; i++)
		o.event(KINETO_PLUGIN_PROFILE_EVENT_TYPE_CONCURRENT_KERNEL, s->base + i * 10 * US,
			s->base + i * 10 * US + 5 * US, NPU, COMPUTE, "before_crash");
	fault(); /* the plug-in's bug */
#else
	npu_batch(o, s);
#endif
#ifdef KSIM_late_call
	kept_late = o.b;
#endif
	return 0;
}

} // namespace

/* ---- registration ---- */

#ifdef KSIM_rev1
struct InterfaceRev1 {
	size_t unpaddedStructSize;
	int (*profilerCreate)(KinetoPlugin_ProfilerCreate_Params *);
	int (*profilerDestroy)(KinetoPlugin_ProfilerDestroy_Params *);
	int (*profilerQuery)(KinetoPlugin_ProfilerQuery_Params *);
	int (*profilerStart)(KinetoPlugin_ProfilerStart_Params *);
	int (*profilerStop)(KinetoPlugin_ProfilerStop_Params *);
	int (*profilerProcessEvents)(KinetoPlugin_ProfilerProcessEvents_Params *);
};
static_assert(sizeof(InterfaceRev1) == 56, "first revision interface");
#endif

#ifdef KSIM_newer
struct InterfaceNewer {
	KinetoPlugin_ProfilerInterface v;
	int (*laterCall)(void *);
	int (*anotherLaterCall)(void *);
};
#endif

int KinetoPlugin_register(const KinetoPlugin_Registry *r)
{
	note("register size=%zu", r->unpaddedStructSize);
#ifdef KSIM_rev1
	InterfaceRev1 i;
	memset(&i, 0, sizeof(i));
	i.unpaddedStructSize = sizeof(i);
	i.profilerCreate = create;
	i.profilerDestroy = destroy;
	i.profilerQuery = query;
	i.profilerStart = start;
	i.profilerStop = stop;
	i.profilerProcessEvents = process;
	return r->registerProfiler(r->pRegistryHandle,
				   reinterpret_cast<const KinetoPlugin_ProfilerInterface *>(&i));
#else
	KinetoPlugin_ProfilerInterface i; /* on the stack: the host copies it */
	memset(&i, 0, sizeof(i));
	i.unpaddedStructSize = KINETO_PLUGIN_PROFILER_INTERFACE_UNPADDED_STRUCT_SIZE;
	i.profilerCreate = create;
	i.profilerDestroy = destroy;
	i.profilerQuery = query;
	i.profilerStart = start;
	i.profilerStop = stop;
	i.profilerProcessEvents = process;
#if defined(KSIM_corr) || defined(KSIM_push_fails)
	i.profilerPushCorrelationId = push;
	i.profilerPopCorrelationId = pop;
#endif
#ifdef KSIM_no_stop
	i.profilerStop = nullptr;
#endif
#ifdef KSIM_wrong_size
	i.unpaddedStructSize = 40;
#endif
#ifdef KSIM_newer
	InterfaceNewer n;
	n.v = i;
	n.v.unpaddedStructSize = sizeof(n);
	n.laterCall = nullptr;
	n.anotherLaterCall = nullptr;
	int rc = r->registerProfiler(r->pRegistryHandle, &n.v);
#else
	int rc = r->registerProfiler(r->pRegistryHandle, &i);
#endif
	note("registerProfiler rc=%d", rc);
#ifdef KSIM_register_fails
	return 5;
#endif
	return 0;
#endif
}
