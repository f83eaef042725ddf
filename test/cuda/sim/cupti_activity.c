// SPDX-License-Identifier: MIT
/*
 * The activity API, with the contracts of the CUDA 13 documentation:
 *  - buffers are requested per application thread (CUDA 13's default,
 *    CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER = 1), on that thread,
 *    when it first needs room; a buffer that came back NULL or too small
 *    drops the record (counted for cuptiActivityGetNumDroppedRecords) and
 *    one not 8-byte aligned is a fatal client error;
 *  - API records are written when the call returns; a device record is
 *    reserved in the launching thread's buffer when the work is queued and
 *    completed (its timestamps filled in) once the work has ended;
 *  - completed buffers are delivered on CUPTI's worker thread when full
 *    and complete, and inside cuptiActivityFlushAll: flag 0 delivers every
 *    buffer whose records are all complete (full or not), FORCED delivers
 *    every buffer, incomplete records with zero timestamps (and never
 *    again: their work's end is lost);
 *  - records use the CUDA 13.0 structs (Kernel10, Memcpy6, MemcpyPtoP4,
 *    Memset4, API, Synchronization2, ExternalCorrelation, Overhead3,
 *    GraphTrace2); a copy between two devices' memory is a MEMCPY2 record
 *    (PTOP), never a MEMCPY one;
 *    the kinds it cannot simulate are refused with NOT_COMPATIBLE;
 *  - registering the timestamp callback while a kind is enabled is a
 *    fatal client error (the documentation asks for it before any kind).
 * Kernel records point to the kernel's name as the driver keeps it: valid
 * until its module is unloaded.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cupti_sim.h"

#define EXPORT SIM_EXPORT
#define WORKER_TICK_MS   10

_Static_assert(sizeof(CUpti_ActivityKernel10) == 216, "Kernel10");
_Static_assert(sizeof(CUpti_ActivityMemcpy6) == 96, "Memcpy6");
_Static_assert(sizeof(CUpti_ActivityMemcpyPtoP4) == 96, "MemcpyPtoP4");
_Static_assert(sizeof(CUpti_ActivityMemset4) == 88, "Memset4");
_Static_assert(sizeof(CUpti_ActivityAPI) == 40, "API");
_Static_assert(sizeof(CUpti_ActivitySynchronization2) == 56, "Synchronization2");
_Static_assert(sizeof(CUpti_ActivityExternalCorrelation) == 24, "ExternalCorrelation");
_Static_assert(sizeof(CUpti_ActivityOverhead3) == 56, "Overhead3");
_Static_assert(sizeof(CUpti_ActivityGraphTrace2) == 56, "GraphTrace2");

struct cs_buf {
	uint8_t *data;
	size_t size, used, max_records, nrecords;
	unsigned pending; /* device records not yet complete */
	bool closed;      /* full or flushed: no more records go in */
	struct cs_thread *owner;
	struct cs_buf *next;
};

struct cs_pending {
	struct cs_buf *buf;
	size_t off;
	CUpti_ActivityKind kind;
	uint64_t start, end; /* host ns of the work */
	bool no_times;       /* completed without timestamps (start = end = 0) */
	struct cs_pending *next;
};

static struct cs_buf *bufs;
static struct cs_pending *pending;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER, worker_up = PTHREAD_COND_INITIALIZER;
static bool worker_running, worker_stop, worker_started;
static pthread_t worker_thread;

bool cs_kind_on(CUpti_ActivityKind k)
{
	return k < 64 && (__atomic_load_n(&C.kinds, __ATOMIC_RELAXED) >> k) & 1;
}

