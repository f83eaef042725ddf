// SPDX-License-Identifier: MIT
/*
 * Host of Kineto's dynamic plug-ins (ABI: backends/plugins/kineto_plugin.h,
 * PR 1148 revision 92fa2ffc): a profiler written for the PyTorch profiler
 * records into gputrace's trace, unchanged and unrebuilt, in any program.
 *
 * When each call is made (README, "Kineto's plug-ins"):
 *   at gputrace's start, on the program's first thread, per plug-in file:
 *     KinetoPlugin_register -> registerProfiler (once per profiler);
 *   then per profiler, as Kineto drives it:
 *     profilerQuery (no profiler yet)     its name, the types it supports;
 *     profilerCreate                      the supported types that
 *                                         GPUTRACE_ACTIVITIES enables;
 *     profilerQuery (the created profiler, as the ABI documents the call);
 *     profilerStart, on host.c's caller thread, bounded (while paused
 *                                         between capture windows: not yet);
 *   with capture windows: as each closes, profilerStop, profilerProcessEvents
 *     (its events land in that window's file), and as the next opens,
 *     profilerStart; for the thread that marks a range window, else for
 *     the drain thread, on host.c's caller thread (plugins_window);
 *   while the program runs: profilerPushCorrelationId / Pop around every
 *     launch-class call gputrace traces, on the calling thread (when the
 *     plug-in has both);
 *   only with GPUTRACE_KINETO_CYCLE_MS=N: every N ms, on a thread of
 *     gputrace's: profilerStop, profilerProcessEvents, profilerStart;
 *   at exit, on host.c's caller thread, which the exiting thread waits
 *   for (bounded: a call stuck there costs the profiler, not the exit),
 *   while the drain thread still writes: profilerStop, profilerProcessEvents;
 *   in the final drain cycle: profilerDestroy.
 * Every call is made under the host's calls lock except push/pop. A call
 * that fails costs one line naming the file and the call, and the
 * profiler is never called again (as for gputrace's own plug-ins).
 *
 * Revisions: every struct starts with its size. An interface of 88 bytes or
 * more is the latest revision's (more: a newer one, whose extra calls are
 * not read); 56 bytes is the first revision's (kineto_internal.h); any other
 * size is refused. Structs gputrace hands out carry the latest sizes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backends/plugins/kineto_internal.h"
#include "inject/clock.h"
#include "inject/config.h"
#include "inject/extcorr.h"
#include "inject/state.h"
#include "inject/tables.h"

GT_TABLE_SHARED(struct kineto_prof, kineto_profs, PLUGINS_MAX);

#define CORR_WAIT_MS 100 /* stop waits this long for push/pop calls under way */

/* ---- types ---- */

