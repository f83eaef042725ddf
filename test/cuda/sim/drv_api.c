// SPDX-License-Identifier: MIT
/*
 * libcuda.so.1's exported entry points, generated from one table. Each one
 * fills the call's parameter struct (generated_cuda_meta.h, as CUPTI hands
 * it to callbacks), announces itself to the tools hub, runs, and announces
 * its exit with the result: the frames between an entry point and a CUPTI
 * callback are real (entry point, hub, libcupti).
 *
 * cuGetProcAddress answers for every entry point here, by its name with or
 * without the version suffix (as libcudart asks for "cuMemAlloc").
 */
#define _GNU_SOURCE
/* generated_cuda_meta.h names the old (v1) types too */
#define __CUDA_API_VERSION_INTERNAL
#include <string.h>

#include <cudaProfiler.h>
#include <cupti_driver_cbid.h>
#include <generated_cuda_meta.h>

#include "drv.h"

#define DRIVER_VERSION 13000

#define UNPAREN(...) __VA_ARGS__

static CUresult drv_driver_version(int *v)
{
	if (!v)
		return CUDA_ERROR_INVALID_VALUE;
	*v = DRIVER_VERSION;
	return CUDA_SUCCESS;
}

static CUresult drv_get_proc_address(const char *symbol, void **pfn, int version,
				     cuuint64_t flags, CUdriverProcAddressQueryResult *status);

