/* profiler_ranges: six steps of a memset of 1000 * step bytes and a sync; steps 3 and 5
 * are inside profiler start/stop (--capture-range cudaProfilerApi), as fake_app's
 * "profiler". With the argument "stdin", no markers: it says "ready", then runs each step
 * when a line comes on stdin and says "step N" after it (a test opens and ends windows
 * from outside between steps: gputrace capture; a line "start" or "stop" calls the
 * profiler start or stop instead, and says it back); "stdin-nvtx" does so after one NVTX
 * range "init" (pushed and popped while a paused process records nothing). With
 * "nvtx-steps": steps 1 to 3, each in an NVTX range "step" of ~200 ms. Built twice (test/cuda/rules.mk) against the simulated CUDA stack:
 * - profiler_drv: the driver API only (cuProfilerStart/Stop, cuMemsetD8Async, ...), no
 *   libcudart.so at all: what gputrace sees of a program that links cudart statically
 *   (its cudaProfilerStart/Stop call the driver's), through CUPTI's callbacks alone;
 * - profiler_rt: the runtime API through the shared libcudart.so.13, whose calls
 *   gputrace interposes, and whose cudaProfilerStart/Stop call the driver's too (each
 *   marker must open or close one window, not two). */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef PROFILER_RT
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>
#define CHECK(call)                                                                       \
	do {                                                                              \
		int r_ = (int)(call);                                                     \
		if (r_) {                                                                 \
			fprintf(stderr, "profiler_ranges: %s: %d\n", #call, r_);          \
			exit(1);                                                          \
		}                                                                         \
	} while (0)
#else
#include <cuda.h>
#include <cudaProfiler.h>
#define CHECK(call)                                                                       \
	do {                                                                              \
		CUresult r_ = (call);                                                     \
		if (r_) {                                                                 \
			fprintf(stderr, "profiler_ranges: %s: %d\n", #call, (int)r_);     \
			exit(1);                                                          \
		}                                                                         \
	} while (0)
#endif

int main(int argc, char **argv)
{
	int stdin_steps = argc > 1 && !strncmp(argv[1], "stdin", 5);
	char line[16];

#ifdef PROFILER_RT
	void *d = NULL;
	cudaStream_t s;

	CHECK(cudaMalloc(&d, 1 << 16));
	CHECK(cudaStreamCreate(&s));
#define START() CHECK(cudaProfilerStart())
#define STOP() CHECK(cudaProfilerStop())
#define STEP(n)                                                                           \
	do {                                                                              \
		CHECK(cudaMemsetAsync(d, 0, 1000 * (size_t)(n), s));                      \
		CHECK(cudaStreamSynchronize(s));                                          \
	} while (0)
#else
	CUdevice dev;
	CUcontext ctx;
	CUdeviceptr d;
	CUstream s;

	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuMemAlloc(&d, 1 << 16));
	CHECK(cuStreamCreate(&s, 0));
#define START() CHECK(cuProfilerStart())
#define STOP() CHECK(cuProfilerStop())
#define STEP(n)                                                                           \
	do {                                                                              \
		CHECK(cuMemsetD8Async(d, 0, 1000 * (size_t)(n), s));                      \
		CHECK(cuStreamSynchronize(s));                                            \
	} while (0)
#endif
	if (argc > 1 && !strcmp(argv[1], "nvtx-steps")) {
		/* three NVTX ranges "step" of ~200 ms, each a memset at its start: the test's
		 * window (50 ms) ends in the step, after its work, however long a loaded
		 * machine held the thread (5 ms of 30 did not hold it: a sync left out) */
		struct timespec ms200 = { 0, 200000000 };

		for (int step = 1; step <= 3; step++) {
			nvtxRangePushA("step");
			STEP(step);
			nanosleep(&ms200, NULL);
			nvtxRangePop();
		}
		printf("profiler_ranges: done\n");
		return 0;
	}
	if (stdin_steps) {
		if (!strcmp(argv[1], "stdin-nvtx")) {
			nvtxRangePushA("init");
			nvtxRangePop();
		}
		printf("ready\n");
		fflush(stdout);
	}
	for (int step = 1; step <= 6; step++) {
		if (stdin_steps) {
			if (!fgets(line, sizeof(line), stdin))
				return 1;
			/* "start" / "stop": the program's own marker, then the step's line */
			if (!strcmp(line, "start\n") || !strcmp(line, "stop\n")) {
				if (line[2] == 'a')
					START();
				else
					STOP();
				printf("%s", line);
				fflush(stdout);
				step--;
				continue;
			}
			STEP(step);
			printf("step %d\n", step);
			fflush(stdout);
			continue;
		}
		if (step == 3 || step == 5)
			START();
		STEP(step);
		if (step == 3 || step == 5)
			STOP();
	}
	printf("profiler_ranges: done\n");
	return 0;
}
