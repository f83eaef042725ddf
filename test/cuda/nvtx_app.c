// SPDX-License-Identifier: MIT
/*
 * NVTX v3 (header-only) annotations, no CUDA: nested push/pop, a range
 * started on one thread and ended on another, marks, a domain with a
 * registered string, attributes with payloads. NVTX's injection works
 * without a GPU, so CI checks every range lands in the trace.
 * `nvtx_app open N`: N start/end ranges "s0", "s1", ... open at once, then
 * all ended in order (past the 4096 gputrace keeps open).
 * `nvtx_app long N`: a range "long" open while N ranges "s0", ... each start
 * and end, then "long" ended.
 * `nvtx_app cross`: start a, start b, end a, end b; then push p, start s,
 * pop, end s (100 us apart).
 */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void work(long us)
{
	struct timespec t = { 0, us * 1000 };
	nanosleep(&t, NULL);
}

static nvtxRangeId_t handed_over;

static void *worker(void *arg)
{
	nvtxRangePushA("worker");
	work(500);
	nvtxRangeEnd(handed_over); /* started by main */
	nvtxRangePop();
	return NULL;
}

static int open_ranges(int n)
{
	nvtxRangeId_t *ids = calloc((size_t)n, sizeof(*ids));
	char name[16];

	if (!ids)
		return 1;
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		ids[i] = nvtxRangeStartA(name);
	}
	for (int i = 0; i < n; i++)
		nvtxRangeEnd(ids[i]);
	free(ids);
	printf("nvtx_app: %d open\n", n);
	return 0;
}

static int long_range(int n)
{
	nvtxRangeId_t id = nvtxRangeStartA("long");
	char name[16];

	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		nvtxRangeEnd(nvtxRangeStartA(name));
	}
	nvtxRangeEnd(id);
	printf("nvtx_app: long\n");
	return 0;
}

/* start/end ranges crossing each other, and one crossing a push/pop range */
static int cross(void)
{
	nvtxRangeId_t a = nvtxRangeStartA("a");

	work(100);
	nvtxRangeId_t b = nvtxRangeStartA("b");
	work(100);
	nvtxRangeEnd(a);
	work(100);
	nvtxRangeEnd(b);
	nvtxRangePushA("p");
	work(100);
	nvtxRangeId_t s = nvtxRangeStartA("s");
	work(100);
	nvtxRangePop();
	work(100);
	nvtxRangeEnd(s);
	printf("nvtx_app: cross\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "cross"))
		return cross();
	if (argc == 3 && !strcmp(argv[1], "open"))
		return open_ranges(atoi(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "long"))
		return long_range(atoi(argv[2]));

	nvtxDomainHandle_t dom = nvtxDomainCreateA("trainer");
	nvtxStringHandle_t step_name = nvtxDomainRegisterStringA(dom, "optimizer step");
	nvtxEventAttributes_t a;
	pthread_t t;

	nvtxRangePushA("outer");
	for (int i = 0; i < 3; i++) {
		nvtxRangePushA("inner");
		work(200);
		nvtxRangePop();
	}
	nvtxMarkA("checkpoint");
	nvtxRangePop();

	handed_over = nvtxRangeStartA("handed over");
	pthread_create(&t, NULL, worker, NULL);
	pthread_join(t, NULL);

	memset(&a, 0, sizeof(a));
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.colorType = NVTX_COLOR_ARGB;
	a.color = 0xff00ff00;
	a.payloadType = NVTX_PAYLOAD_TYPE_INT64;
	a.payload.llValue = 42;
	a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	a.message.registered = step_name;
	nvtxDomainRangePushEx(dom, &a);
	work(300);
	nvtxDomainRangePop(dom);

	/* a start/end range keeps its attributes too */
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = "data load";
	a.category = 3;
	a.colorType = NVTX_COLOR_UNKNOWN;
	a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT32;
	a.payload.uiValue = 7;
	nvtxRangeId_t load = nvtxRangeStartEx(&a);
	work(100);
	nvtxRangeEnd(load);

	a.category = 0;
	a.colorType = NVTX_COLOR_ARGB;
	a.message.ascii = "loss";
	a.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;
	a.payload.dValue = 0.25;
	nvtxDomainMarkEx(dom, &a);

	printf("nvtx_app: done\n");
	return 0;
}