#define T(id) KINETO_PLUGIN_PROFILE_EVENT_TYPE_##id
const struct kineto_type kineto_types[KINETO_TYPES] = {
	[T(INVALID)] = { "kernel", GT_KIND(KERNEL), K_DEVICE },
	[T(CPU_OP)] = { "cpu_op", GT_KIND(ANNOTATION), K_HOST },
	[T(USER_ANNOTATION)] = { "user_annotation", GT_KIND(ANNOTATION), K_HOST },
	[T(GPU_USER_ANNOTATION)] = { "gpu_user_annotation", GT_KIND(ANNOTATION), K_DEVICE },
	[T(GPU_MEMCPY)] = { "gpu_memcpy", GT_KIND(MEMCPY), K_DEVICE },
	[T(GPU_MEMSET)] = { "gpu_memset", GT_KIND(MEMSET), K_DEVICE },
	[T(CONCURRENT_KERNEL)] = { "kernel", GT_KIND(KERNEL), K_DEVICE },
	[T(EXTERNAL_CORRELATION)] = { "external_correlation", GT_KIND(RUNTIME), K_EITHER },
	[T(CUDA_RUNTIME)] = { "cuda_runtime", GT_KIND(RUNTIME), K_HOST },
	[T(CUDA_DRIVER)] = { "cuda_driver", GT_KIND(DRIVER), K_HOST },
	[T(CPU_INSTANT_EVENT)] = { "cpu_instant_event", GT_KIND(ANNOTATION), K_HOST_INSTANT },
	[T(PYTHON_FUNCTION)] = { "python_function", GT_KIND(ANNOTATION), K_HOST },
	[T(OVERHEAD)] = { "overhead", GT_KIND(OVERHEAD), K_EITHER },
	[T(MTIA_RUNTIME)] = { "mtia_runtime", GT_KIND(RUNTIME), K_HOST },
	[T(MTIA_CCP_EVENTS)] = { "mtia_ccp_events", GT_KIND(KERNEL), K_DEVICE },
	[T(MTIA_INSIGHT)] = { "mtia_insight", GT_KIND(OVERHEAD), K_EITHER },
	[T(CUDA_SYNC)] = { "cuda_sync", GT_KIND(SYNC), K_EITHER },
	[T(GLOW_RUNTIME)] = { "glow_runtime", GT_KIND(RUNTIME), K_HOST },
	[T(CUDA_PROFILER_RANGE)] = { "cuda_profiler_range", GT_KIND(ANNOTATION), K_EITHER },
	[T(HPU_OP)] = { "hpu_op", GT_KIND(RUNTIME), K_HOST },
	[T(XPU_RUNTIME)] = { "xpu_runtime", GT_KIND(RUNTIME), K_HOST },
	[T(COLLECTIVE_COMM)] = { "collective_comm", GT_KIND(KERNEL), K_EITHER },
	[T(GPU_PM_COUNTER)] = { "gpu_pm_counter", GT_KIND(COUNTER), K_COUNTER },
	[T(PRIVATEUSE1_RUNTIME)] = { "privateuse1_runtime", GT_KIND(RUNTIME), K_HOST },
	[T(PRIVATEUSE1_DRIVER)] = { "privateuse1_driver", GT_KIND(DRIVER), K_HOST },
};

int kineto__type(int value, bool rev1)
{
	if (rev1 && value == 13)
		return T(CUDA_SYNC);
	if (rev1 && value == 14)
		return T(GPU_PM_COUNTER);
	if (value <= 0 || value >= (rev1 ? 13 : KINETO_TYPES))
		return T(CONCURRENT_KERNEL);
	return value;
}

/* A latest-numbered type as the first revision numbers it, or 0. */
static int rev1_value(int type)
{
	if (type == T(CUDA_SYNC))
		return 13;
	if (type == T(GPU_PM_COUNTER))
		return 14;
	return type < 13 ? type : 0;
}

/* A type value the plug-in gave, in the latest numbering, or 0. */
static int known_type(int value, bool rev1)
{
	if (value <= 0 || value >= (rev1 ? KINETO_REV1_TYPES : KINETO_TYPES))
		return 0;
	return kineto__type(value, rev1);
}
#undef T

/* ---- failures ---- */

/* One line naming the file, the profiler and the call; never called again. */
static void kineto__fail(struct kineto_prof *k, const char *call, int rc, const char *why)
{
	struct plugin *p = k->p;

	atomic_store(&k->corr_on, false);
	if (atomic_exchange(&p->reported, true))
		; /* said already: a call given up on that failed later */
	else if (why)
		pr_err("plug-in %s (%s): %s() %s; plug-in disabled, tracing goes on", p->path,
		       k->name, call, why);
	else
		pr_err("plug-in %s (%s): %s() returned %d; plug-in disabled, tracing goes on",
		       p->path, k->name, call, rc);
	plugin__fail(p, call, -EIO);
}

/* ---- correlation push/pop (program threads) ---- */

static void corr_update(void);

/* A push or pop failed on a program thread: the line now, the rest at the
 * profiler's next call under the lock. */
static void corr_failed(struct kineto_prof *k, const char *call, int rc)
{
	if (atomic_exchange(&k->failed, true))
		return;
	atomic_store(&k->corr_on, false);
	corr_update();
	pr_err("plug-in %s (%s): %s() returned %d; plug-in disabled, tracing goes on", k->p->path,
	       k->name, call, rc);
}

