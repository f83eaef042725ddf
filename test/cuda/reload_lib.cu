// SPDX-License-Identifier: MIT
// A library with its own kernel, dlopen()ed and dlclose()d by sim_app
// ("reload"): its module is unloaded at dlclose, and with it the kernel's
// name as the driver keeps it.
#include <cuda_runtime.h>

__global__ void reloaded_kernel(int *p)
{
	if (p)
		*p = 1;
}

extern "C" __attribute__((visibility("default"))) int reload_run(int n)
{
	for (int i = 0; i < n; i++)
		reloaded_kernel<<<1, 1>>>(nullptr);
	return cudaDeviceSynchronize();
}
