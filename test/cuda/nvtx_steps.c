// SPDX-License-Identifier: MIT
/*
 * nvtx_steps [steps]: a training loop's NVTX shape, no CUDA: each step is a
 * range "step" (default domain) holding "fwd" and "bwd", with a mark
 * "step_end" after it; between steps an "idle" range. Step 2 is also
 * wrapped in "capture" of domain "trainer". Every range and mark carries
 * its step number in its payload... as a distinct name suffix: "fwd 3".
 * For --capture-range nvtx:... tests: which steps land in which window.
 */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void work(long us)
{
	struct timespec t = { 0, us * 1000 };
	nanosleep(&t, NULL);
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 5;
	nvtxDomainHandle_t dom = nvtxDomainCreateA("trainer");
	nvtxEventAttributes_t a = { 0 };
	char name[32];

	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = "capture";
	for (int s = 1; s <= steps; s++) {
		nvtxRangePushA("idle");
		work(300);
		nvtxRangePop();
		if (s == 2)
			nvtxDomainRangePushEx(dom, &a);
		nvtxRangePushA("step");
		snprintf(name, sizeof(name), "fwd %d", s);
		nvtxRangePushA(name);
		work(200);
		nvtxRangePop();
		snprintf(name, sizeof(name), "bwd %d", s);
		nvtxRangePushA(name);
		work(200);
		nvtxRangePop();
		nvtxRangePop();
		if (s == 2)
			nvtxDomainRangePop(dom);
		snprintf(name, sizeof(name), "step_end %d", s);
		nvtxMarkA(name);
	}
	printf("nvtx_steps: %d steps\n", steps);
	return 0;
}
