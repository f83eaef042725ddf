// SPDX-License-Identifier: MIT
/*
 * CUDA work submitted and not finished, for the hang watchdog (backend.h
 * pending, inject/watchdog.h). Only with --watchdog; without CUPTI the
 * CUDA events around each launch answer instead (event_timing.c).
 *
 * The launch table: a driver call that queues device work (kernel launch,
 * async copy or fill, graph launch) takes the slot of its CUPTI
 * correlation id at its entry (before the work can run) and marks it
 * returned at its exit; a failed call frees it (nothing was queued). Fixed size, indexed by the
 * id, every field atomic: no allocation, no lock on the launch path. A
 * launch whose slot still holds a live entry (PEND_SLOTS newer launches
 * and the old one never retired: its record dropped, or that much in
 * flight) replaces it, counted (the report's pending_not_tracked). An entry
 * is retired
 *  - when CUPTI hands over the device record of its correlation id (any
 *    thread: the buffer-completed callback, cupti__retire_records);
 *  - or, when listed, if a stream synchronize or a successful stream query
 *    on its stream, or a context synchronize of its context, began after
 *    the launch returned: CUDA says all of that work had finished. This
 *    is what names finished work right when its record sits in a buffer
 *    CUPTI holds back: cuptiActivityFlushAll(0) delivers only buffers whose
 *    records are all complete, and a per-thread buffer holding a stuck
 *    kernel's record holds the records of everything launched before it.
 * Listing asks CUPTI for what it has first (cuptiActivityFlushAll(0), the
 * non-forced flush: a forced one would take the stuck work's records
 * unfinished and lose their times for good), from the watchdog's thread,
 * under the lock every CUPTI call outside a callback takes, bounded.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cupti.h>

#include "backends/cuda/internal.h"
#include "inject/clock.h"
#include "inject/shim.h"
#include "inject/watchdog.h"
#include "inject/tables.h"

#if defined(__SANITIZE_THREAD__) && defined(__GNUC__) && !defined(__clang__)
/* ThreadSanitizer does not model the fences of the tables' seqlocks; every field
 * they order is atomic, so it has no race to report either way. */
#pragma GCC diagnostic ignored "-Wtsan"
#endif

#define PEND_SLOTS   4096 /* launches in flight the table holds */
#define STREAM_SLOTS 256  /* streams whose CUPTI id is cached */
#define MARK_SLOTS   256  /* streams and contexts with a "finished up to" */

struct pend_slot {
	_Atomic uint64_t corr;      /* 0: free */
	_Atomic uint64_t submitted; /* the launch's entry, trace clock */
	_Atomic uint64_t returned;  /* its successful exit; 0 while inside */
	_Atomic uint64_t stream;    /* stream_key() */
	_Atomic uint64_t ctx;       /* its context, for context-wide marks */
	_Atomic uintptr_t symbol;   /* kernels: the driver's name, until resolved */
	_Atomic uint32_t name;      /* string id: the API, or the resolved kernel name */
	_Atomic uint32_t stream_id; /* CUPTI's, NO_STREAM if it would not say */
	_Atomic uint32_t device;
};

GT_TABLE(struct pend_slot, slots, PEND_SLOTS);

/* Key -> value maps, direct-mapped; a reader checks the key again after
 * the value (the writer clears it first), a collision just replaces. */
struct kv {
	_Atomic uint64_t key, val;
};
static struct kv stream_ids[STREAM_SLOTS]; /* stream key -> device << 32 | CUPTI id */
static struct kv marks[MARK_SLOTS];        /* stream or context key -> finished up to */
/* Something was written into the tables above: until then they are all zero,
 * and a fork child need not clear them (258 KiB: 66 pages each fork child of
 * a shell would fault in, zeroing them for nothing). */
static _Atomic bool tables_used;

static void tables_touch(void)
{
	if (!atomic_load_explicit(&tables_used, memory_order_relaxed))
		atomic_store_explicit(&tables_used, true, memory_order_relaxed);
}

static unsigned kv_index(uint64_t key, unsigned n)
{
	return (unsigned)((key * 0x9e3779b97f4a7c15ull) >> 40) % n;
}

/* A key lives in one of KV_WAYS slots from its home; a new one takes a free
 * slot of those, else its home. */
