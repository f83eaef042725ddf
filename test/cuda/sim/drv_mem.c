// SPDX-License-Identifier: MIT
/*
 * Memory, copies and fills. Device memory is host memory (kernels do not
 * compute, but copies and fills really move the bytes, so a program reads
 * back what it wrote). Every allocation is remembered with its kind, so a
 * copy knows its direction and memory kinds (pageable host memory is any
 * pointer the driver did not hand out). A copy or fill of B bytes takes
 * B/10 ns of device time; the synchronous ones return when it is done.
 * Device memory belongs to the device of the context that allocated it: a
 * copy between two devices' memory is a peer copy (PTOP), whichever call
 * made it (cuMemcpyPeer, or cuMemcpy through unified addressing), and
 * needs no peer access (the driver stages it, as NVIDIA's does). A 2D copy
 * (cuMemcpy2D) moves Height rows of WidthInBytes: one copy of their sum; a
 * 3D copy (cuMemcpy3D, linear memory only) Depth slices of such rows.
 *
 * Stream-ordered allocation (cuMemAllocAsync, cuMemFreeAsync) is ordinary
 * device memory, queued on a stream rather than "potentially unsafe" while
 * capturing: it is usable by the stream's later work at once, and a free
 * returns it at once too (the work queued before it has moved its bytes
 * already: use after a stream-ordered free is not modelled).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include <cupti_activity.h>

#include "drv.h"

struct alloc {
	uintptr_t base;
	size_t size;
	uint8_t kind; /* CUpti_ActivityMemoryKind */
	int device;   /* of the context that allocated it */
	uint32_t context;
	bool global;  /* a module's variable: freed with the module only */
};

static struct alloc *allocs;
static size_t nallocs, cap_allocs;
static uint64_t device_used;

#define DEVICE_MEMORY (80ull << 30)

static struct alloc *find(uintptr_t p)
{
	for (size_t i = 0; i < nallocs; i++)
		if (p >= allocs[i].base && p < allocs[i].base + allocs[i].size + (allocs[i].size == 0))
			return &allocs[i];
	return NULL;
}

uint8_t drv_memory_kind(const void *p)
{
	struct alloc *a = find((uintptr_t)p);

	return a ? a->kind : CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
}

static CUresult remember(void *p, size_t size, uint8_t kind, const struct drv_ctx *ctx)
{
	if (nallocs == cap_allocs) {
		size_t cap = cap_allocs ? cap_allocs * 2 : 64;
		struct alloc *a = realloc(allocs, cap * sizeof(*a));
		if (!a)
			return CUDA_ERROR_OUT_OF_MEMORY;
		allocs = a;
		cap_allocs = cap;
	}
	allocs[nallocs++] = (struct alloc){ (uintptr_t)p, size, kind, ctx->device, ctx->id, false };
	if (kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE)
		device_used += size;
	return CUDA_SUCCESS;
}

/* What the capture rules say of an allocation or free (drv_lock held): one
 * ordered on stream h uses h (host nodes of memory are not simulated: not on
 * a capturing stream); any other is potentially unsafe. */
static CUresult may_allocate(struct drv_ctx *ctx, bool ordered, CUstream h)
{
	struct drv_stream *s;

	if (!ordered)
		return drv_capture_check(OP_UNSAFE, NULL);
	if (!(s = drv_stream_of(ctx, h, false)))
		return CUDA_ERROR_INVALID_HANDLE;
	if (drv_capturing(s))
		return CUDA_ERROR_NOT_SUPPORTED;
	return drv_capture_check(OP_USE_STREAM, s);
}

static CUresult allocate(void **out, size_t size, uint8_t kind, bool ordered, CUstream h)
{
	CUresult r = drv_initialized();
	struct drv_ctx *ctx = drv_ctx_current();
	void *p;

	if (r)
		return r;
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	if (!ctx)
		return drv_no_context();
	pthread_mutex_lock(&drv_lock);
	r = may_allocate(ctx, ordered, h);
	if (!r && kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE && device_used + size > DEVICE_MEMORY)
		r = CUDA_ERROR_OUT_OF_MEMORY;
	if (!r) {
		p = aligned_alloc(256, size ? (size + 255) / 256 * 256 : 256);
		if (!p)
			r = CUDA_ERROR_OUT_OF_MEMORY;
		else if ((r = remember(p, size, kind, ctx)))
			free(p);
		else
			*out = p;
	}
	pthread_mutex_unlock(&drv_lock);
	return r;
}

