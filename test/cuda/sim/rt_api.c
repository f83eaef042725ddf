// SPDX-License-Identifier: MIT
/*
 * libcudart's exported entry points, generated from one table (as in
 * drv_api.c): each fills its parameter struct (generated_cuda_runtime_api_
 * meta.h), announces itself to the tools hub with its CUPTI callback id,
 * runs, and announces its exit with its result. The entry points nvcc's
 * code calls (__cuda*) had no callback ids before CUDA 13: the CUDA 12
 * build announces them with id 0 (CUPTI_RUNTIME_TRACE_CBID_INVALID).
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include <cuda_profiler_api.h>
#include <cupti_runtime_cbid.h>
#include <generated_cuda_runtime_api_meta.h>

#include "rt.h"

/* rt_core.c, rt_launch.c, rt_work.c */
const char *rt_error_name(cudaError_t e);
const char *rt_error_string(cudaError_t e);
cudaError_t rt_get_last_error(void);
cudaError_t rt_peek_last_error(void);
cudaError_t rt_runtime_version(int *v);
cudaError_t rt_driver_version(int *v);
cudaError_t rt_device_count(int *n);
cudaError_t rt_set_device(int d);
cudaError_t rt_get_device(int *d);
cudaError_t rt_device_attribute(int *v, enum cudaDeviceAttr a, int d);
cudaError_t rt_device_synchronize(void);
cudaError_t rt_device_reset(void);
cudaError_t rt_profiler(bool start);
cudaError_t rt_mem_get_info(size_t *free_bytes, size_t *total);
#if SIM_RT_MAJOR >= 13
cudaError_t rt_device_properties(struct cudaDeviceProp *out, int d);
cudaError_t rt_get_kernel(cudaKernel_t *k, const void *host_fun);
#else
cudaError_t rt_device_properties(void *out, int d);
#endif
void **rt_register_fatbin(void *fatbin);
void rt_register_fatbin_end(void **handle);
void rt_register_function(void **handle, const char *host_fun, char *device_fun,
			  const char *device_name);
void rt_unregister_fatbin(void **handle);
unsigned rt_push_config(dim3 grid, dim3 block, size_t shared, void *stream);
cudaError_t rt_pop_config(dim3 *grid, dim3 *block, size_t *shared, void *stream);
cudaError_t rt_func_get_name(const char **name, const void *func);
cudaError_t rt_func_get_attributes(struct cudaFuncAttributes *attr, const void *func);
cudaError_t rt_malloc(void **p, size_t n);
cudaError_t rt_malloc_pitch(void **p, size_t *pitch, size_t width, size_t height);
cudaError_t rt_malloc_async(void **p, size_t n, cudaStream_t s, bool per_thread);
cudaError_t rt_free_async(void *p, cudaStream_t s, bool per_thread);
cudaError_t rt_malloc_managed(void **p, size_t n, unsigned flags);
cudaError_t rt_free(void *p);
cudaError_t rt_malloc_host(void **p, size_t n);
cudaError_t rt_host_alloc(void **p, size_t n, unsigned flags);
cudaError_t rt_free_host(void *p);
cudaError_t rt_memcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
		      cudaStream_t s, bool async, bool per_thread);
cudaError_t rt_memcpy_2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
			 size_t height, enum cudaMemcpyKind kind, cudaStream_t s, bool async,
			 bool per_thread);
cudaError_t rt_memcpy_symbol(void *dst, const void *src, const void *symbol, bool to_symbol,
			     size_t count, size_t offset, enum cudaMemcpyKind kind, cudaStream_t s,
			     bool async, bool per_thread);
cudaError_t rt_symbol_address(void **p, const void *symbol);
cudaError_t rt_symbol_size(size_t *size, const void *symbol);
void rt_register_var(void **handle, char *host_var, char *device_address, const char *device_name,
		     size_t size);
cudaError_t rt_memset(void *p, int v, size_t n, cudaStream_t s, bool async, bool per_thread);
cudaError_t rt_memcpy_3d(const struct cudaMemcpy3DParms *p, cudaStream_t s, bool async,
			 bool per_thread);
cudaError_t rt_memset_3d(struct cudaPitchedPtr p, int v, struct cudaExtent e, cudaStream_t s,
			 bool async, bool per_thread);
cudaError_t rt_memset_2d(void *p, size_t pitch, int v, size_t width, size_t height,
			 cudaStream_t s, bool async, bool per_thread);
cudaError_t rt_memcpy_peer(void *dst, int dst_device, const void *src, int src_device, size_t n,
			   cudaStream_t s, bool async);
cudaError_t rt_can_access_peer(int *can, int device, int peer);
cudaError_t rt_peer_access(int peer, unsigned flags, bool enable);
cudaError_t rt_stream_create(cudaStream_t *s, unsigned flags);
cudaError_t rt_stream_destroy(cudaStream_t s);
cudaError_t rt_stream_synchronize(cudaStream_t s, bool per_thread);
cudaError_t rt_stream_query(cudaStream_t s, bool per_thread);
cudaError_t rt_stream_get_id(cudaStream_t s, unsigned long long *id, bool per_thread);
cudaError_t rt_launch_host_fn(cudaStream_t s, cudaHostFn_t fn, void *user, bool per_thread);
cudaError_t rt_stream_add_callback(cudaStream_t s, cudaStreamCallback_t cb, void *user,
				   unsigned flags, bool per_thread);