#define KV_WAYS 4

static bool kv_get(struct kv *t, unsigned n, uint64_t key, uint64_t *val)
{
	unsigned h = kv_index(key, n);

	for (unsigned i = 0; i < KV_WAYS; i++) {
		struct kv *s = &t[(h + i) % n];

		if (atomic_load_explicit(&s->key, memory_order_acquire) != key)
			continue;
		*val = atomic_load_explicit(&s->val, memory_order_relaxed);
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&s->key, memory_order_relaxed) == key)
			return true;
	}
	return false;
}

static void kv_store(struct kv *s, uint64_t key, uint64_t val)
{
	atomic_store_explicit(&s->key, 0, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&s->val, val, memory_order_relaxed);
	atomic_store_explicit(&s->key, key, memory_order_release);
}

static void kv_put(struct kv *t, unsigned n, uint64_t key, uint64_t val)
{
	tables_touch();
	unsigned h = kv_index(key, n), pick = h;

	for (unsigned i = 0; i < KV_WAYS; i++) {
		uint64_t k = atomic_load_explicit(&t[(h + i) % n].key, memory_order_relaxed);

		if (k == key) {
			pick = (h + i) % n;
			break;
		}
		if (!k && pick == h)
			pick = (h + i) % n;
	}
	kv_store(&t[pick], key, val);
}

static void kv_del(struct kv *t, unsigned n, uint64_t key)
{
	unsigned h = kv_index(key, n);

	for (unsigned i = 0; i < KV_WAYS; i++) {
		struct kv *s = &t[(h + i) % n];
		uint64_t k = key;

		atomic_compare_exchange_strong(&s->key, &k, 0);
	}
}

/* One key per stream: its handle; the legacy stream per context (ctx|1);
 * a per-thread default stream per thread (tid<<3|2). Handles and contexts
 * are 8-byte aligned pointers; a context's own marks are ctx|4. */
static uint64_t stream_key(CUcontext ctx, CUstream h, bool ptsz)
{
	static GT_TLS pid_t tid;

	if (h == CU_STREAM_PER_THREAD || (!h && ptsz)) {
		if (!tid)
			tid = (pid_t)syscall(SYS_gettid);
		return ((uint64_t)tid << 3) | 2;
	}
	if (!h || h == CU_STREAM_LEGACY)
		return (uint64_t)(uintptr_t)ctx | 1;
	return (uint64_t)(uintptr_t)h;
}

#define CTX_KEY(ctx) ((uint64_t)(uintptr_t)(ctx) | 4)

/* ---- which driver calls ---- */

enum pend_call {
	PEND_NONE,
	PEND_WORK,     /* queues a copy, a fill or a graph */
	PEND_KERNEL,   /* queues a kernel: named after it */
	PEND_MARK,     /* once it returns 0, the stream's earlier work is done */
	PEND_CTX_MARK, /* the same for the whole context */
};

/*
 * X(function, the stream it names, _ptsz flavour, what). A runtime call
 * reaches the driver through these (static cudart too), under the runtime
 * call's correlation id, the one its device records carry. Every async copy
 * and fill: cudaMemcpy2DAsync, cudaMemset2DAsync and cudaMemcpyPeerAsync
 * queued behind a stuck kernel went unlisted while only the 1D ones were here.
 * (The batch copies of CUDA 12.8 are not: their signatures changed in 13.)
 */
