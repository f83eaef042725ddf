/* SPDX-License-Identifier: MIT */
/*
 * A kernel registered by hand, the way nvcc's generated code does it, for
 * C programs run on the simulated CUDA stack (sim_probe, bench_cuda): the
 * simulator runs any registered host stub for grid x block ns.
 */
#ifndef GPUTRACE_SIM_HAND_KERNEL_H
#define GPUTRACE_SIM_HAND_KERNEL_H

#include <cuda_runtime_api.h>

static const unsigned int hand_fatbin[4] = { 0xBA55ED50u, 0x00100001u, 0, 0 };
static const struct {
	int magic, version;
	const void *data;
	void *unused;
} hand_wrapper = { 0x466243b1, 1, hand_fatbin, NULL };

void **__cudaRegisterFatBinary(void *fatCubin);
void __cudaRegisterFatBinaryEnd(void **handle);
void __cudaRegisterFunction(void **handle, const char *hostFun, char *deviceFun,
			    const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid,
			    dim3 *bDim, dim3 *gDim, int *wSize);

void __cudaRegisterVar(void **handle, char *hostVar, char *deviceAddress, const char *deviceName,
		       int ext, size_t size, int constant, int global);

/* A __device__ variable of `size` bytes named `name`, in a module of its own,
 * known to the program by its host shadow (what cudaMemcpyToSymbol is given). */
static inline void hand_register_var(void *shadow, const char *name, size_t size)
{
	void **h = __cudaRegisterFatBinary((void *)&hand_wrapper);

	__cudaRegisterVar(h, (char *)shadow, (char *)name, name, 0, size, 0, 0);
	__cudaRegisterFatBinaryEnd(h);
}

/* host_fn: the stub launched; mangled: the kernel's symbol ("_Z12probe_kernelv") */
static inline void hand_register(void (*host_fn)(void), const char *mangled)
{
	void **h = __cudaRegisterFatBinary((void *)&hand_wrapper);

	__cudaRegisterFunction(h, (const char *)host_fn, (char *)mangled, mangled, -1, NULL, NULL,
			       NULL, NULL, NULL);
	__cudaRegisterFatBinaryEnd(h);
}

#endif