cudaError_t rt_stream_wait_event(cudaStream_t s, cudaEvent_t e, unsigned flags, bool per_thread);
cudaError_t rt_begin_capture(cudaStream_t s, enum cudaStreamCaptureMode mode, bool per_thread);
cudaError_t rt_end_capture(cudaStream_t s, cudaGraph_t *g, bool per_thread);
cudaError_t rt_is_capturing(cudaStream_t s, enum cudaStreamCaptureStatus *st, bool per_thread);
cudaError_t rt_exchange_capture_mode(enum cudaStreamCaptureMode *mode);
cudaError_t rt_event_create(cudaEvent_t *e, unsigned flags);
cudaError_t rt_event_destroy(cudaEvent_t e);
cudaError_t rt_event_record(cudaEvent_t e, cudaStream_t s, bool per_thread);
cudaError_t rt_event_query(cudaEvent_t e);
cudaError_t rt_event_synchronize(cudaEvent_t e);
cudaError_t rt_event_elapsed(float *ms, cudaEvent_t a, cudaEvent_t b);
cudaError_t rt_graph_instantiate(cudaGraphExec_t *x, cudaGraph_t g, unsigned long long flags);
cudaError_t rt_graph_launch(cudaGraphExec_t x, cudaStream_t s, bool per_thread);
cudaError_t rt_graph_destroy(cudaGraph_t g);
cudaError_t rt_graph_exec_destroy(cudaGraphExec_t x);
cudaError_t rt_graph_get_nodes(cudaGraph_t g, cudaGraphNode_t *nodes, size_t *n);

#define UNPAREN(...) __VA_ARGS__
#define S cudaStream_t
#define E cudaEvent_t

#define MEMCPY_2D_PARAMS_                                                                   \
	void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height, \
		enum cudaMemcpyKind kind
#define MEMCPY_2D_ARGS_ dst, dpitch, src, spitch, width, height, kind
#define MEMCPY_2D_PARAMS (MEMCPY_2D_PARAMS_)
#define TO_SYMBOL_PARAMS_                                                                   \
	const void *symbol, const void *src, size_t count, size_t offset, enum cudaMemcpyKind kind
#define TO_SYMBOL_ARGS_ symbol, src, count, offset, kind
#define TO_SYMBOL(s, async, pt) rt_memcpy_symbol(NULL, src, symbol, true, count, offset, kind, \
						 s, async, pt)
#define FROM_SYMBOL_PARAMS_                                                                 \
	void *dst, const void *symbol, size_t count, size_t offset, enum cudaMemcpyKind kind
#define FROM_SYMBOL_ARGS_ dst, symbol, count, offset, kind
#define FROM_SYMBOL(s, async, pt) rt_memcpy_symbol(dst, NULL, symbol, false, count, offset, \
						   kind, s, async, pt)
#define MEMCPY_2D_ARGS (MEMCPY_2D_ARGS_)

