// SPDX-License-Identifier: MIT
/*
 * The program's event pools and events, as the device rows need them: which
 * events carry kernel timestamps we may read, which are counter-based (never
 * reset, never signaled by the host, valid only on in-order lists), and the
 * names their marks show ("event 2.5": the program's second pool, index 5;
 * "cb event 3": its third counter-based event made without a pool). Names
 * are interned when the event is made, so appends never take the string lock.
 *
 * Everything here runs under ze_lock.
 */
#include <stdio.h>
#include <stdlib.h>
#include "backends/levelzero/internal.h"

/* ZE_EVENT_POOL_FLAG_KERNEL_MAPPED_TIMESTAMP (spec 1.6: an enum value Debian's 1.4
 * headers lack) */
#define ZE_POOL_FLAG_KERNEL_MAPPED_TIMESTAMP ((ze_event_pool_flags_t)1u << 3)

static struct ze_map ze_pools;  /* program's pool -> ZE_EV_* flags | its number << 8 */
static struct ze_map ze_events; /* program's event -> struct ze_event_info * */
static uint32_t ze_npools, ze_ncb;

/* The counter-based extension (spec 1.8) in a pool descriptor's pNext chain. */
static bool ze_event__cb_pool(const ze_event_pool_desc_t *desc)
{
	for (const ze_base_desc_t *p = desc->pNext; p; p = p->pNext) {
		if (p->stype == ZE_STRUCTURE_TYPE_COUNTER_BASED_EVENT_POOL_EXP_DESC)
			return true;
	}
	return false;
}

void ze_event__pool_created(ze_event_pool_handle_t p, const ze_event_pool_desc_t *desc)
{
	const ze_event_pool_flags_t ts = ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP |
					 ZE_EVENT_POOL_FLAG_HOST_VISIBLE;
	uintptr_t flags = 0;

	if (desc && (desc->flags & ts) == ts)
		flags |= ZE_EV_TIMESTAMPED;
	if (desc && (desc->flags & ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP))
		flags |= ZE_EV_KERNEL_TS;
	/* Kernel timestamps in host ns (spec 1.6's KERNEL_MAPPED_TIMESTAMP; a driver may take
	 * it with KERNEL_TIMESTAMP too): read as they are, host ns, not ticks. Until
	 * 2026-12-07 such an event was taken for one without timestamps: a barrier of ours
	 * signaled it, and the program read the barrier's times (kernels of 0 ns). */
	if (desc && (desc->flags & ZE_POOL_FLAG_KERNEL_MAPPED_TIMESTAMP))
		flags |= ZE_EV_KERNEL_TS | ZE_EV_HOST_DOMAIN |
			 (desc->flags & ZE_EVENT_POOL_FLAG_HOST_VISIBLE ? ZE_EV_TIMESTAMPED : 0);
	/* Counter-based: never read directly (each signal replaces its timestamps). */
	if (desc && ze_event__cb_pool(desc))
		flags = (flags & ~ZE_EV_TIMESTAMPED) | ZE_EV_COUNTER_BASED;
	ze_map__put(&ze_pools, p, flags | (uintptr_t)++ze_npools << 8);
}

static struct ze_event_info *ze_event__new(ze_event_handle_t e, ze_event_pool_handle_t pool,
					   uint32_t flags, const char *name)
{
	struct ze_event_info *old = (struct ze_event_info *)ze_map__del(&ze_events, e);
	struct ze_event_info *info = old ? old : malloc(sizeof(*info));
	char buf[64];

	if (!info)
		return NULL;
	info->pool = pool;
	info->flags = flags;
	info->name = gt_str_intern(name);
	snprintf(buf, sizeof(buf), "Wait %s", name);
	info->wait_name = gt_str_intern(buf);
	snprintf(buf, sizeof(buf), "Signal %s", name);
	info->signal_name = gt_str_intern(buf);
	snprintf(buf, sizeof(buf), "Reset %s", name);
	info->reset_name = gt_str_intern(buf);
	if (ze_map__put(&ze_events, e, (uintptr_t)info)) {
		free(info);
		return NULL;
	}
	return info;
}

void ze_event__created(ze_event_handle_t e, ze_event_pool_handle_t p, uint32_t index)
{
	uintptr_t pool = ze_map__get(&ze_pools, p);
	char name[48];

	/* A pool not seen made (a fork child's of its parent's): its events are named,
	 * not timed, and go to the driver untouched (it may have timestamps). */
	snprintf(name, sizeof(name), "event %u.%u", (unsigned)(pool >> 8), index);
	ze_event__new(e, p, (uint32_t)(pool & 0xff) | ZE_EV_MADE | (pool ? 0 : ZE_EV_POOL_UNKNOWN),
		      name);
}

void ze_event__cb_created(ze_event_handle_t e, const ze_event_counter_based_desc_t *desc)
{
	uint32_t flags = ZE_EV_COUNTER_BASED | ZE_EV_MADE;
	char name[48];

	if (desc && (desc->flags & ZE_EVENT_COUNTER_BASED_FLAG_DEVICE_TIMESTAMP))
		flags |= ZE_EV_KERNEL_TS;
	if (desc && (desc->flags & ZE_EVENT_COUNTER_BASED_FLAG_HOST_TIMESTAMP))
		flags |= ZE_EV_KERNEL_TS | ZE_EV_HOST_DOMAIN;
	snprintf(name, sizeof(name), "cb event %u", ++ze_ncb);
	ze_event__new(e, NULL, flags, name);
}

struct ze_event_info *ze_event__get(ze_event_handle_t e)
{
	return e ? (struct ze_event_info *)ze_map__get(&ze_events, e) : NULL;
}

struct ze_event_info *ze_event__named(ze_event_handle_t e)
{
	struct ze_event_info *info = ze_event__get(e);
	char name[48];

	if (info || !e)
		return info;
	/* Made before tracing began (or by a library we never saw): named by its handle. */
	snprintf(name, sizeof(name), "event %p", (void *)e);
	return ze_event__new(e, NULL, 0, name);
}

void ze_event__destroyed(ze_event_handle_t e)
{
	free((void *)ze_map__del(&ze_events, e));
}

struct ze_pool_walk {
	ze_event_pool_handle_t pool;
	void (*fn)(ze_event_handle_t e);
};

static void ze_event__pool_each(const void *e, uintptr_t val, void *arg)
{
	struct ze_pool_walk *w = arg;
	struct ze_event_info *info = (struct ze_event_info *)val;

	if (info->pool == w->pool) {
		w->fn((ze_event_handle_t)e);
		ze_event__destroyed((ze_event_handle_t)e);
	}
}

bool ze_event__pool_destroyed(ze_event_pool_handle_t p, void (*fn)(ze_event_handle_t e))
{
	struct ze_pool_walk w = { .pool = p, .fn = fn };
	bool known;

	if (!p) /* the driver refuses it (events without a pool are counter-based) */
		return false;
	known = ze_map__del(&ze_pools, p) != 0;
	/* a pool made before tracing began has events made after: forgotten too,
	 * or a handle the driver reuses would pass for one it made (ZE_EV_MADE) */
	ze_map__each(&ze_events, ze_event__pool_each, &w);
	return known;
}

GT_FORK_CODE void ze_event__forget(void)
{
	ze_map__forget(&ze_pools);
	ze_map__forget(&ze_events);
	ze_npools = ze_ncb = 0;
}
