// SPDX-License-Identifier: MIT
/*
 * The runtime calls that map one-to-one onto the driver: memory (stream-
 * ordered too), copies (2D, 3D, to and from __device__ symbols), fills, streams,
 * host functions, events, capture and graphs. Handles are the driver's
 * (cudaStream_t is a CUstream). The per-thread-default-stream flavours
 * (_ptsz/_ptds) differ only in what the NULL stream means.
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include "rt.h"

#define CTX_OR_FAIL()                                                                      \
	do {                                                                               \
		cudaError_t e_ = rt_context();                                             \
		if (e_)                                                                    \
			return e_;                                                         \
	} while (0)

static CUstream stream_of(cudaStream_t s, bool per_thread)
{
	return !s && per_thread ? CU_STREAM_PER_THREAD : (CUstream)s;
}

/* ---- memory ---- */

cudaError_t rt_malloc(void **p, size_t n)
{
	CTX_OR_FAIL();
	if (!p)
		return rt_error(cudaErrorInvalidValue);
	return rt_result(rt_drv.cuMemAlloc((CUdeviceptr *)p, n));
}

/* The runtime asks the driver for rows its largest loads can use (16 bytes). */
cudaError_t rt_malloc_pitch(void **p, size_t *pitch, size_t width, size_t height)
{
	CTX_OR_FAIL();
	if (!p || !pitch)
		return rt_error(cudaErrorInvalidValue);
	return rt_result(rt_drv.cuMemAllocPitch((CUdeviceptr *)p, pitch, width, height, 16));
}

cudaError_t rt_malloc_async(void **p, size_t n, cudaStream_t s, bool per_thread)
{
	CTX_OR_FAIL();
	if (!p)
		return rt_error(cudaErrorInvalidValue);
	return rt_result(rt_drv.cuMemAllocAsync((CUdeviceptr *)p, n, stream_of(s, per_thread)));
}

cudaError_t rt_free_async(void *p, cudaStream_t s, bool per_thread)
{
	CTX_OR_FAIL();
	return rt_result(rt_drv.cuMemFreeAsync((CUdeviceptr)p, stream_of(s, per_thread)));
}

cudaError_t rt_malloc_managed(void **p, size_t n, unsigned flags)
{
	CTX_OR_FAIL();
	if (!p)
		return rt_error(cudaErrorInvalidValue);
	return rt_result(rt_drv.cuMemAllocManaged((CUdeviceptr *)p, n, flags ? flags : 1));
}

cudaError_t rt_free(void *p)
{
	CTX_OR_FAIL();
	return rt_result(rt_drv.cuMemFree((CUdeviceptr)p));
}

cudaError_t rt_malloc_host(void **p, size_t n)
{
	CTX_OR_FAIL();
	return rt_result(rt_drv.cuMemAllocHost(p, n));
}

cudaError_t rt_host_alloc(void **p, size_t n, unsigned flags)
{
	CTX_OR_FAIL();
	return rt_result(rt_drv.cuMemHostAlloc(p, n, flags));
}

cudaError_t rt_free_host(void *p)
{
	CTX_OR_FAIL();
	return rt_result(rt_drv.cuMemFreeHost(p));
}

/* ---- copies and fills ---- */

/*
 * A copy or fill as the runtime queues it: the async form on the stream, or
 * (a synchronous call of a per-thread-default-stream program) on the thread's
 * stream, then waited for there, as the call "exhibits synchronous behavior";
 * else the driver's synchronous form.
 */
#define QUEUED(async, per_thread, async_call, sync_call)                                    \
	((async) || (per_thread) ? then_waited(async_call, async) : (sync_call))

static CUresult then_waited(CUresult r, bool async)
{
	return r || async ? r : rt_drv.cuStreamSynchronize(CU_STREAM_PER_THREAD);
}

