// SPDX-License-Identifier: MIT
/*
 * Streams, events, waits and the stream-capture rules.
 *
 * Scheduling: work on a stream starts when the stream's previous work ends
 * (or now, if later); the legacy NULL stream also waits for every blocking
 * stream of its context and they for it; non-blocking streams wait for
 * nothing else. A wait (stream, event, context synchronize) sleeps until
 * the simulated end: no earlier in real time, as with a device.
 *
 * Capture rules, from the CUDA documentation of cudaStreamBeginCapture and
 * cudaThreadExchangeStreamCaptureMode:
 *  - a thread in cudaStreamCaptureModeGlobal (the default) is prohibited
 *    from potentially unsafe calls (allocation, freeing, synchronization
 *    and queries) while it has a capture of its own not begun in relaxed
 *    mode, or any thread has a global-mode capture; thread-local mode only
 *    minds its own captures; relaxed mode never. A prohibited call fails
 *    with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (900) and invalidates the
 *    captures that prohibited it (cuStreamEndCapture then returns 901);
 *  - using the legacy stream while a blocking stream of its context
 *    captures fails with CUDA_ERROR_STREAM_CAPTURE_IMPLICIT (906) and
 *    invalidates that capture (cuStreamIsCapturing only reports 906);
 *  - synchronizing or querying a capturing stream, or the context of one,
 *    is CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates it; an event
 *    last recorded in a capture cannot be waited for or queried (907).
 *
 * Host functions (cuLaunchHostFunc, cuStreamAddCallback) run on a thread of
 * the driver's once the work before them has ended; work after them starts
 * when they return. Their length is not known until then, so a call that
 * queues work behind one still running (or synchronizes with it) waits for
 * it to return before it schedules: the device times are a GPU's, the host
 * time of that call is longer than a real one's (which returns at once).
 * They cannot be captured here (CUDA_ERROR_NOT_SUPPORTED).
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include <cupti_activity.h>

#include "drv.h"

#define LEGACY_STREAM_ID 7
#define SYNC_NONE UINT32_MAX

static uint32_t next_stream_id = 13, next_event_id = 1;
static unsigned long long next_capture_id = 1;
static struct drv_capture *captures;
/* a thread's per-thread stream of each device, while that context lives */
static __thread struct {
	struct drv_stream *stream;
	uint32_t ctx_id;
} per_thread_streams[8];
static __thread CUstreamCaptureMode thread_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

/* ---- streams ---- */

struct drv_stream *drv_stream_new(struct drv_ctx *ctx, unsigned flags, bool legacy)
{
	struct drv_stream *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->magic = MAGIC_STREAM;
	s->id = legacy ? LEGACY_STREAM_ID : next_stream_id++;
	s->flags = flags;
	s->legacy = legacy;
	s->ctx = ctx;
	s->next = ctx->streams;
	ctx->streams = s;
	drv_handle_add(s);
	return s;
}

struct drv_stream *drv_stream_of(struct drv_ctx *ctx, CUstream h, bool per_thread)
{
	struct drv_stream *s;

	if (!ctx)
		return NULL;
	if (h == CU_STREAM_PER_THREAD || (!h && per_thread)) {
		__typeof__(per_thread_streams[0]) *pts = &per_thread_streams[ctx->device & 7];
		/* blocking: it synchronizes with the legacy stream */
		if (!pts->stream || pts->ctx_id != ctx->id) {
			pts->stream = drv_stream_new(ctx, 0, false);
			pts->ctx_id = ctx->id;
		}
		if (pts->stream)
			pts->stream->per_thread = true;
		return pts->stream;
	}
	if (!h || h == CU_STREAM_LEGACY)
		return ctx->legacy;
	s = (struct drv_stream *)h;
	return drv_handle_ok(s, MAGIC_STREAM) && s->ctx == ctx ? s : NULL;
}

static uint64_t max64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* ---- host functions ---- */

static pthread_cond_t host_fn_returned = PTHREAD_COND_INITIALIZER;

/*
 * What work queued on `s` now waits for, with the legacy stream's implicit
 * synchronization: `s` itself, and every blocking stream (s is the legacy
 * stream) or the legacy stream (s is blocking). Returns when the latest of
 * them is done; *host_fn says whether one has a host function that has not
 * returned (which holds back that work). drv_lock held.
 */
