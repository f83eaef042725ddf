// SPDX-License-Identifier: MIT
/*
 * CUPTI's core, with its documented contracts:
 *  - initialized lazily by the first call; it attaches to the driver's
 *    tools hub (no driver: subscribing, enabling activity, flushing and
 *    external correlation fail with CUPTI_ERROR_UNKNOWN, as the real one);
 *  - one subscriber: a second cuptiSubscribe / cuptiSubscribe_v2 fails
 *    with CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (39), and _v2
 *    writes the holder's name ("CUPTI for <name>") for the caller;
 *  - runtime and driver callbacks on the calling thread, with the call's
 *    CUpti_CallbackData (its parameter struct, return value, kernel name,
 *    context, correlation id and correlationData); resource callbacks for
 *    context creation, module load and (before it happens) module unload;
 *  - cuptiFinalize detaches: everything is forgotten, undelivered buffers
 *    included (the client was to flush first), and the next call starts
 *    CUPTI again.
 * Calls that take CUPTI's lock made from inside a buffer callback, and any
 * call from inside the timestamp callback, abort with one line: CUPTI runs
 * those callbacks under its lock.
 *
 * CUDA_SIM_CUPTI_VERSION sets what cuptiGetVersion reports (default
 * 130001, CUDA 13.0 Update 1); CUDA_SIM_CUPTI_LOG=path appends one line
 * per CUPTI call ("<tid> <function> <details>") for tests to count;
 * CUDA_SIM_FLUSH_US makes each cuptiActivityFlushAll take that long (a real
 * one with many buffers to hand over takes milliseconds), outside its lock.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cupti_sim.h"

#define EXPORT SIM_EXPORT

CS_HIDDEN struct cs_state C = { .lock = PTHREAD_MUTEX_INITIALIZER,
				.tid_type = CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT };
CS_HIDDEN __thread int cs_in_buffer_callback, cs_in_timestamp;

struct CUpti_Subscriber_st {
	unsigned generation;
};

static uint32_t version = 130001;
static int log_fd = -1;
CS_HIDDEN unsigned cs_flush_us;

void cs_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sim_vreport("cupti_sim", true, fmt, ap);
	va_end(ap);
	abort();
}

void cs_log(const char *fn, const char *fmt, ...)
{
	char line[256];
	int n;
	va_list ap;

	if (log_fd < 0)
		return;
	n = snprintf(line, sizeof(line), "%ld %s ", (long)syscall(SYS_gettid), fn);
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (write(log_fd, line, (size_t)n) < 0)
		return;
}

void cs_entry(const char *fn, bool takes_lock)
{
	if (cs_in_timestamp)
		cs_die("%s called from inside the timestamp callback (CUPTI runs it while it "
		       "converts timestamps under its lock)", fn);
	if (takes_lock && cs_in_buffer_callback)
		cs_die("%s called from inside a buffer callback: CUPTI holds its lock while the "
		       "buffer callbacks run (this deadlocks the real library)", fn);
}

__attribute__((constructor)) static void cs_load(void)
{
	const char *v = getenv("CUDA_SIM_CUPTI_VERSION"), *log = getenv("CUDA_SIM_CUPTI_LOG");
	const char *flush_us = getenv("CUDA_SIM_FLUSH_US");
	char *end;

	if (v && *v) {
		unsigned long n = strtoul(v, &end, 10);
		if (*end || n < 130000 || n > 139999)
			fprintf(stderr, "cupti_sim: CUDA_SIM_CUPTI_VERSION='%s' is not a CUDA 13 "
				"CUPTI API version (130000 to 139999); using %u\n", v, version);
		else
			version = (uint32_t)n;
	}
	if (log && *log)
		log_fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (flush_us && *flush_us) {
		unsigned long n = strtoul(flush_us, &end, 10);
		if (*end || n > 10000000)
			fprintf(stderr, "cupti_sim: CUDA_SIM_FLUSH_US='%s' is not 0 to 10000000 "
				"(microseconds); using 0\n", flush_us);
		else
			cs_flush_us = (unsigned)n;
	}
}

/* ---- threads ---- */

struct cs_thread *cs_thread_self(void)
{
	static __thread struct cs_thread *self;

