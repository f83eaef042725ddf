// SPDX-License-Identifier: MIT
// For scripts/gpu-check: several streams, pinned and pageable copies in all
// directions, memsets, an event wait across streams, a CUDA graph launched
// a few times, NVTX ranges. Prints what it issued as JSON, for the checker.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

__global__ void fill(float *p, int n, float v)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] = v + i % 7;
}

__global__ void axpy(float a, const float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = a * x[i] + y[i];
}

#define CHECK(call)                                                                     \
	do {                                                                            \
		cudaError_t e_ = (call);                                                \
		if (e_ != cudaSuccess) {                                                \
			printf("%s: %s\n", #call, cudaGetErrorName(e_));                \
			return 3;                                                       \
		}                                                                       \
	} while (0)

int main()
{
	const int NS = 4, n = 1 << 20, iters = 5, graph_runs = 3;
	const size_t bytes = n * sizeof(float);
	cudaStream_t st[NS];
	float *h[NS], *d[NS], *x;
	int count = 0, kernels = 0, copies = 0, sets = 0;
	dim3 grid((n + 255) / 256), block(256);
	cudaError_t e = cudaGetDeviceCount(&count);

	if (e != cudaSuccess || count == 0) {
		printf("no CUDA device: %s\n", cudaGetErrorName(e));
		return 3;
	}
	nvtxRangePushA("setup");
	CHECK(cudaMalloc(&x, bytes));
	for (int s = 0; s < NS; s++) {
		CHECK(cudaStreamCreateWithFlags(&st[s], cudaStreamNonBlocking));
		CHECK(cudaMallocHost(&h[s], bytes));
		CHECK(cudaMalloc(&d[s], bytes));
		for (int i = 0; i < n; i++)
			h[s][i] = (float)(s + 1);
		CHECK(cudaMemsetAsync(d[s], 0, bytes, st[s]));
		sets++;
		CHECK(cudaMemcpyAsync(d[s], h[s], bytes, cudaMemcpyHostToDevice, st[s]));
		copies++;
	}
	CHECK(cudaMemset(x, 0, bytes));
	sets++;
	nvtxRangePop();

	nvtxRangePushA("compute");
	for (int it = 0; it < iters; it++) {
		for (int s = 0; s < NS; s++) {
			fill<<<grid, block, 0, st[s]>>>(x, n, (float)it);
			axpy<<<grid, block, 0, st[s]>>>(0.5f, x, d[s], n);
			kernels += 2;
		}
	}
	cudaEvent_t ev;
	CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
	CHECK(cudaEventRecord(ev, st[0]));
	CHECK(cudaStreamWaitEvent(st[1], ev, 0));
	CHECK(cudaMemcpyAsync(d[1], d[0], bytes, cudaMemcpyDeviceToDevice, st[1]));
	copies++;
	nvtxRangePop();

	nvtxRangePushA("graph");
	cudaGraph_t graph;
	cudaGraphExec_t exec;
	CHECK(cudaStreamBeginCapture(st[2], cudaStreamCaptureModeGlobal));
	fill<<<grid, block, 0, st[2]>>>(d[2], n, 1.0f);
	axpy<<<grid, block, 0, st[2]>>>(2.0f, d[3], d[2], n);
	CHECK(cudaMemsetAsync(d[3], 0, bytes, st[2]));
	CHECK(cudaStreamEndCapture(st[2], &graph));
	CHECK(cudaGraphInstantiate(&exec, graph, 0));
	for (int g = 0; g < graph_runs; g++)
		CHECK(cudaGraphLaunch(exec, st[2]));
	nvtxRangePop();

	/* each kind of wait: a stream, an event, the device (below) */
	CHECK(cudaStreamSynchronize(st[3]));
	CHECK(cudaEventSynchronize(ev));

	nvtxRangePushA("readback");
	for (int s = 0; s < NS; s++) {
		CHECK(cudaMemcpyAsync(h[s], d[s], bytes, cudaMemcpyDeviceToHost, st[s]));
		copies++;
	}
	CHECK(cudaDeviceSynchronize());
	nvtxRangePop();

	double sum = 0;
	for (int s = 0; s < NS; s++)
		for (int i = 0; i < n; i += 4096)
			sum += h[s][i];
	printf("{\"kernels\":%d,\"memcpy\":%d,\"memset\":%d,\"graph_launches\":%d,"
	       "\"graph_kernels\":2,\"graph_memsets\":1,\"nvtx\":[\"setup\",\"compute\",\"graph\","
	       "\"readback\"],\"checksum\":%.1f}\n",
	       kernels, copies, sets, graph_runs, sum);
	cudaGraphExecDestroy(exec);
	cudaGraphDestroy(graph);
	for (int s = 0; s < NS; s++) {
		cudaStreamDestroy(st[s]);
		cudaFreeHost(h[s]);
		cudaFree(d[s]);
	}
	cudaFree(x);
	return 0;
}