static uint64_t waited_for(const struct drv_stream *s, bool *host_fn)
{
	uint64_t t = s->busy_until;
	bool held = s->host_fns;

	if (s->legacy) {
		for (const struct drv_stream *b = s->ctx->streams; b; b = b->next)
			if (!(b->flags & CU_STREAM_NON_BLOCKING)) {
				t = max64(t, b->busy_until);
				held |= b->host_fns;
			}
	} else if (!(s->flags & CU_STREAM_NON_BLOCKING)) {
		t = max64(t, s->ctx->legacy->busy_until);
		held |= s->ctx->legacy->host_fns;
	}
	*host_fn = held;
	return t;
}

/* When work queued on `s` now could start, once no host function holds it
 * back; drv_lock held, released while waiting. */
static uint64_t ready_at(const struct drv_stream *s)
{
	uint64_t t;
	bool held;

	while (t = waited_for(s, &held), held)
		pthread_cond_wait(&host_fn_returned, &drv_lock);
	return t;
}

static void wait_context_host_fns(const struct drv_ctx *ctx)
{
	for (const struct drv_stream *s = ctx->streams; s;) {
		if (s->host_fns) {
			pthread_cond_wait(&host_fn_returned, &drv_lock);
			s = ctx->streams; /* the list may have changed meanwhile */
		} else {
			s = s->next;
		}
	}
}

struct host_fn {
	CUhostFn fn;
	CUstreamCallback cb;
	CUstream handle; /* as given: what the callback is passed */
	void *user;
	struct drv_stream *stream;
	uint64_t at; /* when the work before it ends */
};

static void *run_host_fn(void *arg)
{
	struct host_fn *h = arg;

	drv_sleep_until(h->at);
	drv_in_host_fn = true;
	if (h->fn)
		h->fn(h->user);
	else
		h->cb(h->handle, CUDA_SUCCESS, h->user);
	drv_in_host_fn = false;
	pthread_mutex_lock(&drv_lock);
	h->stream->busy_until = max64(h->stream->busy_until, drv_host_ns());
	h->stream->host_fns--;
	pthread_cond_broadcast(&host_fn_returned);
	pthread_mutex_unlock(&drv_lock);
	free(h);
	return NULL;
}

uint64_t drv_schedule(struct drv_stream *s, uint64_t ns, uint64_t now)
{
	uint64_t start;

	start = max64(now, ready_at(s));

	s->busy_until = start + ns;
	return start;
}

/* ---- capture rules ---- */

struct drv_capture *drv_capturing(struct drv_stream *s)
{
	return s ? s->capture : NULL;
}

bool drv_any_capture(void)
{
	return captures != NULL;
}

static void invalidate(struct drv_capture *c)
{
	c->invalidated = true;
}

/* CUPTI's range profiler starting a session on a context (sim_tools): on an H200 (driver
 * 580.159, CUPTI 13.0.1) a start at a launch into a capturing stream failed and the
 * program's next captured call returned CUDA_ERROR_STREAM_CAPTURE_INVALIDATED. */
bool drv_profile_breaks_captures(uint32_t context_id)
{
	bool broke = false;

	pthread_mutex_lock(&drv_lock);
	for (struct drv_capture *c = captures; c; c = c->next) {
		if (c->origin->ctx->id == context_id) {
			invalidate(c);
			broke = true;
		}
	}
	pthread_mutex_unlock(&drv_lock);
	return broke;
}

static CUresult implicit_check(struct drv_stream *s)
{
	CUresult r = CUDA_SUCCESS;

	if (!s->legacy)
		return r;
	for (struct drv_capture *c = captures; c; c = c->next) {
		if (c->origin->ctx == s->ctx && !(c->origin->flags & CU_STREAM_NON_BLOCKING)) {
			invalidate(c);
			r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
		}
	}
	return r;
}

