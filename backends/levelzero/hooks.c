// SPDX-License-Identifier: MIT
/*
 * Bodies of the Level Zero wrappers that do more than time the call (kind
 * HOOK in api.h). Each makes the real call itself, may pass a
 * different signal event or pool flags, and adds arguments to its span.
 * What the program gets back is always what the loader returned.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backends/levelzero/internal.h"
#include "inject/extcorr.h"
#include "inject/watchdog.h"

#define ZE_LAUNCH_FLAG GT_EVF_LAUNCH

/* ---- kernels: handle -> name, readable without a lock ---- */

/* handle -> struct ze_kernel *: records stay after zeKernelDestroy (a lock-free
 * reader may hold one); a new kernel at the same handle updates its record. */
static struct ze_map ze_kernels = { .lockfree_reads = true };

/* The kernel this thread launched last: its record never goes away (a new kernel at the
 * same handle updates it), so the pointer stays good without asking the map again. */
static GT_TLS struct {
	ze_kernel_handle_t handle;
	struct ze_kernel *K;
} ze_tls_kernel;

struct ze_kernel *ze_kernel__get(ze_kernel_handle_t k)
{
	return (struct ze_kernel *)ze_map__get(&ze_kernels, k);
}

static void ze_kernel__add(ze_kernel_handle_t k, const char *name)
{
	struct ze_kernel *K;
	uint32_t id = gt_str_intern(name && *name ? name : "<unnamed kernel>");

	pthread_mutex_lock(&ze_lock);
	K = (struct ze_kernel *)ze_map__get(&ze_kernels, k);
	if (K) {
		atomic_store_explicit(&K->name, id, memory_order_relaxed);
		for (int i = 0; i < 3; i++)
			atomic_store_explicit(&K->size[i], 1, memory_order_relaxed);
	} else if ((K = malloc(sizeof(*K))) != NULL) {
		/* Filled before it is published: readers take no lock. */
		atomic_init(&K->name, id);
		for (int i = 0; i < 3; i++)
			atomic_init(&K->size[i], 1);
		if (ze_map__put(&ze_kernels, k, (uintptr_t)K))
			free(K);
	}
	pthread_mutex_unlock(&ze_lock);
}

/* A kernel created before we could see it: ask the driver for its name once. */
static struct ze_kernel *ze_kernel__lookup(ze_kernel_handle_t k)
{
	struct ze_kernel *K = ze_kernel__get(k);
	size_t len = 0;
	char *name;

	if (K || !k)
		return K;
	if (ZE_REAL(zeKernelGetName)(k, &len, NULL) != ZE_RESULT_SUCCESS || !len)
		return NULL;
	name = calloc(1, len + 1);
	if (name && ZE_REAL(zeKernelGetName)(k, &len, name) == ZE_RESULT_SUCCESS)
		ze_kernel__add(k, name);
	free(name);
	return ze_kernel__get(k);
}

GT_FORK_CODE void ze_kernel__forget(void)
{
	ze_map__forget(&ze_kernels);
	ze_tls_kernel.handle = NULL;
}

ze_result_t ze_body_zeKernelCreate(struct ze_call *c, __typeof__(&zeKernelCreate) real,
				   ze_module_handle_t hModule, const ze_kernel_desc_t *desc,
				   ze_kernel_handle_t *phKernel)
{
	ze_result_t r = real(hModule, desc, phKernel);

	struct ze_kernel *K;

	if (r == ZE_RESULT_SUCCESS && phKernel && *phKernel) {
		ze_kernel__add(*phKernel, desc ? desc->pKernelName : NULL);
		if ((K = ze_kernel__get(*phKernel)) != NULL)
			ze_call__arg(c, GT_S_ARG_KERNEL, GT_ARG_STR, atomic_load(&K->name));
	}
	return r;
}

ze_result_t ze_body_zeKernelDestroy(struct ze_call *c, __typeof__(&zeKernelDestroy) real,
				    ze_kernel_handle_t hKernel)
{
	struct ze_kernel *K = ze_kernel__get(hKernel);

	if (K)
		ze_call__arg(c, GT_S_ARG_KERNEL, GT_ARG_STR, atomic_load(&K->name));
	return real(hKernel);
}

ze_result_t ze_body_zeKernelSetGroupSize(struct ze_call *c, __typeof__(&zeKernelSetGroupSize) real,
					 ze_kernel_handle_t hKernel, uint32_t groupSizeX,
					 uint32_t groupSizeY, uint32_t groupSizeZ)
{
	ze_result_t r = real(hKernel, groupSizeX, groupSizeY, groupSizeZ);
	struct ze_kernel *K;

	if (r == ZE_RESULT_SUCCESS && (K = ze_kernel__lookup(hKernel)) != NULL) {
		atomic_store_explicit(&K->size[0], groupSizeX, memory_order_relaxed);
		atomic_store_explicit(&K->size[1], groupSizeY, memory_order_relaxed);
		atomic_store_explicit(&K->size[2], groupSizeZ, memory_order_relaxed);
	}
	return r;
}

/* ---- appends ---- */

static void ze__work_kernel(struct ze_call *c, struct ze_work *w, ze_kernel_handle_t k,
			    const ze_group_count_t *groups)
{
	struct ze_kernel *K = ze_tls_kernel.handle == k && k ? ze_tls_kernel.K : NULL;

	if (!K && (K = ze_kernel__lookup(k)) != NULL) {
		ze_tls_kernel.handle = k;
		ze_tls_kernel.K = K;
	}

	memset(w, 0, sizeof(*w));
	w->kind = ZE_CMD_KERNEL;
	w->name = ze_str.unknown_kernel;
	if (K) {
		/* (written out: a loop of atomic loads is not unrolled) */
		w->name = atomic_load_explicit(&K->name, memory_order_relaxed);
		w->size[0] = atomic_load_explicit(&K->size[0], memory_order_relaxed);
		w->size[1] = atomic_load_explicit(&K->size[1], memory_order_relaxed);
		w->size[2] = atomic_load_explicit(&K->size[2], memory_order_relaxed);
	}
	ze_call__arg(c, GT_S_ARG_KERNEL, GT_ARG_STR, w->name);
	if (groups) {
		w->groups[0] = groups->groupCountX;
		w->groups[1] = groups->groupCountY;
		w->groups[2] = groups->groupCountZ;
		ze_call__arg(c, ze_str.groups[0], GT_ARG_U64, w->groups[0]);
		ze_call__arg(c, ze_str.groups[1], GT_ARG_U64, w->groups[1]);
		ze_call__arg(c, ze_str.groups[2], GT_ARG_U64, w->groups[2]);
	} else {
		w->indirect = true;
	}
	c->flags |= ZE_LAUNCH_FLAG;
}