static size_t record_size(CUpti_ActivityKind k)
{
	switch (k) {
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER:
		return sizeof(CUpti_ActivityAPI);
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		return sizeof(CUpti_ActivityKernel10);
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		return sizeof(CUpti_ActivityMemcpy6);
	case CUPTI_ACTIVITY_KIND_MEMCPY2:
		return sizeof(CUpti_ActivityMemcpyPtoP4);
	case CUPTI_ACTIVITY_KIND_MEMSET:
		return sizeof(CUpti_ActivityMemset4);
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
		return sizeof(CUpti_ActivitySynchronization2);
	case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
		return sizeof(CUpti_ActivityExternalCorrelation);
	case CUPTI_ACTIVITY_KIND_OVERHEAD:
		return sizeof(CUpti_ActivityOverhead3);
	case CUPTI_ACTIVITY_KIND_GRAPH_TRACE:
		return sizeof(CUpti_ActivityGraphTrace2);
	default:
		return 0;
	}
}

/* What can be enabled. */
static bool simulated(CUpti_ActivityKind k)
{
	return record_size(k) != 0;
}

/* ---- buffers (lock held throughout) ---- */

static void close_buf(struct cs_buf *b)
{
	b->closed = true;
	if (b->owner->buf == b)
		b->owner->buf = NULL;
}

static void deliver(struct cs_buf *b)
{
	for (struct cs_buf **p = &bufs; *p; p = &(*p)->next) {
		if (*p == b) {
			*p = b->next;
			break;
		}
	}
	if (b->owner->buf == b)
		b->owner->buf = NULL;
	cs_log("buffer-completed", "%zu bytes", b->used);
	if (C.completed) {
		cs_in_buffer_callback++;
		C.completed(NULL, 0, b->data, b->size, b->used);
		cs_in_buffer_callback--;
	}
	free(b);
}

static void *record_into(struct cs_buf *b, size_t size)
{
	void *r = b->data + b->used;

	memset(r, 0, size);
	b->used += size;
	b->nrecords++;
	return r;
}

static void overhead_record(struct cs_buf *b, struct cs_thread *t, uint64_t start, uint64_t end)
{
	CUpti_ActivityOverhead3 *o;

	if (!cs_kind_on(CUPTI_ACTIVITY_KIND_OVERHEAD) || b->used + sizeof(*o) > b->size)
		return;
	o = record_into(b, sizeof(*o));
	o->kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
	o->overheadKind = CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST;
	o->objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
	o->objectId.pt.processId = (uint32_t)getpid();
	o->objectId.pt.threadId = cs_thread_id(t);
	o->start = start;
	o->end = end;
}

/* Room for one record in the thread's buffer, asking the client for a new
 * buffer (on this thread) when there is none or it is full. */
static void *reserve(struct cs_thread *t, size_t size, struct cs_buf **where)
{
	struct cs_buf *b = t->buf;

	if (b && (b->closed || b->used + size > b->size ||
		  (b->max_records && b->nrecords >= b->max_records))) {
		close_buf(b);
		b = NULL;
	}
	if (!b) {
		uint8_t *data = NULL;
		size_t bytes = 0, max_records = 0;
		uint64_t t0 = cs_now();

		if (!C.requested) {
			C.dropped++;
			return NULL;
		}
		cs_log("buffer-requested", "%s", "");
		cs_in_buffer_callback++;
		C.requested(&data, &bytes, &max_records);
		cs_in_buffer_callback--;
		if (!data || bytes < size) {
			C.dropped++;
			return NULL;
		}
		if ((uintptr_t)data % 8)
			cs_die("the buffer-requested callback returned %p, not 8-byte aligned",
			       (void *)data);
		b = calloc(1, sizeof(*b));
		if (!b)
			cs_die("out of memory");
		*b = (struct cs_buf){ .data = data, .size = bytes, .max_records = max_records,
				      .owner = t, .next = bufs };
		bufs = b;
		t->buf = b;
		overhead_record(b, t, t0, cs_now());
		if (b->used + size > b->size) {
			close_buf(b);
			C.dropped++;
			return NULL;
		}
	}
	*where = b;
	return record_into(b, size);
}