static CUresult unsafe_check(void)
{
	pid_t me = drv_tid();
	CUresult r = CUDA_SUCCESS;

	if (thread_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
		return r;
	for (struct drv_capture *c = captures; c; c = c->next) {
		if (c->mode == CU_STREAM_CAPTURE_MODE_RELAXED)
			continue;
		if (c->tid == me || (thread_mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
				     c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL)) {
			invalidate(c);
			r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
		}
	}
	return r;
}

CUresult drv_capture_check(enum drv_op op, struct drv_stream *s)
{
	CUresult r;

	switch (op) {
	case OP_UNSAFE:
		return unsafe_check();
	case OP_USE_STREAM:
		return implicit_check(s);
	case OP_SYNC_STREAM:
		if (s->capture) {
			invalidate(s->capture);
			return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
		}
		if ((r = implicit_check(s)))
			return r;
		return unsafe_check();
	}
	return CUDA_SUCCESS;
}

/* ---- waits (outside the lock) ---- */

static void wait_recorded(int type, uint32_t ctx, uint32_t stream, uint32_t event, uint64_t until)
{
	struct sim_sync sy = { .type = type, .context = ctx, .stream = stream, .event = event,
			       .corr = drv_current_corr() };

	drv_tool_sync(&sy, SIM_SITE_ENTER);
	drv_sleep_until(until);
	drv_tool_sync(&sy, SIM_SITE_EXIT);
}

#define LOCKED_CTX(ctx)                                                                     \
	struct drv_ctx *ctx = drv_ctx_current();                                            \
	CUresult r_init_ = drv_initialized();                                               \
	if (r_init_)                                                                        \
		return r_init_;                                                             \
	if (!ctx)                                                                           \
		return drv_no_context();                                                    \
	pthread_mutex_lock(&drv_lock)

CUresult drv_stream_create(CUstream *out, unsigned flags)
{
	struct drv_stream *s;

	if (!out || (flags & ~CU_STREAM_NON_BLOCKING))
		return CUDA_ERROR_INVALID_VALUE;
	LOCKED_CTX(ctx);
	s = drv_stream_new(ctx, flags, false);
	pthread_mutex_unlock(&drv_lock);
	if (!s)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*out = (CUstream)s;
	return CUDA_SUCCESS;
}

CUresult drv_stream_destroy(CUstream h)
{
	struct drv_stream *s;

	LOCKED_CTX(ctx);
	s = h && h != CU_STREAM_LEGACY && h != CU_STREAM_PER_THREAD ? drv_stream_of(ctx, h, false)
								    : NULL;
	if (!s || s->capture) {
		pthread_mutex_unlock(&drv_lock);
		return s ? CUDA_ERROR_ILLEGAL_STATE : CUDA_ERROR_INVALID_HANDLE;
	}
	/* its host functions still use it */
	while (s->host_fns)
		pthread_cond_wait(&host_fn_returned, &drv_lock);
	for (struct drv_stream **p = &ctx->streams; *p; p = &(*p)->next) {
		if (*p == s) {
			*p = s->next;
			break;
		}
	}
	drv_handle_del(s);
	s->magic = 0;
	pthread_mutex_unlock(&drv_lock);
	free(s);
	return CUDA_SUCCESS;
}

CUresult drv_stream_synchronize(CUstream h, bool per_thread)
{
	struct drv_stream *s;
	CUresult r;
	uint64_t until;
	uint32_t cid, sid;

	LOCKED_CTX(ctx);
	s = drv_stream_of(ctx, h, per_thread);
	r = s ? drv_capture_check(OP_SYNC_STREAM, s) : CUDA_ERROR_INVALID_HANDLE;
	until = r ? 0 : ready_at(s);
	cid = ctx->id;
	sid = s ? s->id : 0;
	pthread_mutex_unlock(&drv_lock);
	if (r)
		return r;
	wait_recorded(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, cid, sid, SYNC_NONE,
		      until);
	return CUDA_SUCCESS;
}

CUresult drv_stream_query(CUstream h, bool per_thread)
{
	struct drv_stream *s;
	CUresult r;
	uint64_t until = 0;
	bool held = false;

	LOCKED_CTX(ctx);
	s = drv_stream_of(ctx, h, per_thread);
	r = s ? drv_capture_check(OP_SYNC_STREAM, s) : CUDA_ERROR_INVALID_HANDLE;
	if (s)
		until = waited_for(s, &held);
	if (held)
		until = UINT64_MAX;
	pthread_mutex_unlock(&drv_lock);
	if (r)
		return r;
	return drv_host_ns() >= until ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult drv_stream_get_id(CUstream h, unsigned long long *id, bool per_thread)
{
	struct drv_stream *s;

	if (!id)
		return CUDA_ERROR_INVALID_VALUE;
	LOCKED_CTX(ctx);
	s = drv_stream_of(ctx, h, per_thread);
	if (s)
		*id = s->id;
	pthread_mutex_unlock(&drv_lock);
	return s ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* cuptiGetStreamIdEx's question: a stream of ctx (NULL: the calling thread's
 * current), the legacy or the calling thread's per-thread one included. */
int drv_stream_cupti_id(CUcontext c, CUstream h, bool per_thread, uint32_t *id)
{
	struct drv_ctx *ctx = c ? (struct drv_ctx *)c : drv_ctx_current();
	struct drv_stream *s = NULL;

	if (drv_initialized())
		return -1;
	pthread_mutex_lock(&drv_lock);
	if (ctx && drv_handle_ok(ctx, MAGIC_CTX) && !ctx->destroyed)
		s = drv_stream_of(ctx, h, per_thread);
	if (s)
		*id = s->id;
	pthread_mutex_unlock(&drv_lock);
	return s ? 0 : -1;
}

CUresult drv_ctx_synchronize(void)
{
	CUresult r = CUDA_SUCCESS;
	uint64_t until = 0;
	uint32_t cid;

	LOCKED_CTX(ctx);
	/* a context handle encompasses its capturing streams */
	for (struct drv_capture *c = captures; c; c = c->next) {
		if (c->origin->ctx == ctx) {
			invalidate(c);
			r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
		}
	}
	if (!r)
		r = unsafe_check();
	if (!r)
		wait_context_host_fns(ctx);
	for (struct drv_stream *s = ctx->streams; s; s = s->next)
		until = max64(until, s->busy_until);
	cid = ctx->id;
	pthread_mutex_unlock(&drv_lock);
	if (r)
		return r;
	wait_recorded(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, cid, SYNC_NONE,
		      SYNC_NONE, until);
	return CUDA_SUCCESS;
}

/* ---- a context's reset ---- */

uint64_t drv_streams_busy_until(const struct drv_ctx *ctx)
{
	uint64_t until = 0;

	wait_context_host_fns(ctx);
	for (const struct drv_stream *s = ctx->streams; s; s = s->next)
		until = max64(until, s->busy_until);
	return until;
}

bool drv_streams_capturing(const struct drv_ctx *ctx)
{
	for (const struct drv_stream *s = ctx->streams; s; s = s->next)
		if (s->capture)
			return true;
	return false;
}

void drv_streams_release(struct drv_ctx *ctx)
{
	while (ctx->streams) {
		struct drv_stream *s = ctx->streams;

		ctx->streams = s->next;
		drv_handle_del(s);
		s->magic = 0;
		free(s);
	}
	ctx->legacy = NULL;
}

/* ---- events ---- */

CUresult drv_event_live(const struct drv_event *e)
{
	if (!drv_handle_ok(e, MAGIC_EVENT))
		return CUDA_ERROR_INVALID_HANDLE;
	return e->ctx->destroyed || e->ctx->id != e->ctx_id ? CUDA_ERROR_CONTEXT_IS_DESTROYED
							    : CUDA_SUCCESS;
}

CUresult drv_event_create(CUevent *out, unsigned flags)
{
	struct drv_event *e;
	CUresult r = drv_initialized();

	if (r)
		return r;
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	if (!drv_ctx_current())
		return drv_no_context();
	e = calloc(1, sizeof(*e));
	if (!e)
		return CUDA_ERROR_OUT_OF_MEMORY;
	e->magic = MAGIC_EVENT;
	e->flags = flags;
	e->ctx = drv_ctx_current();
	e->ctx_id = e->ctx->id;
	pthread_mutex_lock(&drv_lock);
	e->id = next_event_id++;
	drv_handle_add(e);
	pthread_mutex_unlock(&drv_lock);
	*out = (CUevent)e;
	return CUDA_SUCCESS;
}

CUresult drv_event_destroy(CUevent h)
{
	struct drv_event *e = (struct drv_event *)h;
	bool ok;

	CUresult r;

	pthread_mutex_lock(&drv_lock);
	ok = drv_handle_ok(e, MAGIC_EVENT);
	r = ok ? drv_event_live(e) : CUDA_ERROR_INVALID_HANDLE;
	if (ok) {
		/* one of a reset context: gone already, as the error says */
		drv_handle_del(e);
		e->magic = 0;
	}
	pthread_mutex_unlock(&drv_lock);
	if (ok)
		free(e);
	return r;
}

CUresult drv_event_record(CUevent h, CUstream sh, bool per_thread)
{
	struct drv_event *e = (struct drv_event *)h;
	struct drv_stream *s;
	CUresult r = CUDA_SUCCESS;

	LOCKED_CTX(ctx);
	s = drv_stream_of(ctx, sh, per_thread);
	if (!s) {
		r = CUDA_ERROR_INVALID_HANDLE;
	} else if ((r = drv_event_live(e))) {
	} else if (s->capture) {
		e->captured = e->recorded = true;
	} else if (!(r = drv_capture_check(OP_USE_STREAM, s))) {
		e->at = drv_schedule(s, 0, drv_host_ns());
		e->recorded = true;
		e->captured = false;
	}
	pthread_mutex_unlock(&drv_lock);
	return r;
}

/* An event to wait for or query: its time, or an error. drv_lock held. */
static CUresult event_check(struct drv_event *e, uint64_t *at)
{
	CUresult r;

	if ((r = drv_event_live(e)))
		return r;
	if (e->captured)
		return CUDA_ERROR_CAPTURED_EVENT;
	if ((r = unsafe_check()))
		return r;
	*at = e->recorded ? e->at : 0;
	return CUDA_SUCCESS;
}

CUresult drv_event_query(CUevent h)
{
	uint64_t at = 0;
	CUresult r;

	pthread_mutex_lock(&drv_lock);
	r = event_check((struct drv_event *)h, &at);
	pthread_mutex_unlock(&drv_lock);
	if (r)
		return r;
	return drv_host_ns() >= at ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult drv_event_synchronize(CUevent h)
{
	struct drv_event *e = (struct drv_event *)h;
	uint64_t at = 0;
	uint32_t cid = 0, eid = 0;
	CUresult r;

	pthread_mutex_lock(&drv_lock);
	r = event_check(e, &at);
	if (!r) {
		eid = e->id;
		cid = drv_ctx_current() ? drv_ctx_current()->id : 0;
	}
	pthread_mutex_unlock(&drv_lock);
	if (r)
		return r;
	wait_recorded(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, cid, SYNC_NONE, eid, at);
	return CUDA_SUCCESS;
}

CUresult drv_event_elapsed(float *ms, CUevent ha, CUevent hb)
{
	struct drv_event *a = (struct drv_event *)ha, *b = (struct drv_event *)hb;
	CUresult r = CUDA_SUCCESS;
	uint64_t now = drv_host_ns();

	if (!ms)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&drv_lock);
	if ((r = drv_event_live(a)) || (r = drv_event_live(b)))
		;
	else if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING)
		r = CUDA_ERROR_INVALID_HANDLE;
	else if (a->captured || b->captured)
		r = CUDA_ERROR_CAPTURED_EVENT;
	else if (!a->recorded || !b->recorded || a->at > now || b->at > now)
		r = CUDA_ERROR_NOT_READY;
	else
		*ms = (float)(((double)b->at - (double)a->at) / 1e6);
	pthread_mutex_unlock(&drv_lock);
	return r;
}

CUresult drv_stream_wait_event(CUstream sh, CUevent h, unsigned flags, bool per_thread)
{
	struct drv_event *e = (struct drv_event *)h;
	struct drv_stream *s;
	CUresult r = CUDA_SUCCESS;
	uint32_t cid, sid = 0, eid = 0;

	LOCKED_CTX(ctx);
	s = drv_stream_of(ctx, sh, per_thread);
	if (!s) {
		r = CUDA_ERROR_INVALID_HANDLE;
	} else if ((r = drv_event_live(e))) {
	} else if (s->capture) {
		/* a dependency from outside the capture sequence */
		if (!e->captured) {
			invalidate(s->capture);
			r = CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
		}
	} else if (e->captured) {
		r = CUDA_ERROR_CAPTURED_EVENT;
	} else if (!(r = drv_capture_check(OP_USE_STREAM, s)) && e->recorded) {
		s->busy_until = max64(s->busy_until, e->at);
	}
	cid = ctx->id;
	if (s)
		sid = s->id;
	if (!r)
		eid = e->id;
	pthread_mutex_unlock(&drv_lock);
	if (!r && s && !drv_capturing(s))
		wait_recorded(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, cid, sid, eid, 0);
	return r;
}

CUresult drv_host_fn(CUstream sh, CUhostFn fn, CUstreamCallback cb, void *user, unsigned flags)
{
	struct host_fn *h;
	struct drv_stream *s;
	pthread_t thread;
	pthread_attr_t attr;
	CUresult r = CUDA_SUCCESS;

	/* cuStreamAddCallback: "flags: Reserved for future use, must be 0" */
	if ((!fn && !cb) || flags)
		return CUDA_ERROR_INVALID_VALUE;
	LOCKED_CTX(ctx);
	s = drv_stream_of(ctx, sh, false);
	if (!s)
		r = CUDA_ERROR_INVALID_HANDLE;
	else if (s->capture)
		r = CUDA_ERROR_NOT_SUPPORTED; /* host nodes are not simulated */
	else if (!(r = drv_capture_check(OP_USE_STREAM, s)) &&
		 !(h = malloc(sizeof(*h))))
		r = CUDA_ERROR_OUT_OF_MEMORY;
	if (!r) {
		*h = (struct host_fn){ .fn = fn, .cb = cb, .handle = sh, .user = user, .stream = s,
				       .at = drv_schedule(s, 0, drv_host_ns()) };
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&thread, &attr, run_host_fn, h)) {
			free(h);
			r = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			s->host_fns++;
		}
		pthread_attr_destroy(&attr);
	}
	pthread_mutex_unlock(&drv_lock);
	return r;
}