static void ze__work_copy(struct ze_call *c, struct ze_work *w, ze_context_handle_t src_ctx,
			  const void *src, ze_context_handle_t dst_ctx, const void *dst,
			  uint64_t bytes)
{
	enum ze_mem_kind s = ze_mem__kind(src_ctx, src), d = ze_mem__kind(dst_ctx, dst);

	memset(w, 0, sizeof(*w));
	w->kind = ZE_CMD_COPY;
	w->name = ze_str.memcpy[s][d];
	w->copy_kind = ze_str.copy_kind[s][d];
	w->bytes = bytes;
	ze_call__arg(c, GT_S_ARG_BYTES, GT_ARG_U64, bytes);
	ze_call__arg(c, ze_str.kind, GT_ARG_STR, w->copy_kind);
	c->flags |= ZE_LAUNCH_FLAG;
}

static void ze__work_image(struct ze_call *c, struct ze_work *w, const ze_image_region_t *region)
{
	memset(w, 0, sizeof(*w));
	w->kind = ZE_CMD_COPY;
	w->name = ze_str.memcpy_image;
	w->copy_kind = ze_str.image;
	/* Pixels, not bytes: the format is the image's. Unknown without a region. */
	if (region)
		w->bytes = (uint64_t)region->width * region->height * region->depth;
	ze_call__arg(c, ze_str.kind, GT_ARG_STR, w->copy_kind);
	c->flags |= ZE_LAUNCH_FLAG;
}

/*
 * Every append that puts work on a device, one shape: give the command a
 * timestamped signal event where the program gave none, describe the work
 * (after the begin: a copy's kinds need the list's context), append it
 * (a kernel between metric queries in --metrics-mode kernel), and record
 * it. The last argument is the description's statements, which set all of
 * w (each helper starts from zero).
 */