static void set_times(struct cs_pending *e, uint64_t start, uint64_t end)
{
	uint8_t *r = e->buf->data + e->off;

	switch (e->kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		((CUpti_ActivityKernel10 *)r)->start = start;
		((CUpti_ActivityKernel10 *)r)->end = end;
		((CUpti_ActivityKernel10 *)r)->completed = end;
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		((CUpti_ActivityMemcpy6 *)r)->start = start;
		((CUpti_ActivityMemcpy6 *)r)->end = end;
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY2:
		((CUpti_ActivityMemcpyPtoP4 *)r)->start = start;
		((CUpti_ActivityMemcpyPtoP4 *)r)->end = end;
		break;
	case CUPTI_ACTIVITY_KIND_MEMSET:
		((CUpti_ActivityMemset4 *)r)->start = start;
		((CUpti_ActivityMemset4 *)r)->end = end;
		break;
	case CUPTI_ACTIVITY_KIND_GRAPH_TRACE:
		((CUpti_ActivityGraphTrace2 *)r)->start = start;
		((CUpti_ActivityGraphTrace2 *)r)->end = end;
		break;
	default:
		break;
	}
}

/* Fill in device records whose work has ended (lock held). */
static void complete_ready(uint64_t now)
{
	for (struct cs_pending **p = &pending; *p;) {
		struct cs_pending *e = *p;

		if (e->end > now) {
			p = &e->next;
			continue;
		}
		if (e->no_times)
			set_times(e, 0, 0);
		else
			set_times(e, cs_gpu_time(e->start, e->start),
				  cs_gpu_time(e->end, e->start));
		e->buf->pending--;
		*p = e->next;
		free(e);
	}
}

/* Deliver what may go (lock held): forced, every buffer with records;
 * all, every buffer whose records are complete; else full ones only. */
enum { DELIVER_FULL, DELIVER_COMPLETE, DELIVER_FORCED };
static void deliver_buffers(int how)
{
	struct cs_buf *b, *next;

	complete_ready(C.tools ? C.tools->host_ns() : 0);
	for (b = bufs; b; b = next) {
		next = b->next;
		if (!b->used && !b->closed)
			continue;
		if (how == DELIVER_FULL && !b->closed)
			continue;
		if (b->pending && how != DELIVER_FORCED)
			continue;
		if (b->pending) {
			/* incomplete: the start of work that began, no end */
			uint64_t now = C.tools ? C.tools->host_ns() : 0;
			for (struct cs_pending **p = &pending; *p;) {
				struct cs_pending *e = *p;
				if (e->buf == b) {
					if (e->start <= now && !e->no_times)
						set_times(e, cs_gpu_time(e->start, e->start), 0);
					*p = e->next;
					free(e);
				} else {
					p = &e->next;
				}
			}
			b->pending = 0;
		}
		close_buf(b);
		deliver(b);
		next = bufs; /* the list may have changed while the client ran */
	}
}

/*
 * A fork child must not inherit the worker caught halfway through its
 * start-up or through freeing records: under ASan, whose GCC 12 runtime
 * does not lock its allocator across fork(), that leaves an allocator lock
 * taken for good in the child. So the worker is running before
 * start_worker() returns, and it works holding worker_busy, which fork()
 * takes (cs_worker_fork_*). The worker only tries it: fork() may come from
 * a thread holding a lock that C.lock waits behind (a client's flush).
 */
static pthread_mutex_t worker_busy = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg)
{
	pthread_mutex_lock(&C.lock);
	worker_started = true;
	pthread_cond_signal(&worker_up);
	for (;;) {
		struct timespec until;
		uint32_t period = C.flush_period_ms ? C.flush_period_ms : WORKER_TICK_MS;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += (long)(period % 1000) * 1000000;
		until.tv_sec += period / 1000 + until.tv_nsec / 1000000000;
		until.tv_nsec %= 1000000000;
		pthread_cond_timedwait(&wake, &C.lock, &until);
		if (worker_stop)
			break;
		if (!C.tools || pthread_mutex_trylock(&worker_busy))
			continue;
		cs_calibrate();
		deliver_buffers(DELIVER_FULL);
		pthread_mutex_unlock(&worker_busy);
	}
	pthread_mutex_unlock(&C.lock);
	return NULL;
}

