// SPDX-License-Identifier: MIT
/* A library linked against libcudart, dlopen()ed late, like libtorch_cuda. */
int cudaSetDevice(int d);
int cudaGetDeviceCount(int *n);

__attribute__((visibility("default"))) int late_lib_run(void)
{
	int n = 0;

	cudaGetDeviceCount(&n);
	return cudaSetDevice(7) * 1000 + n;
}