/* R(name, CUPTI id and params name, (params), (args), implementation call) */
#define RT_CALLS(R)                                                                         \
	R(cudaGetDeviceCount, cudaGetDeviceCount_v3020, (int *count), (count),              \
	  rt_device_count(count))                                                           \
	R(cudaSetDevice, cudaSetDevice_v3020, (int device), (device), rt_set_device(device)) \
	R(cudaGetDevice, cudaGetDevice_v3020, (int *device), (device), rt_get_device(device)) \
	R(cudaDeviceGetAttribute, cudaDeviceGetAttribute_v5000,                             \
	  (int *value, enum cudaDeviceAttr attr, int device), (value, attr, device),        \
	  rt_device_attribute(value, attr, device))                                         \
	R(cudaRuntimeGetVersion, cudaRuntimeGetVersion_v3020, (int *runtimeVersion),        \
	  (runtimeVersion), rt_runtime_version(runtimeVersion))                             \
	R(cudaDriverGetVersion, cudaDriverGetVersion_v3020, (int *driverVersion),           \
	  (driverVersion), rt_driver_version(driverVersion))                                \
	R(cudaMemGetInfo, cudaMemGetInfo_v3020, (size_t *free, size_t *total), (free, total), \
	  rt_mem_get_info(free, total))                                                     \
	R(cudaMalloc, cudaMalloc_v3020, (void **devPtr, size_t size), (devPtr, size),       \
	  rt_malloc(devPtr, size))                                                          \
	R(cudaMallocPitch, cudaMallocPitch_v3020,                                           \
	  (void **devPtr, size_t *pitch, size_t width, size_t height),                      \
	  (devPtr, pitch, width, height), rt_malloc_pitch(devPtr, pitch, width, height))    \
	R(cudaMallocAsync, cudaMallocAsync_v11020, (void **devPtr, size_t size, S hStream), \
	  (devPtr, size, hStream), rt_malloc_async(devPtr, size, hStream, false))           \
	R(cudaMallocAsync_ptsz, cudaMallocAsync_ptsz_v11020,                                \
	  (void **devPtr, size_t size, S hStream), (devPtr, size, hStream),                 \
	  rt_malloc_async(devPtr, size, hStream, true))                                     \
	R(cudaFreeAsync, cudaFreeAsync_v11020, (void *devPtr, S hStream), (devPtr, hStream), \
	  rt_free_async(devPtr, hStream, false))                                            \
	R(cudaFreeAsync_ptsz, cudaFreeAsync_ptsz_v11020, (void *devPtr, S hStream),         \
	  (devPtr, hStream), rt_free_async(devPtr, hStream, true))                          \
	R(cudaMallocManaged, cudaMallocManaged_v6000,                                       \
	  (void **devPtr, size_t size, unsigned int flags), (devPtr, size, flags),          \
	  rt_malloc_managed(devPtr, size, flags))                                           \
	R(cudaFree, cudaFree_v3020, (void *devPtr), (devPtr), rt_free(devPtr))              \
	R(cudaMallocHost, cudaMallocHost_v3020, (void **ptr, size_t size), (ptr, size),     \
	  rt_malloc_host(ptr, size))                                                        \
	R(cudaHostAlloc, cudaHostAlloc_v3020, (void **pHost, size_t size, unsigned int flags), \
	  (pHost, size, flags), rt_host_alloc(pHost, size, flags))                          \
	R(cudaFreeHost, cudaFreeHost_v3020, (void *ptr), (ptr), rt_free_host(ptr))          \
	R(cudaMemcpy, cudaMemcpy_v3020,                                                     \
	  (void *dst, const void *src, size_t count, enum cudaMemcpyKind kind),             \
	  (dst, src, count, kind), rt_memcpy(dst, src, count, kind, NULL, false, false))    \
	R(cudaMemcpy_ptds, cudaMemcpy_ptds_v7000,                                           \
	  (void *dst, const void *src, size_t count, enum cudaMemcpyKind kind),             \
	  (dst, src, count, kind), rt_memcpy(dst, src, count, kind, NULL, false, true))     \
	R(cudaMemcpyAsync, cudaMemcpyAsync_v3020,                                           \
	  (void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, S stream),   \
	  (dst, src, count, kind, stream), rt_memcpy(dst, src, count, kind, stream, true, false)) \
	R(cudaMemcpyAsync_ptsz, cudaMemcpyAsync_ptsz_v7000,                                 \
	  (void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, S stream),   \
	  (dst, src, count, kind, stream), rt_memcpy(dst, src, count, kind, stream, true, true)) \
	R(cudaMemcpy2D, cudaMemcpy2D_v3020, MEMCPY_2D_PARAMS, MEMCPY_2D_ARGS,              \
	  rt_memcpy_2d(MEMCPY_2D_ARGS_, NULL, false, false))                                \
	R(cudaMemcpy2D_ptds, cudaMemcpy2D_ptds_v7000, MEMCPY_2D_PARAMS, MEMCPY_2D_ARGS,    \
	  rt_memcpy_2d(MEMCPY_2D_ARGS_, NULL, false, true))                                 \
	R(cudaMemcpy2DAsync, cudaMemcpy2DAsync_v3020, (MEMCPY_2D_PARAMS_, S stream),       \
	  (MEMCPY_2D_ARGS_, stream), rt_memcpy_2d(MEMCPY_2D_ARGS_, stream, true, false))    \
	R(cudaMemcpy2DAsync_ptsz, cudaMemcpy2DAsync_ptsz_v7000, (MEMCPY_2D_PARAMS_, S stream), \
	  (MEMCPY_2D_ARGS_, stream), rt_memcpy_2d(MEMCPY_2D_ARGS_, stream, true, true))     \
	R(cudaMemcpyToSymbol, cudaMemcpyToSymbol_v3020, (TO_SYMBOL_PARAMS_), (TO_SYMBOL_ARGS_), \
	  TO_SYMBOL(NULL, false, false))                                                    \
	R(cudaMemcpy3D, cudaMemcpy3D_v3020, (const struct cudaMemcpy3DParms *p), (p),      \
	  rt_memcpy_3d(p, NULL, false, false))                                              \
	R(cudaMemcpy3D_ptds, cudaMemcpy3D_ptds_v7000, (const struct cudaMemcpy3DParms *p), (p), \
	  rt_memcpy_3d(p, NULL, false, true))                                               \
	R(cudaMemcpy3DAsync, cudaMemcpy3DAsync_v3020,                                       \
	  (const struct cudaMemcpy3DParms *p, S stream), (p, stream),                       \
	  rt_memcpy_3d(p, stream, true, false))                                             \
	R(cudaMemcpy3DAsync_ptsz, cudaMemcpy3DAsync_ptsz_v7000,                             \
	  (const struct cudaMemcpy3DParms *p, S stream), (p, stream),                       \
	  rt_memcpy_3d(p, stream, true, true))                                              \
	R(cudaMemcpyToSymbol_ptds, cudaMemcpyToSymbol_ptds_v7000, (TO_SYMBOL_PARAMS_),      \
	  (TO_SYMBOL_ARGS_), TO_SYMBOL(NULL, false, true))                                  \
	R(cudaMemcpyToSymbolAsync, cudaMemcpyToSymbolAsync_v3020, (TO_SYMBOL_PARAMS_, S stream), \
	  (TO_SYMBOL_ARGS_, stream), TO_SYMBOL(stream, true, false))                        \
	R(cudaMemcpyToSymbolAsync_ptsz, cudaMemcpyToSymbolAsync_ptsz_v7000,                 \
	  (TO_SYMBOL_PARAMS_, S stream), (TO_SYMBOL_ARGS_, stream), TO_SYMBOL(stream, true, true)) \
	R(cudaMemcpyFromSymbol, cudaMemcpyFromSymbol_v3020, (FROM_SYMBOL_PARAMS_),          \
	  (FROM_SYMBOL_ARGS_), FROM_SYMBOL(NULL, false, false))                             \
	R(cudaMemcpyFromSymbol_ptds, cudaMemcpyFromSymbol_ptds_v7000, (FROM_SYMBOL_PARAMS_), \
	  (FROM_SYMBOL_ARGS_), FROM_SYMBOL(NULL, false, true))                              \
	R(cudaMemcpyFromSymbolAsync, cudaMemcpyFromSymbolAsync_v3020,                       \
	  (FROM_SYMBOL_PARAMS_, S stream), (FROM_SYMBOL_ARGS_, stream),                     \
	  FROM_SYMBOL(stream, true, false))                                                 \
	R(cudaMemcpyFromSymbolAsync_ptsz, cudaMemcpyFromSymbolAsync_ptsz_v7000,             \
	  (FROM_SYMBOL_PARAMS_, S stream), (FROM_SYMBOL_ARGS_, stream),                     \
	  FROM_SYMBOL(stream, true, true))                                                  \
	R(cudaGetSymbolAddress, cudaGetSymbolAddress_v3020, (void **devPtr, const void *symbol), \
	  (devPtr, symbol), rt_symbol_address(devPtr, symbol))                              \
	R(cudaGetSymbolSize, cudaGetSymbolSize_v3020, (size_t *size, const void *symbol),   \
	  (size, symbol), rt_symbol_size(size, symbol))                                     \
	R(cudaMemcpyPeer, cudaMemcpyPeer_v4000,                                             \
	  (void *dst, int dstDevice, const void *src, int srcDevice, size_t count),         \
	  (dst, dstDevice, src, srcDevice, count),                                          \
	  rt_memcpy_peer(dst, dstDevice, src, srcDevice, count, NULL, false))               \
	R(cudaMemcpyPeerAsync, cudaMemcpyPeerAsync_v4000,                                   \
	  (void *dst, int dstDevice, const void *src, int srcDevice, size_t count, S stream), \
	  (dst, dstDevice, src, srcDevice, count, stream),                                  \
	  rt_memcpy_peer(dst, dstDevice, src, srcDevice, count, stream, true))              \
	R(cudaDeviceCanAccessPeer, cudaDeviceCanAccessPeer_v4000,                           \
	  (int *canAccessPeer, int device, int peerDevice), (canAccessPeer, device, peerDevice), \
	  rt_can_access_peer(canAccessPeer, device, peerDevice))                            \
	R(cudaDeviceEnablePeerAccess, cudaDeviceEnablePeerAccess_v4000,                     \
	  (int peerDevice, unsigned int flags), (peerDevice, flags),                        \
	  rt_peer_access(peerDevice, flags, true))                                          \
	R(cudaDeviceDisablePeerAccess, cudaDeviceDisablePeerAccess_v4000, (int peerDevice), \
	  (peerDevice), rt_peer_access(peerDevice, 0, false))                               \
	R(cudaMemset, cudaMemset_v3020, (void *devPtr, int value, size_t count),            \
	  (devPtr, value, count), rt_memset(devPtr, value, count, NULL, false, false))      \
	R(cudaMemset_ptds, cudaMemset_ptds_v7000, (void *devPtr, int value, size_t count),  \
	  (devPtr, value, count), rt_memset(devPtr, value, count, NULL, false, true))       \
	R(cudaMemsetAsync, cudaMemsetAsync_v3020,                                           \
	  (void *devPtr, int value, size_t count, S stream), (devPtr, value, count, stream), \
	  rt_memset(devPtr, value, count, stream, true, false))                             \
	R(cudaMemsetAsync_ptsz, cudaMemsetAsync_ptsz_v7000,                                 \
	  (void *devPtr, int value, size_t count, S stream), (devPtr, value, count, stream), \
	  rt_memset(devPtr, value, count, stream, true, true))                              \
	R(cudaMemset2D, cudaMemset2D_v3020,                                                 \
	  (void *devPtr, size_t pitch, int value, size_t width, size_t height),             \
	  (devPtr, pitch, value, width, height),                                            \
	  rt_memset_2d(devPtr, pitch, value, width, height, NULL, false, false))            \
	R(cudaMemset2D_ptds, cudaMemset2D_ptds_v7000,                                       \
	  (void *devPtr, size_t pitch, int value, size_t width, size_t height),             \
	  (devPtr, pitch, value, width, height),                                            \
	  rt_memset_2d(devPtr, pitch, value, width, height, NULL, false, true))             \
	R(cudaMemset2DAsync, cudaMemset2DAsync_v3020,                                       \
	  (void *devPtr, size_t pitch, int value, size_t width, size_t height, S stream),   \
	  (devPtr, pitch, value, width, height, stream),                                    \
	  rt_memset_2d(devPtr, pitch, value, width, height, stream, true, false))           \
	R(cudaMemset3D, cudaMemset3D_v3020,                                                 \
	  (struct cudaPitchedPtr pitchedDevPtr, int value, struct cudaExtent extent),       \
	  (pitchedDevPtr, value, extent), rt_memset_3d(pitchedDevPtr, value, extent, NULL, false, false)) \
	R(cudaMemset3D_ptds, cudaMemset3D_ptds_v7000,                                       \
	  (struct cudaPitchedPtr pitchedDevPtr, int value, struct cudaExtent extent),       \
	  (pitchedDevPtr, value, extent), rt_memset_3d(pitchedDevPtr, value, extent, NULL, false, true)) \
	R(cudaMemset3DAsync, cudaMemset3DAsync_v3020,                                       \
	  (struct cudaPitchedPtr pitchedDevPtr, int value, struct cudaExtent extent, S stream), \
	  (pitchedDevPtr, value, extent, stream),                                           \
	  rt_memset_3d(pitchedDevPtr, value, extent, stream, true, false))                  \
	R(cudaMemset3DAsync_ptsz, cudaMemset3DAsync_ptsz_v7000,                             \
	  (struct cudaPitchedPtr pitchedDevPtr, int value, struct cudaExtent extent, S stream), \
	  (pitchedDevPtr, value, extent, stream),                                           \
	  rt_memset_3d(pitchedDevPtr, value, extent, stream, true, true))                   \
	R(cudaMemset2DAsync_ptsz, cudaMemset2DAsync_ptsz_v7000,                             \
	  (void *devPtr, size_t pitch, int value, size_t width, size_t height, S stream),   \
	  (devPtr, pitch, value, width, height, stream),                                    \
	  rt_memset_2d(devPtr, pitch, value, width, height, stream, true, true))            \
	R(cudaStreamCreate, cudaStreamCreate_v3020, (S *pStream), (pStream),                \
	  rt_stream_create(pStream, 0))                                                     \
	R(cudaStreamCreateWithFlags, cudaStreamCreateWithFlags_v5000,                       \
	  (S *pStream, unsigned int flags), (pStream, flags), rt_stream_create(pStream, flags)) \
	R(cudaStreamCreateWithPriority, cudaStreamCreateWithPriority_v5050,                 \
	  (S *pStream, unsigned int flags, int priority), (pStream, flags, priority),       \
	  rt_stream_create(pStream, flags))                                                 \
	R(cudaStreamDestroy, cudaStreamDestroy_v5050, (S stream), (stream),                 \
	  rt_stream_destroy(stream))                                                        \
	R(cudaStreamSynchronize, cudaStreamSynchronize_v3020, (S stream), (stream),         \
	  rt_stream_synchronize(stream, false))                                             \
	R(cudaStreamSynchronize_ptsz, cudaStreamSynchronize_ptsz_v7000, (S stream), (stream), \
	  rt_stream_synchronize(stream, true))                                              \
	R(cudaStreamQuery, cudaStreamQuery_v3020, (S stream), (stream),                     \
	  rt_stream_query(stream, false))                                                   \
	R(cudaStreamQuery_ptsz, cudaStreamQuery_ptsz_v7000, (S stream), (stream),           \
	  rt_stream_query(stream, true))                                                    \
	R(cudaStreamGetId, cudaStreamGetId_v12000, (S hStream, unsigned long long *streamId), \
	  (hStream, streamId), rt_stream_get_id(hStream, streamId, false))                  \
	R(cudaStreamGetId_ptsz, cudaStreamGetId_ptsz_v12000,                                \
	  (S hStream, unsigned long long *streamId), (hStream, streamId),                   \
	  rt_stream_get_id(hStream, streamId, true))                                        \
	R(cudaLaunchHostFunc, cudaLaunchHostFunc_v10000, (S stream, cudaHostFn_t fn, void *userData), \
	  (stream, fn, userData), rt_launch_host_fn(stream, fn, userData, false))           \
	R(cudaLaunchHostFunc_ptsz, cudaLaunchHostFunc_ptsz_v10000,                          \
	  (S stream, cudaHostFn_t fn, void *userData), (stream, fn, userData),              \
	  rt_launch_host_fn(stream, fn, userData, true))                                    \
	R(cudaStreamAddCallback, cudaStreamAddCallback_v5000,                               \
	  (S stream, cudaStreamCallback_t callback, void *userData, unsigned int flags),    \
	  (stream, callback, userData, flags),                                              \
	  rt_stream_add_callback(stream, callback, userData, flags, false))                 \
	R(cudaStreamAddCallback_ptsz, cudaStreamAddCallback_ptsz_v7000,                     \
	  (S stream, cudaStreamCallback_t callback, void *userData, unsigned int flags),    \
	  (stream, callback, userData, flags),                                              \
	  rt_stream_add_callback(stream, callback, userData, flags, true))                  \
	R(cudaStreamWaitEvent, cudaStreamWaitEvent_v3020, (S stream, E event, unsigned int flags), \
	  (stream, event, flags), rt_stream_wait_event(stream, event, flags, false))        \
	R(cudaStreamWaitEvent_ptsz, cudaStreamWaitEvent_ptsz_v7000,                         \
	  (S stream, E event, unsigned int flags), (stream, event, flags),                  \
	  rt_stream_wait_event(stream, event, flags, true))                                 \
	R(cudaStreamBeginCapture, cudaStreamBeginCapture_v10000,                            \
	  (S stream, enum cudaStreamCaptureMode mode), (stream, mode),                      \
	  rt_begin_capture(stream, mode, false))                                            \
	R(cudaStreamBeginCapture_ptsz, cudaStreamBeginCapture_ptsz_v10000,                  \
	  (S stream, enum cudaStreamCaptureMode mode), (stream, mode),                      \
	  rt_begin_capture(stream, mode, true))                                             \
	R(cudaStreamEndCapture, cudaStreamEndCapture_v10000, (S stream, cudaGraph_t *pGraph), \
	  (stream, pGraph), rt_end_capture(stream, pGraph, false))                          \
	R(cudaStreamEndCapture_ptsz, cudaStreamEndCapture_ptsz_v10000,                      \
	  (S stream, cudaGraph_t *pGraph), (stream, pGraph), rt_end_capture(stream, pGraph, true)) \
	R(cudaStreamIsCapturing, cudaStreamIsCapturing_v10000,                              \
	  (S stream, enum cudaStreamCaptureStatus *pCaptureStatus), (stream, pCaptureStatus), \
	  rt_is_capturing(stream, pCaptureStatus, false))                                   \
	R(cudaStreamIsCapturing_ptsz, cudaStreamIsCapturing_ptsz_v10000,                    \
	  (S stream, enum cudaStreamCaptureStatus *pCaptureStatus), (stream, pCaptureStatus), \
	  rt_is_capturing(stream, pCaptureStatus, true))                                    \
	R(cudaThreadExchangeStreamCaptureMode, cudaThreadExchangeStreamCaptureMode_v10010,  \
	  (enum cudaStreamCaptureMode *mode), (mode), rt_exchange_capture_mode(mode))       \
	R(cudaEventCreate, cudaEventCreate_v3020, (E *event), (event), rt_event_create(event, 0)) \
	R(cudaEventCreateWithFlags, cudaEventCreateWithFlags_v3020,                         \
	  (E *event, unsigned int flags), (event, flags), rt_event_create(event, flags))    \
	R(cudaEventRecord, cudaEventRecord_v3020, (E event, S stream), (event, stream),     \
	  rt_event_record(event, stream, false))                                            \
	R(cudaEventRecord_ptsz, cudaEventRecord_ptsz_v7000, (E event, S stream), (event, stream), \
	  rt_event_record(event, stream, true))                                             \
	R(cudaEventQuery, cudaEventQuery_v3020, (E event), (event), rt_event_query(event))  \
	R(cudaEventSynchronize, cudaEventSynchronize_v3020, (E event), (event),             \
	  rt_event_synchronize(event))                                                      \
	R(cudaEventElapsedTime, cudaEventElapsedTime_v12080, (float *ms, E start, E end),   \
	  (ms, start, end), rt_event_elapsed(ms, start, end))                               \
	R(cudaEventDestroy, cudaEventDestroy_v3020, (E event), (event), rt_event_destroy(event)) \
	R(cudaGraphInstantiate, cudaGraphInstantiate_v12000,                                \
	  (cudaGraphExec_t *pGraphExec, cudaGraph_t graph, unsigned long long flags),       \
	  (pGraphExec, graph, flags), rt_graph_instantiate(pGraphExec, graph, flags))       \
	R(cudaGraphInstantiateWithFlags, cudaGraphInstantiateWithFlags_v11040,              \
	  (cudaGraphExec_t *pGraphExec, cudaGraph_t graph, unsigned long long flags),       \
	  (pGraphExec, graph, flags), rt_graph_instantiate(pGraphExec, graph, flags))       \
	R(cudaGraphLaunch, cudaGraphLaunch_v10000, (cudaGraphExec_t graphExec, S stream),   \
	  (graphExec, stream), rt_graph_launch(graphExec, stream, false))                   \
	R(cudaGraphLaunch_ptsz, cudaGraphLaunch_ptsz_v10000,                                \
	  (cudaGraphExec_t graphExec, S stream), (graphExec, stream),                       \
	  rt_graph_launch(graphExec, stream, true))                                         \
	R(cudaGraphDestroy, cudaGraphDestroy_v10000, (cudaGraph_t graph), (graph),          \
	  rt_graph_destroy(graph))                                                          \
	R(cudaGraphExecDestroy, cudaGraphExecDestroy_v10000, (cudaGraphExec_t graphExec),   \
	  (graphExec), rt_graph_exec_destroy(graphExec))                                    \
	R(cudaGraphGetNodes, cudaGraphGetNodes_v10000,                                      \
	  (cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *numNodes), (graph, nodes, numNodes), \
	  rt_graph_get_nodes(graph, nodes, numNodes))                                       \
	R(cudaFuncGetName, cudaFuncGetName_v12030, (const char **name, const void *func),   \
	  (name, func), rt_func_get_name(name, func))                                      \
	R(cudaFuncGetAttributes, cudaFuncGetAttributes_v3020,                               \
	  (struct cudaFuncAttributes *attr, const void *func), (attr, func),                \
	  rt_func_get_attributes(attr, func))