/* ---- capture ---- */

CUresult drv_begin_capture(CUstream h, CUstreamCaptureMode mode, bool per_thread)
{
	struct drv_stream *s;
	struct drv_capture *c;
	CUresult r = CUDA_SUCCESS;

	if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
	    mode != CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_ERROR_INVALID_VALUE;
	LOCKED_CTX(ctx);
	s = drv_stream_of(ctx, h, per_thread);
	if (!s)
		r = CUDA_ERROR_INVALID_HANDLE;
	else if (s->legacy)
		r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	else if (s->capture)
		r = CUDA_ERROR_ILLEGAL_STATE;
	else if (!(c = calloc(1, sizeof(*c))) || !(c->graph = drv_graph_new(s->ctx))) {
		free(c);
		r = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		c->origin = s;
		c->mode = mode;
		c->tid = drv_tid();
		c->id = next_capture_id++;
		c->next = captures;
		captures = c;
		s->capture = c;
	}
	pthread_mutex_unlock(&drv_lock);
	return r;
}

CUresult drv_end_capture(CUstream h, CUgraph *out, bool per_thread)
{
	struct drv_stream *s;
	struct drv_capture *c = NULL;
	CUresult r = CUDA_SUCCESS;

	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	LOCKED_CTX(ctx);
	s = drv_stream_of(ctx, h, per_thread);
	if (!s)
		r = CUDA_ERROR_INVALID_HANDLE;
	else if (!s->capture)
		r = CUDA_ERROR_ILLEGAL_STATE;
	else if (s->capture->origin != s)
		r = CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
	else if (s->capture->mode != CU_STREAM_CAPTURE_MODE_RELAXED && s->capture->tid != drv_tid())
		r = CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
	if (!r) {
		c = s->capture;
		for (struct drv_capture **p = &captures; *p; p = &(*p)->next) {
			if (*p == c) {
				*p = c->next;
				break;
			}
		}
		s->capture = NULL;
		if (c->invalidated) {
			/* the graph dies with the capture */
			drv_handle_del(c->graph);
			free(c->graph->nodes);
			free(c->graph);
			*out = NULL;
			r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
		} else {
			*out = (CUgraph)c->graph;
		}
	}
	pthread_mutex_unlock(&drv_lock);
	free(c);
	return r;
}