#define ZE_APPEND(name, params, args, ...)                                                 \
	ze_result_t ze_body_##name(struct ze_call *c, __typeof__(&name) real, ZE_UNPAREN params) \
	{                                                                                  \
		struct ze_append a;                                                        \
		struct ze_work w;                                                          \
		ze_result_t r;                                                             \
                                                                                           \
		uint32_t pushed;                                                           \
                                                                                           \
		/* a kind left out of the activities: a plain call, nothing timed (an     \
		 * exported function's front sends it to its plain twin before this) */  \
		if (gt_unlikely(ze__kind_left_out(ZE_ID_##name)))                          \
			return real args;                                                  \
		/* paused: work on an immediate list runs now, outside any window */     \
		if (gt_unlikely(ze__paused()) && ze_track__list_is_immediate(hCommandList)) \
			return real args;                                                  \
		hSignalEvent = ze_track__append_begin(&a, c->t0, hCommandList, hSignalEvent, \
						      numWaitEvents, phWaitEvents);        \
		__VA_ARGS__                                                                \
		/* one test with metrics off: the call is made in either branch, the     \
		 * plain one as it was before metrics */                                 \
		if (ze_metrics__measured(&a, &w)) {                                        \
			ze_metrics__kernel_begin(&a, &w, hCommandList, numWaitEvents,      \
						 phWaitEvents);                            \
			pushed = gt_ext_corr_push(c->corr);                                \
			r = real args;                                                     \
			gt_ext_corr_pop(pushed);                                           \
			if (ze_work_mq(&w))                                                \
				ze_metrics__kernel_end(&w, hCommandList, r);               \
		} else {                                                                   \
			pushed = gt_ext_corr_push(c->corr);                                \
			r = real args;                                                     \
			gt_ext_corr_pop(pushed);                                           \
		}                                                                          \
		ze_track__append_end(&a, r, &w, c);                                        \
		return r;                                                                  \
	}

ZE_APPEND(zeCommandListAppendLaunchKernel,
	(ze_command_list_handle_t hCommandList, ze_kernel_handle_t hKernel,
	 const ze_group_count_t *pLaunchFuncArgs, ze_event_handle_t hSignalEvent,
	 uint32_t numWaitEvents, ze_event_handle_t *phWaitEvents),
	(hCommandList, hKernel, pLaunchFuncArgs, hSignalEvent, numWaitEvents, phWaitEvents),
	ze__work_kernel(c, &w, hKernel, pLaunchFuncArgs);)

ZE_APPEND(zeCommandListAppendLaunchKernelWithParameters,
	(ze_command_list_handle_t hCommandList, ze_kernel_handle_t hKernel,
	 const ze_group_count_t *pGroupCounts, const void *pNext, ze_event_handle_t hSignalEvent,
	 uint32_t numWaitEvents, ze_event_handle_t *phWaitEvents),
	(hCommandList, hKernel, pGroupCounts, pNext, hSignalEvent, numWaitEvents, phWaitEvents),
	ze__work_kernel(c, &w, hKernel, pGroupCounts);)

/* The group size comes with the launch (and lasts for it only). */
ZE_APPEND(zeCommandListAppendLaunchKernelWithArguments,
	(ze_command_list_handle_t hCommandList, ze_kernel_handle_t hKernel,
	 const ze_group_count_t groupCounts, const ze_group_size_t groupSizes, void **pArguments,
	 const void *pNext, ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
	 ze_event_handle_t *phWaitEvents),
	(hCommandList, hKernel, groupCounts, groupSizes, pArguments, pNext, hSignalEvent,
	 numWaitEvents, phWaitEvents),
	ze__work_kernel(c, &w, hKernel, &groupCounts);
	w.size[0] = groupSizes.groupSizeX;
	w.size[1] = groupSizes.groupSizeY;
	w.size[2] = groupSizes.groupSizeZ;)

ZE_APPEND(zeCommandListAppendLaunchCooperativeKernel,
	(ze_command_list_handle_t hCommandList, ze_kernel_handle_t hKernel,
	 const ze_group_count_t *pLaunchFuncArgs, ze_event_handle_t hSignalEvent,
	 uint32_t numWaitEvents, ze_event_handle_t *phWaitEvents),
	(hCommandList, hKernel, pLaunchFuncArgs, hSignalEvent, numWaitEvents, phWaitEvents),
	ze__work_kernel(c, &w, hKernel, pLaunchFuncArgs);)

ZE_APPEND(zeCommandListAppendLaunchKernelIndirect,
	(ze_command_list_handle_t hCommandList, ze_kernel_handle_t hKernel,
	 const ze_group_count_t *pLaunchArgumentsBuffer, ze_event_handle_t hSignalEvent,
	 uint32_t numWaitEvents, ze_event_handle_t *phWaitEvents),
	(hCommandList, hKernel, pLaunchArgumentsBuffer, hSignalEvent, numWaitEvents, phWaitEvents),
	/* The group counts are in device memory, written later: not read here. */
	ze__work_kernel(c, &w, hKernel, NULL);)

ZE_APPEND(zeCommandListAppendLaunchMultipleKernelsIndirect,
	(ze_command_list_handle_t hCommandList, uint32_t numKernels, ze_kernel_handle_t *phKernels,
	 const uint32_t *pCountBuffer, const ze_group_count_t *pLaunchArgumentsBuffer,
	 ze_event_handle_t hSignalEvent, uint32_t numWaitEvents, ze_event_handle_t *phWaitEvents),
	(hCommandList, numKernels, phKernels, pCountBuffer, pLaunchArgumentsBuffer, hSignalEvent,
	 numWaitEvents, phWaitEvents),
	/* One signal event for them all: one span, named after the first kernel. */
	ze__work_kernel(c, &w, numKernels && phKernels ? phKernels[0] : NULL, NULL);)

ZE_APPEND(zeCommandListAppendMemoryCopy,
	(ze_command_list_handle_t hCommandList, void *dstptr, const void *srcptr, size_t size,
	 ze_event_handle_t hSignalEvent, uint32_t numWaitEvents, ze_event_handle_t *phWaitEvents),
	(hCommandList, dstptr, srcptr, size, hSignalEvent, numWaitEvents, phWaitEvents),
	ze__work_copy(c, &w, a.ctx, srcptr, a.ctx, dstptr, size);)

ZE_APPEND(zeCommandListAppendMemoryCopyWithParameters,
	(ze_command_list_handle_t hCommandList, void *dstptr, const void *srcptr, size_t size,
	 const void *pNext, ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
	 ze_event_handle_t *phWaitEvents),
	(hCommandList, dstptr, srcptr, size, pNext, hSignalEvent, numWaitEvents, phWaitEvents),
	ze__work_copy(c, &w, a.ctx, srcptr, a.ctx, dstptr, size);)

static uint64_t ze__region_bytes(const ze_copy_region_t *r)
{
	return r ? (uint64_t)r->width * r->height * (r->depth ? r->depth : 1) : 0;
}

ZE_APPEND(zeCommandListAppendMemoryCopyRegion,
	(ze_command_list_handle_t hCommandList, void *dstptr, const ze_copy_region_t *dstRegion,
	 uint32_t dstPitch, uint32_t dstSlicePitch, const void *srcptr,
	 const ze_copy_region_t *srcRegion, uint32_t srcPitch, uint32_t srcSlicePitch,
	 ze_event_handle_t hSignalEvent, uint32_t numWaitEvents, ze_event_handle_t *phWaitEvents),
	(hCommandList, dstptr, dstRegion, dstPitch, dstSlicePitch, srcptr, srcRegion, srcPitch,
	 srcSlicePitch, hSignalEvent, numWaitEvents, phWaitEvents),
	ze__work_copy(c, &w, a.ctx, srcptr, a.ctx, dstptr, ze__region_bytes(srcRegion));)

ZE_APPEND(zeCommandListAppendMemoryCopyFromContext,
	(ze_command_list_handle_t hCommandList, void *dstptr, ze_context_handle_t hContextSrc,
	 const void *srcptr, size_t size, ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
	 ze_event_handle_t *phWaitEvents),
	(hCommandList, dstptr, hContextSrc, srcptr, size, hSignalEvent, numWaitEvents,
	 phWaitEvents),
	ze__work_copy(c, &w, hContextSrc, srcptr, a.ctx, dstptr, size);)

static void ze__work_fill(struct ze_call *c, struct ze_work *w, uint64_t bytes)
{
	*w = (struct ze_work){ .kind = ZE_CMD_FILL, .name = ze_str.memset, .bytes = bytes };
	ze_call__arg(c, GT_S_ARG_BYTES, GT_ARG_U64, bytes);
	c->flags |= ZE_LAUNCH_FLAG;
}

ZE_APPEND(zeCommandListAppendMemoryFill,
	(ze_command_list_handle_t hCommandList, void *ptr, const void *pattern, size_t pattern_size,
	 size_t size, ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
	 ze_event_handle_t *phWaitEvents),
	(hCommandList, ptr, pattern, pattern_size, size, hSignalEvent, numWaitEvents, phWaitEvents),
	ze__work_fill(c, &w, size);)

ZE_APPEND(zeCommandListAppendMemoryFillWithParameters,
	(ze_command_list_handle_t hCommandList, void *ptr, const void *pattern, size_t pattern_size,
	 size_t size, const void *pNext, ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
	 ze_event_handle_t *phWaitEvents),
	(hCommandList, ptr, pattern, pattern_size, size, pNext, hSignalEvent, numWaitEvents,
	 phWaitEvents),
	ze__work_fill(c, &w, size);)

ZE_APPEND(zeCommandListAppendImageCopy,
	(ze_command_list_handle_t hCommandList, ze_image_handle_t hDstImage,
	 ze_image_handle_t hSrcImage, ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
	 ze_event_handle_t *phWaitEvents),
	(hCommandList, hDstImage, hSrcImage, hSignalEvent, numWaitEvents, phWaitEvents),
	ze__work_image(c, &w, NULL);)

ZE_APPEND(zeCommandListAppendImageCopyRegion,
	(ze_command_list_handle_t hCommandList, ze_image_handle_t hDstImage,
	 ze_image_handle_t hSrcImage, const ze_image_region_t *pDstRegion,
	 const ze_image_region_t *pSrcRegion, ze_event_handle_t hSignalEvent,
	 uint32_t numWaitEvents,
	 ze_event_handle_t *phWaitEvents),
	(hCommandList, hDstImage, hSrcImage, pDstRegion, pSrcRegion, hSignalEvent, numWaitEvents,
	 phWaitEvents),
	ze__work_image(c, &w, pSrcRegion);)

ZE_APPEND(zeCommandListAppendImageCopyToMemory,
	(ze_command_list_handle_t hCommandList, void *dstptr, ze_image_handle_t hSrcImage,
	 const ze_image_region_t *pSrcRegion, ze_event_handle_t hSignalEvent,
	 uint32_t numWaitEvents,
	 ze_event_handle_t *phWaitEvents),
	(hCommandList, dstptr, hSrcImage, pSrcRegion, hSignalEvent, numWaitEvents, phWaitEvents),
	ze__work_image(c, &w, pSrcRegion);)

ZE_APPEND(zeCommandListAppendImageCopyFromMemory,
	(ze_command_list_handle_t hCommandList, ze_image_handle_t hDstImage, const void *srcptr,
	 const ze_image_region_t *pDstRegion, ze_event_handle_t hSignalEvent,
	 uint32_t numWaitEvents,
	 ze_event_handle_t *phWaitEvents),
	(hCommandList, hDstImage, srcptr, pDstRegion, hSignalEvent, numWaitEvents, phWaitEvents),
	ze__work_image(c, &w, pDstRegion);)

ZE_APPEND(zeCommandListAppendImageCopyToMemoryExt,
	(ze_command_list_handle_t hCommandList, void *dstptr, ze_image_handle_t hSrcImage,
	 const ze_image_region_t *pSrcRegion, uint32_t destRowPitch, uint32_t destSlicePitch,
	 ze_event_handle_t hSignalEvent, uint32_t numWaitEvents, ze_event_handle_t *phWaitEvents),
	(hCommandList, dstptr, hSrcImage, pSrcRegion, destRowPitch, destSlicePitch, hSignalEvent,
	 numWaitEvents, phWaitEvents),
	ze__work_image(c, &w, pSrcRegion);)

ZE_APPEND(zeCommandListAppendImageCopyFromMemoryExt,
	(ze_command_list_handle_t hCommandList, ze_image_handle_t hDstImage, const void *srcptr,
	 const ze_image_region_t *pDstRegion, uint32_t srcRowPitch, uint32_t srcSlicePitch,
	 ze_event_handle_t hSignalEvent, uint32_t numWaitEvents, ze_event_handle_t *phWaitEvents),
	(hCommandList, hDstImage, srcptr, pDstRegion, srcRowPitch, srcSlicePitch, hSignalEvent,
	 numWaitEvents, phWaitEvents),
	ze__work_image(c, &w, pDstRegion);)

/* ---- barriers and events in lists: marks on the device row ---- */

/* A barrier is timed like a command, when sync marks are recorded. */
#define ZE_BARRIER(fn, params, args)                                                     \
	ze_result_t ze_body_##fn(struct ze_call *c, __typeof__(&fn) real, ZE_UNPAREN params) \
	{                                                                                  \
		struct ze_append a;                                                        \
		struct ze_work w = { .kind = ZE_CMD_BARRIER, .name = ze_str.barrier };     \
		ze_result_t r;                                                             \
                                                                                           \
		if (ze__kind_left_out(ZE_ID_##fn))                                         \
			return real args;                                                  \
		hSignalEvent = ze_track__append_begin(&a, c->t0, hCommandList, hSignalEvent, \
						      numWaitEvents, phWaitEvents);        \
		r = real args;                                                             \
		ze_track__append_end(&a, r, &w, c);                                        \
		return r;                                                                  \
	}

ZE_BARRIER(zeCommandListAppendBarrier,
	(ze_command_list_handle_t hCommandList, ze_event_handle_t hSignalEvent,
	 uint32_t numWaitEvents, ze_event_handle_t *phWaitEvents),
	(hCommandList, hSignalEvent, numWaitEvents, phWaitEvents))

ZE_BARRIER(zeCommandListAppendMemoryRangesBarrier,
	(ze_command_list_handle_t hCommandList, uint32_t numRanges, const size_t *pRangeSizes,
	 const void **pRanges, ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
	 ze_event_handle_t *phWaitEvents),
	(hCommandList, numRanges, pRangeSizes, pRanges, hSignalEvent, numWaitEvents, phWaitEvents))

ze_result_t ze_body_zeCommandListAppendSignalEvent(struct ze_call *c,
						   __typeof__(&zeCommandListAppendSignalEvent) real,
						   ze_command_list_handle_t hCommandList,
						   ze_event_handle_t hEvent)
{
	struct ze_mark m;
	ze_result_t r;

	ze_track__mark_begin(&m, c->t0, hCommandList, ZE_CMD_SIGNAL, hEvent, 0, NULL);
	r = real(hCommandList, hEvent);
	ze_track__mark_end(&m, r, c);
	return r;
}

ze_result_t ze_body_zeCommandListAppendWaitOnEvents(struct ze_call *c,
						    __typeof__(&zeCommandListAppendWaitOnEvents) real,
						    ze_command_list_handle_t hCommandList,
						    uint32_t numEvents, ze_event_handle_t *phEvents)
{
	struct ze_mark m;
	ze_result_t r;

	ze_track__mark_begin(&m, c->t0, hCommandList, ZE_CMD_WAIT, NULL, numEvents, phEvents);
	r = real(hCommandList, numEvents, phEvents);
	ze_track__mark_end(&m, r, c);
	return r;
}

ze_result_t ze_body_zeCommandListAppendEventReset(
	struct ze_call *c, __typeof__(&zeCommandListAppendEventReset) real,
	ze_command_list_handle_t hCommandList, ze_event_handle_t hEvent)
{
	struct ze_mark m;
	ze_result_t r;

	/* On an immediate list the reset runs now: read the event before it does. A
	 * regular list resets it when executed, after the commands before it that it
	 * timed: their times are copied first. */
	ze_track__event_reset_appended(hCommandList, hEvent);
	ze_track__mark_begin(&m, c->t0, hCommandList, ZE_CMD_RESET, hEvent, 0, NULL);
	r = real(hCommandList, hEvent);
	ze_track__mark_end(&m, r, c);
	return r;
}

/* ---- queues, lists, execution ---- */

ze_result_t ze_body_zeCommandQueueCreate(struct ze_call *c, __typeof__(&zeCommandQueueCreate) real,
					 ze_context_handle_t hContext, ze_device_handle_t hDevice,
					 const ze_command_queue_desc_t *desc,
					 ze_command_queue_handle_t *phCommandQueue)
{
	ze_result_t r = real(hContext, hDevice, desc, phCommandQueue);

	if (r == ZE_RESULT_SUCCESS && phCommandQueue && *phCommandQueue)
		ze_track__queue_created(*phCommandQueue, hDevice, desc);
	return r;
}

ze_result_t ze_body_zeCommandQueueDestroy(struct ze_call *c,
					  __typeof__(&zeCommandQueueDestroy) real,
					  ze_command_queue_handle_t hCommandQueue)
{
	ze_track__queue_destroy(hCommandQueue);
	return real(hCommandQueue);
}

ze_result_t ze_body_zeCommandQueueExecuteCommandLists(
	struct ze_call *c, __typeof__(&zeCommandQueueExecuteCommandLists) real,
	ze_command_queue_handle_t hCommandQueue, uint32_t numCommandLists,
	ze_command_list_handle_t *phCommandLists, ze_fence_handle_t hFence)
{
	struct ze_exec x;
	ze_result_t r;
	uint32_t pushed;

	c->flags |= ZE_LAUNCH_FLAG;
	ze_call__arg(c, ze_str.lists, GT_ARG_U64, numCommandLists);
	ze_track__execute_begin(&x, hCommandQueue, NULL, numCommandLists, phCommandLists);
	pushed = gt_ext_corr_push(c->corr);
	r = real(hCommandQueue, numCommandLists, phCommandLists, hFence);
	gt_ext_corr_pop(pushed);
	ze_track__execute_end(&x, r, c, hFence);
	return r;
}

/* Regular lists run on an immediate list (spec 1.9): as executed on a queue, on its row.
 * Its own signal and wait events go to the driver untouched. */
#define ZE_IMMEDIATE_RUN(name, params, args)                                               \
	ze_result_t ze_body_##name(struct ze_call *c, __typeof__(&name) real, ZE_UNPAREN params) \
	{                                                                                  \
		struct ze_exec x;                                                          \
		ze_result_t r;                                                             \
		uint32_t pushed;                                                           \
                                                                                           \
		c->flags |= ZE_LAUNCH_FLAG;                                                \
		ze_call__arg(c, ze_str.lists, GT_ARG_U64, numCommandLists);                \
		ze_track__execute_begin(&x, NULL, hCommandListImmediate, numCommandLists,  \
					phCommandLists);                                   \
		pushed = gt_ext_corr_push(c->corr);                                        \
		r = real args;                                                             \
		gt_ext_corr_pop(pushed);                                                   \
		ze_track__execute_end(&x, r, c, NULL);                                     \
		return r;                                                                  \
	}

ZE_IMMEDIATE_RUN(zeCommandListImmediateAppendCommandListsExp,
	(ze_command_list_handle_t hCommandListImmediate, uint32_t numCommandLists,
	 ze_command_list_handle_t *phCommandLists, ze_event_handle_t hSignalEvent,
	 uint32_t numWaitEvents, ze_event_handle_t *phWaitEvents),
	(hCommandListImmediate, numCommandLists, phCommandLists, hSignalEvent, numWaitEvents,
	 phWaitEvents))

ZE_IMMEDIATE_RUN(zeCommandListImmediateAppendCommandListsWithParameters,
	(ze_command_list_handle_t hCommandListImmediate, uint32_t numCommandLists,
	 ze_command_list_handle_t *phCommandLists, const void *pNext,
	 ze_event_handle_t hSignalEvent, uint32_t numWaitEvents, ze_event_handle_t *phWaitEvents),
	(hCommandListImmediate, numCommandLists, phCommandLists, pNext, hSignalEvent,
	 numWaitEvents, phWaitEvents))

/* A wait that returned success means the work it waited for is done: read
 * the device times of everything finished (one shape for every wait and
 * query). A wait that may block (waited: the handle) is marked for the hang
 * watchdog while inside the real call; a query (waited 0) never blocks. A queue's
 * synchronize (queue) also bounds when its earlier runs ended, a fence's (fence) when the
 * runs it was given to did. */
#define ZE_NO_QUEUE ((ze_command_queue_handle_t)NULL)
#define ZE_COLLECT_ON_SUCCESS(name, params, args, waited, queue)                           \
	ZE_COLLECT_ON_SUCCESS_FENCE(name, params, args, waited, queue, NULL)
#define ZE_COLLECT_ON_SUCCESS_FENCE(name, params, args, waited, queue, fence)              \
	ze_result_t ze_body_##name(struct ze_call *c, __typeof__(&name) real, ZE_UNPAREN params) \
	{                                                                                  \
		ze_result_t r;                                                             \
                                                                                           \
		if (waited)                                                                \
			gt_wait_enter(ze__name(ZE_ID_##name), (uintptr_t)(waited));        \
		r = real args;                                                             \
		if (waited)                                                                \
			gt_wait_leave();                                                   \
		if (r == ZE_RESULT_SUCCESS) {                                              \
			if (queue)                                                         \
				ze_track__queue_synced(queue, c->t0);                      \
			if (fence)                                                         \
				ze_track__fence_synced(fence, c->t0);                      \
			ze_track__synced();                                                \
		}                                                                          \
		return r;                                                                  \
	}

ZE_COLLECT_ON_SUCCESS(zeCommandQueueSynchronize,
	(ze_command_queue_handle_t hCommandQueue, uint64_t timeout),
	(hCommandQueue, timeout), hCommandQueue, hCommandQueue)

ZE_COLLECT_ON_SUCCESS(zeCommandListHostSynchronize,
	(ze_command_list_handle_t hCommandList, uint64_t timeout),
	(hCommandList, timeout), hCommandList, ZE_NO_QUEUE)

ZE_COLLECT_ON_SUCCESS(zeDeviceSynchronize, (ze_device_handle_t hDevice), (hDevice), hDevice,
		      ZE_NO_QUEUE)

ze_result_t ze_body_zeCommandListCreate(struct ze_call *c, __typeof__(&zeCommandListCreate) real,
					ze_context_handle_t hContext, ze_device_handle_t hDevice,
					const ze_command_list_desc_t *desc,
					ze_command_list_handle_t *phCommandList)
{
	ze_result_t r = real(hContext, hDevice, desc, phCommandList);

	if (r == ZE_RESULT_SUCCESS && phCommandList && *phCommandList)
		ze_track__list_created(*phCommandList, hContext, hDevice, desc, NULL);
	return r;
}

ze_result_t ze_body_zeCommandListCreateImmediate(struct ze_call *c,
						 __typeof__(&zeCommandListCreateImmediate) real,
						 ze_context_handle_t hContext,
						 ze_device_handle_t hDevice,
						 const ze_command_queue_desc_t *altdesc,
						 ze_command_list_handle_t *phCommandList)
{
	static const ze_command_queue_desc_t dflt = { .stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC };
	ze_result_t r = real(hContext, hDevice, altdesc, phCommandList);

	if (r == ZE_RESULT_SUCCESS && phCommandList && *phCommandList)
		ze_track__list_created(*phCommandList, hContext, hDevice, NULL,
				       altdesc ? altdesc : &dflt);
	return r;
}

ze_result_t ze_body_zeCommandListDestroy(struct ze_call *c, __typeof__(&zeCommandListDestroy) real,
					 ze_command_list_handle_t hCommandList)
{
	ze_track__list_release(hCommandList, true);
	return real(hCommandList);
}

ze_result_t ze_body_zeCommandListReset(struct ze_call *c, __typeof__(&zeCommandListReset) real,
				       ze_command_list_handle_t hCommandList)
{
	ze_track__list_release(hCommandList, false);
	return real(hCommandList);
}

/* ---- events, fences: sync points ---- */

ze_result_t ze_body_zeEventPoolCreate(struct ze_call *c, __typeof__(&zeEventPoolCreate) real,
				      ze_context_handle_t hContext,
				      const ze_event_pool_desc_t *desc, uint32_t numDevices,
				      ze_device_handle_t *phDevices,
				      ze_event_pool_handle_t *phEventPool)
{
	ze_result_t r = real(hContext, desc, numDevices, phDevices, phEventPool);

	/* The pool stays as the program made it (a timestamp query on its events must
	 * fail as before): events of pools without timestamps are chained to ours. */
	if (r == ZE_RESULT_SUCCESS && phEventPool && *phEventPool)
		ze_track__pool_created(*phEventPool, desc);
	return r;
}

ze_result_t ze_body_zeEventPoolDestroy(struct ze_call *c, __typeof__(&zeEventPoolDestroy) real,
				       ze_event_pool_handle_t hEventPool)
{
	ze_track__pool_destroy(hEventPool);
	return real(hEventPool);
}

ze_result_t ze_body_zeEventCreate(struct ze_call *c, __typeof__(&zeEventCreate) real,
				  ze_event_pool_handle_t hEventPool, const ze_event_desc_t *desc,
				  ze_event_handle_t *phEvent)
{
	ze_result_t r = real(hEventPool, desc, phEvent);

	if (r == ZE_RESULT_SUCCESS && phEvent && *phEvent)
		ze_track__event_created(*phEvent, hEventPool, desc ? desc->index : 0);
	return r;
}

/* A counter-based event without a pool: spec 1.15's, or Intel's (the same descriptor). */
#define ZE_CB_EVENT_CREATE(fn, desc_t)                                                     \
	ze_result_t ze_body_##fn(struct ze_call *c, __typeof__(&fn) real,                  \
				 ze_context_handle_t hContext, ze_device_handle_t hDevice,  \
				 const desc_t *desc, ze_event_handle_t *phEvent)            \
	{                                                                                  \
		ze_result_t r = real(hContext, hDevice, desc, phEvent);                    \
                                                                                           \
		if (r == ZE_RESULT_SUCCESS && phEvent && *phEvent)                         \
			ze_track__cb_event_created(                                        \
				*phEvent, (const ze_event_counter_based_desc_t *)desc);    \
		return r;                                                                  \
	}

ZE_CB_EVENT_CREATE(zeEventCounterBasedCreate, ze_event_counter_based_desc_t)

ze_result_t ze_body_zeEventDestroy(struct ze_call *c, __typeof__(&zeEventDestroy) real,
				   ze_event_handle_t hEvent)
{
	ze_track__event_retire(hEvent, true);
	return real(hEvent);
}

ze_result_t ze_body_zeEventHostReset(struct ze_call *c, __typeof__(&zeEventHostReset) real,
				     ze_event_handle_t hEvent)
{
	ze_track__event_retire(hEvent, false);
	return real(hEvent);
}

ZE_COLLECT_ON_SUCCESS(zeEventHostSynchronize,
	(ze_event_handle_t hEvent, uint64_t timeout),
	(hEvent, timeout), hEvent, ZE_NO_QUEUE)

ZE_COLLECT_ON_SUCCESS(zeEventQueryStatus, (ze_event_handle_t hEvent), (hEvent), 0, ZE_NO_QUEUE)

ZE_COLLECT_ON_SUCCESS_FENCE(zeFenceHostSynchronize,
	(ze_fence_handle_t hFence, uint64_t timeout),
	(hFence, timeout), hFence, ZE_NO_QUEUE, hFence)

ZE_COLLECT_ON_SUCCESS_FENCE(zeFenceQueryStatus, (ze_fence_handle_t hFence), (hFence), 0,
			    ZE_NO_QUEUE, hFence)

/* ---- init, contexts, memory ---- */

/*
 * Registered at the first successful zeInit, after the loader's constructor:
 * runs before the loader's destructor frees its state, so what completed is
 * read while the loader still works.
 */
static void ze__atexit(void)
{
	/* Not where exit() came from a signal handler that interrupted a traced
	 * call (a SIGALRM timeout's): the thread may hold the driver's lock, or
	 * ours, and a read here waited for itself, for good; the last drain's
	 * read, bounded, does it. */
	if (!gt_guard_try())
		return;
	ze_track__collect();
	gt_guard_leave();
}

static void ze__exit_hook(void)
{
	static atomic_bool done;

	if (!atomic_exchange(&done, true))
		atexit(ze__atexit);
}

ze_result_t ze_body_zeInit(struct ze_call *c, __typeof__(&zeInit) real, ze_init_flags_t flags)
{
	ze_result_t r = real(flags);

	if (r == ZE_RESULT_SUCCESS) {
		ze__exit_hook();
		ze_metrics__init();
		ze_telemetry__init();
	}
	return r;
}

/* The driver types a zeInitDrivers asked for, as a user reads them: "GPU", "GPU|NPU",
 * "all" (every bit, as the spec's examples pass), other bits in hex. */
static uint32_t ze__driver_types(ze_init_driver_type_flags_t flags)
{
	char buf[48];
	int n = 0;

	if (flags == UINT32_MAX)
		return gt_str_intern("all");
	if (flags & ZE_INIT_DRIVER_TYPE_FLAG_GPU)
		n += snprintf(buf + n, sizeof(buf) - n, "GPU");
	if (flags & ZE_INIT_DRIVER_TYPE_FLAG_NPU)
		n += snprintf(buf + n, sizeof(buf) - n, "%sNPU", n ? "|" : "");
	flags &= ~(ze_init_driver_type_flags_t)(ZE_INIT_DRIVER_TYPE_FLAG_GPU |
						ZE_INIT_DRIVER_TYPE_FLAG_NPU);
	if (flags || !n)
		snprintf(buf + n, sizeof(buf) - n, "%s0x%x", n ? "|" : "", (unsigned)flags);
	return gt_str_intern(buf);
}

ze_result_t ze_body_zeInitDrivers(struct ze_call *c, __typeof__(&zeInitDrivers) real,
				  uint32_t *pCount, ze_driver_handle_t *phDrivers,
				  ze_init_driver_type_desc_t *desc)
{
	ze_result_t r = real(pCount, phDrivers, desc);

	/* Cold (once or twice a process): the strings are interned here. */
	if (desc)
		ze_call__arg(c, gt_str_intern("types"), GT_ARG_STR, ze__driver_types(desc->flags));
	if (r == ZE_RESULT_SUCCESS) {
		if (pCount)
			ze_call__arg(c, gt_str_intern("drivers"), GT_ARG_U64, *pCount);
		ze__exit_hook();
	}
	return r;
}

ze_result_t ze_body_zeContextDestroy(struct ze_call *c, __typeof__(&zeContextDestroy) real,
				     ze_context_handle_t hContext)
{
	ze_track__context_destroy(hContext);
	return real(hContext);
}

ze_result_t ze_body_zeMemAllocDevice(struct ze_call *c, __typeof__(&zeMemAllocDevice) real,
				     ze_context_handle_t hContext,
				     const ze_device_mem_alloc_desc_t *device_desc, size_t size,
				     size_t alignment, ze_device_handle_t hDevice, void **pptr)
{
	ze_result_t r = real(hContext, device_desc, size, alignment, hDevice, pptr);

	ze_call__arg(c, GT_S_ARG_BYTES, GT_ARG_U64, size);
	if (r == ZE_RESULT_SUCCESS && pptr)
		ze_mem__alloc(hContext, *pptr, size, hDevice, false);
	return r;
}

ze_result_t ze_body_zeMemAllocHost(struct ze_call *c, __typeof__(&zeMemAllocHost) real,
				   ze_context_handle_t hContext,
				   const ze_host_mem_alloc_desc_t *host_desc, size_t size,
				   size_t alignment, void **pptr)
{
	ze_result_t r = real(hContext, host_desc, size, alignment, pptr);

	ze_call__arg(c, GT_S_ARG_BYTES, GT_ARG_U64, size);
	if (r == ZE_RESULT_SUCCESS && pptr)
		ze_mem__alloc(hContext, *pptr, size, NULL, true);
	return r;
}

ze_result_t ze_body_zeMemAllocShared(struct ze_call *c, __typeof__(&zeMemAllocShared) real,
				     ze_context_handle_t hContext,
				     const ze_device_mem_alloc_desc_t *device_desc,
				     const ze_host_mem_alloc_desc_t *host_desc, size_t size,
				     size_t alignment, ze_device_handle_t hDevice, void **pptr)
{
	ze_result_t r = real(hContext, device_desc, host_desc, size, alignment, hDevice, pptr);

	ze_call__arg(c, GT_S_ARG_BYTES, GT_ARG_U64, size);
	/* Shared memory without a device migrates anywhere: counted as host USM. */
	if (r == ZE_RESULT_SUCCESS && pptr)
		ze_mem__alloc(hContext, *pptr, size, hDevice, hDevice == NULL);
	return r;
}

ze_result_t ze_body_zeMemFree(struct ze_call *c, __typeof__(&zeMemFree) real,
			      ze_context_handle_t hContext, void *ptr)
{
	/* Marked first: once freed, another thread may get the same address. */
	uint64_t mark = ze_mem__free_mark();
	ze_result_t r = real(hContext, ptr);

	/* A refused free (another context's memory) leaves the memory in use. */
	if (r == ZE_RESULT_SUCCESS)
		ze_mem__freed(ptr, mark);
	return r;
}

ze_result_t ze_body_zeMemFreeExt(struct ze_call *c, __typeof__(&zeMemFreeExt) real,
				 ze_context_handle_t hContext,
				 const ze_memory_free_ext_desc_t *pMemFreeDesc, void *ptr)
{
	uint64_t mark = ze_mem__free_mark();
	ze_result_t r = real(hContext, pMemFreeDesc, ptr);

	if (r == ZE_RESULT_SUCCESS)
		ze_mem__freed(ptr, mark);
	return r;
}

/* ---- Intel's driver extension functions (ze_intel_ext.h) ---- */

/* Laid out as spec 1.15's descriptor, with the same flag bits: one event, one rule. */
_Static_assert(sizeof(zex_counter_based_event_desc_t) == sizeof(ze_event_counter_based_desc_t) &&
		       ZEX_COUNTER_BASED_EVENT_FLAG_KERNEL_TIMESTAMP ==
			       ZE_EVENT_COUNTER_BASED_FLAG_DEVICE_TIMESTAMP &&
		       ZEX_COUNTER_BASED_EVENT_FLAG_KERNEL_MAPPED_TIMESTAMP ==
			       ZE_EVENT_COUNTER_BASED_FLAG_HOST_TIMESTAMP,
	       "zex counter-based event descriptor differs from the spec's");

ZE_CB_EVENT_CREATE(zexCounterBasedEventCreate2, zex_counter_based_event_desc_t)

/* The list stops until memory says so: a wait span on its row, from when the row was
 * free to when the condition held (the command's own times). */
#define ZE_MEMORY_WAIT(fn, params, args)                                                   \
	ze_result_t ze_body_##fn(struct ze_call *c, __typeof__(&fn) real, ZE_UNPAREN params) \
	{                                                                                  \
		struct ze_append a;                                                        \
		struct ze_work w = { .kind = ZE_CMD_WAIT, .name = ze_str.wait_memory };    \
		ze_result_t r;                                                             \
                                                                                           \
		if (ze__kind_left_out(ZE_ID_##fn))                                         \
			return real args;                                                  \
		hSignalEvent = ze_track__append_begin(&a, c->t0, hCommandList, hSignalEvent, \
						      0, NULL);                            \
		r = real args;                                                             \
		ze_track__append_end(&a, r, &w, c);                                        \
		return r;                                                                  \
	}

ZE_MEMORY_WAIT(zexCommandListAppendWaitOnMemory,
	(ze_command_list_handle_t hCommandList, zex_wait_on_mem_desc_t *desc, void *ptr,
	 uint32_t data, ze_event_handle_t hSignalEvent),
	(hCommandList, desc, ptr, data, hSignalEvent))

ZE_MEMORY_WAIT(zexCommandListAppendWaitOnMemory64,
	(ze_command_list_handle_t hCommandList, zex_wait_on_mem_desc_t *desc, void *ptr,
	 uint64_t data, ze_event_handle_t hSignalEvent),
	(hCommandList, desc, ptr, data, hSignalEvent))

/* An instant where the list got to the write (no signal event of its own). */
ze_result_t ze_body_zexCommandListAppendWriteToMemory(
	struct ze_call *c, __typeof__(&zexCommandListAppendWriteToMemory) real,
	ze_command_list_handle_t hCommandList, zex_write_to_mem_desc_t *desc, void *ptr,
	uint64_t data)
{
	struct ze_mark m;
	ze_result_t r;

	ze_track__mark_begin(&m, c->t0, hCommandList, ZE_CMD_SIGNAL, NULL, 0, NULL);
	m.w.name = ze_str.write_memory;
	r = real(hCommandList, desc, ptr, data);
	ze_track__mark_end(&m, r, c);
	return r;
}

/* ---- mutable command lists (SYCL graphs): a closed list's kernels change ---- */

ze_result_t ze_body_zeCommandListGetNextCommandIdExp(
	struct ze_call *c, __typeof__(&zeCommandListGetNextCommandIdExp) real,
	ze_command_list_handle_t hCommandList, const ze_mutable_command_id_exp_desc_t *desc,
	uint64_t *pCommandId)
{
	ze_result_t r = real(hCommandList, desc, pCommandId);

	if (r == ZE_RESULT_SUCCESS && pCommandId)
		ze_track__mutable_next(hCommandList, *pCommandId, desc ? desc->flags : 0);
	return r;
}

ze_result_t ze_body_zeCommandListGetNextCommandIdWithKernelsExp(
	struct ze_call *c, __typeof__(&zeCommandListGetNextCommandIdWithKernelsExp) real,
	ze_command_list_handle_t hCommandList, const ze_mutable_command_id_exp_desc_t *desc,
	uint32_t numKernels, ze_kernel_handle_t *phKernels, uint64_t *pCommandId)
{
	ze_result_t r = real(hCommandList, desc, numKernels, phKernels, pCommandId);

	if (r == ZE_RESULT_SUCCESS && pCommandId)
		ze_track__mutable_next(hCommandList, *pCommandId, desc ? desc->flags : 0);
	return r;
}

ze_result_t ze_body_zeCommandListUpdateMutableCommandsExp(
	struct ze_call *c, __typeof__(&zeCommandListUpdateMutableCommandsExp) real,
	ze_command_list_handle_t hCommandList, const ze_mutable_commands_exp_desc_t *desc)
{
	ze_result_t r = real(hCommandList, desc);

	if (r == ZE_RESULT_SUCCESS)
		ze_track__mutable_update(hCommandList, desc);
	return r;
}

/* A switched kernel runs with its group size as set now, until an update changes it. */
ze_result_t ze_body_zeCommandListUpdateMutableCommandKernelsExp(
	struct ze_call *c, __typeof__(&zeCommandListUpdateMutableCommandKernelsExp) real,
	ze_command_list_handle_t hCommandList, uint32_t numKernels, uint64_t *pCommandId,
	ze_kernel_handle_t *phKernels)
{
	ze_result_t r = real(hCommandList, numKernels, pCommandId, phKernels);

	for (uint32_t i = 0; r == ZE_RESULT_SUCCESS && pCommandId && phKernels && i < numKernels;
	     i++) {
		struct ze_kernel *K = ze_kernel__lookup(phKernels[i]);
		uint32_t size[3];

		if (!K)
			continue;
		for (int d = 0; d < 3; d++)
			size[d] = atomic_load_explicit(&K->size[d], memory_order_relaxed);
		ze_track__mutable_kernel(hCommandList, pCommandId[i],
					 atomic_load_explicit(&K->name, memory_order_relaxed), size);
	}
	return r;
}

ze_result_t ze_body_zeCommandListUpdateMutableCommandSignalEventExp(
	struct ze_call *c, __typeof__(&zeCommandListUpdateMutableCommandSignalEventExp) real,
	ze_command_list_handle_t hCommandList, uint64_t commandId, ze_event_handle_t hSignalEvent)
{
	ze_result_t r = real(hCommandList, commandId, hSignalEvent);

	if (r == ZE_RESULT_SUCCESS)
		ze_track__mutable_signal(hCommandList, commandId, hSignalEvent);
	return r;
}

ze_result_t ze_body_zeCommandListUpdateMutableCommandWaitEventsExp(
	struct ze_call *c, __typeof__(&zeCommandListUpdateMutableCommandWaitEventsExp) real,
	ze_command_list_handle_t hCommandList, uint64_t commandId, uint32_t numWaitEvents,
	ze_event_handle_t *phWaitEvents)
{
	ze_result_t r = real(hCommandList, commandId, numWaitEvents, phWaitEvents);

	if (r == ZE_RESULT_SUCCESS)
		ze_track__mutable_waits(hCommandList, commandId, numWaitEvents, phWaitEvents);
	return r;
}
