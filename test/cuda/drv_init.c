/* drv_init: a program of the CUDA driver API alone (no libcudart, as gputrace sees one
 * that links cudart statically), linked to libcuda: cuInit, a primary context, an
 * allocation, a memset and its sync. With the argument "bad-first", cuInit(1) first
 * (CUDA_ERROR_INVALID_VALUE: flags must be 0), then cuInit(0). With "dlsym", cuInit is
 * looked up with dlsym() in a libcuda the program dlopen()s itself. Built against the
 * simulated CUDA stack (test/cuda/rules.mk). */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                       \
	do {                                                                              \
		CUresult r_ = (call);                                                     \
		if (r_) {                                                                 \
			fprintf(stderr, "drv_init: %s: %d\n", #call, (int)r_);            \
			exit(1);                                                          \
		}                                                                         \
	} while (0)

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "";
	CUresult (*init)(unsigned) = cuInit;
	CUdevice dev;
	CUcontext ctx;
	CUdeviceptr d;
	CUstream s;

	if (!strcmp(how, "dlsym")) {
		void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

		init = h ? (CUresult(*)(unsigned))dlsym(h, "cuInit") : NULL;
		if (!init) {
			fprintf(stderr, "drv_init: no cuInit in libcuda.so.1\n");
			return 1;
		}
	}
	if (!strcmp(how, "bad-first") && init(1) != CUDA_ERROR_INVALID_VALUE) {
		fprintf(stderr, "drv_init: cuInit(1) did not fail\n");
		return 1;
	}
	CHECK(init(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuMemAlloc(&d, 1 << 16));
	CHECK(cuStreamCreate(&s, 0));
	CHECK(cuMemsetD8Async(d, 0, 1 << 16, s));
	CHECK(cuStreamSynchronize(s));
	CHECK(cuStreamDestroy(s));
	CHECK(cuMemFree(d));
	CHECK(cuDevicePrimaryCtxRelease(dev));
	printf("drv_init: ok\n");
	return 0;
}
