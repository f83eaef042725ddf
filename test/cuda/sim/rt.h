/* SPDX-License-Identifier: MIT */
/*
 * libcudart.so.13 / libcudart.so.12 (simulated) internals. One source,
 * built twice: SIM_RT_MAJOR selects the ABI (version node, cudaDeviceProp
 * layout and entry point, runtime version, the <<<>>> launch path).
 *   rt_api.c     the exported entry points, generated from one table
 *   rt_core.c    the driver (dlopen + cuGetProcAddress), lazy init, errors, devices
 *   rt_launch.c  fatbinary/function registration, call configurations, launches
 *   rt_work.c    memory, copies, symbols, streams, host functions, events, capture, graphs
 * Like the real runtime, it reaches libcuda.so.1 only through dlopen and
 * cuGetProcAddress: preloaded cu* symbols never see its calls.
 */
#ifndef CUDA_SIM_RT_H
#define CUDA_SIM_RT_H

#include <cudaProfiler.h>
#include <cuda_runtime_api.h>

#include "sim.h"

#ifndef SIM_RT_MAJOR
#error "SIM_RT_MAJOR must be 12 or 13"
#endif

#define RT_HIDDEN __attribute__((visibility("hidden")))
#define RT_DEVICES 8 /* more than the simulated driver has */

/* The driver entry points the runtime uses, looked up by base name. */
#define RT_DRIVER(X)                                                                        \
	X(cuInit) X(cuDriverGetVersion) X(cuDeviceGet) X(cuDeviceGetCount) X(cuDeviceGetName) \
	X(cuDeviceGetAttribute) X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain)             \
	X(cuCtxGetCurrent) X(cuCtxSetCurrent) X(cuCtxSynchronize) X(cuMemAlloc)             \
	X(cuMemAllocManaged) X(cuMemFree) X(cuMemAllocHost) X(cuMemHostAlloc) X(cuMemFreeHost) \
	X(cuMemGetInfo) X(cuMemcpy) X(cuMemcpyAsync) X(cuMemcpyHtoD) X(cuMemcpyDtoH)        \
	X(cuMemcpyDtoD) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemcpyDtoDAsync)      \
	X(cuMemsetD8) X(cuMemsetD8Async) X(cuStreamCreate) X(cuStreamCreateWithPriority)    \
	X(cuStreamDestroy) X(cuStreamSynchronize) X(cuStreamQuery) X(cuStreamGetId)         \
	X(cuStreamWaitEvent) X(cuStreamBeginCapture) X(cuStreamEndCapture)                  \
	X(cuStreamIsCapturing) X(cuThreadExchangeStreamCaptureMode) X(cuEventCreate)        \
	X(cuEventDestroy) X(cuEventRecord) X(cuEventQuery) X(cuEventSynchronize)            \
	X(cuEventElapsedTime) X(cuModuleLoadFatBinary) X(cuModuleUnload)                    \
	X(cuModuleGetFunction) X(cuLaunchKernel) X(cuGraphInstantiate) X(cuGraphLaunch)      \
	X(cuGraphDestroy) X(cuGraphExecDestroy) X(cuGraphGetNodes) X(cuGetErrorName)         \
	X(cuProfilerStart) X(cuProfilerStop) X(cuMemcpyPeer) X(cuMemcpyPeerAsync)              \
	X(cuDeviceCanAccessPeer) X(cuCtxEnablePeerAccess) X(cuCtxDisablePeerAccess)          \
	X(cuDevicePrimaryCtxReset) X(cuMemcpy2D) X(cuMemcpy2DAsync) X(cuMemcpy3D) X(cuMemcpy3DAsync) \
	X(cuModuleGetGlobal) X(cuLaunchHostFunc) X(cuStreamAddCallback) \
	X(cuMemAllocAsync) X(cuMemFreeAsync) X(cuMemAllocPitch) \
	X(cuMemsetD2D8) X(cuMemsetD2D8Async)

struct rt_driver {
#define RT_DRV_FIELD(fn) __typeof__(fn) *fn;
	RT_DRIVER(RT_DRV_FIELD)
#undef RT_DRV_FIELD
	const struct sim_tools *tools; /* NULL without the simulated driver */
};

/* ---- rt_core.c ---- */
extern RT_HIDDEN struct rt_driver rt_drv;
/* Load libcuda.so.1 (once): 0, or cudaErrorInsufficientDriver. */
RT_HIDDEN cudaError_t rt_load_driver(void);
/* cuInit and the calling thread's context on its current device. */
RT_HIDDEN cudaError_t rt_context(void);
/* A driver result as the runtime's error; sets the thread's last error. */
RT_HIDDEN cudaError_t rt_result(CUresult r);
RT_HIDDEN cudaError_t rt_error(cudaError_t e);
RT_HIDDEN void rt_enter(struct sim_call *c);
RT_HIDDEN void rt_exit(struct sim_call *c, const void *ret);
RT_HIDDEN int rt_current_device(void);
RT_HIDDEN void sim_die_rt(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

/* ---- rt_launch.c ---- */
struct rt_function;
RT_HIDDEN struct rt_function *rt_function_of(const void *host_fun);
RT_HIDDEN const char *rt_function_name(const struct rt_function *f);
RT_HIDDEN const void *rt_function_host(const struct rt_function *f);
/* cudaDeviceReset: the device's modules are gone, loaded again at next launch */
RT_HIDDEN void rt_forget_modules(int device);
/* A __device__ variable by its host shadow (what cudaMemcpyToSymbol is given):
 * its storage on the current device, through its module's cuModuleGetGlobal. */
RT_HIDDEN cudaError_t rt_symbol(const void *symbol, CUdeviceptr *dptr, size_t *size);
RT_HIDDEN cudaError_t rt_launch(struct rt_function *f, dim3 grid, dim3 block, void **args,
				size_t shared, cudaStream_t stream, bool per_thread);

#endif