/* Drops a from the table (the last entry takes its slot); drv_lock held.
 * Returns its memory, for the caller to free. */
static void *forget(struct alloc *a)
{
	void *base = (void *)a->base;

	if (a->kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE)
		device_used -= a->size;
	*a = allocs[--nallocs];
	return base;
}

static CUresult release(void *p, uint8_t kind, bool ordered, CUstream h)
{
	CUresult r = drv_initialized();
	struct drv_ctx *ctx = drv_ctx_current();
	struct alloc *a;

	if (r)
		return r;
	if (ordered && !ctx)
		return drv_no_context();
	if (!p && !ordered)
		return CUDA_SUCCESS;
	pthread_mutex_lock(&drv_lock);
	r = may_allocate(ctx, ordered, h);
	if (!r && !p) {
		pthread_mutex_unlock(&drv_lock);
		return CUDA_SUCCESS;
	}
	a = find((uintptr_t)p);
	if (!r && (!a || a->base != (uintptr_t)p || a->global ||
		   (kind == CUPTI_ACTIVITY_MEMORY_KIND_PINNED) !=
			   (a->kind == CUPTI_ACTIVITY_MEMORY_KIND_PINNED)))
		r = CUDA_ERROR_INVALID_VALUE;
	if (!r)
		forget(a);
	pthread_mutex_unlock(&drv_lock);
	if (!r)
		free(p);
	return r;
}

void *drv_storage_new(const struct drv_ctx *ctx, size_t size)
{
	size_t rounded = size ? (size + 255) / 256 * 256 : 256;
	void *p = aligned_alloc(256, rounded);

	if (!p)
		return NULL;
	memset(p, 0, rounded);
	if (remember(p, size, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, ctx)) {
		free(p);
		return NULL;
	}
	allocs[nallocs - 1].global = true;
	return p;
}

void drv_storage_free(void *p)
{
	struct alloc *a = find((uintptr_t)p);

	if (a && a->base == (uintptr_t)p)
		free(forget(a));
}

void drv_mem_release_context(uint32_t context_id)
{
	for (size_t i = 0; i < nallocs;) {
		if (allocs[i].context != context_id) {
			i++;
			continue;
		}
		free(forget(&allocs[i]));
	}
}

CUresult drv_mem_alloc(CUdeviceptr *p, size_t size)
{
	return allocate((void **)p, size, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, false, NULL);
}

/* cuMemAllocPitch: rows of width bytes, PITCH_ALIGN apart (the "pitch" the 2D copies
 * take); an element size other than 4, 8 or 16, an empty side, or a pitch past
 * CU_DEVICE_ATTRIBUTE_MAX_PITCH is CUDA_ERROR_INVALID_VALUE. */
#define PITCH_ALIGN 512

CUresult drv_mem_alloc_pitch(CUdeviceptr *p, size_t *pitch, size_t width, size_t height,
			     unsigned element_size)
{
	size_t row;

	if (!p || !pitch || !width || !height ||
	    (element_size != 4 && element_size != 8 && element_size != 16) ||
	    width > SIM_PITCH_MAX - PITCH_ALIGN + 1)
		return CUDA_ERROR_INVALID_VALUE;
	row = (width + PITCH_ALIGN - 1) / PITCH_ALIGN * PITCH_ALIGN;
	if (height > SIZE_MAX / row)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*pitch = row;
	return drv_mem_alloc(p, row * height);
}

CUresult drv_mem_alloc_async(CUdeviceptr *p, size_t size, CUstream h)
{
	return allocate((void **)p, size, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, true, h);
}

CUresult drv_mem_alloc_managed(CUdeviceptr *p, size_t size, unsigned flags)
{
	return allocate((void **)p, size, CUPTI_ACTIVITY_MEMORY_KIND_MANAGED, false, NULL);
}