static uint32_t corr_push(uint64_t id)
{
	uint32_t pushed = 0;

	for (unsigned i = 0; i < PLUGINS_MAX; i++) {
		struct kineto_prof *k = &kineto_profs[i];

		if (!atomic_load_explicit(&k->corr_on, memory_order_relaxed))
			continue;
		atomic_fetch_add(&k->corr_inside, 1);
		if (atomic_load(&k->corr_on)) {
			struct KinetoPlugin_ProfilerPushCorrelationId_Params params = {
				KINETO_PLUGIN_PROFILER_PUSH_CORRELATION_ID_PARAMS_UNPADDED_STRUCT_SIZE,
				id, k->handle
			};
			int rc = k->ops.profilerPushCorrelationId(&params);

			if (rc)
				corr_failed(k, "profilerPushCorrelationId", rc);
			else
				pushed |= 1u << i;
		}
		atomic_fetch_sub(&k->corr_inside, 1);
	}
	return pushed;
}

/* Only to those pushed to, so a profiler that started listening between
 * the two never sees a pop without its push. */
static void corr_pop(uint32_t pushed)
{
	while (pushed) {
		unsigned i = (unsigned)__builtin_ctz(pushed);
		struct kineto_prof *k = &kineto_profs[i];

		pushed &= pushed - 1;
		atomic_fetch_add(&k->corr_inside, 1);
		if (atomic_load(&k->corr_on)) {
			struct KinetoPlugin_ProfilerPopCorrelationId_Params params = {
				KINETO_PLUGIN_PROFILER_POP_CORRELATION_ID_PARAMS_UNPADDED_STRUCT_SIZE,
				k->handle
			};
			int rc = k->ops.profilerPopCorrelationId(&params);

			if (rc)
				corr_failed(k, "profilerPopCorrelationId", rc);
		}
		atomic_fetch_sub(&k->corr_inside, 1);
	}
}

static const struct gt_ext_corr_ops corr_ops = { corr_push, corr_pop };

static void corr_update(void)
{
	bool any = false;

	for (unsigned i = 0; i < PLUGINS_MAX; i++)
		any |= atomic_load(&kineto_profs[i].corr_on);
	gt_ext_corr_listen(&corr_ops, any);
}

static void corr_on(struct kineto_prof *k)
{
	/* not live: a start given up on (host.c) that returned at last */
	if (!k->ops.profilerPushCorrelationId || !k->ops.profilerPopCorrelationId ||
	    atomic_load(&k->failed) || !atomic_load(&k->p->live))
		return;
	atomic_store(&k->corr_on, true);
	corr_update();
}

/* Before stop: no push or pop reaches the profiler from now on. */
static void corr_off(struct kineto_prof *k)
{
	struct timespec t0, t;

	if (!atomic_exchange(&k->corr_on, false))
		return;
	corr_update();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (atomic_load(&k->corr_inside)) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >
		    CORR_WAIT_MS)
			break;
		sched_yield();
	}
}

/* ---- the calls ---- */

/* A push or pop failed on a program thread since the last call: it was
 * reported; now the profiler is disabled for good. */
static bool gone(struct kineto_prof *k)
{
	if (!atomic_load(&k->failed))
		return false;
	k->p->reported = true;
	plugin__fail(k->p, "profilerPushCorrelationId", -EIO);
	return true;
}

static int call_stop(struct kineto_prof *k)
{
	struct KinetoPlugin_ProfilerStop_Params params = {
		KINETO_PLUGIN_PROFILER_STOP_PARAMS_UNPADDED_STRUCT_SIZE, k->handle
	};
	int rc;

	corr_off(k);
	plugin__calling(k->p, "profilerStop");
	rc = PLUGIN_CALL(k->ops.profilerStop(&params));
	if (rc)
		kineto__fail(k, "profilerStop", rc, NULL);
	return rc;
}

static int call_start(struct kineto_prof *k)
{
	struct KinetoPlugin_ProfilerStart_Params params = {
		KINETO_PLUGIN_PROFILER_START_PARAMS_UNPADDED_STRUCT_SIZE, k->handle
	};
	int rc;

	plugin__calling(k->p, "profilerStart");
	rc = PLUGIN_CALL(k->ops.profilerStart(&params));

	if (rc)
		kineto__fail(k, "profilerStart", rc, NULL);
	else
		corr_on(k);
	return rc;
}

