/* ze_ctxgone: work left running when its objects go, then work the program waits for right
 * before it exits:
 *   - a regular list runs kernel `q_inflight` (2 ms) on queue 0.0; the queue and the list
 *     are destroyed without a synchronize;
 *   - a second context's immediate list (0, 1) runs `ctx_inflight` (2 ms), signaling an
 *     event of that context; the context is destroyed before it ends (the program's mistake;
 *     its list, pool and events are left alive): the launch waits for a second event of
 *     that pool, which the program signals right after the destroy, so the kernel cannot
 *     have ended first however long the program is descheduled between its launch and the
 *     destroy (a 2 ms kernel started at its append had, now and then under load: read at
 *     the destroy and drawn, nothing lost);
 *   - a new immediate list (0, 1) of the first context runs `after`, signaling a
 *     host-visible event of a new pool; the program synchronizes it and exits at once.
 * Prints "after waited". */
#include "../apps/ze_app.h"

static void destroyed_queue(struct app_ze *z, ze_kernel_handle_t k, const ze_group_count_t *g)
{
	ze_command_queue_handle_t q = app_queue(z, 0, 0);
	ze_command_list_handle_t l = app_list(z, 0);

	ZE_CHECK(zeCommandListAppendLaunchKernel(l, k, g, NULL, 0, NULL));
	ZE_CHECK(zeCommandListClose(l));
	ZE_CHECK(zeCommandQueueExecuteCommandLists(q, 1, &l, NULL));
	ZE_CHECK(zeCommandQueueDestroy(q));
	ZE_CHECK(zeCommandListDestroy(l));
}

static void destroyed_context(struct app_ze *z, const ze_group_count_t *g)
{
	ze_context_desc_t cd = { ZE_STRUCTURE_TYPE_CONTEXT_DESC, NULL, 0 };
	struct app_ze z2 = *z;
	ze_command_list_handle_t im;
	ze_event_pool_handle_t p;
	ze_event_handle_t gate;
	ze_kernel_handle_t k;

	ZE_CHECK(zeContextCreate(z->driver, &cd, &z2.context));
	k = app_kernel(app_module(&z2), "ctx_inflight", 256, 1, 1);
	im = app_immediate_list(&z2, 0, 1);
	p = app_event_pool(&z2, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 2);
	gate = app_event(p, 1);
	ZE_CHECK(zeCommandListAppendLaunchKernel(im, k, g, app_event(p, 0), 1, &gate));
	ZE_CHECK(zeContextDestroy(z2.context));
	ZE_CHECK(zeEventHostSignal(gate));
}

int main(void)
{
	ze_group_count_t g = { 8000, 1, 1 }, small = { 2, 1, 1 }; /* 8000 x 256 ns: 2 ms */
	ze_command_list_handle_t im;
	ze_module_handle_t m;
	ze_event_handle_t e;
	struct app_ze z;

	app_ze_setup(&z);
	m = app_module(&z);
	destroyed_queue(&z, app_kernel(m, "q_inflight", 256, 1, 1), &g);
	destroyed_context(&z, &g);
	im = app_immediate_list(&z, 0, 1);
	e = app_event(app_event_pool(&z, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 2), 0);
	ZE_CHECK(zeCommandListAppendLaunchKernel(im, app_kernel(m, "after", 32, 1, 1), &small, e,
						 0, NULL));
	ZE_CHECK(zeEventHostSynchronize(e, UINT64_MAX));
	printf("after waited\n");
	return 0;
}