/* Entry points without a parameter struct. */
#define RT_CALLS_NOPARAMS(N)                                                                \
	N(cudaDeviceSynchronize, cudaDeviceSynchronize_v3020, rt_device_synchronize())      \
	N(cudaDeviceReset, cudaDeviceReset_v3020, rt_device_reset())                        \
	N(cudaGetLastError, cudaGetLastError_v3020, rt_get_last_error())                    \
	N(cudaPeekAtLastError, cudaPeekAtLastError_v3020, rt_peek_last_error())            \
	N(cudaProfilerStart, cudaProfilerStart_v4000, rt_profiler(true))                    \
	N(cudaProfilerStop, cudaProfilerStop_v4000, rt_profiler(false))

#define RT_ENTRY(fn, id, decl, args, call)                                                  \
	SIM_EXPORT cudaError_t CUDARTAPI fn decl                                            \
	{                                                                                   \
		id##_params p_ = { UNPAREN args };                                          \
		struct sim_call c_ = { .domain = SIM_DOMAIN_RUNTIME,                        \
				       .cbid = CUPTI_RUNTIME_TRACE_CBID_##id, .name = #id,  \
				       .params = &p_ };                                     \
		cudaError_t r_;                                                             \
                                                                                            \
		rt_enter(&c_);                                                              \
		r_ = call;                                                                  \
		rt_exit(&c_, &r_);                                                          \
		return r_;                                                                  \
	}
