/* SPDX-License-Identifier: MIT */
/*
 * Internals of the Level Zero backend, shared by its files:
 *   levelzero.c         registration, real-function resolution, the generated wrappers
 *   levelzero_hooks.c   bodies of the wrappers that do more than time the call
 *   levelzero_track.c   device work: timestamp events, lists, queues, pending reads
 *   levelzero_device.c  devices, rows and the device -> host clock conversion
 *   levelzero_mem.c     allocations and the memory-in-use counters
 *   levelzero_map.c     handle maps with lock-free lookups
 */
#ifndef GPUTRACE_LEVELZERO_H
#define GPUTRACE_LEVELZERO_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <level_zero/ze_api.h>
#include <level_zero/zet_api.h>
#include <level_zero/zes_api.h>
#include <level_zero/loader/ze_loader.h>
#include <level_zero/layers/zel_tracing_api.h>
#include <level_zero/layers/zel_tracing_register_cb.h>
#include "inject/event.h"
#include "backends/backend.h"
#include "backends/levelzero/api.h"
#include "backends/levelzero/map.h"

#define ZE_UNPAREN(...) __VA_ARGS__

/* Prototypes of the LATE functions (a newer loader's, absent from these headers). */
#define ZE_PROTO_PLAIN(ret, name, params, args)
#define ZE_PROTO_HOOK(ret, name, params, args)
#define ZE_PROTO_LATE(ret, name, params, args) ret name params;
#define ZE_PROTO(kind, ...) ZE_PROTO_##kind(__VA_ARGS__)
ZE_API(ZE_PROTO)
#undef ZE_PROTO

enum ze_fn_id {
#define ZE_ID(kind, ret, name, params, args) ZE_ID_##name,
	ZE_API(ZE_ID)
#undef ZE_ID
	ZE_ID__COUNT
};

/* ---- real functions ---- */

extern GT_HIDDEN _Atomic(void *) ze_real_tab[ZE_ID__COUNT];
GT_HIDDEN void *ze__resolve(enum ze_fn_id id);

static inline void *ze__real(enum ze_fn_id id)
{
	void *p = atomic_load_explicit(&ze_real_tab[id], memory_order_acquire);

	return gt_likely(p != NULL) ? p : ze__resolve(id);
}

/* The loader's function, never our wrapper (NULL when the loader lacks it). */
#define ZE_REAL(name) ((__typeof__(&name))ze__real(ZE_ID_##name))


/* First successful zeInit: read completed work at exit, before the loader goes. */
GT_HIDDEN void ze__exit_hook(void);

/* ---- host span of one call ---- */

/* What a hooked body adds to the span of its call: args after "result", flags. */
struct ze_call {
	uint64_t corr;
	uint16_t flags;
	uint8_t nargs;
	struct gt_arg args[GT_ARGS_MAX];
};

static inline void ze_call__arg(struct ze_call *c, uint32_t key, uint32_t type, uint64_t v)
{
	if (c->nargs >= GT_ARGS_MAX || !key)
		return;
	c->args[c->nargs].key = key;
	c->args[c->nargs].type = type;
	c->args[c->nargs].v.u = v;
	c->nargs++;
}

/* Body of each HOOK function: does the real call itself (it may pass other arguments). */
#define ZE_BODY_DECL_PLAIN(ret, name, params, args)
#define ZE_BODY_DECL_LATE(ret, name, params, args)
#define ZE_BODY_DECL_HOOK(ret, name, params, args)                                         \
	GT_HIDDEN ret ze_body_##name(struct ze_call *c, __typeof__(&name) real, ZE_UNPAREN params);
#define ZE_BODY_DECL(kind, ...) ZE_BODY_DECL_##kind(__VA_ARGS__)
ZE_API(ZE_BODY_DECL)
#undef ZE_BODY_DECL

/* ---- strings interned once ---- */

enum ze_mem_kind { ZE_MK_HOST, ZE_MK_DEVICE, ZE_MK_SHARED, ZE_MK__COUNT };

struct ze_strings {
	uint32_t kind, lists, bytes_in_use;
	uint32_t groups[3]; /* "gx", "gy", "gz": group counts */
	uint32_t size[3];   /* "lx", "ly", "lz": group size */
	uint32_t device_memory, host_usm, memset, memcpy_image, unknown_kernel;
	uint32_t memcpy[ZE_MK__COUNT][ZE_MK__COUNT];   /* span names "Memcpy HtoD" */
	uint32_t copy_kind[ZE_MK__COUNT][ZE_MK__COUNT]; /* "kind" values "HtoD" */
	uint32_t image;
	uint32_t lost_unread, lost_no_event, lost_overwritten;
};

extern GT_HIDDEN struct ze_strings ze_str;
/* Interns ze_str on first use (cold: takes the string lock once). */
GT_HIDDEN void ze__strings_init(void);

/* Activities configuration: which kinds of events to emit. */
GT_HIDDEN bool ze__want(unsigned kind_mask);

/* ---- the backend lock: everything below except ze_kernel__get ---- */

extern GT_HIDDEN pthread_mutex_t ze_lock;
/* Set once the device side must not call the loader any more (exit). */
extern GT_HIDDEN atomic_bool ze_closed;

/* ---- devices and clocks (levelzero_device.c) ---- */