	if (!self) {
		self = calloc(1, sizeof(*self));
		if (!self)
			cs_die("out of memory");
		self->tid = (pid_t)syscall(SYS_gettid);
		self->pthread_id = (uint64_t)pthread_self();
		self->next_thread = C.threads;
		C.threads = self;
	}
	return self;
}

uint32_t cs_thread_id(struct cs_thread *t)
{
	return C.tid_type == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM ? (uint32_t)t->tid
								 : (uint32_t)t->pthread_id;
}

/* ---- callbacks from the hub ---- */

static bool enabled(CUpti_CallbackDomain d, uint32_t cbid)
{
	return d < CUPTI_CB_DOMAIN_SIZE && cbid < 1024 && (C.enabled[d][cbid / 64] >> (cbid % 64)) & 1;
}

static SIM_NOINLINE void on_api(struct sim_call *c, int site)
{
	CUpti_CallbackDomain d = c->domain == SIM_DOMAIN_RUNTIME ? CUPTI_CB_DOMAIN_RUNTIME_API
								 : CUPTI_CB_DOMAIN_DRIVER_API;
	CUpti_CallbackFunc cb = NULL;
	void *userdata = NULL;
	uint32_t ctx_id = 0;
	CUcontext ctx;

	if (!c->cbid)
		return;
	if (site == SIM_SITE_ENTER)
		cs_activity_api(c, site);
	const struct sim_tools *tools;

	pthread_mutex_lock(&C.lock);
	tools = C.tools;
	if (C.subscribed && enabled(d, c->cbid) && tools) {
		cb = C.callback;
		userdata = C.userdata;
	}
	pthread_mutex_unlock(&C.lock);
	if (cb) {
		ctx = tools->current_context();
		if (ctx)
			tools->context_ids(ctx, &ctx_id, NULL);
		CUpti_CallbackData data = {
			.callbackSite = site == SIM_SITE_ENTER ? CUPTI_API_ENTER : CUPTI_API_EXIT,
			.functionName = c->name,
			.functionParams = c->params,
			.functionReturnValue = site == SIM_SITE_EXIT ? (void *)c->ret : NULL,
			.symbolName = c->symbol,
			.context = ctx,
			.contextUid = ctx_id,
			.correlationData = &c->tool[0],
			.correlationId = c->corr,
		};
		cb(userdata, d, c->cbid, &data);
	}
	if (site == SIM_SITE_EXIT)
		cs_activity_api(c, site);
}

static void on_context(CUcontext ctx, int created)
{
	CUpti_CallbackId id = created ? CUPTI_CBID_RESOURCE_CONTEXT_CREATED
				      : CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING;
	CUpti_CallbackFunc cb = NULL;
	void *userdata = NULL;

	pthread_mutex_lock(&C.lock);
	if (C.subscribed && enabled(CUPTI_CB_DOMAIN_RESOURCE, id)) {
		cb = C.callback;
		userdata = C.userdata;
	}
	pthread_mutex_unlock(&C.lock);
	if (cb) {
		CUpti_ResourceData data = { .context = ctx };
		cb(userdata, CUPTI_CB_DOMAIN_RESOURCE, id, &data);
	}
}

static void on_module(CUcontext ctx, uint32_t module_id, int loaded)
{
	CUpti_CallbackId id = loaded ? CUPTI_CBID_RESOURCE_MODULE_LOADED
				     : CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING;
	CUpti_CallbackFunc cb = NULL;
	void *userdata = NULL;

	pthread_mutex_lock(&C.lock);
	if (C.subscribed && enabled(CUPTI_CB_DOMAIN_RESOURCE, id)) {
		cb = C.callback;
		userdata = C.userdata;
	}
	pthread_mutex_unlock(&C.lock);
	if (cb) {
		CUpti_ModuleResourceData module = { .moduleId = module_id };
		CUpti_ResourceData data = { .context = ctx, .resourceDescriptor = &module };
		cb(userdata, CUPTI_CB_DOMAIN_RESOURCE, id, &data);
	}
}

static void on_work(const struct sim_work *w)
{
	struct sim_work own;
	bool no_times = false, owns = cs_range_work(w, &no_times, &own);

	cs_activity_work(w, no_times);
	if (owns)
		cs_activity_work(&own, false);
}