#define RT_ENTRY_NOPARAMS(fn, id, call)                                                     \
	SIM_EXPORT cudaError_t CUDARTAPI fn(void)                                           \
	{                                                                                   \
		struct sim_call c_ = { .domain = SIM_DOMAIN_RUNTIME,                        \
				       .cbid = CUPTI_RUNTIME_TRACE_CBID_##id, .name = #id };\
		cudaError_t r_;                                                             \
                                                                                            \
		rt_enter(&c_);                                                              \
		r_ = call;                                                                  \
		rt_exit(&c_, &r_);                                                          \
		return r_;                                                                  \
	}
RT_CALLS(RT_ENTRY)
RT_CALLS_NOPARAMS(RT_ENTRY_NOPARAMS)

/* ---- written out: other return types, kernel names, ABI differences ---- */

#define CALL(id, p)                                                                         \
	{ .domain = SIM_DOMAIN_RUNTIME, .cbid = CUPTI_RUNTIME_TRACE_CBID_##id, .name = #id, \
	  .params = (p) }
#if SIM_RT_MAJOR >= 13
#define CALL13(id, p) CALL(id, p)
#else
/* not announced to CUPTI before CUDA 13 */
#define CALL13(id, p) { .domain = SIM_DOMAIN_RUNTIME, .name = #id, .params = (p) }
#endif

SIM_EXPORT const char *CUDARTAPI cudaGetErrorName(cudaError_t error)
{
	cudaGetErrorName_v6050_params p = { error };
	struct sim_call c = CALL(cudaGetErrorName_v6050, &p);
	const char *r;

	rt_enter(&c);
	r = rt_error_name(error);
	rt_exit(&c, &r);
	return r;
}

SIM_EXPORT const char *CUDARTAPI cudaGetErrorString(cudaError_t error)
{
	cudaGetErrorString_v3020_params p = { error };
	struct sim_call c = CALL(cudaGetErrorString_v3020, &p);
	const char *r;

	rt_enter(&c);
	r = rt_error_string(error);
	rt_exit(&c, &r);
	return r;
}

#if SIM_RT_MAJOR >= 13
SIM_EXPORT cudaError_t CUDARTAPI cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
#else
/* CUDA 12's headers name cudaGetDeviceProperties this (a CUDA 12 layout) */
SIM_EXPORT cudaError_t CUDARTAPI cudaGetDeviceProperties_v2(void *prop, int device)
#endif
{
	cudaGetDeviceProperties_v12000_params p = { (struct cudaDeviceProp *)prop, device };
	struct sim_call c = CALL(cudaGetDeviceProperties_v12000, &p);
	cudaError_t r;

	rt_enter(&c);
	r = rt_device_properties(prop, device);
	rt_exit(&c, &r);
	return r;
}

static cudaError_t launch(struct sim_call *c, struct rt_function *f, dim3 grid, dim3 block,
			  void **args, size_t shared, cudaStream_t stream, bool per_thread)
{
	cudaError_t r;

	c->symbol = rt_function_name(f);
	rt_enter(c);
	r = rt_launch(f, grid, block, args, shared, stream, per_thread);
	rt_exit(c, &r);
	return r;
}

SIM_EXPORT cudaError_t CUDARTAPI cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim,
					      void **args, size_t sharedMem, cudaStream_t stream)
{
	cudaLaunchKernel_v7000_params p = { func, gridDim, blockDim, args, sharedMem, stream };
	struct sim_call c = CALL(cudaLaunchKernel_v7000, &p);

	return launch(&c, rt_function_of(func), gridDim, blockDim, args, sharedMem, stream, false);
}