/* The profiler hands over what it recorded; its events stream out while it
 * does (the drain thread writes them, this thread waits for room). */
static int call_process(struct kineto_prof *k)
{
	struct KinetoPlugin_ProfilerProcessEvents_Params params = {
		KINETO_PLUGIN_PROFILER_PROCESS_EVENTS_PARAMS_UNPADDED_STRUCT_SIZE, k->handle, NULL
	};
	int rc;

	utc__sample();
	utc__hold(true);
	params.pTraceBuilder = kbuilder__open(k);
	plugin__calling(k->p, "profilerProcessEvents");
	rc = PLUGIN_CALL(k->ops.profilerProcessEvents(&params));
	kbuilder__close(k);
	utc__hold(false);
	if (rc)
		kineto__fail(k, "profilerProcessEvents", rc, NULL);
	return rc;
}

/* ---- the adapters host.c calls through struct plugin's ops ---- */

static int adapter_start(void *state)
{
	struct kineto_prof *k = state;

	if (gone(k))
		return -ECANCELED;
	return call_start(k) ? -EIO : 0;
}

static int adapter_stop(void *state)
{
	struct kineto_prof *k = state;

	if (gone(k))
		return -ECANCELED;
	if (call_stop(k) || call_process(k))
		return -EIO;
	return 0;
}

static int adapter_flush(void *state, int final)
{
	struct kineto_prof *k = state;

	if (gone(k))
		return -ECANCELED;
	if (!final)
		utc__sample(); /* pairs all along the run, for the batch at the end */
	return 0;
}

static void adapter_destroy(void *state)
{
	struct kineto_prof *k = state;
	struct KinetoPlugin_ProfilerDestroy_Params params = {
		KINETO_PLUGIN_PROFILER_DESTROY_PARAMS_UNPADDED_STRUCT_SIZE, k->handle
	};
	int rc;

	corr_off(k);
	plugin__calling(k->p, "profilerDestroy"); /* its line names Kineto's call */
	rc = PLUGIN_CALL(k->ops.profilerDestroy(&params));
	if (rc)
		pr_err("plug-in %s (%s): profilerDestroy() returned %d", k->p->path, k->name, rc);
	pthread_mutex_lock(&k->lock);
	if (k->refused > 1 || k->metadata_dropped || k->flows_dropped || k->rows_full)
		pr_info("plug-in %s (%s): %llu events refused, %llu metadata entries beyond %d "
			"per event, %llu flows that do not start at a host span or touch an "
			"instant, %llu events past %d devices or %d rows: not recorded",
			k->p->path, k->name, (unsigned long long)k->refused,
			(unsigned long long)k->metadata_dropped, GT_ARGS_MAX,
			(unsigned long long)k->flows_dropped, (unsigned long long)k->rows_full,
			KINETO_DEVICES_MAX, KINETO_RESOURCES_MAX);
	pthread_mutex_unlock(&k->lock);
}

static const struct gputrace_plugin kineto_adapter = {
	.size = sizeof(struct gputrace_plugin),
	.abi_version = GPUTRACE_PLUGIN_ABI_VERSION,
	.start = adapter_start,
	.stop = adapter_stop,
	.flush = adapter_flush,
	.destroy = adapter_destroy,
};

/* ---- registration ---- */

struct registration {
	const char *path;
	unsigned n;
	struct KinetoPlugin_ProfilerInterface ops[PLUGINS_MAX];
	bool rev1[PLUGINS_MAX];
};

static struct registration *registering; /* under the calls lock */