/* At exit, before the handlers registered earlier (a sanitizer's) run. */
static void stop_worker(void)
{
	bool running;

	pthread_mutex_lock(&C.lock);
	running = worker_running;
	worker_stop = true;
	pthread_cond_signal(&wake);
	pthread_mutex_unlock(&C.lock);
	if (running)
		pthread_join(worker_thread, NULL);
}

static void start_worker(void)
{
	static bool registered;

	if (worker_running)
		return;
	worker_started = false;
	if (pthread_create(&worker_thread, NULL, worker, NULL))
		cs_die("cannot start the worker thread");
	worker_running = true;
	while (!worker_started)
		pthread_cond_wait(&worker_up, &C.lock);
	if (!registered)
		atexit(stop_worker);
	registered = true;
}

void cs_worker_fork_prepare(void)
{
	pthread_mutex_lock(&worker_busy);
}

void cs_worker_fork_parent(void)
{
	pthread_mutex_unlock(&worker_busy);
}

void cs_worker_forget(void)
{
	/* a fork child: the worker stayed in the parent */
	worker_running = false;
	pthread_mutex_init(&worker_busy, NULL);
}

void cs_activity_forget(void)
{
	while (pending) {
		struct cs_pending *e = pending;
		pending = e->next;
		free(e);
	}
	while (bufs) {
		struct cs_buf *b = bufs;
		bufs = b->next;
		free(b);
	}
	for (struct cs_thread *t = C.threads; t; t = t->next_thread)
		t->buf = NULL;
}

/* ---- records from the hub ---- */

static CUpti_ActivityKind api_kind(const struct sim_call *c)
{
	return c->domain == SIM_DOMAIN_RUNTIME ? CUPTI_ACTIVITY_KIND_RUNTIME
					       : CUPTI_ACTIVITY_KIND_DRIVER;
}

void cs_activity_api(struct sim_call *c, int site)
{
	CUpti_ActivityKind kind = api_kind(c);
	struct cs_thread *t;
	struct cs_buf *b;
	CUpti_ActivityAPI *a;

	if (!cs_kind_on(kind))
		return;
	if (site == SIM_SITE_ENTER) {
		c->tool[1] = cs_now();
		c->tool[2] = 1;
		return;
	}
	if (!c->tool[2])
		return; /* enabled during the call */
	uint64_t end = cs_now();
	pthread_mutex_lock(&C.lock);
	t = cs_thread_self();
	if (cs_kind_on(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION)) {
		for (unsigned k = 0; k < CUPTI_EXTERNAL_CORRELATION_KIND_SIZE; k++) {
			CUpti_ActivityExternalCorrelation *x;
			if (!t->next[k] || !(x = reserve(t, sizeof(*x), &b)))
				continue;
			x->kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
			x->externalKind = (CUpti_ExternalCorrelationKind)k;
			x->externalId = t->ext[k][t->next[k] - 1];
			x->correlationId = c->corr;
		}
	}
	if ((a = reserve(t, sizeof(*a), &b))) {
		a->kind = kind;
		a->cbid = c->cbid;
		a->start = c->tool[1];
		a->end = end;
		a->processId = (uint32_t)getpid();
		a->threadId = cs_thread_id(t);
		a->correlationId = c->corr;
		if (c->ret)
			memcpy(&a->returnValue, c->ret, sizeof(a->returnValue));
	}
	pthread_mutex_unlock(&C.lock);
}

static void add_pending(struct cs_buf *b, void *rec, CUpti_ActivityKind kind, uint64_t start,
			uint64_t end)
{
	struct cs_pending *e = malloc(sizeof(*e));

	if (!e)
		cs_die("out of memory");
	*e = (struct cs_pending){ .buf = b, .off = (size_t)((uint8_t *)rec - b->data), .kind = kind,
				  .start = start, .end = end, .next = pending };
	pending = e;
	b->pending++;
	pthread_cond_signal(&wake);
}