CUresult drv_mem_free(CUdeviceptr p)
{
	return release((void *)p, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, false, NULL);
}

CUresult drv_mem_free_async(CUdeviceptr p, CUstream h)
{
	return release((void *)p, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, true, h);
}

CUresult drv_mem_alloc_host(void **p, size_t size)
{
	return allocate(p, size, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, false, NULL);
}

CUresult drv_mem_host_alloc(void **p, size_t size, unsigned flags)
{
	return allocate(p, size, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, false, NULL);
}

CUresult drv_mem_free_host(void *p)
{
	return release(p, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, false, NULL);
}

CUresult drv_mem_get_info(size_t *free_bytes, size_t *total)
{
	CUresult r = drv_initialized();

	if (r)
		return r;
	if (!free_bytes || !total)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&drv_lock);
	*total = DEVICE_MEMORY;
	*free_bytes = DEVICE_MEMORY - device_used;
	pthread_mutex_unlock(&drv_lock);
	return CUDA_SUCCESS;
}

static bool on_device(uint8_t kind)
{
	return kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE || kind == CUPTI_ACTIVITY_MEMORY_KIND_MANAGED;
}

static uint8_t copy_kind(uint8_t src, uint8_t dst)
{
	if (on_device(src))
		return on_device(dst) ? CUPTI_ACTIVITY_MEMCPY_KIND_DTOD : CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
	return on_device(dst) ? CUPTI_ACTIVITY_MEMCPY_KIND_HTOD : CUPTI_ACTIVITY_MEMCPY_KIND_HTOH;
}

/* A copy's bytes: one row, or a 2D copy's rows from pitch to pitch, in each
 * slice of a 3D copy. */
static void move_rows(const struct drv_node *n)
{
	size_t rows = n->height ? n->height : 1, slices = n->depth ? n->depth : 1;
	size_t width = n->bytes / rows / slices;

	for (size_t z = 0; z < slices; z++)
		for (size_t i = 0; i < rows; i++)
			memmove((char *)n->dst + z * n->dst_slice + i * n->dst_pitch,
				(const char *)n->src + z * n->src_slice + i * n->src_pitch, width);
}

/* The work of a copy or fill node, queued now on `s` (drv_lock held); the
 * bytes move at once (only the timing is simulated). */
void drv_queue_node(struct drv_stream *s, const struct drv_node *n, uint32_t graph_id,
		    uint64_t now, struct sim_work *w)
{
	uint64_t ns = n->kind == NODE_KERNEL
			      ? (uint64_t)n->grid[0] * n->grid[1] * n->grid[2] * n->block[0] *
					n->block[1] * n->block[2]
			      : n->bytes / 10;
	uint64_t start = drv_schedule(s, ns, now);

	*w = (struct sim_work){
		.start = start, .end = start + ns,
		.device = (uint32_t)s->ctx->device, .context = s->ctx->id, .stream = s->id,
		.corr = drv_current_corr(), .runtime_corr = drv_runtime_corr(),
		.graph_id = graph_id, .graph_node_id = graph_id ? n->id : 0,
	};
	switch (n->kind) {
	case NODE_KERNEL:
		w->kind = SIM_WORK_KERNEL;
		w->name = n->func->name;
		memcpy(w->grid, n->grid, sizeof(w->grid));
		memcpy(w->block, n->block, sizeof(w->block));
		w->shared_dynamic = n->shared;
		w->registers = SIM_KERNEL_REGISTERS;
		break;
	case NODE_MEMCPY:
		w->kind = SIM_WORK_MEMCPY;
		w->bytes = n->bytes;
		w->copy_kind = n->copy_kind;
		w->src_kind = n->src_kind;
		w->dst_kind = n->dst_kind;
		w->src_device = n->src_device;
		w->src_context = n->src_context;
		w->dst_device = n->dst_device;
		w->dst_context = n->dst_context;
		move_rows(n);
		break;
	case NODE_MEMSET:
		w->kind = SIM_WORK_MEMSET;
		w->bytes = n->bytes;
		w->value = n->value;
		w->memory_kind = n->dst_kind;
		for (size_t i = 0, rows = n->height ? n->height : 1; i < rows; i++)
			memset((char *)n->dst + i * n->dst_pitch, n->value, n->bytes / rows);
		break;
	}
}