static const struct sim_tool_ops ops = {
	.api = on_api,
	.work = on_work,
	.graph = cs_activity_graph,
	.sync = cs_activity_sync,
	.context = on_context,
	.module = on_module,
	.busy_until = cs_range_busy_until,
};

CUptiResult cs_init_locked(void)
{
	CUresult (*get_table)(const void **, const CUuuid *);
	const void *table = NULL;
	void *h;

	if (C.initialized)
		return C.tools ? CUPTI_SUCCESS : CUPTI_ERROR_UNKNOWN;
	C.initialized = true;
	h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	get_table = h ? (__typeof__(get_table))dlsym(h, "cuGetExportTable") : NULL;
	if (!get_table || get_table(&table, &sim_tools_uuid) || !table)
		return CUPTI_ERROR_UNKNOWN;
	__atomic_store_n(&C.tools, (const struct sim_tools *)table, __ATOMIC_RELEASE);
	if (C.tools->attach(&ops))
		cs_die("another CUPTI is attached to the driver");
	cs_calibrate();
	return CUPTI_SUCCESS;
}

static CUptiResult init(void)
{
	CUptiResult r;

	pthread_mutex_lock(&C.lock);
	r = cs_init_locked();
	pthread_mutex_unlock(&C.lock);
	return r;
}

/* ---- version, results, time ---- */

EXPORT CUptiResult CUPTIAPI cuptiGetVersion(uint32_t *v)
{
	cs_entry(__func__, false);
	if (!v)
		return CUPTI_ERROR_INVALID_PARAMETER;
	*v = version;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult r, const char **s)
{
	static const struct {
		CUptiResult r;
		const char *s;
	} names[] = {
		{ CUPTI_SUCCESS, "CUPTI_SUCCESS" },
		{ CUPTI_ERROR_INVALID_PARAMETER, "CUPTI_ERROR_INVALID_PARAMETER" },
		{ CUPTI_ERROR_INVALID_KIND, "CUPTI_ERROR_INVALID_KIND" },
		{ CUPTI_ERROR_MAX_LIMIT_REACHED, "CUPTI_ERROR_MAX_LIMIT_REACHED" },
		{ CUPTI_ERROR_NOT_INITIALIZED, "CUPTI_ERROR_NOT_INITIALIZED" },
		{ CUPTI_ERROR_INVALID_OPERATION, "CUPTI_ERROR_INVALID_OPERATION" },
		{ CUPTI_ERROR_NOT_COMPATIBLE, "CUPTI_ERROR_NOT_COMPATIBLE" },
		{ CUPTI_ERROR_QUEUE_EMPTY, "CUPTI_ERROR_QUEUE_EMPTY" },
		{ CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,
		  "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED" },
		{ CUPTI_ERROR_INVALID_METRIC_NAME, "CUPTI_ERROR_INVALID_METRIC_NAME" },
		{ CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES" },
		{ CUPTI_ERROR_NOT_SUPPORTED, "CUPTI_ERROR_NOT_SUPPORTED" },
		{ CUPTI_ERROR_INVALID_DEVICE, "CUPTI_ERROR_INVALID_DEVICE" },
		{ CUPTI_ERROR_INVALID_CONTEXT, "CUPTI_ERROR_INVALID_CONTEXT" },
		{ CUPTI_ERROR_OUT_OF_MEMORY, "CUPTI_ERROR_OUT_OF_MEMORY" },
		{ CUPTI_ERROR_UNKNOWN, "CUPTI_ERROR_UNKNOWN" },
	};

	cs_entry(__func__, false);
	if (!s)
		return CUPTI_ERROR_INVALID_PARAMETER;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (names[i].r == r) {
			*s = names[i].s;
			return CUPTI_SUCCESS;
		}
	}
	*s = "CUPTI_ERROR_UNKNOWN";
	return CUPTI_ERROR_INVALID_PARAMETER;
}

EXPORT CUptiResult CUPTIAPI cuptiGetLastError(void)
{
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t *t)
{
	cs_entry(__func__, false);
	if (!t)
		return CUPTI_ERROR_INVALID_PARAMETER;
	init();
	*t = cs_now();
	return CUPTI_SUCCESS;
}

/* ---- subscribers ---- */