/* What a copy's record has in either struct (Memcpy6, MemcpyPtoP4). */
#define COPY_FIELDS(m, w)                                                                   \
	do {                                                                                \
		(m)->kind = kind;                                                           \
		(m)->copyKind = (w)->copy_kind;                                             \
		(m)->srcKind = (w)->src_kind;                                               \
		(m)->dstKind = (w)->dst_kind;                                               \
		(m)->bytes = (w)->bytes;                                                    \
		(m)->deviceId = (w)->device;                                                \
		(m)->contextId = (w)->context;                                              \
		(m)->streamId = (w)->stream;                                                \
		(m)->correlationId = (w)->corr;                                             \
		(m)->graphNodeId = (w)->graph_node_id;                                      \
		(m)->graphId = (w)->graph_id;                                               \
	} while (0)

void cs_activity_work(const struct sim_work *w, bool no_times)
{
	CUpti_ActivityKind kind;
	struct cs_thread *t;
	struct cs_buf *b;
	void *r;

	switch (w->kind) {
	case SIM_WORK_KERNEL:
		kind = cs_kind_on(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
			       ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
			       : CUPTI_ACTIVITY_KIND_KERNEL;
		break;
	case SIM_WORK_MEMCPY:
		kind = w->copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_PTOP ? CUPTI_ACTIVITY_KIND_MEMCPY2
								       : CUPTI_ACTIVITY_KIND_MEMCPY;
		break;
	default:
		kind = CUPTI_ACTIVITY_KIND_MEMSET;
		break;
	}
	/* graph-level tracing replaces the records of graph nodes */
	if (!cs_kind_on(kind) || (w->graph_id && cs_kind_on(CUPTI_ACTIVITY_KIND_GRAPH_TRACE)))
		return;
	pthread_mutex_lock(&C.lock);
	t = cs_thread_self();
	r = reserve(t, record_size(kind), &b);
	if (!r) {
		pthread_mutex_unlock(&C.lock);
		return;
	}
	if (kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
		CUpti_ActivityMemcpy6 *m = r;
		COPY_FIELDS(m, w);
		m->runtimeCorrelationId = w->runtime_corr;
	} else if (kind == CUPTI_ACTIVITY_KIND_MEMCPY2) {
		/* no runtime correlation id: the driver call's is the runtime call's */
		CUpti_ActivityMemcpyPtoP4 *m = r;
		COPY_FIELDS(m, w);
		m->srcDeviceId = w->src_device;
		m->srcContextId = w->src_context;
		m->dstDeviceId = w->dst_device;
		m->dstContextId = w->dst_context;
	} else if (kind == CUPTI_ACTIVITY_KIND_MEMSET) {
		CUpti_ActivityMemset4 *m = r;
		m->kind = kind;
		m->value = w->value;
		m->bytes = w->bytes;
		m->deviceId = w->device;
		m->contextId = w->context;
		m->streamId = w->stream;
		m->correlationId = w->corr;
		m->memoryKind = w->memory_kind;
		m->graphNodeId = w->graph_node_id;
		m->graphId = w->graph_id;
	} else {
		CUpti_ActivityKernel10 *k = r;
		k->kind = kind;
		k->registersPerThread = w->registers;
		k->deviceId = w->device;
		k->contextId = w->context;
		k->streamId = w->stream;
		k->gridX = (int32_t)w->grid[0];
		k->gridY = (int32_t)w->grid[1];
		k->gridZ = (int32_t)w->grid[2];
		k->blockX = (int32_t)w->block[0];
		k->blockY = (int32_t)w->block[1];
		k->blockZ = (int32_t)w->block[2];
		k->staticSharedMemory = (int32_t)w->shared_static;
		k->dynamicSharedMemory = (int32_t)w->shared_dynamic;
		k->correlationId = w->corr;
		k->name = w->name;
		k->queued = k->submitted = CUPTI_TIMESTAMP_UNKNOWN;
		k->graphNodeId = w->graph_node_id;
		k->graphId = w->graph_id;
	}
	add_pending(b, r, kind, w->start, w->end);
	pending->no_times = no_times;
	pthread_mutex_unlock(&C.lock);
}

void cs_activity_graph(const struct sim_graph_run *g)
{
	CUpti_ActivityGraphTrace2 *r;
	struct cs_buf *b;

	if (!cs_kind_on(CUPTI_ACTIVITY_KIND_GRAPH_TRACE))
		return;
	pthread_mutex_lock(&C.lock);
	r = reserve(cs_thread_self(), sizeof(*r), &b);
	if (r) {
		r->kind = CUPTI_ACTIVITY_KIND_GRAPH_TRACE;
		r->correlationId = g->corr;
		r->deviceId = r->endDeviceId = g->device;
		r->contextId = r->endContextId = g->context;
		r->graphId = g->graph_id;
		r->streamId = g->stream;
		add_pending(b, r, CUPTI_ACTIVITY_KIND_GRAPH_TRACE, g->start, g->end);
	}
	pthread_mutex_unlock(&C.lock);
}

void cs_activity_sync(struct sim_sync *s, int site)
{
	CUpti_ActivitySynchronization2 *r;
	struct cs_buf *b;

	if (!cs_kind_on(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION))
		return;
	if (site == SIM_SITE_ENTER) {
		s->tool[0] = cs_now();
		s->tool[1] = 1;
		return;
	}
	if (!s->tool[1])
		return;
	uint64_t end = cs_now();
	pthread_mutex_lock(&C.lock);
	r = reserve(cs_thread_self(), sizeof(*r), &b);
	if (r) {
		r->kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
		r->type = (CUpti_ActivitySynchronizationType)s->type;
		r->start = s->tool[0];
		r->end = end;
		r->correlationId = s->corr;
		r->contextId = s->context;
		r->streamId = s->stream;
		r->cudaEventId = s->event;
		r->cudaEventSyncId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
	}
	pthread_mutex_unlock(&C.lock);
}

/* ---- the API ---- */

/* cuptiActivityEnable/Disable: one kind on or off. */
static CUptiResult set_kind(const char *fn, CUpti_ActivityKind kind, bool on)
{
	CUptiResult r;

	cs_entry(fn, true);
	pthread_mutex_lock(&C.lock);
	r = cs_init_locked();
	if (!r && !simulated(kind))
		r = CUPTI_ERROR_NOT_COMPATIBLE;
	if (!r && on)
		__atomic_or_fetch(&C.kinds, 1ull << kind, __ATOMIC_RELAXED);
	else if (!r)
		__atomic_and_fetch(&C.kinds, ~(1ull << kind), __ATOMIC_RELAXED);
	pthread_mutex_unlock(&C.lock);
	cs_log(fn, "%d -> %d", kind, r);
	return r;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind)
{
	return set_kind(__func__, kind, true);
}

EXPORT CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind)
{
	return set_kind(__func__, kind, false);
}