cudaError_t rt_memcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
		      cudaStream_t s, bool async, bool per_thread)
{
	CUstream h = stream_of(s, per_thread);
	CUresult r;

	CTX_OR_FAIL();
	if (!async && per_thread)
		h = CU_STREAM_PER_THREAD; /* the synchronous copy goes to the thread's stream */
	switch (kind) {
	case cudaMemcpyHostToDevice:
		r = QUEUED(async, per_thread, rt_drv.cuMemcpyHtoDAsync((CUdeviceptr)dst, src, n, h),
			   rt_drv.cuMemcpyHtoD((CUdeviceptr)dst, src, n));
		break;
	case cudaMemcpyDeviceToHost:
		r = QUEUED(async, per_thread, rt_drv.cuMemcpyDtoHAsync(dst, (CUdeviceptr)src, n, h),
			   rt_drv.cuMemcpyDtoH(dst, (CUdeviceptr)src, n));
		break;
	case cudaMemcpyDeviceToDevice:
		r = QUEUED(async, per_thread,
			   rt_drv.cuMemcpyDtoDAsync((CUdeviceptr)dst, (CUdeviceptr)src, n, h),
			   rt_drv.cuMemcpyDtoD((CUdeviceptr)dst, (CUdeviceptr)src, n));
		break;
	case cudaMemcpyHostToHost:
	case cudaMemcpyDefault:
		r = QUEUED(async, per_thread,
			   rt_drv.cuMemcpyAsync((CUdeviceptr)dst, (CUdeviceptr)src, n, h),
			   rt_drv.cuMemcpy((CUdeviceptr)dst, (CUdeviceptr)src, n));
		break;
	default:
		return rt_error(cudaErrorInvalidMemcpyDirection);
	}
	return rt_result(r);
}

/* The driver's memory types for a direction; false for no direction. */
static bool copy_sides(enum cudaMemcpyKind kind, CUmemorytype *src, CUmemorytype *dst)
{
	switch (kind) {
	case cudaMemcpyHostToHost:
		*src = *dst = CU_MEMORYTYPE_HOST;
		return true;
	case cudaMemcpyHostToDevice:
		*src = CU_MEMORYTYPE_HOST, *dst = CU_MEMORYTYPE_DEVICE;
		return true;
	case cudaMemcpyDeviceToHost:
		*src = CU_MEMORYTYPE_DEVICE, *dst = CU_MEMORYTYPE_HOST;
		return true;
	case cudaMemcpyDeviceToDevice:
		*src = *dst = CU_MEMORYTYPE_DEVICE;
		return true;
	case cudaMemcpyDefault: /* unified addressing: the pointers tell */
		*src = *dst = CU_MEMORYTYPE_UNIFIED;
		return true;
	}
	return false;
}

/* cudaMemcpy2D(Async): "width must not exceed either dpitch or spitch". */
cudaError_t rt_memcpy_2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
			 size_t height, enum cudaMemcpyKind kind, cudaStream_t s, bool async,
			 bool per_thread)
{
	CUDA_MEMCPY2D c = { .srcHost = src, .srcDevice = (CUdeviceptr)src, .srcPitch = spitch,
			    .dstHost = dst, .dstDevice = (CUdeviceptr)dst, .dstPitch = dpitch,
			    .WidthInBytes = width, .Height = height };

	CTX_OR_FAIL();
	/* "width must not exceed either dpitch or spitch", nor a pitch the maximum */
	if (width > dpitch || width > spitch || dpitch > SIM_PITCH_MAX || spitch > SIM_PITCH_MAX)
		return rt_error(cudaErrorInvalidPitchValue);
	if (!copy_sides(kind, &c.srcMemoryType, &c.dstMemoryType))
		return rt_error(cudaErrorInvalidMemcpyDirection);
	return rt_result(QUEUED(async, per_thread,
				rt_drv.cuMemcpy2DAsync(&c, stream_of(s, per_thread)),
				rt_drv.cuMemcpy2D(&c)));
}

/* cudaMemcpy3D(Async): linear memory only (arrays are not simulated), positions and
 * widths in bytes; each side's slices are its ysize rows of its pitch. */
cudaError_t rt_memcpy_3d(const struct cudaMemcpy3DParms *p, cudaStream_t s, bool async,
			 bool per_thread)
{
	CUDA_MEMCPY3D c;

	CTX_OR_FAIL();
	if (!p || p->srcArray || p->dstArray)
		return rt_error(cudaErrorInvalidValue);
	c = (CUDA_MEMCPY3D){
		.srcXInBytes = p->srcPos.x, .srcY = p->srcPos.y, .srcZ = p->srcPos.z,
		.srcHost = p->srcPtr.ptr, .srcDevice = (CUdeviceptr)p->srcPtr.ptr,
		.srcPitch = p->srcPtr.pitch, .srcHeight = p->srcPtr.ysize,
		.dstXInBytes = p->dstPos.x, .dstY = p->dstPos.y, .dstZ = p->dstPos.z,
		.dstHost = p->dstPtr.ptr, .dstDevice = (CUdeviceptr)p->dstPtr.ptr,
		.dstPitch = p->dstPtr.pitch, .dstHeight = p->dstPtr.ysize,
		.WidthInBytes = p->extent.width, .Height = p->extent.height, .Depth = p->extent.depth,
	};
	if (p->extent.width > p->srcPtr.pitch || p->extent.width > p->dstPtr.pitch)
		return rt_error(cudaErrorInvalidPitchValue);
	if (!copy_sides(p->kind, &c.srcMemoryType, &c.dstMemoryType))
		return rt_error(cudaErrorInvalidMemcpyDirection);
	return rt_result(QUEUED(async, per_thread,
				rt_drv.cuMemcpy3DAsync(&c, stream_of(s, per_thread)),
				rt_drv.cuMemcpy3D(&c)));
}