/* A kernel, copy or fill: captured into the stream's graph, or queued. */
CUresult drv_submit(struct drv_node *n, CUstream h, bool sync, bool per_thread)
{
	struct drv_ctx *ctx = drv_ctx_current();
	struct drv_stream *s;
	struct drv_capture *cap;
	struct sim_work w;
	CUresult r = drv_initialized();

	if (r)
		return r;
	if (!ctx)
		return drv_no_context();
	pthread_mutex_lock(&drv_lock);
	s = drv_stream_of(ctx, h, per_thread);
	if (!s) {
		pthread_mutex_unlock(&drv_lock);
		return CUDA_ERROR_INVALID_HANDLE;
	}
	if ((cap = drv_capturing(s))) {
		struct drv_node *slot = sync ? NULL : drv_graph_add(cap->graph);

		if (sync) {
			cap->invalidated = true;
			r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
		} else if (!slot) {
			r = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			uint64_t id = slot->id;
			*slot = *n;
			slot->id = id;
		}
		pthread_mutex_unlock(&drv_lock);
		return r;
	}
	r = drv_capture_check(OP_USE_STREAM, s);
	if (!r && sync)
		r = drv_capture_check(OP_UNSAFE, s);
	if (r) {
		pthread_mutex_unlock(&drv_lock);
		return r;
	}
	drv_queue_node(s, n, 0, drv_host_ns(), &w);
	pthread_mutex_unlock(&drv_lock);
	drv_tool_work(&w);
	if (sync)
		drv_sleep_until(w.end);
	return CUDA_SUCCESS;
}

/* A copy's direction and memory kinds, from the memory it reads and writes:
 * device memory of two devices makes it a peer copy. drv_lock held. */
static void copy_kinds(struct drv_node *n)
{
	const struct alloc *from = find((uintptr_t)n->src), *to = find((uintptr_t)n->dst);

	n->src_kind = from ? from->kind : CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
	n->dst_kind = to ? to->kind : CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
	n->copy_kind = copy_kind(n->src_kind, n->dst_kind);
	if (n->src_kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE &&
	    n->dst_kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE && from->device != to->device) {
		n->copy_kind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
		n->src_device = (uint32_t)from->device;
		n->src_context = from->context;
		n->dst_device = (uint32_t)to->device;
		n->dst_context = to->context;
	}
}

CUresult drv_copy(void *dst, const void *src, size_t bytes, CUstream h, bool sync, bool per_thread)
{
	struct drv_node n = { .kind = NODE_MEMCPY, .dst = dst, .src = src, .bytes = bytes };

	if (bytes && (!dst || !src))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&drv_lock);
	copy_kinds(&n);
	pthread_mutex_unlock(&drv_lock);
	return drv_submit(&n, h, sync, per_thread);
}

/* One side of a 3D copy: its first byte, or NULL if the side is not one the
 * simulator has (arrays) or its slices' rows do not fit in the memory the
 * driver knows it to be (drv_lock held). Slices are `rows` rows of `pitch`. */