static int register_profiler(KinetoPlugin_RegistryHandle *handle,
			     const struct KinetoPlugin_ProfilerInterface *in)
{
	struct registration *r = registering;
	struct KinetoPlugin_ProfilerInterface ops;
	size_t size;
	bool rev1;

	if (!r || handle != (KinetoPlugin_RegistryHandle *)r) {
		pr_err("plug-in: registerProfiler() called outside KinetoPlugin_register(); ignored");
		return -1;
	}
	if (!in) {
		pr_err("plug-in %s: registerProfiler() got no interface (NULL); ignored", r->path);
		return -1;
	}
	size = in->unpaddedStructSize;
	rev1 = size == KINETO_REV1_INTERFACE_SIZE;
	if (!rev1 && size < KINETO_PLUGIN_PROFILER_INTERFACE_UNPADDED_STRUCT_SIZE) {
		pr_err("plug-in %s: registerProfiler() got a KinetoPlugin_ProfilerInterface of %zu "
		       "bytes; accepted: %zu or more (Kineto PR 1148 revision 92fa2ffc and later) "
		       "or %d (its first revision); profiler skipped",
		       r->path, size, KINETO_PLUGIN_PROFILER_INTERFACE_UNPADDED_STRUCT_SIZE,
		       KINETO_REV1_INTERFACE_SIZE);
		return -1;
	}
	/* Copied before returning: the plug-in's struct may be on its stack. */
	memset(&ops, 0, sizeof(ops));
	if (rev1) {
		memcpy(&ops, in, offsetof(struct KinetoPlugin_ProfilerInterface,
					  profilerPushCorrelationId));
		memcpy(&ops.profilerProcessEvents,
		       (const char *)in + offsetof(struct KinetoPlugin_ProfilerInterface,
						   profilerPushCorrelationId),
		       sizeof(ops.profilerProcessEvents));
	} else {
		memcpy(&ops, in, sizeof(ops));
	}
	ops.unpaddedStructSize = size;
	{
		const char *missing = !ops.profilerCreate    ? "profilerCreate"
				      : !ops.profilerDestroy ? "profilerDestroy"
				      : !ops.profilerQuery   ? "profilerQuery"
				      : !ops.profilerStart   ? "profilerStart"
				      : !ops.profilerStop    ? "profilerStop"
				      : !ops.profilerProcessEvents ? "profilerProcessEvents"
								    : NULL;

		if (missing) {
			pr_err("plug-in %s: registerProfiler() got an interface without %s(), "
			       "which is required; profiler skipped", r->path, missing);
			return -1;
		}
	}
	if (r->n == PLUGINS_MAX) {
		pr_err("plug-in %s: more than %d profilers; the others are skipped", r->path,
		       PLUGINS_MAX);
		return -1;
	}
	r->ops[r->n] = ops;
	r->rev1[r->n++] = rev1;
	return 0;
}

/* The printable name a profiler gave, or the file's. */
static void set_name(char *out, const char *given, const char *path)
{
	const char *base = strrchr(path, '/');
	size_t n;

	if (!given[0])
		given = base ? base + 1 : path;
	n = strnlen(given, KINETO_NAME_MAX);
	for (size_t i = 0; i < n; i++)
		out[i] = (unsigned char)given[i] < 0x20 || given[i] == 0x7f ? '?' : given[i];
	out[n] = '\0';
}

/* profilerQuery: the name and (into supported, latest numbering) the types. */
static int query(const struct KinetoPlugin_ProfilerInterface *ops, bool rev1,
		 KinetoPlugin_ProfilerHandle *handle, char *name, bool *supported)
{
	KinetoPlugin_ProfileEventType types[KINETO_TYPES];
	struct KinetoPlugin_ProfilerQuery_Params q = {
		KINETO_PLUGIN_PROFILER_QUERY_PARAMS_UNPADDED_STRUCT_SIZE, handle, name,
		KINETO_NAME_MAX, types, KINETO_TYPES
	};
	int rc;

	memset(name, 0, KINETO_NAME_MAX + 1);
	for (int i = 0; i < KINETO_TYPES; i++)
		types[i] = KINETO_PLUGIN_PROFILE_EVENT_TYPE_INVALID;
	rc = PLUGIN_CALL(ops->profilerQuery(&q));
	name[KINETO_NAME_MAX] = '\0';
	if (supported) {
		memset(supported, 0, KINETO_TYPES * sizeof(*supported));
		for (int i = 0; i < KINETO_TYPES; i++)
			supported[known_type((int)types[i], rev1)] = true;
		supported[0] = false;
	}
	return rc;
}

