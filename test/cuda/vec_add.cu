// SPDX-License-Identifier: MIT
// A plain CUDA program, unmodified: copies, a memset, a kernel, a sync.
// Built twice (nvcc's default static cudart, and -cudart shared). Without a
// GPU it reports why and exits with status 3, the same traced or not.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void vec_add(const float *a, const float *b, float *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		c[i] = a[i] + b[i];
}

static int fail(const char *what, cudaError_t e)
{
	printf("%s: %s\n", what, cudaGetErrorName(e));
	return 3;
}

int main(int argc, char **argv)
{
	const int n = 1 << 20, iters = argc > 1 ? atoi(argv[1]) : 3;
	const size_t bytes = n * sizeof(float);
	float *ha, *hb, *hc, *da, *db, *dc;
	int count = 0;
	cudaError_t e = cudaGetDeviceCount(&count);

	if (e != cudaSuccess || count == 0)
		return fail("no CUDA device", e);
	ha = (float *)malloc(bytes);
	hb = (float *)malloc(bytes);
	hc = (float *)malloc(bytes);
	for (int i = 0; i < n; i++) {
		ha[i] = (float)i;
		hb[i] = 2.0f * i;
	}
	if ((e = cudaMalloc(&da, bytes)) || (e = cudaMalloc(&db, bytes)) ||
	    (e = cudaMalloc(&dc, bytes)))
		return fail("cudaMalloc", e);
	cudaMemcpy(da, ha, bytes, cudaMemcpyHostToDevice);
	cudaMemcpy(db, hb, bytes, cudaMemcpyHostToDevice);
	cudaMemset(dc, 0, bytes);
	for (int k = 0; k < iters; k++)
		vec_add<<<(n + 255) / 256, 256>>>(da, db, dc, n);
	if ((e = cudaDeviceSynchronize()))
		return fail("kernel", e);
	cudaMemcpy(hc, dc, bytes, cudaMemcpyDeviceToHost);
	double sum = 0;
	for (int i = 0; i < n; i++)
		sum += hc[i];
	printf("vec_add: %d kernels, sum %.0f\n", iters, sum);
	cudaFree(da);
	cudaFree(db);
	cudaFree(dc);
	free(ha);
	free(hb);
	free(hc);
	return 0;
}