SIM_EXPORT cudaError_t CUDARTAPI cudaLaunchKernel_ptsz(const void *func, dim3 gridDim,
						   dim3 blockDim, void **args, size_t sharedMem,
						   cudaStream_t stream)
{
	cudaLaunchKernel_ptsz_v7000_params p = { func, gridDim, blockDim, args, sharedMem, stream };
	struct sim_call c = CALL(cudaLaunchKernel_ptsz_v7000, &p);

	return launch(&c, rt_function_of(func), gridDim, blockDim, args, sharedMem, stream, true);
}

#if SIM_RT_MAJOR >= 13
/*
 * What nvcc's code calls for a <<<>>> in CUDA 13. CUDA 13.0's runtime (an H200, driver
 * 580.159, CUPTI 13.0.1) reports neither entry under its own id: __cudaGetKernel not at all
 * (the driver calls it makes show with no runtime call around them), __cudaLaunchKernel
 * as cudaLaunchKernel (CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000), though CUPTI's
 * header lists ids for both.
 */
SIM_EXPORT cudaError_t CUDARTAPI __cudaGetKernel(cudaKernel_t *kernel, const void *func)
{
	return rt_get_kernel(kernel, func);
}

static struct rt_function *kernel_function(cudaKernel_t k)
{
	/* a handle __cudaGetKernel gave out, or garbage */
	struct rt_function *f = (struct rt_function *)k;

