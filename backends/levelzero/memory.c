// SPDX-License-Identifier: MIT
/*
 * Memory in use, a counter track per device ("device memory", series
 * bytes_in_use: device and shared allocations of that device) and one for
 * host USM (on the first device's row, series bytes_in_use of "host USM").
 * Allocations are remembered by pointer so zeMemFree knows what it frees;
 * only a free the driver accepted leaves the count (it refuses one made with
 * another context, and the memory stays in use).
 */
#include <stdlib.h>
#include "backends/levelzero/internal.h"
#include "inject/clock.h"
#include "inject/config.h"

struct ze_alloc {
	uint64_t size;
	struct ze_dev *dev; /* NULL: host USM */
	uint64_t serial;    /* order recorded: tells it from a later one at its address */
};

static struct ze_map ze_allocs; /* pointer -> struct ze_alloc * */
static _Atomic uint64_t ze_alloc_serial; /* the last one recorded (read without the lock) */
static uint64_t ze_host_in_use;

static void ze_mem__emit(struct ze_dev *dev, uint32_t name, uint64_t in_use)
{
	struct gt_arg arg = { .key = ze_str.bytes_in_use, .type = GT_ARG_U64, .v.u = in_use };
	uint64_t now = gt_clock_ns();
	struct gt_event ev = {
		.start_ns = now,
		.end_ns = now,
		.name = name,
		.cat = GT_S_CAT_COUNTER,
		.track = dev->counter,
		.type = GT_EV_COUNTER,
	};

	if (ze__want(GT_KIND(COUNTER)))
		gt_emit(&ev, &arg, 1);
}

static void ze_mem__update(struct ze_alloc *a, bool add)
{
	struct ze_dev *row = a->dev ? a->dev : ze_dev__first();
	uint64_t *in_use = a->dev ? &a->dev->mem_in_use : &ze_host_in_use;

	*in_use = add ? *in_use + a->size : *in_use - a->size;
	if (row)
		ze_mem__emit(row, a->dev ? ze_str.device_memory : ze_str.host_usm, *in_use);
}

void ze_mem__alloc(ze_context_handle_t ctx, void *ptr, size_t size, ze_device_handle_t dev,
		   bool host)
{
	struct ze_alloc *a, *old;

	if (!ptr)
		return;
	a = malloc(sizeof(*a));
	if (!a)
		return;
	a->size = size;
	pthread_mutex_lock(&ze_lock);
	a->dev = host ? NULL : ze_dev__get(dev);
	if (!host && !a->dev) {
		/* A device we cannot name: no row to count it on. */
		pthread_mutex_unlock(&ze_lock);
		free(a);
		return;
	}
	old = (struct ze_alloc *)ze_map__del(&ze_allocs, ptr);
	if (old) {
		/* Freed behind our back (before tracing): forget the stale record. */
		ze_mem__update(old, false);
		free(old);
	}
	if (ze_map__put(&ze_allocs, ptr, (uintptr_t)a)) {
		free(a);
	} else {
		/* The host series lives on a device row: make sure one exists. */
		if (!a->dev && !ze_dev__first()) {
			uint32_t n = 1;
			ze_driver_handle_t drv;
			ze_device_handle_t d;

			if (ZE_REAL(zeDriverGet)(&n, &drv) == ZE_RESULT_SUCCESS && n &&
			    (n = 1, ZE_REAL(zeDeviceGet)(drv, &n, &d)) == ZE_RESULT_SUCCESS && n)
				ze_dev__get(d);
		}
		a->serial = atomic_fetch_add(&ze_alloc_serial, 1) + 1;
		ze_mem__update(a, true);
	}
	pthread_mutex_unlock(&ze_lock);
	(void)ctx;
}

uint64_t ze_mem__free_mark(void)
{
	return atomic_load(&ze_alloc_serial);
}

void ze_mem__freed(void *ptr, uint64_t mark)
{
	struct ze_alloc *a;

	if (!ptr)
		return;
	pthread_mutex_lock(&ze_lock);
	a = (struct ze_alloc *)ze_map__get(&ze_allocs, ptr);
	/*
	 * Recorded after the mark: another thread got the address once the driver
	 * freed it, and ze_mem__alloc counted ours out when it recorded its own.
	 */
	if (a && a->serial > mark)
		a = NULL;
	if (a) {
		ze_map__del(&ze_allocs, ptr);
		ze_mem__update(a, false);
	}
	pthread_mutex_unlock(&ze_lock);
	free(a);
}

enum ze_mem_kind ze_mem__kind(ze_context_handle_t ctx, const void *ptr)
{
	ze_memory_allocation_properties_t props = {
		.stype = ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES,
	};
	ze_device_handle_t dev = NULL;

	if (!ctx || !ptr || atomic_load(&ze_closed) ||
	    ZE_REAL(zeMemGetAllocProperties)(ctx, ptr, &props, &dev) != ZE_RESULT_SUCCESS)
		return ZE_MK_HOST;
	switch (props.type) {
	case ZE_MEMORY_TYPE_DEVICE:
		return ZE_MK_DEVICE;
	case ZE_MEMORY_TYPE_SHARED:
		return ZE_MK_SHARED;
	default:
		/* Host USM and memory the driver does not know (pageable). */
		return ZE_MK_HOST;
	}
}

GT_FORK_CODE void ze_mem__forget(void)
{
	ze_map__forget(&ze_allocs);
	ze_host_in_use = 0;
}