#define CFG_STREAM(p) ((p)->config ? (p)->config->hStream : NULL)
#define PEND_CALLS(X)                                                               \
	X(cuLaunchKernel, p->hStream, 0, PEND_KERNEL)                               \
	X(cuLaunchKernel_ptsz, p->hStream, 1, PEND_KERNEL)                          \
	X(cuLaunchKernelEx, CFG_STREAM(p), 0, PEND_KERNEL)                          \
	X(cuLaunchKernelEx_ptsz, CFG_STREAM(p), 1, PEND_KERNEL)                     \
	X(cuLaunchCooperativeKernel, p->hStream, 0, PEND_KERNEL)                    \
	X(cuLaunchCooperativeKernel_ptsz, p->hStream, 1, PEND_KERNEL)               \
	X(cuMemcpyAsync, p->hStream, 0, PEND_WORK)                                  \
	X(cuMemcpyAsync_ptsz, p->hStream, 1, PEND_WORK)                             \
	X(cuMemcpyHtoDAsync_v2, p->hStream, 0, PEND_WORK)                           \
	X(cuMemcpyHtoDAsync_v2_ptsz, p->hStream, 1, PEND_WORK)                      \
	X(cuMemcpyDtoHAsync_v2, p->hStream, 0, PEND_WORK)                           \
	X(cuMemcpyDtoHAsync_v2_ptsz, p->hStream, 1, PEND_WORK)                      \
	X(cuMemcpyDtoDAsync_v2, p->hStream, 0, PEND_WORK)                           \
	X(cuMemcpyDtoDAsync_v2_ptsz, p->hStream, 1, PEND_WORK)                      \
	X(cuMemsetD8Async, p->hStream, 0, PEND_WORK)                                \
	X(cuMemsetD8Async_ptsz, p->hStream, 1, PEND_WORK)                           \
	X(cuMemsetD32Async, p->hStream, 0, PEND_WORK)                               \
	X(cuMemsetD32Async_ptsz, p->hStream, 1, PEND_WORK)                          \
	X(cuMemsetD16Async, p->hStream, 0, PEND_WORK)                               \
	X(cuMemsetD16Async_ptsz, p->hStream, 1, PEND_WORK)                          \
	X(cuMemsetD2D8Async, p->hStream, 0, PEND_WORK)                              \
	X(cuMemsetD2D8Async_ptsz, p->hStream, 1, PEND_WORK)                         \
	X(cuMemsetD2D16Async, p->hStream, 0, PEND_WORK)                             \
	X(cuMemsetD2D16Async_ptsz, p->hStream, 1, PEND_WORK)                        \
	X(cuMemsetD2D32Async, p->hStream, 0, PEND_WORK)                             \
	X(cuMemsetD2D32Async_ptsz, p->hStream, 1, PEND_WORK)                        \
	X(cuMemcpy2DAsync_v2, p->hStream, 0, PEND_WORK)                             \
	X(cuMemcpy2DAsync_v2_ptsz, p->hStream, 1, PEND_WORK)                        \
	X(cuMemcpy3DAsync_v2, p->hStream, 0, PEND_WORK)                             \
	X(cuMemcpy3DAsync_v2_ptsz, p->hStream, 1, PEND_WORK)                        \
	X(cuMemcpyPeerAsync, p->hStream, 0, PEND_WORK)                              \
	X(cuMemcpyPeerAsync_ptsz, p->hStream, 1, PEND_WORK)                         \
	X(cuMemcpy3DPeerAsync, p->hStream, 0, PEND_WORK)                            \
	X(cuMemcpy3DPeerAsync_ptsz, p->hStream, 1, PEND_WORK)                       \
	X(cuMemcpyHtoAAsync_v2, p->hStream, 0, PEND_WORK)                           \
	X(cuMemcpyHtoAAsync_v2_ptsz, p->hStream, 1, PEND_WORK)                      \
	X(cuMemcpyAtoHAsync_v2, p->hStream, 0, PEND_WORK)                           \
	X(cuMemcpyAtoHAsync_v2_ptsz, p->hStream, 1, PEND_WORK)                      \
	X(cuGraphLaunch, p->hStream, 0, PEND_WORK)                                  \
	X(cuGraphLaunch_ptsz, p->hStream, 1, PEND_WORK)                             \
	X(cuStreamSynchronize, p->hStream, 0, PEND_MARK)                            \
	X(cuStreamSynchronize_ptsz, p->hStream, 1, PEND_MARK)                       \
	X(cuStreamQuery, p->hStream, 0, PEND_MARK)                                  \
	X(cuStreamQuery_ptsz, p->hStream, 1, PEND_MARK)                             \
	X(cuCtxSynchronize_v2, NULL, 0, PEND_CTX_MARK)