struct ze_dev {
	ze_device_handle_t handle;
	uint32_t row;        /* gt_device_row */
	uint32_t counter;    /* gt_device_track(row), for counters */
	int index;           /* "GPU <index>" */
	double ns_per_tick;  /* from timerResolution */
	uint64_t mask;       /* kernelTimestampValidBits */
	uint64_t mem_in_use; /* device and shared allocations on it */
	unsigned immediate_lists; /* rows "immediate list <n>" made so far */
};

/* The device's record, discovered on first sight (lock held). NULL: unknown. */
GT_HIDDEN struct ze_dev *ze_dev__get(ze_device_handle_t h);
/* Any known device, for host-side counters (lock held). */
GT_HIDDEN struct ze_dev *ze_dev__first(void);
/* A (host ns, device ticks) pair taken now. 0 or -EIO. */
GT_HIDDEN int ze_dev__sync(struct ze_dev *d, uint64_t *host_ns, uint64_t *ticks);
GT_HIDDEN void ze_dev__forget(void);

/* ---- device work tracking (levelzero_track.c) ---- */

enum ze_cmd_kind { ZE_CMD_KERNEL = 1, ZE_CMD_COPY, ZE_CMD_FILL };

/* What one appended command will show as on the device row. */
struct ze_work {
	uint8_t kind;       /* enum ze_cmd_kind */
	uint32_t name;      /* span name */
	uint32_t copy_kind; /* "HtoD"..., copies */
	uint64_t bytes;     /* copies and fills */
	uint32_t groups[3]; /* kernels: group count */
	uint32_t size[3];   /* kernels: group size */
};

/* State carried from an append's start to its end. */
struct ze_append {
	struct ze_list *list;
	ze_context_handle_t ctx; /* the list's context */
	ze_event_handle_t event; /* the signal event to pass to the real call */
	bool own;                /* event is ours */
	ze_event_handle_t chain; /* the program's untimed event, signaled after ours */
	uint64_t ref_host, ref_ticks;
};

/* Before the real append: which signal event to pass (ours when the program gave none). */
GT_HIDDEN ze_event_handle_t ze_track__append_begin(struct ze_append *a, ze_command_list_handle_t l,
						   ze_event_handle_t program_event);
/* After it: chain the program's event, record the command (regular list) or its pending
 * read (immediate list). */
GT_HIDDEN void ze_track__append_end(struct ze_append *a, ze_result_t r, const struct ze_work *w,
				    uint64_t corr);

/* State carried from an execute's start to its end. */
struct ze_exec {
	struct ze_queue *queue;
	uint32_t n;
	ze_command_list_handle_t *lists;
	uint64_t ref_host, ref_ticks;
};
GT_HIDDEN void ze_track__execute_begin(struct ze_exec *x, ze_command_queue_handle_t q, uint32_t n,
				       ze_command_list_handle_t *lists);
GT_HIDDEN void ze_track__execute_end(struct ze_exec *x, ze_result_t r, uint64_t corr);
GT_HIDDEN bool ze_track__list_is_immediate(ze_command_list_handle_t l);

GT_HIDDEN void ze_track__queue_created(ze_command_queue_handle_t q, ze_device_handle_t dev,
				       const ze_command_queue_desc_t *desc);
GT_HIDDEN void ze_track__queue_destroy(ze_command_queue_handle_t q);
GT_HIDDEN void ze_track__list_created(ze_command_list_handle_t l, ze_context_handle_t ctx,
				      ze_device_handle_t dev, const ze_command_queue_desc_t *imm);
/* Before a list reset (destroy: also forget it). */
GT_HIDDEN void ze_track__list_release(ze_command_list_handle_t l, bool destroy);
GT_HIDDEN void ze_track__pool_created(ze_event_pool_handle_t p, bool timestamped);
GT_HIDDEN void ze_track__pool_destroy(ze_event_pool_handle_t p);
GT_HIDDEN void ze_track__event_created(ze_event_handle_t e, ze_event_pool_handle_t p);
/* Before the program resets or destroys one of its events: read it first. */
GT_HIDDEN void ze_track__event_retire(ze_event_handle_t e, bool destroy);
GT_HIDDEN void ze_track__context_destroy(ze_context_handle_t ctx);
/* A sync point succeeded: read every pending command that is complete. */
GT_HIDDEN void ze_track__collect(void);
/* Exit: read what is complete, count the rest lost, make no more loader calls. */
GT_HIDDEN void ze_track__final(void);
GT_HIDDEN void ze_track__forget(void);

/* ---- kernels (levelzero_hooks.c) ---- */

struct ze_kernel {
	_Atomic uint32_t name;
	_Atomic uint32_t size[3]; /* zeKernelSetGroupSize */
};

/* Lock-free. */
GT_HIDDEN struct ze_kernel *ze_kernel__get(ze_kernel_handle_t k);
GT_HIDDEN void ze_kernel__forget(void);

/* ---- memory counters (levelzero_mem.c) ---- */

GT_HIDDEN void ze_mem__alloc(ze_context_handle_t ctx, void *ptr, size_t size,
			     ze_device_handle_t dev, bool host);
GT_HIDDEN void ze_mem__free(void *ptr);
/* The kind of memory ptr points into (a driver query; unknown is pageable host). */
GT_HIDDEN enum ze_mem_kind ze_mem__kind(ze_context_handle_t ctx, const void *ptr);
GT_HIDDEN void ze_mem__forget(void);

#endif