static const char *copy_3d_side(CUmemorytype type, const void *host, CUdeviceptr device,
				size_t x, size_t y, size_t z, size_t pitch, size_t rows,
				size_t width, size_t height, size_t depth)
{
	const char *base;
	const struct alloc *a;
	size_t end, first;

	switch (type) {
	case CU_MEMORYTYPE_HOST:
		base = host;
		break;
	case CU_MEMORYTYPE_DEVICE:
	case CU_MEMORYTYPE_UNIFIED:
		base = (const char *)device;
		break;
	default: /* arrays are not simulated: no CUarray is valid */
		return NULL;
	}
	/* the end of the last row of the last slice, from base: in 64 bits, never
	 * wrapped; a slice's rows within the slice */
	if (!base || pitch > SIM_PITCH_MAX || width > pitch || x > pitch - width ||
	    (depth > 1 && (y > rows || height > rows - y)) ||
	    __builtin_add_overflow(z, depth - 1, &end) || __builtin_mul_overflow(end, rows, &end) ||
	    __builtin_add_overflow(end, y + height - 1, &end) ||
	    __builtin_mul_overflow(end, pitch, &end) || __builtin_add_overflow(end, x + width, &end) ||
	    __builtin_mul_overflow(z, rows, &first) || __builtin_add_overflow(first, y, &first) ||
	    __builtin_mul_overflow(first, pitch, &first))
		return NULL;
	a = find((uintptr_t)base);
	if (type == CU_MEMORYTYPE_DEVICE && (!a || !on_device(a->kind)))
		return NULL;
	if (a && end > a->base + a->size - (uintptr_t)base)
		return NULL;
	return base + first + x;
}

static const char *copy_2d_side(CUmemorytype type, const void *host, CUdeviceptr device,
				size_t x, size_t y, size_t pitch, size_t width, size_t height)
{
	return copy_3d_side(type, host, device, x, y, 0, pitch, height, width, height, 1);
}

/* cuMemsetD2D8(Async): height rows of width bytes, pitch apart, in device memory;
 * rows past the allocation, or wider than the pitch: CUDA_ERROR_INVALID_VALUE. */
CUresult drv_fill_2d(void *dst, size_t pitch, unsigned char value, size_t width, size_t height,
		     CUstream h, bool sync, bool per_thread)
{
	struct drv_node n = { .kind = NODE_MEMSET, .value = value, .height = height,
			      .dst_pitch = pitch };

	if (__builtin_mul_overflow(width, height, &n.bytes))
		return CUDA_ERROR_INVALID_VALUE;
	if (n.bytes) {
		pthread_mutex_lock(&drv_lock);
		n.dst = (void *)copy_2d_side(CU_MEMORYTYPE_DEVICE, NULL, (CUdeviceptr)dst, 0, 0,
					     pitch, width, height);
		n.dst_kind = drv_memory_kind(dst);
		pthread_mutex_unlock(&drv_lock);
		if (!n.dst)
			return CUDA_ERROR_INVALID_VALUE;
	}
	return drv_submit(&n, h, sync, per_thread);
}

/* cuMemcpy3D(Async): Depth slices of Height rows of WidthInBytes, each side's rows
 * its pitch apart and its slices its Height rows of pitch apart; linear memory only
 * (arrays, levels of detail and the reserved fields: CUDA_ERROR_INVALID_VALUE). */
CUresult drv_copy_3d(const CUDA_MEMCPY3D *c, CUstream h, bool sync)
{
	struct drv_node n = { .kind = NODE_MEMCPY };

	if (!c || c->srcLOD || c->dstLOD || c->reserved0 || c->reserved1 ||
	    __builtin_mul_overflow(c->WidthInBytes, c->Height, &n.bytes) ||
	    __builtin_mul_overflow(n.bytes, c->Depth, &n.bytes) ||
	    __builtin_mul_overflow(c->srcPitch, c->srcHeight, &n.src_slice) ||
	    __builtin_mul_overflow(c->dstPitch, c->dstHeight, &n.dst_slice))
		return CUDA_ERROR_INVALID_VALUE;
	n.height = c->Height;
	n.depth = c->Depth;
	n.src_pitch = c->srcPitch;
	n.dst_pitch = c->dstPitch;
	if (n.bytes) {
		pthread_mutex_lock(&drv_lock);
		n.src = copy_3d_side(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcXInBytes,
				     c->srcY, c->srcZ, c->srcPitch, c->srcHeight, c->WidthInBytes,
				     c->Height, c->Depth);
		n.dst = (void *)copy_3d_side(c->dstMemoryType, c->dstHost, c->dstDevice,
					     c->dstXInBytes, c->dstY, c->dstZ, c->dstPitch,
					     c->dstHeight, c->WidthInBytes, c->Height, c->Depth);
		if (n.src && n.dst)
			copy_kinds(&n);
		pthread_mutex_unlock(&drv_lock);
		if (!n.src || !n.dst)
			return CUDA_ERROR_INVALID_VALUE;
	}
	return drv_submit(&n, h, sync, false);
}