/* D(name, (params), (args), implementation call) */
#define DRV_CALLS(D)                                                                        \
	D(cuInit, (unsigned int Flags), (Flags), drv_init(Flags))                           \
	D(cuDriverGetVersion, (int *driverVersion), (driverVersion),                        \
	  drv_driver_version(driverVersion))                                                \
	D(cuDeviceGet, (CUdevice *device, int ordinal), (device, ordinal),                  \
	  drv_device_get(device, ordinal))                                                  \
	D(cuDeviceGetCount, (int *count), (count), drv_device_count(count))                 \
	D(cuDeviceGetName, (char *name, int len, CUdevice dev), (name, len, dev),           \
	  drv_device_name(name, len, dev))                                                  \
	D(cuDeviceGetAttribute, (int *pi, CUdevice_attribute attrib, CUdevice dev),         \
	  (pi, attrib, dev), drv_device_attribute(pi, attrib, dev))                         \
	D(cuDeviceTotalMem_v2, (size_t *bytes, CUdevice dev), (bytes, dev),                 \
	  drv_device_total_mem(bytes, dev))                                                 \
	D(cuDevicePrimaryCtxRetain, (CUcontext *pctx, CUdevice dev), (pctx, dev),           \
	  drv_primary_retain(pctx, dev))                                                    \
	D(cuDevicePrimaryCtxRelease_v2, (CUdevice dev), (dev), drv_primary_release(dev))    \
	D(cuDevicePrimaryCtxReset_v2, (CUdevice dev), (dev), drv_primary_reset(dev))        \
	D(cuCtxGetCurrent, (CUcontext *pctx), (pctx), drv_ctx_get_current(pctx))            \
	D(cuCtxSetCurrent, (CUcontext ctx), (ctx), drv_ctx_set_current(ctx))                \
	D(cuCtxGetDevice, (CUdevice *device), (device), drv_ctx_get_device(device))         \
	D(cuGetErrorName, (CUresult error, const char **pStr), (error, pStr),               \
	  drv_error_name(error, pStr))                                                      \
	D(cuGetErrorString, (CUresult error, const char **pStr), (error, pStr),             \
	  drv_error_string(error, pStr))                                                    \
	D(cuGetProcAddress_v2,                                                              \
	  (const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,               \
	   CUdriverProcAddressQueryResult *symbolStatus),                                   \
	  (symbol, pfn, cudaVersion, flags, symbolStatus),                                  \
	  drv_get_proc_address(symbol, pfn, cudaVersion, flags, symbolStatus))              \
	D(cuGetExportTable, (const void **ppExportTable, const CUuuid *pExportTableId),      \
	  (ppExportTable, pExportTableId), drv_export_table(ppExportTable, pExportTableId)) \
	D(cuMemAlloc_v2, (CUdeviceptr *dptr, size_t bytesize), (dptr, bytesize),            \
	  drv_mem_alloc(dptr, bytesize))                                                    \
	D(cuMemAllocManaged, (CUdeviceptr *dptr, size_t bytesize, unsigned int flags),      \
	  (dptr, bytesize, flags), drv_mem_alloc_managed(dptr, bytesize, flags))            \
	D(cuMemFree_v2, (CUdeviceptr dptr), (dptr), drv_mem_free(dptr))                     \
	D(cuMemAllocPitch_v2,                                                               \
	  (CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,           \
	   unsigned int ElementSizeBytes),                                                  \
	  (dptr, pPitch, WidthInBytes, Height, ElementSizeBytes),                           \
	  drv_mem_alloc_pitch(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes))        \
	D(cuMemAllocAsync, (CUdeviceptr *dptr, size_t bytesize, CUstream hStream),          \
	  (dptr, bytesize, hStream), drv_mem_alloc_async(dptr, bytesize, hStream))          \
	D(cuMemFreeAsync, (CUdeviceptr dptr, CUstream hStream), (dptr, hStream),            \
	  drv_mem_free_async(dptr, hStream))                                                \
	D(cuMemAllocHost_v2, (void **pp, size_t bytesize), (pp, bytesize),                  \
	  drv_mem_alloc_host(pp, bytesize))                                                 \
	D(cuMemHostAlloc, (void **pp, size_t bytesize, unsigned int Flags),                 \
	  (pp, bytesize, Flags), drv_mem_host_alloc(pp, bytesize, Flags))                   \
	D(cuMemFreeHost, (void *p), (p), drv_mem_free_host(p))                              \
	D(cuMemGetInfo_v2, (size_t *free, size_t *total), (free, total),                    \
	  drv_mem_get_info(free, total))                                                    \
	D(cuMemcpy, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount), (dst, src, ByteCount), \
	  drv_copy((void *)dst, (const void *)src, ByteCount, NULL, true, false))           \
	D(cuMemcpyAsync, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream), \
	  (dst, src, ByteCount, hStream),                                                   \
	  drv_copy((void *)dst, (const void *)src, ByteCount, hStream, false, false))       \
	D(cuMemcpyHtoD_v2, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount),  \
	  (dstDevice, srcHost, ByteCount),                                                  \
	  drv_copy_checked((void *)dstDevice, srcHost, ByteCount, NULL, true, true, false)) \
	D(cuMemcpyDtoH_v2, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount),        \
	  (dstHost, srcDevice, ByteCount),                                                  \
	  drv_copy_checked(dstHost, (const void *)srcDevice, ByteCount, NULL, true, false, true)) \
	D(cuMemcpyDtoD_v2, (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount), \
	  (dstDevice, srcDevice, ByteCount),                                                \
	  drv_copy_checked((void *)dstDevice, (const void *)srcDevice, ByteCount, NULL, true, \
			   true, true))                                                     \
	D(cuMemcpyHtoDAsync_v2,                                                             \
	  (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream), \
	  (dstDevice, srcHost, ByteCount, hStream),                                         \
	  drv_copy_checked((void *)dstDevice, srcHost, ByteCount, hStream, false, true, false)) \
	D(cuMemcpyDtoHAsync_v2,                                                             \
	  (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream),       \
	  (dstHost, srcDevice, ByteCount, hStream),                                         \
	  drv_copy_checked(dstHost, (const void *)srcDevice, ByteCount, hStream, false, false, \
			   true))                                                           \
	D(cuMemcpyDtoDAsync_v2,                                                             \
	  (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream), \
	  (dstDevice, srcDevice, ByteCount, hStream),                                       \
	  drv_copy_checked((void *)dstDevice, (const void *)srcDevice, ByteCount, hStream,  \
			   false, true, true))                                              \
	D(cuMemcpy2D_v2, (const CUDA_MEMCPY2D *pCopy), (pCopy), drv_copy_2d(pCopy, NULL, true)) \
	D(cuMemcpy2DAsync_v2, (const CUDA_MEMCPY2D *pCopy, CUstream hStream), (pCopy, hStream), \
	  drv_copy_2d(pCopy, hStream, false))                                               \
	D(cuMemcpy3D_v2, (const CUDA_MEMCPY3D *pCopy), (pCopy), drv_copy_3d(pCopy, NULL, true)) \
	D(cuMemcpy3DAsync_v2, (const CUDA_MEMCPY3D *pCopy, CUstream hStream), (pCopy, hStream), \
	  drv_copy_3d(pCopy, hStream, false))                                               \
	D(cuMemcpyPeer,                                                                     \
	  (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,              \
	   CUcontext srcContext, size_t ByteCount),                                         \
	  (dstDevice, dstContext, srcDevice, srcContext, ByteCount),                        \
	  drv_copy_peer((void *)dstDevice, dstContext, (const void *)srcDevice, srcContext, \
			ByteCount, NULL, true))                                             \
	D(cuMemcpyPeerAsync,                                                                \
	  (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,              \
	   CUcontext srcContext, size_t ByteCount, CUstream hStream),                       \
	  (dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream),               \
	  drv_copy_peer((void *)dstDevice, dstContext, (const void *)srcDevice, srcContext, \
			ByteCount, hStream, false))                                         \
	D(cuDeviceCanAccessPeer, (int *canAccessPeer, CUdevice dev, CUdevice peerDev),      \
	  (canAccessPeer, dev, peerDev), drv_can_access_peer(canAccessPeer, dev, peerDev))  \
	D(cuCtxEnablePeerAccess, (CUcontext peerContext, unsigned int Flags),               \
	  (peerContext, Flags), drv_enable_peer(peerContext, Flags))                        \
	D(cuCtxDisablePeerAccess, (CUcontext peerContext), (peerContext),                   \
	  drv_disable_peer(peerContext))                                                    \
	D(cuMemsetD8_v2, (CUdeviceptr dstDevice, unsigned char uc, size_t N),               \
	  (dstDevice, uc, N), drv_fill((void *)dstDevice, uc, N, NULL, true, false))        \
	D(cuMemsetD8Async, (CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream), \
	  (dstDevice, uc, N, hStream), drv_fill((void *)dstDevice, uc, N, hStream, false, false)) \
	D(cuMemsetD2D8_v2,                                                                  \
	  (CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height), \
	  (dstDevice, dstPitch, uc, Width, Height),                                         \
	  drv_fill_2d((void *)dstDevice, dstPitch, uc, Width, Height, NULL, true, false))   \
	D(cuMemsetD2D8Async,                                                                \
	  (CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height, \
	   CUstream hStream),                                                               \
	  (dstDevice, dstPitch, uc, Width, Height, hStream),                                \
	  drv_fill_2d((void *)dstDevice, dstPitch, uc, Width, Height, hStream, false, false)) \
	D(cuStreamCreate, (CUstream *phStream, unsigned int Flags), (phStream, Flags),      \
	  drv_stream_create(phStream, Flags))                                               \
	D(cuStreamCreateWithPriority, (CUstream *phStream, unsigned int flags, int priority), \
	  (phStream, flags, priority), drv_stream_create(phStream, flags))                  \
	D(cuStreamDestroy_v2, (CUstream hStream), (hStream), drv_stream_destroy(hStream))   \
	D(cuStreamSynchronize, (CUstream hStream), (hStream),                               \
	  drv_stream_synchronize(hStream, false))                                           \
	D(cuStreamQuery, (CUstream hStream), (hStream), drv_stream_query(hStream, false))   \
	D(cuStreamGetId, (CUstream hStream, unsigned long long *streamId), (hStream, streamId), \
	  drv_stream_get_id(hStream, streamId, false))                                      \
	D(cuLaunchHostFunc, (CUstream hStream, CUhostFn fn, void *userData), (hStream, fn, userData), \
	  drv_host_fn(hStream, fn, NULL, userData, 0))                                      \
	D(cuStreamAddCallback,                                                              \
	  (CUstream hStream, CUstreamCallback callback, void *userData, unsigned int flags), \
	  (hStream, callback, userData, flags), drv_host_fn(hStream, NULL, callback, userData, flags)) \
	D(cuStreamWaitEvent, (CUstream hStream, CUevent hEvent, unsigned int Flags),        \
	  (hStream, hEvent, Flags), drv_stream_wait_event(hStream, hEvent, Flags, false))   \
	D(cuStreamBeginCapture_v2, (CUstream hStream, CUstreamCaptureMode mode), (hStream, mode), \
	  drv_begin_capture(hStream, mode, false))                                          \
	D(cuStreamEndCapture, (CUstream hStream, CUgraph *phGraph), (hStream, phGraph),     \
	  drv_end_capture(hStream, phGraph, false))                                         \
	D(cuStreamIsCapturing, (CUstream hStream, CUstreamCaptureStatus *captureStatus),    \
	  (hStream, captureStatus), drv_is_capturing(hStream, captureStatus, false))        \
	D(cuThreadExchangeStreamCaptureMode, (CUstreamCaptureMode *mode), (mode),           \
	  drv_exchange_capture_mode(mode))                                                  \
	D(cuEventCreate, (CUevent *phEvent, unsigned int Flags), (phEvent, Flags),          \
	  drv_event_create(phEvent, Flags))                                                 \
	D(cuEventDestroy_v2, (CUevent hEvent), (hEvent), drv_event_destroy(hEvent))         \
	D(cuEventRecord, (CUevent hEvent, CUstream hStream), (hEvent, hStream),             \
	  drv_event_record(hEvent, hStream, false))                                         \
	D(cuEventQuery, (CUevent hEvent), (hEvent), drv_event_query(hEvent))                \
	D(cuEventSynchronize, (CUevent hEvent), (hEvent), drv_event_synchronize(hEvent))    \
	D(cuEventElapsedTime_v2, (float *pMilliseconds, CUevent hStart, CUevent hEnd),      \
	  (pMilliseconds, hStart, hEnd), drv_event_elapsed(pMilliseconds, hStart, hEnd))    \
	D(cuModuleLoadFatBinary, (CUmodule *module, const void *fatCubin), (module, fatCubin), \
	  drv_module_load_fatbin(module, fatCubin))                                         \
	D(cuModuleUnload, (CUmodule hmod), (hmod), drv_module_unload(hmod))                 \
	D(cuModuleGetFunction, (CUfunction *hfunc, CUmodule hmod, const char *name),        \
	  (hfunc, hmod, name), drv_module_get_function(hfunc, hmod, name))                  \
	D(cuModuleGetGlobal_v2, (CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name), \
	  (dptr, bytes, hmod, name), drv_module_get_global(dptr, bytes, hmod, name))        \
	D(cuFuncGetName, (const char **name, CUfunction hfunc), (name, hfunc),              \
	  drv_func_get_name(name, hfunc))                                                   \
	D(cuGraphInstantiateWithFlags,                                                      \
	  (CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags),             \
	  (phGraphExec, hGraph, flags), drv_graph_instantiate(phGraphExec, hGraph, flags))  \
	D(cuGraphLaunch, (CUgraphExec hGraphExec, CUstream hStream), (hGraphExec, hStream), \
	  drv_graph_launch(hGraphExec, hStream))                                            \
	D(cuGraphDestroy, (CUgraph hGraph), (hGraph), drv_graph_destroy(hGraph))            \
	D(cuGraphExecDestroy, (CUgraphExec hGraphExec), (hGraphExec),                       \
	  drv_graph_exec_destroy(hGraphExec))                                               \
	D(cuGraphGetNodes, (CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes),          \
	  (hGraph, nodes, numNodes), drv_graph_get_nodes(hGraph, nodes, numNodes))

