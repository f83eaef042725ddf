// SPDX-License-Identifier: MIT
/*
 * ze_ranges: a Level Zero program that names its phases, built twice: with
 * NVTX (-DUSE_NVTX, header-only nvtx3) and with ITT (-DUSE_ITT, through the
 * static part in itt_static.c). The same phases either way:
 *  - "record": a regular list recorded (a kernel and a copy), then run in
 *    "step 1" and "step 2"; the queue is synchronized after "step 1" ends;
 *  - a process range "epoch" (NVTX start/end, an ITT frame) around
 *    "train" > "forward" (two kernels) and "train" > "backward" (one
 *    kernel) on an immediate list, then one kernel in "epoch" alone; all of
 *    it is waited for after every range has ended;
 *  - inside "epoch", another thread launching "k_peer" in no range of its
 *    own: the process's range is its only one;
 *  - a second thread launching "k_worker" inside its own "worker";
 *  - a marker and a counter.
 * Prints one line per phase; exit 0.
 */
#include <pthread.h>

#include "../apps/ze_app.h"

#ifdef USE_NVTX
#include <nvtx3/nvToolsExt.h>
#define RANGE_PUSH(n) nvtxRangePushA(n)
#define RANGE_POP()   nvtxRangePop()
typedef nvtxRangeId_t process_range;
#define PROCESS_START(n) nvtxRangeStartA(n)
#define PROCESS_END(r)   nvtxRangeEnd(r)
#define MARK(n)          nvtxMarkA(n)
#define COUNT(v)         ((void)(v))
#else
#include "itt_static.h"
static itt_domain *dom;
#define RANGE_PUSH(n) itt_task_begin(dom, itt_null, itt_null, itt_string_handle_create(n))
#define RANGE_POP()   itt_task_end(dom)
typedef itt_domain *process_range;
static process_range process_start(const char *name)
{
	itt_domain *d = itt_domain_create(name);

	itt_frame_begin_v3(d, NULL);
	return d;
}
#define PROCESS_START(n) process_start(n)
#define PROCESS_END(d)   itt_frame_end_v3(d, NULL)
#define MARK(n)          itt_marker(dom, itt_null, itt_string_handle_create(n), ITT_SCOPE_TRACK)
static itt_counter counter;
#define COUNT(v)                                                                           \
	do {                                                                               \
		unsigned long long v_ = (v);                                               \
		itt_counter_set_value(counter, &v_);                                       \
	} while (0)
#endif

static struct app_ze z;
static ze_module_handle_t module;

static void launch(ze_command_list_handle_t list, const char *kernel, ze_event_handle_t signal)
{
	ze_group_count_t groups = { 2, 1, 1 };
	ze_kernel_handle_t k = app_kernel(module, kernel, 16, 1, 1);

	ZE_CHECK(zeCommandListAppendLaunchKernel(list, k, &groups, signal, 0, NULL));
}

static void *peer(void *arg)
{
	ze_command_list_handle_t imm = app_immediate_list(&z, 0, 0);
	ze_event_pool_handle_t pool = app_event_pool(&z, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1);
	ze_event_handle_t done = app_event(pool, 0);

	launch(imm, "k_peer", done);
	ZE_CHECK(zeEventHostSynchronize(done, UINT64_MAX));
	return NULL;
}

static void *worker(void *arg)
{
	ze_command_list_handle_t imm = app_immediate_list(&z, 0, 0);
	ze_event_pool_handle_t pool = app_event_pool(&z, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1);
	ze_event_handle_t done = app_event(pool, 0);

	RANGE_PUSH("worker");
	launch(imm, "k_worker", done);
	RANGE_POP();
	ZE_CHECK(zeEventHostSynchronize(done, UINT64_MAX));
	printf("worker: done\n");
	return NULL;
}

int main(void)
{
	pthread_t t;

#ifdef USE_ITT
	dom = itt_domain_create("ze_ranges");
	counter = itt_counter_create_typed("queue depth", "ze_ranges", ITT_META_U64);
#endif
	app_ze_setup(&z);
	module = app_module(&z);

	/* a regular list: recorded in one range, run in others */
	ze_command_queue_handle_t queue = app_queue(&z, 0, 0);
	ze_command_list_handle_t list = app_list(&z, 0);
	uint8_t *src = app_host_alloc(&z, 4096), *dev = app_device_alloc(&z, 4096);

	RANGE_PUSH("record");
	launch(list, "k_recorded", NULL);
	ZE_CHECK(zeCommandListAppendMemoryCopy(list, dev, src, 4096, NULL, 0, NULL));
	ZE_CHECK(zeCommandListClose(list));
	RANGE_POP();
	RANGE_PUSH("step 1");
	ZE_CHECK(zeCommandQueueExecuteCommandLists(queue, 1, &list, NULL));
	RANGE_POP();
	ZE_CHECK(zeCommandQueueSynchronize(queue, UINT64_MAX));
	RANGE_PUSH("step 2");
	ZE_CHECK(zeCommandQueueExecuteCommandLists(queue, 1, &list, NULL));
	ZE_CHECK(zeCommandQueueSynchronize(queue, UINT64_MAX));
	RANGE_POP();
	printf("regular list: recorded once, run twice\n");

	/* an immediate list, waited for after the ranges end */
	ze_command_list_handle_t imm = app_immediate_list(&z, 0, 1);
	ze_event_pool_handle_t pool = app_event_pool(&z, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1);
	ze_event_handle_t done = app_event(pool, 0);

	process_range epoch = PROCESS_START("epoch");
	RANGE_PUSH("train");
	RANGE_PUSH("forward");
	launch(imm, "k_fwd1", NULL);
	launch(imm, "k_fwd2", NULL);
	RANGE_POP();
	COUNT(2);
	RANGE_PUSH("backward");
	launch(imm, "k_bwd", NULL);
	RANGE_POP();
	RANGE_POP();
	launch(imm, "k_after", done);
	pthread_create(&t, NULL, peer, NULL);
	pthread_join(t, NULL);
	PROCESS_END(epoch);
	MARK("launched");
	ZE_CHECK(zeEventHostSynchronize(done, UINT64_MAX));
	COUNT(0);
	printf("immediate list: 4 kernels, 1 on a peer thread\n");

	pthread_create(&t, NULL, worker, NULL);
	pthread_join(t, NULL);
#ifdef USE_ITT
	printf("itt protocol: %d\n", itt_test_protocol());
#endif
	return 0;
}