/* cuMemcpy2D(Async): Height rows of WidthInBytes, each side's rows its pitch apart:
 * a 3D copy of one slice (whose sides' heights may be 0, the API says: no slice
 * pitch to check or to step by). */
CUresult drv_copy_2d(const CUDA_MEMCPY2D *c, CUstream h, bool sync)
{
	CUDA_MEMCPY3D d;

	if (!c)
		return CUDA_ERROR_INVALID_VALUE;
	d = (CUDA_MEMCPY3D){
		.srcXInBytes = c->srcXInBytes, .srcY = c->srcY, .srcMemoryType = c->srcMemoryType,
		.srcHost = c->srcHost, .srcDevice = c->srcDevice, .srcArray = c->srcArray,
		.srcPitch = c->srcPitch,
		.dstXInBytes = c->dstXInBytes, .dstY = c->dstY, .dstMemoryType = c->dstMemoryType,
		.dstHost = c->dstHost, .dstDevice = c->dstDevice, .dstArray = c->dstArray,
		.dstPitch = c->dstPitch,
		.WidthInBytes = c->WidthInBytes, .Height = c->Height, .Depth = 1,
	};
	return drv_copy_3d(&d, h, sync);
}

/* cuMemcpyPeer(Async): device memory of one context's device into another's
 * (each pointer must be its context's), queued on a stream of the current
 * context. */
CUresult drv_copy_peer(void *dst, CUcontext dst_ctx, const void *src, CUcontext src_ctx,
		       size_t bytes, CUstream h, bool sync)
{
	const struct drv_ctx *dc = (const struct drv_ctx *)dst_ctx, *sc = (const struct drv_ctx *)src_ctx;
	CUresult r = drv_initialized();

	if (r)
		return r;
	pthread_mutex_lock(&drv_lock);
	if (!drv_handle_ok(dc, MAGIC_CTX) || !drv_handle_ok(sc, MAGIC_CTX) || dc->destroyed ||
	    sc->destroyed) {
		r = CUDA_ERROR_INVALID_CONTEXT;
	} else if (bytes) {
		const struct alloc *from = find((uintptr_t)src), *to = find((uintptr_t)dst);

		if (!from || !to || from->kind != CUPTI_ACTIVITY_MEMORY_KIND_DEVICE ||
		    to->kind != CUPTI_ACTIVITY_MEMORY_KIND_DEVICE || from->device != sc->device ||
		    to->device != dc->device || (uintptr_t)src + bytes > from->base + from->size ||
		    (uintptr_t)dst + bytes > to->base + to->size)
			r = CUDA_ERROR_INVALID_VALUE;
	}
	pthread_mutex_unlock(&drv_lock);
	return r ? r : drv_copy(dst, src, bytes, h, sync, false);
}

/* The explicit-direction copies: the device side must be device memory. */
CUresult drv_copy_checked(void *dst, const void *src, size_t bytes, CUstream h, bool sync,
			  bool dst_device, bool src_device)
{
	bool ok;

	pthread_mutex_lock(&drv_lock);
	ok = (!dst_device || on_device(drv_memory_kind(dst))) &&
	     (!src_device || on_device(drv_memory_kind(src)));
	pthread_mutex_unlock(&drv_lock);
	if (!ok && bytes)
		return CUDA_ERROR_INVALID_VALUE;
	return drv_copy(dst, src, bytes, h, sync, false);
}

CUresult drv_fill(void *dst, unsigned char value, size_t bytes, CUstream h, bool sync,
		  bool per_thread)
{
	struct drv_node n = { .kind = NODE_MEMSET, .dst = dst, .bytes = bytes, .value = value };

	if (bytes && !dst)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&drv_lock);
	n.dst_kind = drv_memory_kind(dst);
	pthread_mutex_unlock(&drv_lock);
	if (bytes && !on_device(n.dst_kind))
		return CUDA_ERROR_INVALID_VALUE;
	return drv_submit(&n, h, sync, per_thread);
}