	return f && rt_function_of(rt_function_host(f)) == f ? f : NULL;
}

SIM_EXPORT cudaError_t CUDARTAPI __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim,
						dim3 blockDim, void **args, size_t sharedMem,
						cudaStream_t stream)
{
	struct rt_function *f = kernel_function(kernel);
	cudaLaunchKernel_v7000_params p = { f ? rt_function_host(f) : NULL, gridDim, blockDim,
					    args, sharedMem, stream };
	struct sim_call c = CALL(cudaLaunchKernel_v7000, &p);

	return launch(&c, f, gridDim, blockDim, args, sharedMem, stream, false);
}

SIM_EXPORT cudaError_t CUDARTAPI __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim,
						     dim3 blockDim, void **args,
						     size_t sharedMem, cudaStream_t stream)
{
	struct rt_function *f = kernel_function(kernel);
	cudaLaunchKernel_ptsz_v7000_params p = { f ? rt_function_host(f) : NULL, gridDim,
						 blockDim, args, sharedMem, stream };
	struct sim_call c = CALL(cudaLaunchKernel_ptsz_v7000, &p);

	return launch(&c, f, gridDim, blockDim, args, sharedMem, stream, true);
}
#endif

SIM_EXPORT void **CUDARTAPI __cudaRegisterFatBinary(void *fatCubin)
{
	struct sim_call c = CALL13(__cudaRegisterFatBinary_v13000, NULL);
	void **r;

	rt_enter(&c);
	r = rt_register_fatbin(fatCubin);
	rt_exit(&c, &r);
	return r;
}