static enum pend_call classify(CUpti_CallbackId cbid, const void *params, CUstream *s, bool *ptsz)
{
	*s = NULL;
	*ptsz = false;
	switch (cbid) {
#define PEND_CASE(fn, stream, pt, what)                                             \
	case CUPTI_DRIVER_TRACE_CBID_##fn: {                                        \
		const fn##_params *p = params;                                      \
		(void)p;                                                            \
		*s = p ? (stream) : NULL;                                           \
		*ptsz = pt;                                                         \
		return what;                                                        \
	}
		PEND_CALLS(PEND_CASE)
#undef PEND_CASE
	case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize: /* no parameters */
		return PEND_CTX_MARK;
	default:
		return PEND_NONE;
	}
}

/* ---- the launch path ---- */

static struct pend_slot *slot_of(uint32_t corr)
{
	return &slots[corr % PEND_SLOTS];
}

/* CUPTI's id of a stream (cuptiGetStreamIdEx is callback-safe; the per-thread
 * stream is the calling thread's); NO_STREAM where it does not say (an older
 * libcupti). */
static uint32_t stream_id_of(CUcontext ctx, CUstream h, bool ptsz)
{
	uint32_t sid;

	if (!cupti_fn.cuptiGetStreamIdEx ||
	    cupti_fn.cuptiGetStreamIdEx(ctx, h, ptsz, &sid) != CUPTI_SUCCESS)
		return NO_STREAM;
	return sid;
}

uint32_t cupti__launch_stream_id(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
	CUstream h;
	bool ptsz;

	if (classify(cbid, cb->functionParams, &h, &ptsz) != PEND_KERNEL)
		return NO_STREAM;
	return stream_id_of(cb->context, h, ptsz);
}

/* CUPTI's id of the stream, asked once per stream. Kept until the stream is
 * destroyed: while it is here, its handle is valid. */
static uint64_t stream_ident(CUcontext ctx, CUstream h, bool ptsz, uint64_t key)
{
	uint64_t v;
	uint32_t sid, dev;

	if (kv_get(stream_ids, STREAM_SLOTS, key, &v))
		return v;
	sid = stream_id_of(ctx, h, ptsz); /* NO_STREAM: rows unnamed */
	if (cupti_fn.cuptiGetDeviceId(ctx, &dev) != CUPTI_SUCCESS)
		dev = 0;
	v = (uint64_t)dev << 32 | sid;
	kv_put(stream_ids, STREAM_SLOTS, key, v);
	return v;
}

static GT_TLS uint64_t wait_began; /* the mark-giving call's entry */

/* At the launch's entry, before its work can run (and its record come). */
static void note_launch(struct pend_slot *s, const CUpti_CallbackData *cb, CUstream h, bool ptsz,
			const char *kernel, uint32_t api_name)
{
	uint64_t key = stream_key(cb->context, h, ptsz);
	uint64_t ident = stream_ident(cb->context, h, ptsz, key);

	tables_touch();
	if (atomic_exchange_explicit(&s->corr, 0, memory_order_relaxed))
		atomic_fetch_add_explicit(&gt_pending_untracked, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&s->submitted, gt_clock_ns(), memory_order_relaxed);
	atomic_store_explicit(&s->returned, 0, memory_order_relaxed);
	atomic_store_explicit(&s->stream, key, memory_order_relaxed);
	atomic_store_explicit(&s->ctx, (uint64_t)(uintptr_t)cb->context, memory_order_relaxed);
	atomic_store_explicit(&s->symbol, (uintptr_t)kernel, memory_order_relaxed);
	atomic_store_explicit(&s->name, api_name, memory_order_relaxed);
	atomic_store_explicit(&s->stream_id, (uint32_t)ident, memory_order_relaxed);
	atomic_store_explicit(&s->device, (uint32_t)(ident >> 32), memory_order_relaxed);
	atomic_store_explicit(&s->corr, cb->correlationId, memory_order_release);
}

