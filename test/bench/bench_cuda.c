// SPDX-License-Identifier: MIT
/*
 * CUDA launches on the simulated CUDA stack (make bench, row 8): n launches
 * of a 1-thread kernel, each synchronized (per-kernel metrics make every
 * launch wait for its kernel anyway; the base does the same), in bursts with
 * a pause after each; ranged: each launch in its own NVTX push/pop range.
 *
 *   bench_cuda N BURST PAUSE_US RANGED
 *
 * Run with LD_LIBRARY_PATH at the simulator ($(BUILD)/cuda-sim): the figures
 * are the simulator's, whose profiler calls cost nothing like a GPU's.
 */
#include <nvtx3/nvToolsExt.h>

#include "bench.h"
#include "../cuda/sim/hand_kernel.h"

static void bench_kernel(void) {}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000;
	unsigned long burst = argc > 2 ? strtoul(argv[2], NULL, 10) : 1000;
	unsigned long pause_us = argc > 3 ? strtoul(argv[3], NULL, 10) : 0;
	bool ranged = argc > 4 && atoi(argv[4]);
	dim3 one = { 1, 1, 1 };
	static struct bench_time t;
	uint64_t start;

	if (!n || !burst)
		BENCH_DIE("usage: bench_cuda N BURST PAUSE_US RANGED");
	hand_register(bench_kernel, "_Z12bench_kernelv");
	if (cudaFree(NULL) != cudaSuccess)
		BENCH_DIE("bench_cuda: no CUDA device (LD_LIBRARY_PATH at the simulator?)");
	start = bench_wall();
	for (unsigned long done = 0; done < n;) {
		unsigned long k = n - done < burst ? n - done : burst;
		uint64_t w = bench_wall(), c = bench_cpu();

		for (unsigned long i = 0; i < k; i++) {
			if (ranged)
				nvtxRangePushA("launch");
			if (cudaLaunchKernel((const void *)bench_kernel, one, one, NULL, 0, NULL) ||
			    cudaStreamSynchronize(NULL))
				BENCH_DIE("bench_cuda: launch failed");
			if (ranged)
				nvtxRangePop();
		}
		bench_burst(&t, bench_wall() - w, bench_cpu() - c, k);
		done += k;
		bench_sleep_us(pause_us);
	}
	bench_report(ranged ? "cuda_launch_ranged" : "cuda_launch", 1, &t, bench_wall() - start,
		     NULL);
	return 0;
}