static CUptiResult subscribe(CUpti_SubscriberHandle *out, CUpti_CallbackFunc cb, void *userdata,
			     const char *name, char *old_name, size_t old_size)
{
	struct CUpti_Subscriber_st *h;
	CUptiResult r;

	if (!out)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&C.lock);
	if ((r = cs_init_locked()))
		goto out;
	if (C.subscribed) {
		if (old_name && old_size)
			snprintf(old_name, old_size, "%s", C.holder);
		r = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
		goto out;
	}
	h = malloc(sizeof(*h));
	if (!h) {
		r = CUPTI_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	h->generation = ++C.generation;
	C.subscribed = true;
	C.callback = cb;
	C.userdata = userdata;
	memset(C.enabled, 0, sizeof(C.enabled));
	if (name && *name)
		snprintf(C.holder, sizeof(C.holder), "CUPTI for %.*s", CUPTI_SUBSCRIBER_NAME_MAX_LEN,
			 name);
	else
		snprintf(C.holder, sizeof(C.holder), "CUPTI");
	*out = h;
out:
	pthread_mutex_unlock(&C.lock);
	return r;
}

EXPORT CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *subscriber,
					   CUpti_CallbackFunc callback, void *userdata)
{
	CUptiResult r;

	cs_entry(__func__, true);
	r = subscribe(subscriber, callback, userdata, NULL, NULL, 0);
	cs_log(__func__, "-> %d", r);
	return r;
}

EXPORT CUptiResult CUPTIAPI cuptiSubscribe_v2(CUpti_SubscriberHandle *subscriber,
					      CUpti_CallbackFunc callback, void *userdata,
					      CUpti_SubscriberParams *params)
{
	CUptiResult r;

	cs_entry(__func__, true);
	if (params && params->structSize < CUpti_SubscriberParams_STRUCT_SIZE)
		return CUPTI_ERROR_INVALID_PARAMETER;
	r = subscribe(subscriber, callback, userdata, params ? params->subscriberName : NULL,
		      params ? params->oldSubscriberName : NULL,
		      params ? params->oldSubscriberSize : 0);
	cs_log(__func__, "%s -> %d", params && params->subscriberName ? params->subscriberName : "",
	       r);
	return r;
}

/* lock held */
static bool current(CUpti_SubscriberHandle h)
{
	return h && C.subscribed && h->generation == C.generation;
}

EXPORT CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber)
{
	CUptiResult r = CUPTI_SUCCESS;

	cs_entry(__func__, true);
	pthread_mutex_lock(&C.lock);
	if (!current(subscriber)) {
		r = CUPTI_ERROR_INVALID_PARAMETER;
	} else {
		C.subscribed = false;
		C.callback = NULL;
		memset(C.enabled, 0, sizeof(C.enabled));
	}
	pthread_mutex_unlock(&C.lock);
	cs_log(__func__, "-> %d", r);
	return r;
}

static void set_ids(CUpti_CallbackDomain d, uint32_t enable, int cbid)
{
	for (unsigned i = 0; i < 16; i++) {
		if (cbid >= 0 && (unsigned)cbid / 64 != i)
			continue;
		uint64_t bits = cbid >= 0 ? 1ull << (cbid % 64) : ~0ull;
		C.enabled[d][i] = enable ? C.enabled[d][i] | bits : C.enabled[d][i] & ~bits;
	}
}

static bool valid_domain(CUpti_CallbackDomain d)
{
	return d > CUPTI_CB_DOMAIN_INVALID && d < CUPTI_CB_DOMAIN_SIZE;
}

EXPORT CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
					      CUpti_CallbackDomain domain)
{
	CUptiResult r = CUPTI_SUCCESS;

	cs_entry(__func__, true);
	pthread_mutex_lock(&C.lock);
	if (!current(subscriber) || !valid_domain(domain))
		r = CUPTI_ERROR_INVALID_PARAMETER;
	else
		set_ids(domain, enable, -1);
	pthread_mutex_unlock(&C.lock);
	cs_log(__func__, "%d %u -> %d", domain, enable, r);
	return r;
}

EXPORT CUptiResult CUPTIAPI cuptiEnableAllDomains(uint32_t enable,
						  CUpti_SubscriberHandle subscriber)
{
	CUptiResult r = CUPTI_SUCCESS;

	cs_entry(__func__, true);
	pthread_mutex_lock(&C.lock);
	if (!current(subscriber))
		r = CUPTI_ERROR_INVALID_PARAMETER;
	else
		for (int d = CUPTI_CB_DOMAIN_INVALID + 1; d < CUPTI_CB_DOMAIN_SIZE; d++)
			set_ids((CUpti_CallbackDomain)d, enable, -1);
	pthread_mutex_unlock(&C.lock);
	return r;
}