void cupti__pending_api(CUpti_CallbackId cbid, const CUpti_CallbackData *cb, uint32_t api_name)
{
	bool enter = cb->callbackSite == CUPTI_API_ENTER, ptsz;
	int result = !enter && cb->functionReturnValue ? *(const int *)cb->functionReturnValue : 0;
	struct pend_slot *s = slot_of(cb->correlationId);
	CUstream h;
	enum pend_call what = classify(cbid, cb->functionParams, &h, &ptsz);

	switch (what) {
	case PEND_WORK:
	case PEND_KERNEL:
		if (!cb->correlationId)
			return;
		if (!enter) {
			if (atomic_load_explicit(&s->corr, memory_order_relaxed) != cb->correlationId)
				return;
			if (result) /* nothing was queued */
				cupti__pending_retire(cb->correlationId);
			else
				atomic_store_explicit(&s->returned, gt_clock_ns(), memory_order_release);
			return;
		}
		if (!gt_tracing())
			return;
		note_launch(s, cb, h, ptsz, what == PEND_KERNEL ? cb->symbolName : NULL, api_name);
		return;
	case PEND_MARK:
	case PEND_CTX_MARK:
		if (enter) {
			wait_began = gt_clock_ns();
		} else if (!result && wait_began) {
			kv_put(marks, MARK_SLOTS,
			       what == PEND_CTX_MARK ? CTX_KEY(cb->context)
						     : stream_key(cb->context, h, ptsz),
			       wait_began);
			wait_began = 0;
		}
		return;
	case PEND_NONE:
		break;
	}
	if (cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamDestroy_v2 && !enter && !result &&
	    cb->functionParams) {
		/* its handle may come back as another stream */
		const cuStreamDestroy_v2_params *p = cb->functionParams;

		kv_del(stream_ids, STREAM_SLOTS, stream_key(cb->context, p->hStream, false));
	}
}

/* A device record of corr was handed over: its work is done. */
void cupti__pending_retire(uint32_t corr)
{
	uint64_t expect = corr;

	if (corr)
		atomic_compare_exchange_strong_explicit(&slot_of(corr)->corr, &expect, 0,
							memory_order_relaxed, memory_order_relaxed);
}

/* ---- names: a kernel's lives with its module ---- */

static pthread_mutex_t name_lock = PTHREAD_MUTEX_INITIALIZER;

static void resolve_names_locked(void)
{
	for (unsigned i = 0; i < PEND_SLOTS; i++) {
		struct pend_slot *s = &slots[i];
		uintptr_t sym = atomic_load_explicit(&s->symbol, memory_order_acquire);

		if (sym && atomic_load_explicit(&s->corr, memory_order_relaxed) &&
		    atomic_compare_exchange_strong(&s->symbol, &sym, 0))
			atomic_store_explicit(&s->name, cupti__kernel_name_id((const char *)sym),
					      memory_order_release);
	}
}

/* Before a module goes: the names of its kernels still in flight. */
void cupti__pending_module_unloading(void)
{
	pthread_mutex_lock(&name_lock);
	resolve_names_locked();
	pthread_mutex_unlock(&name_lock);
}

/* ---- listing ---- */

static bool marked_done(uint64_t key, uint64_t returned)
{
	uint64_t upto;

	return returned && kv_get(marks, MARK_SLOTS, key, &upto) && returned <= upto;
}

static int by_submitted(const void *a, const void *b)
{
	const struct gt_pending_work *x = a, *y = b;

	return x->submitted_ns < y->submitted_ns ? -1 : x->submitted_ns > y->submitted_ns;
}

/*
 * Ask the device: a stream with nothing left to run (cuStreamQuery) has
 * finished everything queued on it, whatever CUPTI still holds. Only
 * streams the program made and has not destroyed (their handle is still
 * valid: the id cache keeps it until cuStreamDestroy; a destroy racing
 * with this query is not excluded), each once, with the launch's context
 * current on this thread of ours.
 */