static void profiler_start(const char *path, void *dl, const struct KinetoPlugin_ProfilerInterface *ops,
			   bool rev1)
{
	char given[KINETO_NAME_MAX + 1], name[KINETO_NAME_MAX + 1];
	bool supported[KINETO_TYPES], any = false;
	KinetoPlugin_ProfileEventType list[KINETO_TYPES];
	struct KinetoPlugin_ProfilerCreate_Params create = {
		KINETO_PLUGIN_PROFILER_CREATE_PARAMS_UNPADDED_STRUCT_SIZE, NULL, list, 0
	};
	struct kineto_prof *k;
	struct plugin *p;
	uint32_t kinds = 0;
	int rc;

	/* As Kineto asks, before any profiler exists: what it can record. */
	rc = query(ops, rev1, NULL, given, supported);
	set_name(name, given, path);
	if (rc) {
		pr_err("plug-in %s (%s): profilerQuery() returned %d; skipped", path, name, rc);
		return;
	}
	for (int t = 1; t < KINETO_TYPES; t++)
		any |= supported[t];
	/* The first revision could not say: Kineto took every type then. */
	if (!any && rev1)
		for (int t = 1; t < KINETO_TYPES; t++)
			supported[t] = true;
	for (int t = 1; t < KINETO_TYPES; t++) {
		if (!supported[t] || !(gt_cfg.kinds & kineto_types[t].kind))
			continue;
		kinds |= kineto_types[t].kind;
		if (!rev1)
			list[create.enabledActivityTypesMaxLen++] = (KinetoPlugin_ProfileEventType)t;
		else if (rev1_value(t))
			list[create.enabledActivityTypesMaxLen++] =
				(KinetoPlugin_ProfileEventType)rev1_value(t);
	}
	if (!kinds) {
		pr_info("plug-in %s (%s): %s; not loaded", path, name,
			any ? "none of its activity types is enabled"
			    : "profilerQuery() named no activity type it supports");
		return;
	}
	p = plugin__add(path, dl, &kineto_adapter, name, kinds);
	if (!p)
		return;
	k = &kineto_profs[p - plugins];
	k->p = p;
	k->ops = *ops;
	k->rev1 = rev1;
	memcpy(k->name, name, sizeof(k->name));
	p->label = k->name;
	for (int t = 1; t < KINETO_TYPES; t++)
		k->enabled[t] = supported[t] && (gt_cfg.kinds & kineto_types[t].kind);
	kbuilder__init(k);
	p->state = k;
	utc__sample();

	rc = PLUGIN_CALL(ops->profilerCreate(&create));
	if (rc || !create.pProfilerHandle) {
		kineto__fail(k, "profilerCreate", rc, rc ? NULL : "gave no profiler (a NULL handle)");
		return;
	}
	k->handle = create.pProfilerHandle;
	p->live = true;
	/* The ABI documents query on a created profiler: its name wins. */
	rc = query(ops, rev1, k->handle, given, NULL);
	if (rc) {
		kineto__fail(k, "profilerQuery", rc, NULL);
		return;
	}
	if (given[0])
		set_name(k->name, given, path);
	if (plugins__paused()) {
		p->stopped = true; /* profilerStart with the first capture window */
		p->unstarted = true;
		pr_dbg("plug-in %s (%s): Kineto plug-in created; starts with the first capture "
		       "window", path, k->name);
		return;
	}
	/* on the caller thread, bounded (adapter_start): one stuck there cost
	 * the program, not the profiler */
	if (plugins__start_locked(p)) {
		plugin__fail(p, "profilerStart", -EIO); /* said already */
		return;
	}
	pr_dbg("plug-in %s (%s): Kineto plug-in%s started, kinds 0x%x%s", path, k->name,
	       rev1 ? " (PR 1148 first revision)" : "", kinds,
	       atomic_load(&k->corr_on) ? ", correlation ids pushed" : "");
}