/* Every entry: its callbacks around the call, the result as CUPTI shows it. */
#define DRV_BODY(fn, params_, call)                                                        \
	{                                                                                   \
		struct sim_call c_ = { .domain = SIM_DOMAIN_DRIVER,                         \
				       .cbid = CUPTI_DRIVER_TRACE_CBID_##fn,              \
				       .name = #fn, .params = (params_) };                \
		CUresult r_;                                                                \
                                                                                            \
		drv_enter(&c_);                                                             \
		r_ = call;                                                                  \
		c_.ret = (const int *)&r_;                                                  \
		drv_exit(&c_);                                                              \
		return r_;                                                                  \
	}
#define DRV_ENTRY(fn, decl, args, call)                                                 \
	SIM_EXPORT CUresult CUDAAPI fn decl                                               \
	{                                                                                   \
		fn##_params p_ = { UNPAREN args };                                        \
		DRV_BODY(fn, &p_, call)                                                     \
	}
DRV_CALLS(DRV_ENTRY)

/* No parameter struct (CUPTI's functionParams is NULL for them). */
#define DRV_NOPARAMS(N)                                                                     \
	N(cuCtxSynchronize, drv_ctx_synchronize())                                          \
	N(cuProfilerStart, drv_profiler())                                                  \
	N(cuProfilerStop, drv_profiler())
#define DRV_ENTRY_NOPARAMS(fn, call) SIM_EXPORT CUresult CUDAAPI fn(void) DRV_BODY(fn, NULL, call)
DRV_NOPARAMS(DRV_ENTRY_NOPARAMS)

/* Written out: the callbacks see the kernel's name from the entry on. */
SIM_EXPORT CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
				       unsigned int gridDimZ, unsigned int blockDimX,
				       unsigned int blockDimY, unsigned int blockDimZ,
				       unsigned int sharedMemBytes, CUstream hStream,
				       void **kernelParams, void **extra)
{
	cuLaunchKernel_params p = { f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
				    blockDimZ, sharedMemBytes, hStream, kernelParams, extra };
	struct sim_call c = { .domain = SIM_DOMAIN_DRIVER, .cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
			      .name = "cuLaunchKernel", .params = &p, .symbol = drv_func_symbol(f) };
	CUresult r;

	drv_enter(&c);
	r = drv_launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
		       sharedMemBytes, hStream, kernelParams, extra);
	c.ret = (const int *)&r;
	drv_exit(&c);
	return r;
}