#define QUERY_MAX 64
static unsigned idle_streams(uint64_t *idle, uint64_t *asked_at)
{
	static int (*query)(CUstream), (*set_ctx)(CUcontext);
	static bool looked;
	uint64_t asked[QUERY_MAX];
	unsigned nasked = 0, nidle = 0;

	if (!looked) {
		void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);

		if (h) {
			query = (int (*)(CUstream))cupti__dlsym(h, "cuStreamQuery");
			set_ctx = (int (*)(CUcontext))cupti__dlsym(h, "cuCtxSetCurrent");
		}
		looked = true;
	}
	if (!query || !set_ctx)
		return 0;
	*asked_at = gt_clock_ns(); /* what returned before it is covered */
	cupti_self++;
	for (unsigned i = 0; i < PEND_SLOTS && nasked < QUERY_MAX; i++) {
		struct pend_slot *s = &slots[i];
		uint64_t key = atomic_load_explicit(&s->stream, memory_order_relaxed), v;
		uint64_t ctx = atomic_load_explicit(&s->ctx, memory_order_relaxed);
		unsigned j;

		if (!atomic_load_explicit(&s->corr, memory_order_acquire) || (key & 7) ||
		    !kv_get(stream_ids, STREAM_SLOTS, key, &v))
			continue;
		for (j = 0; j < nasked && asked[j] != key; j++)
			;
		if (j < nasked)
			continue;
		asked[nasked++] = key;
		if (!set_ctx((CUcontext)(uintptr_t)ctx) && !query((CUstream)(uintptr_t)key))
			idle[nidle++] = key;
	}
	if (nasked)
		set_ctx(NULL);
	cupti_self--;
	return nidle;
}

void cupti__pending(void (*fn)(void *arg, const struct gt_pending_work *w), void *arg)
{
	GT_TABLE(struct gt_pending_work, list, PEND_SLOTS);
	static uint32_t unknown_stream;
	uint64_t idle[QUERY_MAX], asked_at = 0;
	unsigned n = 0, nidle;

	if (!gt_watchdog_on)
		return;
	if (cupti__event_timing()) {
		/* CUPTI is not ours: the launches' own CUDA events say */
		n = cupti__events_pending(list, PEND_SLOTS);
		goto out;
	}
	if (atomic_load(&cupti_state) != CUPTI_ON)
		return;
	/* what CUPTI has, bounded: a drain stuck inside CUPTI holds its lock,
	 * and then the table answers alone */
	cupti__flush_complete(200);
	nidle = idle_streams(idle, &asked_at);
	pthread_mutex_lock(&name_lock);
	resolve_names_locked();
	for (unsigned i = 0; i < PEND_SLOTS; i++) {
		struct pend_slot *s = &slots[i];
		uint64_t corr = atomic_load_explicit(&s->corr, memory_order_acquire);
		uint64_t returned = atomic_load_explicit(&s->returned, memory_order_acquire);
		uint64_t key = atomic_load_explicit(&s->stream, memory_order_relaxed);
		uint64_t ctx = atomic_load_explicit(&s->ctx, memory_order_relaxed);
		struct gt_pending_work w = {
			.name = atomic_load_explicit(&s->name, memory_order_relaxed),
			.corr = gt_corr_foreign(GT_CORR_NS_CUPTI, (uint32_t)corr),
			.submitted_ns = atomic_load_explicit(&s->submitted, memory_order_relaxed),
		};
		uint32_t sid = atomic_load_explicit(&s->stream_id, memory_order_relaxed);
		uint32_t dev = atomic_load_explicit(&s->device, memory_order_relaxed);
		unsigned j;

		atomic_thread_fence(memory_order_acquire);
		if (!corr || atomic_load_explicit(&s->corr, memory_order_relaxed) != corr)
			continue; /* free, retired or taken over meanwhile */
		if (marked_done(key, returned) || marked_done(ctx | 4, returned))
			continue;
		for (j = 0; j < nidle && idle[j] != key; j++)
			;
		if (j < nidle && returned && returned <= asked_at)
			continue;
		if (sid == NO_STREAM) {
			if (!unknown_stream)
				unknown_stream = gt_str_intern("stream ?");
			w.row_name = unknown_stream;
		} else {
			w.row_name = cupti__stream_label(sid);
			w.device_name = cupti__device_label(dev);
		}
		list[n++] = w;
	}
	pthread_mutex_unlock(&name_lock);
out:
	qsort(list, n, sizeof(list[0]), by_submitted);
	for (unsigned i = 0; i < n; i++)
		fn(arg, &list[i]);
}

GT_FORK_CODE void cupti__pending_forget(void)
{
	/* the fork child: the parent's launches are not its own */
	if (atomic_load(&tables_used)) {
		memset(slots, 0, PEND_SLOTS * sizeof(slots[0]));
		memset(stream_ids, 0, sizeof(stream_ids));
		memset(marks, 0, sizeof(marks));
		atomic_store(&tables_used, false);
	}
	pthread_mutex_init(&name_lock, NULL);
}