void kineto__load(const char *path, void *dl, void *register_fn)
{
	static struct registration r; /* under the calls lock */
	KinetoPlugin_register_fn reg;
	struct KinetoPlugin_Registry registry = {
		KINETO_PLUGIN_REGISTRY_UNPADDED_STRUCT_SIZE, (KinetoPlugin_RegistryHandle *)&r,
		register_profiler
	};
	int rc;

	*(void **)&reg = register_fn;
	memset(&r, 0, sizeof(r));
	r.path = path;
	registering = &r;
	rc = PLUGIN_CALL(reg(&registry));
	registering = NULL;
	if (rc) {
		pr_err("plug-in %s: %s() returned %d; skipped", path, KINETO_PLUGIN_REGISTER_SYMBOL,
		       rc);
		return;
	}
	if (!r.n)
		pr_info("plug-in %s: %s() registered no profiler", path,
			KINETO_PLUGIN_REGISTER_SYMBOL);
	for (unsigned i = 0; i < r.n; i++)
		profiler_start(path, dl, &r.ops[i], r.rev1[i]);
}

/* ---- GPUTRACE_KINETO_CYCLE_MS ---- */

static pthread_mutex_t cycle_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cycle_cond = PTHREAD_COND_INITIALIZER;
static bool cycle_stopping;

static bool cycle_wait(void)
{
	struct timespec until = gt_timespec_after_ms(CLOCK_MONOTONIC, gt_cfg.kineto_cycle_ms);
	bool stop;

	pthread_mutex_lock(&cycle_lock);
	while (!cycle_stopping && pthread_cond_timedwait(&cycle_cond, &cycle_lock, &until) != ETIMEDOUT)
		;
	stop = cycle_stopping;
	pthread_mutex_unlock(&cycle_lock);
	return !stop;
}

/* stop, processEvents, start: the profiler's memory handed over; each call
 * bounded (host.c): one stuck there held the calls lock, and at exit the
 * other plug-ins were not stopped nor flushed. */
static void *cycle_main(void *arg)
{
	sigset_t all;

	(void)arg;
	lifecycle__thread_up();
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	while (cycle_wait()) {
		if (!plugins__lock_calls(1000))
			continue;
		for (unsigned i = 0; i < PLUGINS_MAX; i++) {
			struct kineto_prof *k = &kineto_profs[i];

			if (!k->p || !k->p->live || k->p->stopped || gone(k))
				continue;
			plugins__restart_locked(k->p);
		}
		plugins__unlock_calls();
	}
	return NULL;
}

void kineto__started(void)
{
	pthread_condattr_t cattr;
	pthread_t thread;
	bool any = false;

	for (unsigned i = 0; i < PLUGINS_MAX; i++)
		any |= kineto_profs[i].p && kineto_profs[i].p->live;
	if (!any || !gt_cfg.kineto_cycle_ms)
		return;
	pthread_condattr_init(&cattr);
	pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
	pthread_cond_init(&cycle_cond, &cattr);
	pthread_condattr_destroy(&cattr);
	if (lifecycle__spawn(&thread, cycle_main))
		pr_err("GPUTRACE_KINETO_CYCLE_MS: cannot start its thread; Kineto plug-ins hand "
		       "over their events at exit only");
}

void kineto__stopping(void)
{
	pthread_mutex_lock(&cycle_lock);
	cycle_stopping = true;
	pthread_cond_broadcast(&cycle_cond);
	pthread_mutex_unlock(&cycle_lock);
}

void kineto__atfork_child(void)
{
	/* No plug-in is called in the child: nothing to push to either. */
	for (unsigned i = 0; i < PLUGINS_MAX; i++) {
		atomic_store(&kineto_profs[i].corr_on, false);
		atomic_store(&kineto_profs[i].corr_inside, 0);
		pthread_mutex_init(&kineto_profs[i].lock, NULL);
	}
	gt_ext_corr_listen(NULL, false);
	pthread_mutex_init(&cycle_lock, NULL);
	pthread_cond_init(&cycle_cond, NULL);
	cycle_stopping = true;
	utc__forget();
}