CUresult drv_is_capturing(CUstream h, CUstreamCaptureStatus *status, bool per_thread)
{
	struct drv_stream *s;
	CUresult r = CUDA_SUCCESS;

	if (!status)
		return CUDA_ERROR_INVALID_VALUE;
	LOCKED_CTX(ctx);
	s = drv_stream_of(ctx, h, per_thread);
	if (!s) {
		r = CUDA_ERROR_INVALID_HANDLE;
	} else if (s->legacy) {
		for (struct drv_capture *c = captures; c; c = c->next)
			if (c->origin->ctx == ctx && !(c->origin->flags & CU_STREAM_NON_BLOCKING))
				r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT; /* not invalidated */
		*status = CU_STREAM_CAPTURE_STATUS_NONE;
	} else if (!s->capture) {
		*status = CU_STREAM_CAPTURE_STATUS_NONE;
	} else {
		*status = s->capture->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
						  : CU_STREAM_CAPTURE_STATUS_ACTIVE;
	}
	pthread_mutex_unlock(&drv_lock);
	return r;
}

CUresult drv_exchange_capture_mode(CUstreamCaptureMode *mode)
{
	CUstreamCaptureMode old = thread_mode;

	if (!mode || (*mode != CU_STREAM_CAPTURE_MODE_GLOBAL &&
		      *mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
		      *mode != CU_STREAM_CAPTURE_MODE_RELAXED))
		return CUDA_ERROR_INVALID_VALUE;
	thread_mode = *mode;
	*mode = old;
	return CUDA_SUCCESS;
}