EXPORT CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
						CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
	CUptiResult r = CUPTI_SUCCESS;

	cs_entry(__func__, true);
	pthread_mutex_lock(&C.lock);
	if (!current(subscriber) || !valid_domain(domain) || cbid >= 1024)
		r = CUPTI_ERROR_INVALID_PARAMETER;
	else
		set_ids(domain, enable, (int)cbid);
	pthread_mutex_unlock(&C.lock);
	cs_log(__func__, "%d %u %u -> %d", domain, cbid, enable, r);
	return r;
}

/* ---- contexts ---- */

EXPORT CUptiResult CUPTIAPI cuptiGetContextId(CUcontext context, uint32_t *id)
{
	cs_entry(__func__, false);
	if (!id)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (init())
		return CUPTI_ERROR_NOT_INITIALIZED;
	return C.tools->context_ids(context, id, NULL) ? CUPTI_ERROR_INVALID_CONTEXT
						       : CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiGetDeviceId(CUcontext context, uint32_t *id)
{
	cs_entry(__func__, false);
	if (!id)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (init())
		return CUPTI_ERROR_NOT_INITIALIZED;
	return C.tools->context_ids(context, NULL, id) ? CUPTI_ERROR_INVALID_DEVICE
						       : CUPTI_SUCCESS;
}

/* Callback-safe, like the context and device ids: no driver call. The
 * per-thread stream is the calling thread's. */
EXPORT CUptiResult CUPTIAPI cuptiGetStreamIdEx(CUcontext context, CUstream stream,
					       uint8_t per_thread, uint32_t *id)
{
	cs_entry(__func__, false);
	if (!id)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (init())
		return CUPTI_ERROR_NOT_INITIALIZED;
	return C.tools->stream_id(context, stream, per_thread != 0, id) ? CUPTI_ERROR_INVALID_STREAM
									: CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiSetThreadIdType(CUpti_ActivityThreadIdType type)
{
	cs_entry(__func__, true);
	if (type != CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT &&
	    type != CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&C.lock);
	C.tid_type = type;
	pthread_mutex_unlock(&C.lock);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiGetThreadIdType(CUpti_ActivityThreadIdType *type)
{
	cs_entry(__func__, true);
	if (!type)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&C.lock);
	*type = C.tid_type;
	pthread_mutex_unlock(&C.lock);
	return CUPTI_SUCCESS;
}

/* ---- finalize ---- */

EXPORT CUptiResult CUPTIAPI cuptiFinalize(void)
{
	cs_entry(__func__, true);
	pthread_mutex_lock(&C.lock);
	if (C.tools)
		C.tools->detach(&ops);
	cs_activity_forget();
	cs_clock_forget();
	C.initialized = false;
	__atomic_store_n(&C.tools, NULL, __ATOMIC_RELEASE);
	C.subscribed = false;
	C.callback = NULL;
	memset(C.enabled, 0, sizeof(C.enabled));
	C.requested = NULL;
	C.completed = NULL;
	__atomic_store_n(&C.kinds, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&C.timestamp, NULL, __ATOMIC_RELEASE);
	C.flush_period_ms = 0;
	C.dropped = 0;
	pthread_mutex_unlock(&C.lock);
	cs_log(__func__, "-> 0");
	return CUPTI_SUCCESS;
}

/* A fork child keeps the library but none of the session: its worker
 * thread stayed behind, and so did the CUDA the session traced. */
static void atfork_child(void)
{
	pthread_mutex_init(&C.lock, NULL);
	cs_activity_forget();
	cs_worker_forget();
	C.subscribed = false;
	C.callback = NULL;
	memset(C.enabled, 0, sizeof(C.enabled));
	C.requested = NULL;
	C.completed = NULL;
	__atomic_store_n(&C.kinds, 0, __ATOMIC_RELAXED);
}

__attribute__((constructor)) static void cs_fork_handlers(void)
{
	pthread_atfork(cs_worker_fork_prepare, cs_worker_fork_parent, atfork_child);
}
