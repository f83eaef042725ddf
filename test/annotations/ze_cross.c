// SPDX-License-Identifier: MIT
/*
 * ze_cross: ranges that do not nest with their thread's, on the simulated
 * Level Zero device, built with NVTX start/end ranges (-DUSE_NVTX) and with
 * ITT overlapped tasks (-DUSE_ITT):
 *  - "handed over", begun by main and ended by another thread 3 ms later,
 *    while main is inside a zeCommandQueueSynchronize of up to 30 ms;
 *  - "a" and "b" crossing: begin a, k1, begin b, k2, end a, k3, end b;
 *  - "s" begun inside the push/pop (ITT task) range "p" and ended after it:
 *    k4 in both, k5 in "s" only.
 * Kernels on one immediate list, each waited for. Prints one line; exit 0.
 */
#include <pthread.h>
#include <time.h>

#include "../apps/ze_app.h"

#ifdef USE_NVTX
#include <nvtx3/nvToolsExt.h>
typedef nvtxRangeId_t range;
#define BEGIN(n, i) nvtxRangeStartA(n)
#define END(r)      nvtxRangeEnd(r)
#define PUSH(n)     nvtxRangePushA(n)
#define POP()       nvtxRangePop()
#else
#include "itt_static.h"
static itt_domain *dom;
typedef itt_id range;
static range begin(const char *name, unsigned long long n)
{
	itt_id id = { n, 0, 0 };

	itt_task_begin_overlapped(dom, id, itt_null, itt_string_handle_create(name));
	return id;
}
#define BEGIN(n, i) begin(n, i)
#define END(r)      itt_task_end_overlapped(dom, r)
#define PUSH(n)     itt_task_begin(dom, itt_null, itt_null, itt_string_handle_create(n))
#define POP()       itt_task_end(dom)
#endif

static struct app_ze z;
static ze_module_handle_t module;
static range handed;
static _Atomic int main_syncs; /* main is about to enter the long sync */

static void *ender(void *arg)
{
	struct timespec t = { 0, 3 * 1000000 }, poll = { 0, 20000 };

	/* 3 ms counted from the sync, not from this thread's start: a loaded
	 * machine (a sanitizer, CI) took longer than that to reach the sync */
	while (!main_syncs)
		nanosleep(&poll, NULL);
	nanosleep(&t, NULL);
	END(handed);
	return NULL;
}

static void launch(ze_command_list_handle_t imm, const char *kernel, ze_event_handle_t done)
{
	ze_group_count_t groups = { 2, 1, 1 };

	ZE_CHECK(zeEventHostReset(done));
	ZE_CHECK(zeCommandListAppendLaunchKernel(imm, app_kernel(module, kernel, 16, 1, 1),
						 &groups, done, 0, NULL));
	ZE_CHECK(zeEventHostSynchronize(done, UINT64_MAX));
}

int main(void)
{
	pthread_t t;

#ifdef USE_ITT
	dom = itt_domain_create("ze_cross");
#endif
	app_ze_setup(&z);
	module = app_module(&z);

	ze_command_queue_handle_t q = app_queue(&z, 0, 0);
	ze_command_list_handle_t l = app_list(&z, 0);
	/* 30 ms on the simulator: under ThreadSanitizer on a loaded machine the execute
	 * before the sync took up to 10 ms of it, and 10 ms left the sync ending before
	 * the range 3 ms into it */
	ze_group_count_t g = { 30000, 1, 1 };

	ZE_CHECK(zeCommandListAppendLaunchKernel(l, app_kernel(module, "k_long", 1000, 1, 1), &g,
						 NULL, 0, NULL));
	ZE_CHECK(zeCommandListClose(l));
	handed = BEGIN("handed over", 1);
	pthread_create(&t, NULL, ender, NULL);
	ZE_CHECK(zeCommandQueueExecuteCommandLists(q, 1, &l, NULL));
	main_syncs = 1;
	ZE_CHECK(zeCommandQueueSynchronize(q, UINT64_MAX));
	pthread_join(t, NULL);

	ze_command_list_handle_t imm = app_immediate_list(&z, 0, 1);
	ze_event_pool_handle_t pool = app_event_pool(&z, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1);
	ze_event_handle_t done = app_event(pool, 0);

	range a = BEGIN("a", 2);
	launch(imm, "k1", done);
	range b = BEGIN("b", 3);
	launch(imm, "k2", done);
	END(a);
	launch(imm, "k3", done);
	END(b);

	PUSH("p");
	range s = BEGIN("s", 4);
	launch(imm, "k4", done);
	POP();
	launch(imm, "k5", done);
	END(s);
	printf("ze_cross: done\n");
	return 0;
}