SIM_EXPORT void CUDARTAPI __cudaRegisterFatBinaryEnd(void **fatCubinHandle)
{
	struct sim_call c = CALL13(__cudaRegisterFatBinaryEnd_v13000, NULL);

	rt_enter(&c);
	rt_register_fatbin_end(fatCubinHandle);
	rt_exit(&c, NULL);
}

SIM_EXPORT void CUDARTAPI __cudaUnregisterFatBinary(void **fatCubinHandle)
{
	struct sim_call c = CALL13(__cudaUnregisterFatBinary_v13000, NULL);

	rt_enter(&c);
	rt_unregister_fatbin(fatCubinHandle);
	rt_exit(&c, NULL);
}

SIM_EXPORT void CUDARTAPI __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun,
					     char *deviceFun, const char *deviceName,
					     int thread_limit, uint3 *tid, uint3 *bid, dim3 *bDim,
					     dim3 *gDim, int *wSize)
{
	struct sim_call c = CALL13(__cudaRegisterFunction_v13000, NULL);

	rt_enter(&c);
	rt_register_function(fatCubinHandle, hostFun, deviceFun, deviceName);
	rt_exit(&c, NULL);
}

SIM_EXPORT void CUDARTAPI __cudaRegisterVar(void **fatCubinHandle, char *hostVar,
					char *deviceAddress, const char *deviceName, int ext,
					size_t size, int constant, int global)
{
	struct sim_call c = CALL13(__cudaRegisterVar_v13000, NULL);

	rt_enter(&c);
	rt_register_var(fatCubinHandle, hostVar, deviceAddress, deviceName, size);
	rt_exit(&c, NULL);
}

SIM_EXPORT unsigned CUDARTAPI __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim,
						      size_t sharedMem, void *stream)
{
	struct sim_call c = CALL13(__cudaPushCallConfiguration_v13000, NULL);
	unsigned r;

	rt_enter(&c);
	r = rt_push_config(gridDim, blockDim, sharedMem, stream);
	rt_exit(&c, &r);
	return r;
}

SIM_EXPORT cudaError_t CUDARTAPI __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim,
							size_t *sharedMem, void *stream)
{
	struct sim_call c = CALL13(__cudaPopCallConfiguration_v13000, NULL);
	cudaError_t r;

	rt_enter(&c);
	r = rt_pop_config(gridDim, blockDim, sharedMem, stream);
	rt_exit(&c, &r);
	return r;
}
