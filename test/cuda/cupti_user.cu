// SPDX-License-Identifier: MIT
// A program with its own CUPTI user (as torch.profiler, ONNX Runtime's CUDA
// profiling or a monitoring agent would be): it runs kernels, starts
// profiling mid-run, runs more, and prints exactly what its profiler saw,
// so a traced run can be compared with an untraced one. Modes:
//   release    cuptiSubscribe_v2 + activity, then cuptiUnsubscribe and
//              disabling its kinds
//   hold       the same, never letting go
//   activity   the activity API alone, then cuptiFinalize
// Built against the toolkit's libcupti; runs on whichever the loader finds.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
#include <cupti.h>
#include "check.h"

__global__ void before_profiling(int *p) { if (p) *p = 1; }
__global__ void while_profiling(int *p) { if (p) *p = 2; }
__global__ void after_profiling(int *p) { if (p) *p = 3; }

static int api_enters, launches_seen, kernel_records, other_records, foreign_buffers;
static uint64_t first_start;
static char first_kernel[128];
static uint8_t *mine[64];
static int nmine;

static void CUPTIAPI on_api(void *ud, CUpti_CallbackDomain d, CUpti_CallbackId cbid, const void *data)
{
	const CUpti_CallbackData *cb = (const CUpti_CallbackData *)data;

	if (d != CUPTI_CB_DOMAIN_RUNTIME_API || cb->callbackSite != CUPTI_API_ENTER)
		return;
	api_enters++;
	if (cb->symbolName && strstr(cb->symbolName, "while_profiling"))
		launches_seen++;
}

static void CUPTIAPI requested(uint8_t **buf, size_t *size, size_t *max)
{
	*size = 1 << 20;
	*buf = (uint8_t *)aligned_alloc(8, *size);
	*max = 0;
	if (nmine < 64)
		mine[nmine++] = *buf;
}

static void CUPTIAPI completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid)
{
	CUpti_Activity *r = NULL;
	bool ours = false;

	for (int i = 0; i < nmine; i++)
		ours |= mine[i] == buf;
	if (!ours) {
		foreign_buffers++; // not one we handed out: never free it
		return;
	}
	while (cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS) {
		if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
			const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)r;
			if (!kernel_records++) {
				snprintf(first_kernel, sizeof(first_kernel), "%s", k->name);
				first_start = k->start;
			}
			if (k->end <= k->start)
				other_records += 1000; // a kernel without its times
		} else {
			other_records++;
		}
	}
	free(buf);
}

static void kernels(void (*k)(int *), int n)
{
	for (int i = 0; i < n; i++)
		k<<<64, 64>>>(NULL); // 4096 ns
	CHECK(cudaDeviceSynchronize());
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "release";
	bool subscribe = strcmp(mode, "activity") != 0;
	CUpti_SubscriberHandle sub = NULL;
	CUptiResult sr = CUPTI_SUCCESS, r;
	char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = "";
	int count = 0;

	if (cudaGetDeviceCount(&count) != cudaSuccess || !count) {
		printf("no CUDA device\n");
		return 3;
	}
	kernels(before_profiling, 2);

	if (subscribe) {
		CUpti_SubscriberParams p = { CUpti_SubscriberParams_STRUCT_SIZE, "cupti_user",
					     holder, sizeof(holder) };
		sr = cuptiSubscribe_v2(&sub, on_api, NULL, &p);
		if (sr == CUPTI_SUCCESS)
			cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API);
	}
	cuptiActivityRegisterCallbacks(requested, completed);
	r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	kernels(while_profiling, 3);
	cuptiActivityFlushAll(0);
	// CUPTI's default clock is CLOCK_REALTIME: nanoseconds since 1970
	printf("%s: subscribe %d%s%s, enable %d, %d runtime calls, %d launches seen, %d kernel "
	       "records (first %s, %s clock), %d other records, %d foreign buffers\n",
	       mode, sr, *holder ? " held by " : "", holder, r, api_enters, launches_seen,
	       kernel_records, first_kernel, first_start > 1000000000000000000ull ? "realtime" : "another",
	       other_records, foreign_buffers);

	if (!strcmp(mode, "release")) {
		cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
		if (sub)
			cuptiUnsubscribe(sub);
	} else if (!strcmp(mode, "activity")) {
		cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
		cuptiFinalize();
	}
	kernels(after_profiling, 2);
	printf("%s: done, %d runtime calls seen in all\n", mode, api_enters);
	return 0;
}