EXPORT CUptiResult CUPTIAPI cuptiActivityEnableAllSyncRecords(uint8_t enable)
{
	cs_entry(__func__, true);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
							   CUpti_BuffersCallbackCompleteFunc done)
{
	cs_entry(__func__, true);
	if (!req || !done)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&C.lock);
	cs_init_locked();
	/* buffers still out are delivered to whoever is registered then */
	C.requested = req;
	C.completed = done;
	start_worker();
	pthread_mutex_unlock(&C.lock);
	cs_log(__func__, "-> 0");
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc fn)
{
	cs_entry(__func__, true);
	if (!fn)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&C.lock);
	if (C.kinds)
		cs_die("cuptiActivityRegisterTimestampCallback called while activity kinds are "
		       "enabled (%#llx): CUPTI asks for it before any kind is enabled",
		       (unsigned long long)C.kinds);
	cs_init_locked();
	__atomic_store_n(&C.timestamp, fn, __ATOMIC_RELEASE);
	cs_clock_forget();
	cs_calibrate();
	pthread_mutex_unlock(&C.lock);
	cs_log(__func__, "-> 0");
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag)
{
	CUptiResult r = CUPTI_SUCCESS;

	cs_entry(__func__, true);
	cs_log(__func__, "%u", flag);
	if (cs_flush_us)
		nanosleep(&(struct timespec){ .tv_sec = cs_flush_us / 1000000,
					      .tv_nsec = cs_flush_us % 1000000 * 1000l }, NULL);
	pthread_mutex_lock(&C.lock);
	if (cs_init_locked())
		r = CUPTI_ERROR_UNKNOWN;
	else if (!C.completed)
		r = CUPTI_ERROR_INVALID_OPERATION;
	else
		deliver_buffers(flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED ? DELIVER_FORCED
									: DELIVER_COMPLETE);
	pthread_mutex_unlock(&C.lock);
	return r;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityFlush(CUcontext ctx, uint32_t stream, uint32_t flag)
{
	return cuptiActivityFlushAll(flag);
}

EXPORT CUptiResult CUPTIAPI cuptiActivityFlushPeriod(uint32_t ms)
{
	cs_entry(__func__, true);
	pthread_mutex_lock(&C.lock);
	C.flush_period_ms = ms;
	pthread_cond_signal(&wake);
	pthread_mutex_unlock(&C.lock);
	cs_log(__func__, "%u", ms);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext ctx, uint32_t stream,
							      size_t *dropped)
{
	cs_entry(__func__, true);
	if (!dropped)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&C.lock);
	*dropped = C.dropped;
	C.dropped = 0;
	pthread_mutex_unlock(&C.lock);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid,
						       CUpti_Activity **record)
{
	uint8_t *next;
	size_t size;

	if (!buffer || !record)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (!*record) {
		next = buffer;
	} else {
		size = record_size((*record)->kind);
		if (!size)
			return CUPTI_ERROR_INVALID_KIND;
		next = (uint8_t *)*record + size;
	}
	if (next >= buffer + valid)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	size = record_size(((CUpti_Activity *)next)->kind);
	if (!size || next + size > buffer + valid)
		return CUPTI_ERROR_INVALID_KIND;
	*record = (CUpti_Activity *)next;
	return CUPTI_SUCCESS;
}