cudaError_t rt_memset(void *p, int v, size_t n, cudaStream_t s, bool async, bool per_thread)
{
	CTX_OR_FAIL();
	return rt_result(QUEUED(async, per_thread,
				rt_drv.cuMemsetD8Async((CUdeviceptr)p, (unsigned char)v, n,
						       stream_of(s, per_thread)),
				rt_drv.cuMemsetD8((CUdeviceptr)p, (unsigned char)v, n)));
}

/* cudaMemset2D(Async): the driver's 2D fill, queued as cudaMemset queues its own. */
cudaError_t rt_memset_2d(void *p, size_t pitch, int v, size_t width, size_t height,
			 cudaStream_t s, bool async, bool per_thread)
{
	CTX_OR_FAIL();
	return rt_result(QUEUED(async, per_thread,
				rt_drv.cuMemsetD2D8Async((CUdeviceptr)p, pitch, (unsigned char)v,
							 width, height, stream_of(s, per_thread)),
				rt_drv.cuMemsetD2D8((CUdeviceptr)p, pitch, (unsigned char)v, width,
						    height)));
}

/* cudaMemset3D(Async): extent.depth slices of extent.height rows of extent.width
 * bytes, rows pitch apart, slices ysize rows apart: one 2D fill of all the rows
 * where they are evenly spaced (one slice, or slices as high as ysize), else one
 * per slice. */
cudaError_t rt_memset_3d(struct cudaPitchedPtr p, int v, struct cudaExtent e, cudaStream_t s,
			 bool async, bool per_thread)
{
	size_t rows;
	CUresult r = CUDA_SUCCESS;

	CTX_OR_FAIL();
	if (!e.width || !e.height || !e.depth)
		return cudaSuccess;
	if (e.depth > 1 && e.height > p.ysize)
		return rt_error(cudaErrorInvalidValue);
	if ((e.depth == 1 || e.height == p.ysize) &&
	    !__builtin_mul_overflow(e.height, e.depth, &rows))
		return rt_memset_2d(p.ptr, p.pitch, v, e.width, rows, s, async, per_thread);
	for (size_t z = 0; z < e.depth && !r; z++) {
		CUdeviceptr at = (CUdeviceptr)p.ptr + z * p.ysize * p.pitch;

		r = QUEUED(async, per_thread,
			   rt_drv.cuMemsetD2D8Async(at, p.pitch, (unsigned char)v, e.width, e.height,
						    stream_of(s, per_thread)),
			   rt_drv.cuMemsetD2D8(at, p.pitch, (unsigned char)v, e.width, e.height));
	}
	return rt_result(r);
}

/* ---- symbols: a __device__ variable's storage, copied through the driver ---- */

/* The bytes [offset, offset + count) of the symbol's storage, or why not. */
static cudaError_t symbol_range(const void *symbol, size_t count, size_t offset, CUdeviceptr *at)
{
	size_t size = 0;
	cudaError_t e = rt_symbol(symbol, at, &size);

	if (e)
		return e;
	if (offset > size || count > size - offset)
		return rt_error(cudaErrorInvalidValue);
	*at += offset;
	return cudaSuccess;
}

/* "kind can be either cudaMemcpyHostToDevice, cudaMemcpyDeviceToDevice, or
 * cudaMemcpyDefault" (from a symbol: DeviceToHost for HostToDevice). */