/* ---- cuGetProcAddress ---- */

static const struct {
	const char *name;
	void *fn;
} procs[] = {
#define DRV_PROC(fn, ...) { #fn, (void *)fn },
	DRV_CALLS(DRV_PROC)
#undef DRV_PROC
	{ "cuCtxSynchronize", (void *)cuCtxSynchronize },
#define DRV_PROC_NOPARAMS(fn, call) { #fn, (void *)fn },
	DRV_NOPARAMS(DRV_PROC_NOPARAMS)
#undef DRV_PROC_NOPARAMS
	{ "cuLaunchKernel", (void *)cuLaunchKernel },
	/* renamed in CUDA 12: the old name asked for with a new version */
	{ "cuGraphInstantiate", (void *)cuGraphInstantiateWithFlags },
};

/* "cuMemAlloc_v2" answers to "cuMemAlloc" too. */
static bool same_api(const char *have, const char *want)
{
	size_t n = strlen(want);
	const char *v;

	if (strncmp(have, want, n))
		return false;
	if (!have[n])
		return true;
	v = have + n;
	return v[0] == '_' && v[1] == 'v' && v[2] >= '0' && v[2] <= '9' && !strchr(v + 1, '_');
}

static CUresult drv_get_proc_address(const char *symbol, void **pfn, int version,
				     cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
	if (!symbol || !pfn)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++) {
		if (same_api(procs[i].name, symbol)) {
			*pfn = procs[i].fn;
			if (status)
				*status = CU_GET_PROC_ADDRESS_SUCCESS;
			return CUDA_SUCCESS;
		}
	}
	*pfn = NULL;
	if (status)
		*status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	return CUDA_ERROR_NOT_FOUND;
}