/* The calling thread's stack of external ids of `kind`: C.lock held on
 * success, released on an error. */
static CUptiResult ext_stack(CUpti_ExternalCorrelationKind kind, struct cs_thread **t)
{
	if (kind <= CUPTI_EXTERNAL_CORRELATION_KIND_INVALID ||
	    kind >= CUPTI_EXTERNAL_CORRELATION_KIND_SIZE)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&C.lock);
	if (cs_init_locked()) {
		pthread_mutex_unlock(&C.lock);
		return CUPTI_ERROR_UNKNOWN;
	}
	*t = cs_thread_self();
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
								   uint64_t id)
{
	struct cs_thread *t;
	CUptiResult r;

	cs_entry(__func__, false);
	if ((r = ext_stack(kind, &t)))
		return r;
	if (t->next[kind] == 16)
		r = CUPTI_ERROR_OUT_OF_MEMORY;
	else
		t->ext[kind][t->next[kind]++] = id;
	pthread_mutex_unlock(&C.lock);
	return r;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
								  uint64_t *last)
{
	struct cs_thread *t;
	CUptiResult r;

	cs_entry(__func__, false);
	if ((r = ext_stack(kind, &t)))
		return r;
	if (!t->next[kind]) {
		r = CUPTI_ERROR_QUEUE_EMPTY;
	} else {
		t->next[kind]--;
		if (last)
			*last = t->ext[kind][t->next[kind]];
	}
	pthread_mutex_unlock(&C.lock);
	return r;
}