cudaError_t rt_memcpy_symbol(void *dst, const void *src, const void *symbol, bool to_symbol,
			     size_t count, size_t offset, enum cudaMemcpyKind kind, cudaStream_t s,
			     bool async, bool per_thread)
{
	enum cudaMemcpyKind host_side = to_symbol ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
	CUdeviceptr at;
	cudaError_t e;

	CTX_OR_FAIL();
	if (kind != host_side && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
		return rt_error(cudaErrorInvalidMemcpyDirection);
	if ((e = symbol_range(symbol, count, offset, &at)))
		return e;
	return to_symbol ? rt_memcpy((void *)at, src, count, kind, s, async, per_thread)
			 : rt_memcpy(dst, (const void *)at, count, kind, s, async, per_thread);
}

cudaError_t rt_symbol_address(void **p, const void *symbol)
{
	CTX_OR_FAIL();
	if (!p)
		return rt_error(cudaErrorInvalidValue);
	return rt_symbol(symbol, (CUdeviceptr *)p, NULL);
}

cudaError_t rt_symbol_size(size_t *size, const void *symbol)
{
	CTX_OR_FAIL();
	if (!size)
		return rt_error(cudaErrorInvalidValue);
	return rt_symbol(symbol, NULL, size);
}

/* ---- peers: devices named by ordinal, reached through their primary contexts ---- */

static cudaError_t primary_of(int device, CUcontext *ctx)
{
	return rt_result(rt_drv.cuDevicePrimaryCtxRetain(ctx, device));
}

/* cudaMemcpyPeer "exhibits synchronous behavior" (the driver's cuMemcpyPeer). */
cudaError_t rt_memcpy_peer(void *dst, int dst_device, const void *src, int src_device, size_t n,
			   cudaStream_t s, bool async)
{
	CUcontext to, from;
	cudaError_t e;

	CTX_OR_FAIL();
	if ((e = primary_of(dst_device, &to)) || (e = primary_of(src_device, &from)))
		return e;
	return rt_result(async ? rt_drv.cuMemcpyPeerAsync((CUdeviceptr)dst, to, (CUdeviceptr)src,
							  from, n, (CUstream)s)
			       : rt_drv.cuMemcpyPeer((CUdeviceptr)dst, to, (CUdeviceptr)src, from, n));
}

cudaError_t rt_can_access_peer(int *can, int device, int peer)
{
	CTX_OR_FAIL();
	return rt_result(rt_drv.cuDeviceCanAccessPeer(can, device, peer));
}

/* The current device's access to peer's memory. */
cudaError_t rt_peer_access(int peer, unsigned flags, bool enable)
{
	CUcontext ctx;
	cudaError_t e;

	CTX_OR_FAIL();
	if (peer == rt_current_device())
		return rt_error(cudaErrorInvalidDevice);
	if ((e = primary_of(peer, &ctx)))
		return e;
	return rt_result(enable ? rt_drv.cuCtxEnablePeerAccess(ctx, flags)
				: rt_drv.cuCtxDisablePeerAccess(ctx));
}

/* ---- streams ---- */

cudaError_t rt_stream_create(cudaStream_t *s, unsigned flags)
{
	CTX_OR_FAIL();
	if (!s)
		return rt_error(cudaErrorInvalidValue);
	return rt_result(rt_drv.cuStreamCreate((CUstream *)s, flags));
}

cudaError_t rt_stream_destroy(cudaStream_t s)
{
	CTX_OR_FAIL();
	return rt_result(rt_drv.cuStreamDestroy((CUstream)s));
}

cudaError_t rt_stream_synchronize(cudaStream_t s, bool per_thread)
{
	CTX_OR_FAIL();
	return rt_result(rt_drv.cuStreamSynchronize(stream_of(s, per_thread)));
}

cudaError_t rt_stream_query(cudaStream_t s, bool per_thread)
{
	CTX_OR_FAIL();
	return rt_result(rt_drv.cuStreamQuery(stream_of(s, per_thread)));
}

cudaError_t rt_stream_get_id(cudaStream_t s, unsigned long long *id, bool per_thread)
{
	CTX_OR_FAIL();
	return rt_result(rt_drv.cuStreamGetId(stream_of(s, per_thread), id));
}

/* ---- host functions: the driver runs them in stream order ---- */

cudaError_t rt_launch_host_fn(cudaStream_t s, cudaHostFn_t fn, void *user, bool per_thread)
{
	CTX_OR_FAIL();
	return rt_result(rt_drv.cuLaunchHostFunc(stream_of(s, per_thread), fn, user));
}

/* A runtime callback: passed the stream it was added to and a runtime status. */
struct rt_callback {
	cudaStreamCallback_t fn;
	cudaStream_t stream;
	void *user;
};

static void CUDA_CB run_callback(CUstream h, CUresult status, void *arg)
{
	struct rt_callback c = *(struct rt_callback *)arg;

	free(arg);
	c.fn(c.stream, (cudaError_t)status, c.user);
}

cudaError_t rt_stream_add_callback(cudaStream_t s, cudaStreamCallback_t cb, void *user,
				   unsigned flags, bool per_thread)
{
	struct rt_callback *c;
	CUresult r;

	CTX_OR_FAIL();
	if (!cb)
		return rt_error(cudaErrorInvalidValue);
	if (!(c = malloc(sizeof(*c))))
		return rt_error(cudaErrorMemoryAllocation);
	*c = (struct rt_callback){ cb, s, user };
	r = rt_drv.cuStreamAddCallback(stream_of(s, per_thread), run_callback, c, flags);
	if (r)
		free(c);
	return rt_result(r);
}

cudaError_t rt_stream_wait_event(cudaStream_t s, cudaEvent_t e, unsigned flags, bool per_thread)
{
	CTX_OR_FAIL();
	return rt_result(rt_drv.cuStreamWaitEvent(stream_of(s, per_thread), (CUevent)e, flags));
}

cudaError_t rt_begin_capture(cudaStream_t s, enum cudaStreamCaptureMode mode, bool per_thread)
{
	CTX_OR_FAIL();
	return rt_result(rt_drv.cuStreamBeginCapture(stream_of(s, per_thread),
						      (CUstreamCaptureMode)mode));
}

cudaError_t rt_end_capture(cudaStream_t s, cudaGraph_t *g, bool per_thread)
{
	CTX_OR_FAIL();
	return rt_result(rt_drv.cuStreamEndCapture(stream_of(s, per_thread), (CUgraph *)g));
}

cudaError_t rt_is_capturing(cudaStream_t s, enum cudaStreamCaptureStatus *st, bool per_thread)
{
	CTX_OR_FAIL();
	return rt_result(rt_drv.cuStreamIsCapturing(stream_of(s, per_thread),
						     (CUstreamCaptureStatus *)st));
}

cudaError_t rt_exchange_capture_mode(enum cudaStreamCaptureMode *mode)
{
	cudaError_t e = rt_load_driver();

	if (e)
		return rt_error(e);
	return rt_result(rt_drv.cuThreadExchangeStreamCaptureMode((CUstreamCaptureMode *)mode));
}

/* ---- events ---- */

cudaError_t rt_event_create(cudaEvent_t *e, unsigned flags)
{
	CTX_OR_FAIL();
	if (!e)
		return rt_error(cudaErrorInvalidValue);
	return rt_result(rt_drv.cuEventCreate((CUevent *)e, flags));
}

cudaError_t rt_event_destroy(cudaEvent_t e)
{
	CTX_OR_FAIL();
	return rt_result(rt_drv.cuEventDestroy((CUevent)e));
}

cudaError_t rt_event_record(cudaEvent_t e, cudaStream_t s, bool per_thread)
{
	CTX_OR_FAIL();
	return rt_result(rt_drv.cuEventRecord((CUevent)e, stream_of(s, per_thread)));
}

cudaError_t rt_event_query(cudaEvent_t e)
{
	CTX_OR_FAIL();
	return rt_result(rt_drv.cuEventQuery((CUevent)e));
}

cudaError_t rt_event_synchronize(cudaEvent_t e)
{
	CTX_OR_FAIL();
	return rt_result(rt_drv.cuEventSynchronize((CUevent)e));
}

cudaError_t rt_event_elapsed(float *ms, cudaEvent_t a, cudaEvent_t b)
{
	CTX_OR_FAIL();
	return rt_result(rt_drv.cuEventElapsedTime(ms, (CUevent)a, (CUevent)b));
}

/* ---- graphs ---- */

cudaError_t rt_graph_instantiate(cudaGraphExec_t *x, cudaGraph_t g, unsigned long long flags)
{
	CTX_OR_FAIL();
	return rt_result(rt_drv.cuGraphInstantiate((CUgraphExec *)x, (CUgraph)g, flags));
}

cudaError_t rt_graph_launch(cudaGraphExec_t x, cudaStream_t s, bool per_thread)
{
	CTX_OR_FAIL();
	return rt_result(rt_drv.cuGraphLaunch((CUgraphExec)x, stream_of(s, per_thread)));
}

cudaError_t rt_graph_destroy(cudaGraph_t g)
{
	CTX_OR_FAIL();
	return rt_result(rt_drv.cuGraphDestroy((CUgraph)g));
}

cudaError_t rt_graph_exec_destroy(cudaGraphExec_t x)
{
	CTX_OR_FAIL();
	return rt_result(rt_drv.cuGraphExecDestroy((CUgraphExec)x));
}

cudaError_t rt_graph_get_nodes(cudaGraph_t g, cudaGraphNode_t *nodes, size_t *n)
{
	CTX_OR_FAIL();
	return rt_result(rt_drv.cuGraphGetNodes((CUgraph)g, (CUgraphNode *)nodes, n));
}
