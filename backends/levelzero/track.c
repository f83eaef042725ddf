// SPDX-License-Identifier: MIT
/*
 * Device times of Level Zero work.
 *
 * Every kernel, copy and fill appended to a command list gets a signal event
 * with kernel timestamps: the program's own when its pool has timestamps, else
 * one of ours from per-context pools, recycled. When the program gave an
 * event without timestamps, a barrier appended right after the command waits
 * for ours and signals the program's: it signals when it did before (pools
 * are never changed, so everything the program asks of its events answers
 * as before).
 *
 * A regular list records its commands at append time; each execution makes
 * one pending read per command, linked to the execute call (corr) and to the
 * append (corr2). An immediate list makes the pending read at the append.
 * Pending reads are taken, in submission order, once the program learns that
 * work finished (a successful synchronize or query of a queue, list, device,
 * event or fence): by the drain thread at its next cycle, which such a wait
 * asks for once ZE_DEFER_WAKE are pending, or by the wait itself past
 * ZE_DEFER_MAX (or in kernel metrics mode). A regular list reset or destroyed
 * leaves its reads to them, its events of ours going back to the pools once
 * read; a list run again, an immediate list destroyed, an event or context
 * going, and the exit take them at once. The program never waits for us, and
 * its events signal exactly as before.
 *
 * Counter-based events (spec 1.8, 1.15) are never read directly: each append
 * that signals one replaces its state, timestamps included. One with kernel
 * timestamps stays the command's signal event (the program reads it), and a
 * timestamp query appended right after copies its times into memory of ours
 * and signals our event; one without is replaced by ours and chained. The
 * program's is never reset nor signaled by the host.
 *
 * Barriers time like commands. An event signal, an event reset and a wait on
 * events have no signal event of their own: a barrier with one of ours after
 * them (only when the "sync" activity is recorded) marks when the list got
 * past them. They show as instants, and waits (explicit, or of a command
 * that waited for events) as gpu_sync spans from when the row was free.
 *
 * Everything here runs under ze_lock, except the common append (below: no
 * program event, no wait events to name), which touches only its list: the
 * program may not use one list from two threads at once (the spec's rule), so
 * its list's own state needs no lock.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backends/levelzero/internal.h"
#include "inject/clock.h"
#include "inject/config.h"
#include "inject/shim.h"
#include "inject/watchdog.h"
#include <time.h>

#define ZE_POOL_EVENTS    256     /* events per pool of ours */
#define ZE_POOL_LOW       (ZE_POOL_EVENTS / 2) /* free events left when the drain grows a pool */
#define ZE_LIST_STASH     16      /* events of ours a list holds for its appends */
#define ZE_TLS_LISTS      4       /* lists a thread finds without the lock */
#define ZE_CTX_EVENTS_MAX (1 << 16) /* ours per context: beyond, work goes untimed */
/* The reads a program's wait leaves to the drain thread: it is woken past ZE_DEFER_WAKE
 * pending, and past ZE_DEFER_MAX the wait reads them itself. Kept small: events of ours
 * not yet given back are new ones the program's appends and the driver touch (with
 * 8192, 100k immediate launches back to back took 1053 against 542 ns more each). */
#define ZE_DEFER_WAKE     512
#define ZE_DEFER_MAX      1024
#define ZE_BEHIND_ROUND   64 /* the drain's reads per hold of ze_lock */
/* The lists of one execute call whose last runs' states execute_begin keeps on its stack;
 * a list past them counts as overlapping an unfinished run. */
#define ZE_EXEC_LISTS_SEEN 64

/* A call's work drawn on a row lately, in order, as a stretch of ticks and of host time:
 * what a command placed back from a later chain (ze_pend__place_earlier) fits between. */
#define ZE_ROW_DRAWN 8
struct ze_drawn {
	uint64_t corr;                 /* the call (a run or an append) */
	uint64_t start_raw, end_raw;   /* as device timestamps */
	uint64_t start_host, end_host; /* as drawn; end_host 0: none */
};

/*
 * The last command read on a row (queue or immediate list), as a chain of
 * commands converted from one reference pair. Work submitted while the row
 * was still busy continues the chain: its start is measured from the last
 * end (or start), so a backlog longer than one timestamp wrap still converts
 * and back-to-back commands never overlap by a rounding. Work submitted to
 * an idle row starts a new chain from its own submission pair (a re-sync).
 */
struct ze_anchor {
	bool valid;
	uint64_t base_host, base_ticks; /* the chain's reference pair */
	uint64_t start_off, end_off;    /* last command, in ticks after base_ticks */
	uint64_t start_raw, end_raw;    /* the same as device timestamps */
	uint64_t end_host;
	uint64_t last_at;      /* when the last command's call began (its pending's at) */
	/* The last command placed back from this one (ze_pend__place_earlier): its end in
	 * ticks and as drawn, which a command after it, placed back too, starts no earlier
	 * than. 0: none since the chain moved to this command. */
	uint64_t back_end_raw, back_end_host;
	/* The command the chain began with, placed by its own pair: its start in ticks and
	 * as drawn (the commands from it to the last are drawn on the chain). */
	uint64_t first_start_raw, first_start_host;
	/* The error bound of the pair the chain began with (the length of the call that read
	 * it): everything on the chain may be drawn that much early. */
	uint64_t base_err;
	uint64_t blocked_pass; /* the collect that found one of its commands not done */
	struct ze_drawn drawn[ZE_ROW_DRAWN]; /* a ring, drawn[drawn_last] the latest */
	unsigned drawn_last;
};

struct ze_ctx {
	ze_context_handle_t handle;
	ze_event_pool_handle_t *pools;
	unsigned npools;
	ze_event_handle_t *all;  /* every event of ours, to destroy with the context */
	ze_event_handle_t *free; /* reset and ready */
	unsigned nall, nfree;
	ze_kernel_timestamp_result_t **slots; /* per pool: host memory the queries write */
	bool want_pool; /* its free events ran low: the drain thread makes a pool */
};

struct ze_cmd {
	struct ze_work w;
	ze_event_handle_t event;
	bool own;
	bool host_domain; /* the slot has host ns, not ticks */
	ze_kernel_timestamp_result_t *slot; /* a query of the program's event writes here */
	ze_event_handle_t src; /* that event, when a run's copy may query it at the run's end
				* (device-only timestamps, not reset by the list) */
	bool run_copy;    /* its run on an in-order immediate list gets a copy (decided once
			   * per run, by ze__gate_copy: the events' flags may change meanwhile) */
	uint64_t append_corr;
	struct ze_pending *pend; /* the read of its latest execution, until taken */
	uint64_t mut_id;  /* a mutable command's id (mutable) */
	bool mutable;     /* its kernel, groups, events may change after the list closed */
};

/* An event of ours a barrier still waits on: reusable once later work on the list is done. */
struct ze_parked {
	ze_event_handle_t event;
	uint64_t seq;
};

struct ze_list {
	ze_command_list_handle_t handle;
	struct ze_ctx *ctx;
	struct ze_dev *dev;
	bool immediate, synchronous, executed, in_order;
	uint32_t track; /* immediate lists: their own row */
	struct ze_anchor *anchor;
	struct ze_cmd *cmds; /* regular lists */
	size_t ncmds, cap;
	/* The program's timestamped events a regular list resets on the device (a run's copy
	 * of an earlier list's command timed by one would be zeros); resets_all: some not
	 * kept (no memory) */
	ze_event_handle_t *resets;
	uint32_t nresets, cap_resets;
	bool resets_all;
	unsigned npend;           /* regular lists: reads of its commands still pending */
	/* Regular lists: its runs inside their execute calls (between execute_begin and
	 * execute_end), and the last such call's begin (its ze_exec's seq). */
	unsigned in_calls;
	uint64_t begin_seq;
	/* A run of it began while an earlier one was unfinished: from then on, a run lost or
	 * dropped may still signal the events any later run reads (ze_pend__other_run). */
	bool wary;
	uint64_t next_seq;        /* immediate lists: appends so far */
	uint64_t pair_host, pair_ticks, pair_err; /* immediate lists: their appends' last
						   * clock pair, and its error bound */
	struct ze_parked *parked; /* immediate lists */
	size_t nparked, cap_parked;
	/* A mutable list: the id GetNextCommandIdExp gave for the next kernel launch. */
	bool mut_pending;
	uint32_t mut_flags; /* ze_mutable_command_exp_flags_t asked for it */
	uint64_t mut_id;
	/* Unsignaled events of ours, taken from its context ZE_LIST_STASH at a time
	 * (its appends' own: no lock). */
	unsigned nstash;
	ze_event_handle_t stash[ZE_LIST_STASH];
};

struct ze_queue {
	ze_command_queue_handle_t handle;
	struct ze_dev *dev;
	uint32_t track;
	struct ze_anchor *anchor;
	/* Its last zeCommandQueueSynchronize that returned success: the runs whose calls
	 * had returned when it began ended by its return (lock held). */
	uint64_t sync_begin, sync_end;
	/* Pendings of its runs that overlapped another run of their list (ze_pending
	 * overlapped), not yet read: while there are any, each synchronize walks the
	 * pendings to give them their own bound (ze_track__queue_synced). */
	unsigned overlapped_pend;
};

/*
 * The end of one run of regular lists on an immediate list: a barrier after the run
 * signals this event of ours. A list may run there again before its last run is done
 * (SYCL graphs do), so a command's event may still hold the earlier run's times:
 * the reads of a run wait for its gate. On an in-order list, a timestamp query before
 * the gate copies the run's times into memory of its own (times): the next run then
 * overwrites nothing this run still needs.
 */
struct ze_gate {
	ze_event_handle_t event;
	struct ze_ctx *ctx;
	ze_kernel_timestamp_result_t *times; /* one per command with an event, in order */
	unsigned refs;
};

struct ze_pending {
	struct ze_pending *prev, *next;
	struct ze_gate *gate; /* run on an immediate list: read after its end */
	struct ze_work w;
	ze_event_handle_t event;
	bool recycle;        /* our event, back to ctx->free once read (an immediate list's,
			      * or a regular list's left by its reset) */
	bool fence;          /* last of a batch with a fence: an instant after it */
	bool chain_gone;     /* the program destroyed its chained event (counter-based may) */
	bool host_domain;    /* the slot has host ns, not ticks */
	bool run_copy;       /* the slot is its run's copy (gate->times): a rerun keeps it */
	bool executed;       /* a regular list's command: corr runs it, corr2 appended it */
	bool held;           /* its list ran before in the same call, on a queue: its event
			      * shows that run's times until this one's end (ze_pend__held) */
	bool overlapped;     /* its list's runs overlapped (wary): its event may show
			      * another run's times (ze_pend__other_run) */
	uint32_t track;      /* (beside the flags: no padding) */
	ze_kernel_timestamp_result_t *slot; /* read here, not from the event (a query's) */
	ze_event_handle_t chain; /* the program's event a barrier signals after ours */
	struct ze_ctx *ctx;
	struct ze_list *list; /* regular list owning the command */
	size_t cmd;
	struct ze_list *imm;  /* immediate list it was appended to */
	uint64_t seq;         /* its place there */
	uint64_t corr, corr2;
	struct ze_dev *dev;
	struct ze_anchor *anchor;
	uint64_t ref_host, ref_ticks; /* the pair converting its ticks */
	uint64_t ref_err; /* ... its error bound: the length of the call that read it */
	struct ze_queue *queue; /* run on this queue (NULL once it is destroyed) */
	uint64_t returned;  /* a queue's run: host time after its call returned */
	/* overlapped, on a queue: the earliest end of a synchronize of it that began after
	 * its call returned (0: none seen yet), which its own run ended before. The queue's
	 * last synchronize may end much later: another run's times fit under that. */
	uint64_t sync_bound;
	/* overlapped, on a queue: the fence its call was given (NULL: none), whose wait or
	 * query returning success bounds its run as a synchronize does (sync_bound). */
	ze_fence_handle_t fence_h;
	uint64_t at;        /* host time before the submitting call */
	uint64_t submitted; /* with wait events: host time after the submitting call returned */
	uint64_t clamped_ns; /* set by the read: moved this much later, to its call */
	/* its call's span: written at span_end (0: not known) by thread span_tid, before
	 * the pending was pushed (ze_call__span_now) */
	uint64_t span_end;
	int span_tid;
};

static struct ze_map ze_ctxs;    /* context -> struct ze_ctx * */
static struct ze_map ze_lists;   /* list -> struct ze_list * */
static struct ze_map ze_queues;  /* queue -> struct ze_queue * */
/* lists and queues made on a device with no row (device.c): their work is not drawn,
 * as that device's one line says, and not counted lost as untracked either */
static struct ze_map ze_rowless;
static struct ze_map ze_slots;   /* event of ours -> its timestamp slot */
static struct ze_map ze_anchors; /* row track -> struct ze_anchor * */
static struct ze_pending *ze_pend_head GT_STARTUP_STATE, *ze_pend_tail, *ze_pend_spare;
/* Pending reads (written under the lock; the program's waits read it without). */
static _Atomic unsigned ze_pend_count;
/* Reads made by the program's threads (lock held), and whether this thread is the drain's
 * collect (ze_track__collect_behind). */
static uint64_t ze_prog_reads;
/* A context ran low on free events of ours (ze_track__grow_ahead); the one the drain
 * thread makes a pool for, without the lock; and the wait for that pool (a context's
 * destroy, and the exit's last reads: no loader call may follow them). */
static atomic_bool ze_pools_low;
static struct ze_ctx *ze_growing;
static pthread_cond_t ze_grown = PTHREAD_COND_INITIALIZER;
static GT_TLS bool ze_tls_behind;

static bool ze__rowless(const void *handle)
{
	bool rowless;

	pthread_mutex_lock(&ze_lock);
	rowless = ze_map__get(&ze_rowless, handle);
	pthread_mutex_unlock(&ze_lock);
	return rowless;
}

/*
 * The lists a thread appended to last, found without the lock. Any list destroyed (or
 * a context: its lists lose it) moves the epoch on, which empties every thread's cache
 * before the memory is freed: a list still cached is alive, unless the program destroys
 * it while appending to it.
 */
static _Atomic uint64_t ze_list_epoch;
static GT_TLS struct ze_tls_list {
	ze_command_list_handle_t handle;
	struct ze_list *list;
	uint64_t epoch;
} ze_tls_lists[ZE_TLS_LISTS];

/* ---- our events ---- */

/*
 * A pool of ours, all its events made at once, so appends never allocate driver
 * objects one by one. (An object of ours made later could take the address of one
 * the program destroyed, and a stale handle of the program's would then look valid.)
 * Made without the lock (driver calls only), then joined to its context under it.
 */
struct ze_new_pool {
	ze_event_pool_handle_t pool;
	ze_kernel_timestamp_result_t *slot; /* host memory the queries write, or NULL */
	unsigned n;
	ze_event_handle_t ev[ZE_POOL_EVENTS]; /* the first made last: handed out first */
};

static int ze_pool__make(ze_context_handle_t ctx, struct ze_new_pool *np)
{
	ze_event_pool_desc_t desc = {
		.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC,
		.flags = ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP | ZE_EVENT_POOL_FLAG_HOST_VISIBLE,
		.count = ZE_POOL_EVENTS,
	};
	ze_event_desc_t edesc = {
		.stype = ZE_STRUCTURE_TYPE_EVENT_DESC,
		/* Host scope: the timestamps are read by the host. */
		.signal = ZE_EVENT_SCOPE_FLAG_HOST,
		.wait = ZE_EVENT_SCOPE_FLAG_HOST,
	};
	ze_host_mem_alloc_desc_t hdesc = { .stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC };

	np->pool = NULL;
	np->slot = NULL;
	np->n = 0;
	if (ZE_REAL(zeEventPoolCreate)(ctx, &desc, 0, NULL, &np->pool) != ZE_RESULT_SUCCESS)
		return -EIO;
	/* Without it, counter-based events with timestamps go untimed. */
	if (ZE_REAL(zeMemAllocHost)(ctx, &hdesc, ZE_POOL_EVENTS * sizeof(*np->slot), 64,
				    (void **)&np->slot) != ZE_RESULT_SUCCESS)
		np->slot = NULL;
	for (edesc.index = ZE_POOL_EVENTS; edesc.index-- > 0;) {
		ze_event_handle_t ev = NULL;

		if (ZE_REAL(zeEventCreate)(np->pool, &edesc, &ev) == ZE_RESULT_SUCCESS)
			np->ev[np->n++] = ev;
	}
	return 0;
}

/* A pool no context took (the context went, or memory ran out). */
static void ze_pool__unmake(ze_context_handle_t ctx, struct ze_new_pool *np)
{
	for (unsigned i = 0; i < np->n; i++)
		ZE_REAL(zeEventDestroy)(np->ev[i]);
	ZE_REAL(zeEventPoolDestroy)(np->pool);
	if (np->slot)
		ZE_REAL(zeMemFree)(ctx, np->slot);
}

/* The events of np join c's free list (lock held). 0 or -ENOMEM (np untouched). */
static int ze_ctx__add_pool_locked(struct ze_ctx *c, struct ze_new_pool *np)
{
	size_t n = c->npools + 1;
	ze_event_pool_handle_t *pools;
	ze_kernel_timestamp_result_t **slots;
	ze_event_handle_t *all, *fr;

	pools = realloc(c->pools, n * sizeof(*pools));
	if (!pools)
		return -ENOMEM;
	c->pools = pools;
	all = realloc(c->all, (c->nall + ZE_POOL_EVENTS) * sizeof(*all));
	if (!all)
		return -ENOMEM;
	c->all = all;
	fr = realloc(c->free, (c->nall + ZE_POOL_EVENTS) * sizeof(*fr));
	if (!fr)
		return -ENOMEM;
	c->free = fr;
	slots = realloc(c->slots, n * sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	c->slots = slots;
	c->slots[c->npools] = np->slot;
	c->pools[c->npools++] = np->pool;
	for (unsigned i = 0; i < np->n; i++) {
		ze_event_handle_t ev = np->ev[i];
		/* made from the last index down */
		unsigned index = ZE_POOL_EVENTS - 1 - i;

		if (np->slot)
			ze_map__put(&ze_slots, ev, (uintptr_t)&np->slot[index]);
		c->all[c->nall++] = ev;
		c->free[c->nfree++] = ev;
	}
	return 0;
}

/* May c have a pool more? (Beyond ZE_CTX_EVENTS_MAX, work goes untimed.) */
static inline bool ze_ctx__room(const struct ze_ctx *c)
{
	return c->nall + ZE_POOL_EVENTS <= ZE_CTX_EVENTS_MAX;
}

/* A pool more for c, made by the caller's thread with the lock held: when none is
 * free (the drain thread grows a pool ahead of need, ze_track__grow_ahead). */
static int ze_ctx__grow_pool(struct ze_ctx *c)
{
	struct ze_new_pool np;
	int err;

	if (!ze_ctx__room(c))
		return -ENOSPC;
	err = ze_pool__make(c->handle, &np);
	if (!err && (err = ze_ctx__add_pool_locked(c, &np)))
		ze_pool__unmake(c->handle, &np);
	return err;
}

static struct ze_ctx *ze_ctx__get(ze_context_handle_t h)
{
	struct ze_ctx *c = (struct ze_ctx *)ze_map__get(&ze_ctxs, h);

	if (c || !h)
		return c;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->handle = h;
	if (ze_map__put(&ze_ctxs, h, (uintptr_t)c)) {
		free(c);
		return NULL;
	}
	/* when a context's first list is created */
	ze_ctx__grow_pool(c);
	return c;
}

static ze_event_handle_t ze_ctx__event(struct ze_ctx *c)
{
	if (!c)
		return NULL;
	if (!c->nfree && (ze_ctx__grow_pool(c) || !c->nfree))
		return NULL;
	if (gt_unlikely(c->nfree == ZE_POOL_LOW) && !c->want_pool && ze_growing != c &&
	    ze_ctx__room(c)) {
		/* Running low: the drain thread makes a pool before the program's thread must
		 * (even if reads give events back before it runs: the next peak needs them). */
		c->want_pool = true;
		atomic_store_explicit(&ze_pools_low, true, memory_order_relaxed);
		gt_wake_writer();
	}
	return c->free[--c->nfree];
}

/* Back to the free list as it is: an event the device never saw (lock held). */
static void ze_ctx__unused(struct ze_ctx *c, ze_event_handle_t ev)
{
	c->free[c->nfree++] = ev;
}

/* Back to the free list, unsignaled (only once the device is done with it). */
static void ze_ctx__put(struct ze_ctx *c, ze_event_handle_t ev)
{
	if (!c || !ev || atomic_load(&ze_closed))
		return;
	if (ZE_REAL(zeEventHostReset)(ev) == ZE_RESULT_SUCCESS)
		ze_ctx__unused(c, ev);
}

/* A list's own unsignaled event of ours: no lock but when its stash is empty. */
static ze_event_handle_t ze_list__event(struct ze_list *L)
{
	if (gt_unlikely(!L->nstash)) {
		pthread_mutex_lock(&ze_lock);
		while (L->ctx && L->nstash < ZE_LIST_STASH && !atomic_load(&ze_closed)) {
			ze_event_handle_t ev = ze_ctx__event(L->ctx);

			if (!ev)
				break;
			L->stash[L->nstash++] = ev;
		}
		pthread_mutex_unlock(&ze_lock);
		if (!L->nstash)
			return NULL;
	}
	return L->stash[--L->nstash];
}

/* An event from ze_list__event the device never saw: back to the list. */
static void ze_list__unevent(struct ze_list *L, ze_event_handle_t ev)
{
	if (L->nstash < ZE_LIST_STASH)
		L->stash[L->nstash++] = ev;
	else if (L->ctx) {
		pthread_mutex_lock(&ze_lock);
		ze_ctx__unused(L->ctx, ev);
		pthread_mutex_unlock(&ze_lock);
	}
}

/* The list's stash back to its context (lock held). */
static void ze_list__unstash_locked(struct ze_list *L)
{
	while (L->nstash && L->ctx)
		ze_ctx__unused(L->ctx, L->stash[--L->nstash]);
	L->nstash = 0;
}

/* Lists are about to be freed or changed: no thread may find one in its cache (lock held). */
static void ze_list__epoch_locked(void)
{
	atomic_fetch_add_explicit(&ze_list_epoch, 1, memory_order_release);
}

/* The list of handle l, or NULL; lock-free when this thread used it lately. */
static struct ze_list *ze_list__find(ze_command_list_handle_t l)
{
	struct ze_tls_list *c = &ze_tls_lists[((uintptr_t)l >> 4) % ZE_TLS_LISTS];
	uint64_t epoch = atomic_load_explicit(&ze_list_epoch, memory_order_acquire);
	struct ze_list *L;

	if (gt_likely(c->handle == l && c->epoch == epoch && l))
		return c->list;
	pthread_mutex_lock(&ze_lock);
	L = (struct ze_list *)ze_map__get(&ze_lists, l);
	epoch = atomic_load_explicit(&ze_list_epoch, memory_order_relaxed);
	pthread_mutex_unlock(&ze_lock);
	if (L)
		*c = (struct ze_tls_list){ .handle = l, .list = L, .epoch = epoch };
	return L;
}

static struct ze_anchor *ze_anchor__get(uint32_t track)
{
	const void *key = (const void *)(uintptr_t)track;
	struct ze_anchor *a = (struct ze_anchor *)ze_map__get(&ze_anchors, key);

	if (a)
		return a;
	a = calloc(1, sizeof(*a));
	if (a && ze_map__put(&ze_anchors, key, (uintptr_t)a)) {
		free(a);
		a = NULL;
	}
	return a;
}

/* ---- pending reads ---- */

/* A read to fill: each maker sets every field (what is cheaper differs by path). */
static struct ze_pending *ze_pend__new(void)
{
	struct ze_pending *p = ze_pend_spare;

	if (p)
		ze_pend_spare = p->next;
	else
		p = malloc(sizeof(*p));
	return p;
}

static void ze_pend__count(int by)
{
	atomic_store_explicit(&ze_pend_count,
			      atomic_load_explicit(&ze_pend_count, memory_order_relaxed) + by,
			      memory_order_relaxed);
}

static void ze_pend__push(struct ze_pending *p)
{
	ze_pend__count(1);
	p->prev = ze_pend_tail;
	p->next = NULL;
	if (ze_pend_tail)
		ze_pend_tail->next = p;
	else
		ze_pend_head = p;
	ze_pend_tail = p;
}

static void ze_gate__put(struct ze_gate *g)
{
	if (!g || --g->refs)
		return;
	/* Reused only once signaled: the barrier (and the query before it) are done with
	 * them. Else both stay the device's. */
	if (!atomic_load(&ze_closed) && g->ctx &&
	    ZE_REAL(zeEventQueryStatus)(g->event) == ZE_RESULT_SUCCESS) {
		ze_ctx__put(g->ctx, g->event);
		if (g->times)
			ZE_REAL(zeMemFree)(g->ctx->handle, g->times);
	}
	free(g);
}

/* Pendings of runs with a fence that overlapped another run of their list, not yet
 * read: while there are any, a fence's success walks the pendings
 * (ze_track__fence_synced); otherwise it takes no lock. */
static _Atomic unsigned ze_fenced_pend;

static void ze_pend__free(struct ze_pending *p)
{
	ze_gate__put(p->gate);
	p->gate = NULL;
	if (p->prev)
		p->prev->next = p->next;
	else
		ze_pend_head = p->next;
	if (p->next)
		p->next->prev = p->prev;
	else
		ze_pend_tail = p->prev;
	if (gt_unlikely(p->overlapped)) {
		if (p->queue)
			p->queue->overlapped_pend--;
		if (p->fence_h)
			atomic_fetch_sub(&ze_fenced_pend, 1);
	}
	if (p->list) {
		p->list->npend--;
		if (p->cmd < p->list->ncmds && p->list->cmds[p->cmd].pend == p)
			p->list->cmds[p->cmd].pend = NULL;
	}
	ze_pend__count(-1);
	p->next = ze_pend_spare;
	ze_pend_spare = p;
}

/* Work of a call left out of the trace (it returned after the process began to end)
 * is left out with it, here where its call's end is known. The writer can do so only
 * if it read that call's span, and the exit's last read takes the rings one by one
 * while the program's threads run on: a thread that read another's work after the
 * drain had passed the launching thread's ring put it in a ring read later, so the
 * work came without its call (hundreds of kernels, 1 exit in 4 under load). */
static bool ze_pend__call_in_trace(const struct ze_pending *p)
{
	return ze_call__in_trace(p->span_end, p->span_tid);
}

static void ze_pend__drop(struct ze_pending *p, uint32_t reason)
{
	/* (of a call left out of the trace: not in it either, as its read would not be) */
	if (ze_pend__call_in_trace(p))
		gt_lost_add(reason, 1);
	/* An event of ours that may still be signaled is not reused. */
	ze_pend__free(p);
}

/* A mark on the row at `at` (an instant), or a wait from `from` (a gpu_sync span);
 * clamped_ns: the command's own record, moved that much later (args.clamped_ns). */
static void ze_pend__emit_sync(const struct ze_pending *p, uint32_t name, uint64_t from,
			       uint64_t at, uint64_t clamped_ns)
{
	if (!ze_pend__call_in_trace(p))
		return;
	struct gt_arg args[3];
	unsigned n = 0;
	struct gt_event ev = {
		.start_ns = from,
		.end_ns = at,
		.corr = p->corr,
		.name = name,
		.cat = ze_str.gpu_sync,
		.track = p->track,
		.type = from == at ? GT_EV_INSTANT : GT_EV_DEVICE_SPAN,
		/* in turn with the row's work; the command's own span carries the arrows */
		.flags = from == at ? GT_EVF_DEVICE : GT_EVF_NOFLOW,
	};

	if (p->w.waits) {
		args[n++] = (struct gt_arg){ .key = ze_str.event, .type = GT_ARG_STR,
					     .v.u = p->w.wait_event };
		args[n++] = (struct gt_arg){ .key = ze_str.waits, .type = GT_ARG_U64,
					     .v.u = p->w.waits };
	}
	if (clamped_ns) /* counted where drawn: the trailer's count is the records marked */
		args[n++] = gt_clamped_arg(clamped_ns);
	gt_emit(&ev, args, n);
}

/* The command's device record: from the row's free time (idle) to its start and end;
 * measured: a kernel with metric queries (its metrics become args). */
static inline __attribute__((always_inline)) void
ze_pend__emit_as(struct ze_pending *p, uint64_t idle, uint64_t start, uint64_t end,
		 uint64_t tick_ns, bool measured)
{
	struct gt_arg args[GT_ARGS_MAX];
	unsigned n = 0, kind;
	uint32_t cat;

	if (!p->w.kind)
		return;
	if (p->w.kind >= ZE_CMD_MARKS) {
		if (!ze__want(GT_KIND(SYNC)))
			return;
		switch (p->w.kind) {
		case ZE_CMD_WAIT:
			/* Its events were signaled at `end`: waiting since the row was free. */
			ze_pend__emit_sync(p, p->w.name, idle < end ? idle : end, end, p->clamped_ns);
			return;
		case ZE_CMD_BARRIER:
			if (p->w.waits && start > idle + tick_ns)
				ze_pend__emit_sync(p, p->w.wait_name, idle, start, 0);
			break;
		default:
			break;
		}
		ze_pend__emit_sync(p, p->w.name, end, end, p->clamped_ns);
		return;
	}
	if (p->w.waits && start > idle + tick_ns && ze__want(GT_KIND(SYNC)))
		ze_pend__emit_sync(p, p->w.wait_name, idle, start, 0);
	switch (p->w.kind) {
	case ZE_CMD_KERNEL:
		kind = GT_KIND(KERNEL);
		cat = GT_S_CAT_KERNEL;
		/* an indirect launch's counts, in device memory, were not known */
		for (int i = 0; i < 3 && !p->w.indirect; i++) {
			args[n++] = (struct gt_arg){ .key = ze_str.groups[i], .type = GT_ARG_U64,
						     .v.u = p->w.groups[i] };
		}
		for (int i = 0; i < 3; i++) {
			args[n++] = (struct gt_arg){ .key = ze_str.size[i], .type = GT_ARG_U64,
						     .v.u = p->w.size[i] };
		}
		if (measured) {
			n += ze_metrics__kernel_args(ze_work_mq(&p->w), args + n, GT_ARGS_MAX - n);
			/* an immediate list's command is read once: its queries are free now */
			if (p->imm)
				ze_metrics__kernel_release(ze_work_mq(&p->w));
		}
		break;
	case ZE_CMD_COPY:
		kind = GT_KIND(MEMCPY);
		cat = GT_S_CAT_GPU_MEMCPY;
		args[n++] = (struct gt_arg){ .key = ze_str.kind, .type = GT_ARG_STR,
					     .v.u = p->w.copy_kind };
		args[n++] = (struct gt_arg){ .key = GT_S_ARG_BYTES, .type = GT_ARG_U64,
					     .v.u = p->w.bytes };
		break;
	default:
		kind = GT_KIND(MEMSET);
		cat = GT_S_CAT_GPU_MEMSET;
		args[n++] = (struct gt_arg){ .key = GT_S_ARG_BYTES, .type = GT_ARG_U64,
					     .v.u = p->w.bytes };
		break;
	}
	if (!ze__want(kind))
		return;
	if (gt_unlikely(p->clamped_ns) && n < GT_ARGS_MAX)
		args[n++] = gt_clamped_arg(p->clamped_ns);
	struct gt_event ev = {
		.start_ns = start,
		.end_ns = end,
		.corr = p->corr,
		.corr2 = p->corr2,
		.name = p->w.name,
		.cat = cat,
		.track = p->track,
		.type = GT_EV_DEVICE_SPAN,
		.flags = p->executed ? GT_EVF_EXECUTED : 0,
	};
	gt_emit(&ev, args, n);
}

/* Out of line: the common record keeps its registers (a call in the middle of it
 * cost the plain path two saved registers, four instructions, with metrics off). */
static __attribute__((noinline, cold)) void
ze_pend__emit_measured(struct ze_pending *p, uint64_t idle, uint64_t start, uint64_t end,
		       uint64_t tick_ns)
{
	ze_pend__emit_as(p, idle, start, end, tick_ns, true);
}

static void ze_pend__emit(struct ze_pending *p, uint64_t idle, uint64_t start, uint64_t end,
			  uint64_t tick_ns)
{
	if (!ze_pend__call_in_trace(p))
		return;
	if (gt_metrics_on(ze_work_mq(&p->w) != NULL))
		ze_pend__emit_measured(p, idle, start, end, tick_ns);
	else
		ze_pend__emit_as(p, idle, start, end, tick_ns, false);
}

static void ze_list__park(struct ze_list *L, ze_event_handle_t ev, uint64_t seq)
{
	if (L->nparked == L->cap_parked) {
		size_t cap = L->cap_parked ? 2 * L->cap_parked : 8;
		struct ze_parked *pk = realloc(L->parked, cap * sizeof(*pk));

		if (!pk)
			return; /* not reused: one event fewer */
		L->parked = pk;
		L->cap_parked = cap;
	}
	L->parked[L->nparked++] = (struct ze_parked){ .event = ev, .seq = seq };
}

/* Work up to seq is done on the list: so are the barriers waiting on parked events. */
static void ze_list__unpark(struct ze_list *L, uint64_t seq, bool all)
{
	size_t keep = 0;

	for (size_t i = 0; i < L->nparked; i++) {
		if (all || L->parked[i].seq < seq)
			ze_ctx__put(L->ctx, L->parked[i].event);
		else
			L->parked[keep++] = L->parked[i];
	}
	L->nparked = keep;
}

/*
 * Our event, read (an immediate list's, or a reset regular list's, which has no
 * chain). Without a chain nothing else uses it.
 * With one, the barrier after the command may not have seen it signaled yet:
 * a reset now would hang the program's event. It waits until the program's
 * event is signaled or later work on the same (in-order) list is done.
 */
static inline __attribute__((always_inline)) void ze_pend__recycle(struct ze_pending *p)
{
	struct ze_list *L = p->imm;

	if (!p->chain_gone &&
	    (!p->chain || ZE_REAL(zeEventQueryStatus)(p->chain) == ZE_RESULT_SUCCESS))
		ze_ctx__put(p->ctx, p->event);
	else if (L)
		ze_list__park(L, p->event, p->seq);
}

static uint64_t ze__ticks_ns(const struct ze_dev *d, uint64_t ticks)
{
	return (uint64_t)((double)ticks * d->ns_per_tick + 0.5);
}

/* An offset before the chain's base too; rounded the same way either side of it, so
 * equal offsets stay equal times and later ones never earlier. */
static int64_t ze__ticks_ns_signed(const struct ze_dev *d, int64_t ticks)
{
	return ticks < 0 ? -(int64_t)ze__ticks_ns(d, (uint64_t)-ticks)
			 : (int64_t)ze__ticks_ns(d, (uint64_t)ticks);
}

/* The ticks from raw timestamp `from` to `to` in *gap: true where `to` is not before
 * `from` (within half a wrap of the counter after it). */
static inline bool ze__ticks_from(const struct ze_dev *d, uint64_t from, uint64_t to,
				  uint64_t *gap)
{
	*gap = (to - from) & d->mask;
	return *gap <= d->mask / 2;
}

/* Is a gap drawn (host ns, maybe negative) the gap in ticks, within a quarter wrap? */
static bool ze__near(const struct ze_dev *d, uint64_t drawn_ns, uint64_t ticks)
{
	int64_t off = (int64_t)(drawn_ns - ze__ticks_ns(d, ticks));

	return (uint64_t)(off < 0 ? -off : off) <= d->same_wrap_ns;
}

/* A command drawn on the row: it extends the latest stretch where it follows it in the
 * same call, else begins one, in place of the oldest. */
static void ze_anchor__drawn(struct ze_anchor *a, const struct ze_dev *d, uint64_t corr,
			     uint64_t s, uint64_t e, uint64_t start, uint64_t end)
{
	struct ze_drawn *w = &a->drawn[a->drawn_last];
	uint64_t gap;

	if (w->end_host && w->corr == corr && ze__ticks_from(d, w->end_raw, s, &gap) &&
	    start >= w->end_host) {
		w->end_raw = e;
		w->end_host = end;
		return;
	}
	a->drawn_last = (a->drawn_last + 1) % ZE_ROW_DRAWN;
	a->drawn[a->drawn_last] = (struct ze_drawn){ .corr = corr, .start_raw = s, .end_raw = e,
						     .start_host = start, .end_host = end };
}

/* How early a pair of error pair_err (the length of the call that read it) may draw work:
 * the clocks' error and the pair's, within a quarter wrap (past which no wrap can be
 * told). */
static inline uint64_t ze_dev__early_slack(const struct ze_dev *d, uint64_t pair_err)
{
	uint64_t slack = d->early_slack_ns + pair_err;

	return slack < d->same_wrap_ns ? slack : d->same_wrap_ns;
}

/*
 * Did p start after the row's last command started (which began at a_start, host ns),
 * by the ticks and, within a quarter wrap, by its own pair (fresh_start)? Then it did
 * not run before it, and ze_pend__place_earlier would find so after its loop (its
 * `after` needs drawn work that started after p ended, and none started after the row's
 * last command; its own placement then lands a wrap early). Asked first: the common
 * case of launches back to back on an immediate list, each ended by its pair within the
 * clocks' slack of the one before and read after it. Callgrind, bench_ze immediate
 * launches: the library's instructions 1648 -> 1324 a launch. Checked: in the Level
 * Zero tests' 86,529 reads that got this far, never true where the loop placed p.
 */
static inline bool ze_pend__after_row_start(const struct ze_dev *d, const struct ze_anchor *a,
					    uint64_t s, uint64_t e, uint64_t fresh_start,
					    uint64_t a_start)
{
	uint64_t from_start, to_end;

	return ze__ticks_from(d, a->start_raw, s, &from_start) && from_start &&
	       ze__ticks_from(d, a->start_raw, e, &to_end) &&
	       ze__near(d, fresh_start - a_start, from_start);
}

/*
 * p ran before the row's last command but is read after it: two threads' runs on one
 * queue, read in the order their calls returned, not the order the queue took them (or
 * a list's end read one ahead of the other). Converted on that command's chain, back from
 * it by the ticks between them, it ends where the device says, never inside it (its own
 * pair would place it by the pairs' difference, an overlap or a gap). False where that
 * disagrees with its own pair's placement (fresh_start) by more than a quarter wrap: the
 * two ran more than a wrap apart, and the ticks cannot say how far. The chain stays with
 * the later command.
 *
 * That command's pair may have erred early (a driver preempted between its two reads, by
 * less than ZE_PAIR_TIGHT_NS), and it is drawn already: p then lands before its own call.
 * It moves to the call whole, and the commands placed back after it move as far as they
 * must to start after it (a run's back-to-back kernels all do; its gaps absorb the move);
 * one that would then reach the command drawn next ends short of it, shorter, leaving room
 * for those still to come (ZE_PILE_NS each). (Each clipped to its call instead, a run of
 * short kernels became a pile of empty spans.)
 *
 * Work drawn lately on other chains, whose pairs may disagree with this one's by their
 * error (15 us in the simulator's split reads), is held to the same: p is placed back from
 * the nearest work the ticks say ran after it, and starts after what ran before it.
 * (Placed back from the chain alone, a run overlapped another chain's run by the pairs'
 * difference: the run before the chain, or one placed back from an earlier chain.)
 */
/* Room (ns) kept before a command drawn already for each one placed back before it: a
 * slice of 3 ns or more has its arrow end 1 ns in (writer/place.c), off both its ends. */
#define ZE_PILE_NS 3
#define ZE_PILE_MAX 1024

/* How many reads after p wait on its row from p's call, or from calls made before p's or
 * the row's last command's: those that may be placed back after p (at most ZE_PILE_MAX;
 * lock held). (A call may begin after the last command's and reach the device first.) */
static uint64_t ze_pend__followers(const struct ze_pending *p, const struct ze_anchor *a)
{
	uint64_t n = 0;

	for (const struct ze_pending *q = p->next; q && n < ZE_PILE_MAX; q = q->next)
		n += q->anchor == a && (q->at <= p->at || q->at < a->last_at);
	return n;
}

static bool ze_pend__place_earlier(struct ze_pending *p, struct ze_anchor *a, uint64_t s,
				   uint64_t e, uint64_t ticks, uint64_t fresh_start,
				   uint64_t *start, uint64_t *end)
{
	const struct ze_dev *d = p->dev;
	int64_t end_off = (int64_t)a->start_off - (int64_t)((a->start_raw - e) & d->mask);
	int64_t start_off = end_off - (int64_t)ticks;
	uint64_t floor, later, ceiling = UINT64_MAX, after_ticks = (a->start_raw - e) & d->mask;
	uint64_t before_end = 0, dist;
	const struct ze_drawn *after = NULL;

	if (end_off > (int64_t)a->start_off) /* 64-bit ticks: after it, by the ticks */
		return false;
	for (unsigned i = 0; i < ZE_ROW_DRAWN; i++) {
		const struct ze_drawn *w = &a->drawn[i];

		/* The masked ticks say which ran first where p's own pair draws the gap within a
		 * quarter wrap of them (else the two ran a wrap further apart). */
		if (!w->end_host)
			continue;
		if (ze__ticks_from(d, w->end_raw, s, &dist) &&
		    ze__near(d, fresh_start - w->end_host, dist)) {
			if (w->end_host > before_end)
				before_end = w->end_host;
		} else if (ze__ticks_from(d, e, w->start_raw, &dist) && dist < after_ticks &&
			   ze__near(d, w->start_host - fresh_start - ze__ticks_ns(d, ticks), dist)) {
			after = w;
			after_ticks = dist;
		}
	}
	if (after) {
		*start = after->start_host - ze__ticks_ns(d, (after->start_raw - s) & d->mask);
		*end = after->start_host - ze__ticks_ns(d, after_ticks);
		ceiling = after->start_host;
	} else {
		*start = a->base_host + (uint64_t)ze__ticks_ns_signed(d, start_off);
		*end = a->base_host + (uint64_t)ze__ticks_ns_signed(d, end_off);
	}
	if (*start + d->same_wrap_ns < fresh_start || *start > fresh_start + d->same_wrap_ns)
		return false;
	floor = p->at > before_end ? p->at : before_end;
	if (a->back_end_host && ze__ticks_from(d, a->back_end_raw, s, &dist) &&
	    a->back_end_host > floor)
		floor = a->back_end_host; /* after the last one placed back */
	if (gt_unlikely(*start < floor)) {
		uint64_t room;

		p->clamped_ns = floor - *start;
		*start += p->clamped_ns;
		*end += p->clamped_ns;
		/* The next command drawn: the chain's first, if p ended before it began. It
		 * ends a nanosecond short of it: viewers bind an arrow end to either of two
		 * slices that touch, and this one is written after it (writer/place.c). */
		later = ze__ticks_from(d, e, a->first_start_raw, &dist)
				? a->first_start_host
				: a->base_host + ze__ticks_ns(d, a->start_off);
		if (later < ceiling)
			ceiling = later;
		/* The commands still to read that may be placed back after it, moved as far,
		 * get ZE_PILE_NS each before that one: where the move leaves no room (the
		 * chain's pair erred by more than the run's gaps), each is cut short there in
		 * turn, but to a slice of its own. (Cut to this one's end, the second found
		 * its start on the first's end and the writer moved it 1 ns, onto the start
		 * of the command drawn next: an arrow ending inside both, a CI failure.) */
		room = ZE_PILE_NS * ze_pend__followers(p, a);
		ceiling = ceiling > room + 1 ? ceiling - room : 1;
	}
	if (gt_unlikely(*end >= ceiling)) {
		if (ceiling - 1 > *start) {
			*end = ceiling - 1;
		} else {
			/* No room after its call: an instant where its turn is, however early
			 * (not inside the command drawn next); moved only if that is later. */
			uint64_t was = *start - p->clamped_ns;

			*start = *end = ceiling - 1;
			p->clamped_ns = *start > was ? *start - was : 0;
		}
	}
	a->back_end_raw = e;
	a->back_end_host = *end;
	return true;
}

/* A command read now ended by now: true if end is no later (within the clocks' slack).
 * The clock is read again only for an end later than the last reading (lock held). */
static bool ze__ended_by_now_within(uint64_t end, uint64_t slack)
{
	static uint64_t seen;

	if (end <= seen + slack)
		return true;
	seen = gt_clock_ns();
	return end <= seen + slack;
}

static bool ze__ended_by_now(const struct ze_dev *d, uint64_t end)
{
	return ze__ended_by_now_within(end, d->early_slack_ns);
}

/*
 * s (a start in ticks) as ticks after p's own pair. Work never starts before its call. One
 * that seems to, by more than the clocks' error, started a wrap later in ticks: the call
 * stalled inside the driver (a preempted thread) between the pair and the submission, and
 * the pair, up to pair_reuse_ns older than the call, is now more than a wrap behind. (A
 * stall of a whole wrap stays ambiguous.) The clocks' error includes the pair's own (the
 * call that read it, reused for later appends): a driver whose every call took 200 us
 * read pairs that draw work up to 200 us early, and its kernels were taken a wrap late.
 */
static uint64_t ze_pend__own_off(const struct ze_pending *p, uint64_t s)
{
	const struct ze_dev *d = p->dev;
	uint64_t off = (s - p->ref_ticks) & d->mask;
	uint64_t slack = ze_dev__early_slack(d, p->ref_err);

	for (int wraps = 0; wraps < 4 && d->mask != ~0ull &&
			    p->ref_host + ze__ticks_ns(d, off) + slack < p->at;
	     wraps++)
		off += d->mask + 1;
	return off;
}

/* A device clock's drift against the host's, allowed as a share of the time from a
 * run's pair (1/4096: 244 ppm; a run queued behind 10 ms of work: 2.4 us more). */
#define ZE_DRIFT_DIV 4096

/* An overlapped run's command drawn to end at `end`: after its own run can have ended
 * (its bound: the earliest synchronize known to end after it, else now)? */
static bool ze_pend__past_bound(const struct ze_pending *p, uint64_t end)
{
	uint64_t slack = p->dev->overlap_slack_ns +
			 (end > p->ref_host ? (end - p->ref_host) / ZE_DRIFT_DIV : 0);

	return !ze__ended_by_now_within(end, slack) ||
	       (p->sync_bound && end > p->sync_bound + slack);
}

/*
 * p's run overlapped an earlier run of its list (ze_exec): are the times read that run's?
 * Our reset of the list's events, at p's call, came before that run signaled them (or
 * the two calls' resets and submissions interleaved), so the event can show its times,
 * which began before p's own pair: measured from that pair, they were drawn a whole wrap
 * late, outside p's call and its synchronize (a 32-bit counter: 223 s late). Or a later
 * run's, on another engine, that ended after p's own run. They are another run's if they
 * start before p's call (by more than the clocks' error, less than a quarter wrap: one of
 * p's own runs that waited in its queue for the rest of a wrap is taken for one), or if
 * they end after now or after p's own bound (sync_bound). The error allowed is the tight
 * one (overlap_slack_ns): a later run's command may end a few microseconds after p's
 * synchronize, well inside the clocks' usual slack (a CI failure, two queues).
 */
static bool ze_pend__other_run(const struct ze_pending *p, uint64_t s, uint64_t ticks)
{
	const struct ze_dev *d = p->dev;
	uint64_t back = ze__ticks_ns(d, (p->ref_ticks - s) & d->mask);
	uint64_t end = p->ref_host + ze__ticks_ns(d, ((s - p->ref_ticks) & d->mask) + ticks);

	if (back > d->overlap_slack_ns + p->ref_err && back <= d->same_wrap_ns)
		return true;
	return ze_pend__past_bound(p, end);
}

/* The event signaled, its timestamps in ts: emit the device span. Inlined into each
 * copy of the collect loop, as it was into the one loop before kernel mode had its own. */
static inline __attribute__((always_inline)) void ze_pend__read(struct ze_pending *p,
								ze_kernel_timestamp_result_t ts)
{
	const struct ze_dev *d = p->dev;
	struct ze_anchor *a = p->anchor, fresh, row_before;
	uint64_t s, e, ticks, off, dist, half = d->mask / 2, start, end, submitted, idle;
	bool chained = false, chain_begins = false, wary;

	s = ts.global.kernelStart;
	e = ts.global.kernelEnd;
	ticks = (e - s) & d->mask; /* its length (masked: a counter that wrapped during it) */
	p->clamped_ns = 0;
	/* (not from a run's own copy, nor host times: those are its run's) */
	wary = gt_unlikely(p->overlapped) && !p->run_copy && !p->host_domain;
	if (gt_unlikely(wary)) {
		if (ze_pend__other_run(p, s, ticks)) {
			ze_pend__drop(p, ze_str.lost_overwritten);
			return;
		}
		/* The row's chain may yet move it past its bound (below): then it was not
		 * drawn, and the row is as it was. */
		if (a)
			row_before = *a;
	}
	if (p->host_domain) {
		/* Host time already (host timestamps: counter-based, or a mapped pool's); the row's
		 * chain of ticks is left as it was. */
		ze_pend__emit(p, p->at < s ? p->at : s, s, e > s ? e : s,
			      (uint64_t)d->ns_per_tick + 1);
		goto done;
	}
	if (!a) {
		memset(&fresh, 0, sizeof(fresh));
		a = &fresh;
	}
	/* When the row became free for it: submitted (the call had returned: a command
	 * that started later was held), and the one before it done. */
	submitted = p->submitted ? p->submitted : p->at;
	idle = a->valid && a->end_host > submitted ? a->end_host : submitted;
	/* Masked differences handle a counter that wrapped in between (or during). */
	if (a->valid && p->at < a->end_host) {
		if ((dist = (s - a->end_raw) & d->mask) < half) {
			off = a->end_off + dist;
			chained = true;
		} else if ((dist = (s - a->start_raw) & d->mask) < half) {
			off = a->start_off + dist; /* overlaps the last one: not in order */
			chained = true;
		}
		if (chained) {
			uint64_t chained_end = a->base_host + ze__ticks_ns(d, off + ticks);

			/* Ending after it was seen done, it is not after the row's last command
			 * but more than half a wrap before it (an earlier run, read late). The
			 * same against a tighter bound where there is one: a synchronize of its
			 * queue that began after its run's call returned, and returned itself
			 * before this read (a read long after both says little). */
			if (!ze__ended_by_now(d, chained_end) ||
			    (p->queue && p->returned <= p->queue->sync_begin &&
			     chained_end > p->queue->sync_end + d->early_slack_ns))
				chained = false;
		}
		/* Submitted before the row's last command (another thread's run, whose call
		 * returned first) and read late, it may have run more than half a wrap before
		 * it: then the masked ticks put it a wrap late, and the read came too late for
		 * the test above to tell (a CI failure under TSan, 16 bits). Chained only where
		 * its own pair places it in the same wrap; else it is placed back from that
		 * command below, or by its own pair. */
		if (chained && p->at < a->last_at) {
			uint64_t own = p->ref_host + ze__ticks_ns(d, ze_pend__own_off(p, s));
			uint64_t by_chain = a->base_host + ze__ticks_ns(d, off);

			if (by_chain > own + d->same_wrap_ns || by_chain + d->same_wrap_ns < own)
				chained = false;
		}
	}
	if (!chained) {
		uint64_t base = p->ref_host, a_start;

		off = ze_pend__own_off(p, s);
		/* Ended before the row's last command started, by its own pair (within
		 * the clocks' error and the error of the pair that command was drawn by:
		 * a kept pair whose call was slow, 53 us under TSan on a loaded machine,
		 * drew it that much early, and this run's last kernel, not placed back,
		 * overlapped it): an earlier run read late. */
		if (a->valid &&
		    base + ze__ticks_ns(d, off + ticks) <=
			    (a_start = a->base_host + ze__ticks_ns(d, a->start_off)) +
				    ze_dev__early_slack(d, a->base_err) &&
		    !ze_pend__after_row_start(d, a, s, e, base + ze__ticks_ns(d, off), a_start) &&
		    ze_pend__place_earlier(p, a, s, e, ticks, base + ze__ticks_ns(d, off), &start,
					   &end)) {
			idle = submitted; /* the row's last command came after it */
			goto emit;
		}
		/* A fresh clock pair can disagree with the row's last one by its own
		 * error (a pair read under load, the device's drift): where the ticks
		 * say this command started after the row's last one ended, it starts
		 * no earlier in host time either (else the two overlap on the row). */
		if (a->valid && ((s - a->end_raw) & d->mask) < half) {
			uint64_t off_ns = ze__ticks_ns(d, off);

			/* (Not by more than a quarter wrap for one submitted before that
			 * command: a clock pair errs by microseconds, and the masked ticks
			 * cannot tell which of the two ran first.) */
			if (base + off_ns < a->end_host &&
			    !(p->at < a->last_at && base + off_ns + d->same_wrap_ns < a->end_host))
				base = a->end_host - off_ns;
		}
		a->base_host = base;
		a->base_ticks = p->ref_ticks;
		a->first_start_raw = s;
		a->base_err = p->ref_err;
		chain_begins = true;
	}
	a->valid = true;
	a->back_end_host = 0;
	a->last_at = p->at;
	a->start_off = off;
	a->end_off = off + ticks;
	a->start_raw = s;
	a->end_raw = e;
	start = a->base_host + ze__ticks_ns(d, a->start_off);
	if (gt_unlikely(start < p->at)) {
		/* Before the call that submitted it began: the pair erred by a tick's
		 * rounding and the clocks' own error. The chain moves to the call, as
		 * CUDA's spans do (counted where drawn, args.clamped_ns). */
		p->clamped_ns = p->at - start;
		a->base_host += p->clamped_ns;
		start = p->at;
	}
	end = a->base_host + ze__ticks_ns(d, a->end_off);
	a->end_host = end;
	if (chain_begins)
		a->first_start_host = start;
emit:
	if (gt_unlikely(wary) && ze_pend__past_bound(p, end)) {
		if (p->anchor)
			*p->anchor = row_before;
		ze_pend__drop(p, ze_str.lost_overwritten);
		return;
	}
	ze_anchor__drawn(a, d, p->corr, s, e, start, end);
	ze_pend__emit(p, idle, start, end, (uint64_t)d->ns_per_tick + 1);
	if (p->fence && ze__want(GT_KIND(SYNC)))
		ze_pend__emit_sync(&(struct ze_pending){ .track = p->track, .corr = p->corr },
				   ze_str.fence, end, end, 0);
done:
	if (!ze_tls_behind)
		ze_prog_reads++;
	if (p->recycle)
		ze_pend__recycle(p);
	if (p->imm && p->imm->nparked) /* (a call per read for nothing, else) */
		ze_list__unpark(p->imm, p->seq, false);
	ze_pend__free(p);
}

/* Has p's command finished? Its times in *ts when it has. */
static inline __attribute__((always_inline)) ze_result_t
ze_pend__query(const struct ze_pending *p, ze_kernel_timestamp_result_t *ts)
{
	ze_result_t st = p->gate ? ZE_REAL(zeEventQueryStatus)(p->gate->event)
				 : ZE_RESULT_SUCCESS;

	if (st != ZE_RESULT_SUCCESS)
		return st;
	if (p->slot && !p->run_copy)
		/* Our event signals once the query wrote the slot. */
		st = ZE_REAL(zeEventQueryStatus)(p->event);
	else if (!p->slot)
		/* One call, not two: NOT_READY until the event is signaled. */
		return ZE_REAL(zeEventQueryKernelTimestamp)(p->event, ts);
	/* (A run's copy is done with its gate; its event may be a later run's now.) */
	if (st == ZE_RESULT_SUCCESS)
		/* Written by the device before our event (or gate) signaled. */
		*ts = *(volatile ze_kernel_timestamp_result_t *)p->slot;
	return st;
}

/*
 * The program's word that p's work is done or over (its list reset or run again, its
 * event or context going): read it if it finished, whatever waits before it on its row
 * (row_order below), else count it lost for reason.
 */
static bool ze_pend__settle(struct ze_pending *p, uint32_t reason)
{
	ze_kernel_timestamp_result_t ts;

	if (!atomic_load(&ze_closed) && ze_pend__query(p, &ts) == ZE_RESULT_SUCCESS) {
		ze_pend__read(p, ts);
		return true;
	}
	ze_pend__drop(p, reason);
	return false;
}

/* A run whose event an earlier run of its list in the same call signaled already: read
 * only once a synchronize of its queue began after its call returned (or the program
 * reran, reset or destroyed its list, or destroyed the queue: the run is over). Read
 * before, it could show the earlier run's times, or a mix of both runs' on a device
 * that writes the start and the end apart. */
static inline bool ze_pend__held(const struct ze_pending *p)
{
	return p->held && p->queue && p->returned > p->queue->sync_begin;
}

/* patient: a kernel whose metrics are not in yet waits for them (in order, with
 * everything after it) until a later collect; otherwise it is read now, its metrics
 * waited for a moment (ze_metrics__kernel_args).
 * row_order: a row's commands are read in order. The device may finish one between
 * the queries of two (those after it seen done, it not yet): read first, a later
 * command would set the row's chain ahead of the earlier one's times (an overlap on
 * the row, or a wait drawn as an instant at its end). A command held back so is read
 * at a later collect, or when the program says it is done (ze_pend__settle). The last
 * collect reads whatever is done: one that never ends holds nothing back there. */
static inline __attribute__((always_inline)) void ze__collect_mode_locked(bool patient,
									  bool row_order,
									  unsigned *budget)
{
	static uint64_t pass;
	struct ze_pending *p, *next;

	if (atomic_load(&ze_closed))
		return;
	pass++;
	for (p = ze_pend_head; p; p = next) {
		ze_kernel_timestamp_result_t ts;
		ze_result_t st;

		next = p->next;
		if (row_order && p->anchor && p->anchor->blocked_pass == pass)
			continue;
		/* (the last collect reads whatever is done) */
		if (gt_unlikely(p->held) && row_order && ze_pend__held(p)) {
			if (p->anchor)
				p->anchor->blocked_pass = pass;
			continue;
		}
		st = ze_pend__query(p, &ts);
		if (st == ZE_RESULT_SUCCESS) {
			if (patient && ze_work_mq(&p->w) != NULL &&
			    !ze_metrics__kernel_ready(ze_work_mq(&p->w)))
				break;
			ze_pend__read(p, ts);
			if (budget && !--*budget)
				break;
		} else if (st == ZE_RESULT_NOT_READY) {
			if (row_order && p->anchor)
				p->anchor->blocked_pass = pass;
		} else {
			ze_pend__drop(p, ze_str.lost_unread);
		}
	}
}

static void ze__collect_locked(void)
{
	ze__collect_mode_locked(false, true, NULL);
}

/* Kernel mode's copy of the loop: the one without metrics tests no query. */
static __attribute__((noinline)) void ze__collect_patient_locked(void)
{
	ze__collect_mode_locked(true, true, NULL);
}

/* The last collect: whatever is done, in any order. */
static __attribute__((noinline)) void ze__collect_last_locked(void)
{
	ze__collect_mode_locked(false, false, NULL);
}

static void ze__collect_done_locked(void)
{
	if (gt_metrics_on(ze_metrics_kernel_mode))
		ze__collect_patient_locked();
	else
		ze__collect_locked();
}

void ze_track__collect(void)
{
	pthread_mutex_lock(&ze_lock);
	ze__collect_done_locked();
	pthread_mutex_unlock(&ze_lock);
}

void ze_track__collect_drain(bool last)
{
	if (!gt_drain_lock(&ze_lock)) {
		unsigned n = atomic_load_explicit(&ze_pend_count, memory_order_relaxed);

		if (!last)
			return;
		if (n)
			gt_lost_add(ze_str.lost_unread, n);
		pr_warn("the device's last records were not read: a thread stopped by the signal "
			"holds the Level Zero backend's lock; %u commands counted lost (ze_unread)",
			n);
		return;
	}
	ze__collect_done_locked();
	pthread_mutex_unlock(&ze_lock);
}

/* Do the program's waits leave the reads to the drain thread? Not in kernel mode, where
 * a kernel's metrics come with its read. */
static inline bool ze__defers(void)
{
	return !gt_metrics_on(ze_metrics_kernel_mode);
}

/* The drain thread's collect: in rounds of ZE_BEHIND_ROUND reads, the lock let go in
 * between (a program's append waits for one round at most). */
static __attribute__((noinline)) bool ze__collect_round_locked(void)
{
	unsigned budget = ZE_BEHIND_ROUND;

	ze__collect_mode_locked(false, true, &budget);
	return !budget;
}

/*
 * At a cycle's start. Not in a cycle that follows a program's read: the spans that read
 * emitted may still be in its thread's ring, and ours, drained first (writer/drain.c),
 * would be written before them; a read made before the last cycle began was drained by
 * it.
 */
void ze_track__collect_behind(void)
{
	static uint64_t prog_reads_seen;
	bool more = true, program_read;

	if (!ze__defers() || !atomic_load_explicit(&ze_pend_count, memory_order_relaxed))
		return;
	if (!gt_drain_lock(&ze_lock))
		return;
	program_read = ze_prog_reads != prog_reads_seen;
	prog_reads_seen = ze_prog_reads;
	pthread_mutex_unlock(&ze_lock);
	if (program_read)
		return;
	ze_tls_behind = true;
	for (unsigned rounds = 0; more && rounds < ZE_CTX_EVENTS_MAX / ZE_BEHIND_ROUND; rounds++) {
		if (!atomic_load_explicit(&ze_pend_count, memory_order_relaxed) ||
		    !gt_drain_lock(&ze_lock))
			break;
		/* The program read between two rounds: into its ring, drained after
		 * ours, so what we read now, later work, would be written first (a
		 * wait that took the 1024 oldest: 16 runs drawn behind the next 14). */
		if (ze_prog_reads != prog_reads_seen) {
			pthread_mutex_unlock(&ze_lock);
			break;
		}
		more = ze__collect_round_locked();
		pthread_mutex_unlock(&ze_lock);
	}
	ze_tls_behind = false;
}

static void ze__find_low_ctx(const void *key, uintptr_t val, void *arg)
{
	struct ze_ctx *c = (struct ze_ctx *)val, **low = arg;

	(void)key;
	if (!*low && c->want_pool)
		*low = c;
}

/*
 * At a cycle's start, on the drain thread: a pool more for a context that ran low, made
 * without the lock. Made on the program's thread, with the lock held, 256 event creations
 * made one of its calls take milliseconds, and any other call that needed the lock wait.
 */
void ze_track__grow_ahead(void)
{
	struct ze_new_pool np;
	struct ze_ctx *c = NULL;
	int err;

	if (!atomic_load_explicit(&ze_pools_low, memory_order_relaxed) || !gt_drain_lock(&ze_lock))
		return;
	if (!atomic_load(&ze_closed))
		ze_map__each(&ze_ctxs, ze__find_low_ctx, &c);
	if (c)
		c->want_pool = false;
	else
		atomic_store_explicit(&ze_pools_low, false, memory_order_relaxed);
	ze_growing = c;
	pthread_mutex_unlock(&ze_lock);
	if (!c)
		return;
	err = ze_pool__make(c->handle, &np);
	if (!gt_drain_lock(&ze_lock)) {
		/* the process ends on a signal: the pool is not needed */
		if (!err)
			ze_pool__unmake(c->handle, &np);
		return;
	}
	ze_growing = NULL;
	/* (the program's thread may have grown it to its bound meanwhile) */
	if (!err && (!ze_ctx__room(c) || ze_ctx__add_pool_locked(c, &np)))
		ze_pool__unmake(c->handle, &np);
	pthread_cond_broadcast(&ze_grown);
	pthread_mutex_unlock(&ze_lock);
}

void ze_track__synced(void)
{
	unsigned n = atomic_load_explicit(&ze_pend_count, memory_order_relaxed);

	if (n && (!ze__defers() || n >= ZE_DEFER_MAX || (n >= ZE_DEFER_WAKE && !gt_wake_writer())))
		ze_track__collect();
}

/* The watchdog's question (backend.h pending): what is still running or
 * waiting, asked of the device; bounded: a lock held long answers nothing. */
void ze_track__pending(void (*fn)(void *arg, const struct gt_pending_work *w), void *arg)
{
	struct timespec until = gt_timespec_after_ms(CLOCK_REALTIME, 200);

	if (atomic_load(&ze_closed) || pthread_mutex_timedlock(&ze_lock, &until))
		return;
	for (struct ze_pending *p = ze_pend_head; p; p = p->next) {
		ze_event_handle_t ev = p->gate ? p->gate->event : p->event;
		struct gt_pending_work w = {
			.track = p->track, .name = p->w.name, .corr = p->corr,
			.submitted_ns = p->submitted ? p->submitted : p->at,
		};

		if (ev && ZE_REAL(zeEventQueryStatus)(ev) == ZE_RESULT_NOT_READY)
			fn(arg, &w);
	}
	pthread_mutex_unlock(&ze_lock);
}

GT_STARTUP_CODE void ze_track__final(void)
{
	/* no Level Zero call was ever tracked (the strings come first): nothing
	 * pending, and no lock to take at every exit */
	if (!atomic_load(&ze_str_ready) && !ze_pend_head) {
		atomic_store(&ze_closed, true);
		return;
	}
	pthread_mutex_lock(&ze_lock);
	while (ze_growing)
		pthread_cond_wait(&ze_grown, &ze_lock);
	ze__collect_last_locked();
	while (ze_pend_head)
		ze_pend__drop(ze_pend_head, ze_str.lost_unread);
	atomic_store(&ze_closed, true);
	pthread_mutex_unlock(&ze_lock);
}

/* ---- appends ---- */

/* The first of a command's wait events, named, and how many. */
static void ze__waits_locked(struct ze_append *a, uint32_t nwait, const ze_event_handle_t *waits)
{
	struct ze_event_info *info;

	if (!nwait || !waits || !ze__want(GT_KIND(SYNC)))
		return;
	info = ze_event__named(waits[0]);
	if (!info)
		return;
	a->waits = nwait;
	a->wait_name = info->wait_name;
	a->wait_event = info->name;
}

/*
 * The pair converting an immediate list's work submitted at a->at: the one its appends
 * took last while it is recent (the appending thread's own: read without the device's
 * seqlock), else the device's (ze_dev__pair). 0 or -EIO.
 */
static inline int ze_list__pair(struct ze_list *L, struct ze_append *a)
{
	if (gt_likely(L->pair_host &&
		      (int64_t)(a->at - L->pair_host) < (int64_t)L->dev->pair_reuse_ns)) {
		a->ref_host = L->pair_host;
		a->ref_ticks = L->pair_ticks;
		a->ref_err = L->pair_err;
		return 0;
	}
	if (ze_dev__pair(L->dev, a->at, &a->ref_host, &a->ref_ticks, &a->ref_err))
		return -EIO;
	L->pair_host = a->ref_host;
	L->pair_ticks = a->ref_ticks;
	L->pair_err = a->ref_err;
	return 0;
}

/*
 * The program reads its command's times from its own event: it keeps that event, and a
 * query of ours after the command copies them into our slot; ours (a->event, taken by
 * the caller) signals after the query. No slot: untimed, ours goes back.
 */
static void ze__query_after(struct ze_append *a, struct ze_list *L,
			    ze_event_handle_t program_event, const struct ze_event_info *info,
			    bool wait)
{
	a->slot = (ze_kernel_timestamp_result_t *)ze_map__get(&ze_slots, a->event);
	if (!a->slot) {
		ze_ctx__unused(L->ctx, a->event);
		a->event = NULL;
		a->own = false;
		return;
	}
	a->query = program_event;
	a->query_waits = wait;
	a->host_domain = info->flags & ZE_EV_HOST_DOMAIN;
}

ze_event_handle_t ze_track__append_begin(struct ze_append *a, uint64_t at,
					 ze_command_list_handle_t l, ze_event_handle_t program_event,
					 uint32_t nwait, const ze_event_handle_t *waits)
{
	struct ze_event_info *info;
	struct ze_list *L;

	/* The hot path of every launch: only the fields read whatever happens. */
	memset(a, 0, offsetof(struct ze_append, slot));
	a->at = at; /* (the call's start: no clock read of our own) */
	if (gt_unlikely(atomic_load_explicit(&ze_closed, memory_order_relaxed)))
		return program_event;
	if (gt_unlikely(!(L = ze_list__find(l)))) {
		/* Made before a fork (the child forgot its parent's lists: a driver makes the
		 * child start over), or never known: counted at the end, if it succeeds. */
		a->untracked = l != NULL && !ze__rowless(l);
		return program_event;
	}
	a->list = L;
	a->ctx = L->ctx ? L->ctx->handle : NULL;
	if (!L->ctx)
		return program_event;
	if (gt_likely(!program_event && !(nwait && ze__want(GT_KIND(SYNC))))) {
		/* The common launch: an event of the list's, nothing to chain, no lock. */
		a->event = ze_list__event(L);
		if (a->event && L->immediate && ze_list__pair(L, a)) {
			ze_list__unevent(L, a->event);
			a->event = NULL;
		}
		a->own = a->event != NULL;
		return a->event;
	}
	pthread_mutex_lock(&ze_lock);
	info = program_event ? ze_event__get(program_event) : NULL;
	if (gt_unlikely(L->mut_pending) && program_event &&
	    (L->mut_flags & ZE_MUTABLE_COMMAND_EXP_FLAG_SIGNAL_EVENT) &&
	    !(info && (info->flags & ZE_EV_TIMESTAMPED) && !(info->flags & ZE_EV_COUNTER_BASED)))
		/* Its signal event may be swapped later, which a chain or a query of ours
		 * after it would not follow: the driver gets the program's, untimed. */
		goto out;
	if (!program_event) {
		/* Ours, nothing to chain (with wait events to name). */
		a->event = ze_ctx__event(L->ctx);
		a->own = a->event != NULL;
	} else if (info && (info->flags & ZE_EV_COUNTER_BASED)) {
		/* Off an in-order list it goes to the driver untouched, which rejects it. */
		if (!L->in_order)
			goto out;
		a->event = ze_ctx__event(L->ctx);
		a->own = a->event != NULL;
		if (!a->own)
			goto out;
		if (info->flags & ZE_EV_KERNEL_TS)
			ze__query_after(a, L, program_event, info, false);
		else
			a->chain = program_event;
	} else if (info && (info->flags & ZE_EV_TIMESTAMPED)) {
		a->event = program_event;
		a->host_domain = info->flags & ZE_EV_HOST_DOMAIN; /* KERNEL_MAPPED_TIMESTAMP */
	} else if (info && (info->flags & ZE_EV_KERNEL_TS)) {
		/* Timestamps only the device may read (no HOST_VISIBLE): the program may
		 * query them there (zeCommandListAppendQueryKernelTimestamps), so its event
		 * stays on its command, where a barrier's signal would hand it the
		 * barrier's times. The query waits for it: a list may run out of order. */
		a->event = ze_ctx__event(L->ctx);
		a->own = a->event != NULL;
		if (a->own)
			ze__query_after(a, L, program_event, info, true);
	} else if (!info || (info->flags & ZE_EV_POOL_UNKNOWN)) {
		/* Passed on untouched, the command untimed (counted): an event not seen made
		 * (a fork child's of its parent's, or of its parent's pool) may have
		 * timestamps, which a barrier of ours signaling it would overwrite with its
		 * own (the program read kernels of 0 ticks). An invalid one the driver
		 * rejects as before. */
		goto out;
	} else {
		a->event = ze_ctx__event(L->ctx);
		a->own = a->event != NULL;
		if (a->own)
			a->chain = program_event;
	}
	if (!a->event)
		goto out;
	if (L->immediate && ze_list__pair(L, a)) {
		if (a->own)
			ze_ctx__unused(L->ctx, a->event);
		a->event = NULL;
		a->own = false;
		a->chain = NULL;
		a->query = NULL;
		goto out;
	}
	if (nwait)
		ze__waits_locked(a, nwait, waits);
out:
	pthread_mutex_unlock(&ze_lock);
	return a->own && !a->query ? a->event : program_event;
}

struct ze_dev *ze_track__list_kind(const struct ze_list *L, bool *immediate, bool *synchronous)
{
	*immediate = L->immediate;
	*synchronous = L->synchronous;
	return L->dev;
}

/* An older read of the same program event would take this command's times. read:
 * the event still holds them (it is not reused yet): read what finished first. */
static void ze__retire_event_locked(ze_event_handle_t ev, uint32_t reason, bool read)
{
	struct ze_pending *p, *next;

	for (p = ze_pend_head; p; p = next) {
		next = p->next;
		if (p->event != ev)
			continue;
		if (read)
			ze_pend__settle(p, reason);
		else
			ze_pend__drop(p, reason);
	}
}

/*
 * After the command that signals our event: a barrier that waits for it and
 * signals the program's event. 0, or -EIO when the barrier could not be
 * appended (then the program's event is signaled right away rather than never).
 */
static int ze__chain(ze_command_list_handle_t l, ze_event_handle_t ours, ze_event_handle_t theirs)
{
	static atomic_bool warned;

	if (ZE_REAL(zeCommandListAppendBarrier)(l, theirs, 1, &ours) == ZE_RESULT_SUCCESS)
		return 0;
	if (!atomic_exchange(&warned, true))
		pr_warn("ze: cannot chain a signal event after its command; signaling it at once");
	ZE_REAL(zeCommandListAppendSignalEvent)(l, theirs);
	return -EIO;
}

/* The command's description gets the wait events append_begin found. */
static void ze__work_waits(struct ze_work *to, const struct ze_append *a)
{
	/* (the description's own wait fields are 0) */
	if (a->waits) {
		to->waits = a->waits;
		to->wait_name = a->wait_name;
		to->wait_event = a->wait_event;
	}
}

/* After the program's command: the query that copies its own event's times, or
 * the barrier that signals its event after ours. When that fails, the command is untimed. */
static void ze__after_command(struct ze_append *a, struct ze_list *L)
{
	if (a->query &&
	    ZE_REAL(zeCommandListAppendQueryKernelTimestamps)(L->handle, 1, &a->query, a->slot,
							       NULL, a->event, a->query_waits,
							       a->query_waits ? &a->query : NULL) !=
		    ZE_RESULT_SUCCESS) {
		/* Never signaled: ours goes back. */
		ze_list__unevent(L, a->event);
		a->own = false;
		a->event = NULL;
	}
	if (a->chain && ze__chain(L->handle, a->event, a->chain)) {
		/* The program's event signals (early) but our times would be wrong. */
		a->own = false;
		a->event = NULL;
	}
}

/* A call's end takes the lock to record its work: false (not held) once the exit's
 * last read is over: the call ends after the trace's (its span, the wrapper's, comes
 * later still), its work is left out with it. */
static inline bool ze__lock_unless_closed(void)
{
	pthread_mutex_lock(&ze_lock);
	if (gt_unlikely(atomic_load(&ze_closed))) {
		pthread_mutex_unlock(&ze_lock);
		return false;
	}
	return true;
}

/* r: the command's result; call_r: the call's (a mark's barrier is ours) */
static void ze__append_end(struct ze_append *a, ze_result_t r, ze_result_t call_r,
			   const struct ze_work *w, struct ze_call *c)
{
	struct ze_list *L = a->list;
	struct ze_pending *p;
	struct ze_cmd *cmd;
	uint64_t corr = c->corr;

	if (!L) {
		if (gt_unlikely(a->untracked) && r == ZE_RESULT_SUCCESS && !ze__paused() &&
		    !atomic_load(&ze_closed))
			gt_lost_add(ze_str.lost_untracked, 1);
		return;
	}
	/* A command of ours after the program's (rare on the hot path: one test for both). */
	if (gt_unlikely((uintptr_t)a->query | (uintptr_t)a->chain) && r == ZE_RESULT_SUCCESS)
		ze__after_command(a, L);
	/* A mutable launch is recorded even so: a new signal event may make it timed. */
	if (!a->event && r == ZE_RESULT_SUCCESS &&
	    (L->immediate || !L->mut_pending || w->kind != ZE_CMD_KERNEL))
		goto untimed;
	if (r != ZE_RESULT_SUCCESS) {
		/* Never submitted: ours is still unsignaled. */
		if (a->own && a->event)
			ze_list__unevent(L, a->event);
		return;
	}
	if (L->immediate) {
		ze_call__span_ready(c);
		if (!ze__lock_unless_closed())
			return;
		/* its span's end: as its work is recorded */
		c->t1 = gt_clock_ns();
		if (!a->own) {
			ze__collect_locked();
			/* (appended again already: its times may be the new command's) */
			ze__retire_event_locked(a->event, ze_str.lost_overwritten, false);
		}
		p = ze_pend__new();
		if (!p) {
			pthread_mutex_unlock(&ze_lock);
			goto untimed;
		}
		memset(p, 0, sizeof(*p));
		p->w = *w;
		p->event = a->event;
		p->recycle = a->own;
		p->chain = a->chain;
		p->ctx = L->ctx;
		p->imm = L;
		p->seq = L->next_seq++;
		p->corr = corr;
		p->dev = L->dev;
		p->host_domain = a->host_domain;
		p->track = L->track;
		p->anchor = L->anchor;
		p->ref_host = a->ref_host;
		p->ref_ticks = a->ref_ticks;
		p->ref_err = a->ref_err;
		p->at = a->at;
		p->span_end = c->rec ? c->t1 : 0;
		p->span_tid = gt_gettid();
		if (gt_unlikely((uintptr_t)a->query | a->waits)) {
			ze__work_waits(&p->w, a);
			p->slot = a->query ? a->slot : NULL;
			if (a->waits)
				p->submitted = gt_clock_ns();
		}
		ze_pend__push(p);
		if (L->synchronous)
			ze__collect_locked();
		/* its span, in the same hold of the lock as its read (internal.h): after the
		 * reads above (a call that never returns from them has none) */
		ze_call__span_now(c, call_r);
		pthread_mutex_unlock(&ze_lock);
		return;
	}
	/* A regular list's commands are its own (no lock, see the top). */
	if (L->ncmds == L->cap) {
		size_t cap = L->cap ? 2 * L->cap : 16;
		struct ze_cmd *cmds = realloc(L->cmds, cap * sizeof(*cmds));

		if (!cmds)
			goto untimed;
		L->cmds = cmds;
		L->cap = cap;
	}
	cmd = &L->cmds[L->ncmds++];
	cmd->w = *w;
	ze__work_waits(&cmd->w, a);
	cmd->event = a->event;
	cmd->own = a->own;
	cmd->slot = a->query ? a->slot : NULL;
	/* (not a counter-based event: a later command of the run may signal it again) */
	cmd->src = a->query_waits ? a->query : NULL;
	cmd->host_domain = a->host_domain;
	cmd->append_corr = corr;
	cmd->pend = NULL;
	/* The id is the next kernel launch's (our barriers and marks take none). */
	cmd->mutable = L->mut_pending && w->kind == ZE_CMD_KERNEL;
	cmd->mut_id = cmd->mutable ? L->mut_id : 0;
	if (cmd->mutable)
		L->mut_pending = false;
	return;
untimed:
	if (L->immediate && !c->written) {
		/* counted with its span, as it would be read (not once the backend closed:
		 * the call ends after the trace's end) */
		ze_call__span_ready(c);
		pthread_mutex_lock(&ze_lock);
		if (!atomic_load(&ze_closed)) {
			ze_call__span_now(c, call_r);
			if (ze_call__in_trace(c->rec ? c->t1 : 0, gt_gettid()))
				gt_lost_add(ze_str.lost_no_event, 1);
		}
		pthread_mutex_unlock(&ze_lock);
	} else if (ze_call__in_trace(c->written && c->rec ? c->t1 : 0, gt_gettid())) {
		gt_lost_add(ze_str.lost_no_event, 1);
	}
	if (!L->immediate && w->kind == ZE_CMD_KERNEL && r == ZE_RESULT_SUCCESS)
		L->mut_pending = false;
}

void ze_track__append_end(struct ze_append *a, ze_result_t r, const struct ze_work *w,
			  struct ze_call *c)
{
	ze__append_end(a, r, r, w, c);
}

/*
 * Sync marks: a barrier of ours right before the command, with the same wait events,
 * its event read like any other: it passes when the row got there (and, for a wait,
 * when the events were signaled), which is when the command takes effect.
 */
void ze_track__mark_begin(struct ze_mark *m, uint64_t at, ze_command_list_handle_t l,
			  enum ze_cmd_kind kind, ze_event_handle_t ev, uint32_t nwait,
			  const ze_event_handle_t *waits)
{
	struct ze_event_info *info;

	memset(m, 0, sizeof(*m));
	if (!ze__want(GT_KIND(SYNC)) || !ze_track__append_begin(&m->a, at, l, NULL, nwait, waits)) {
		m->a.list = NULL;
		return;
	}
	m->w.kind = kind;
	pthread_mutex_lock(&ze_lock);
	info = ze_event__named(kind == ZE_CMD_WAIT ? (waits && nwait ? waits[0] : NULL) : ev);
	if (info)
		m->w.name = kind == ZE_CMD_SIGNAL ? info->signal_name :
			    kind == ZE_CMD_RESET ? info->reset_name : info->wait_name;
	else
		m->w.name = ze_str.barrier;
	pthread_mutex_unlock(&ze_lock);
	m->barrier = ZE_REAL(zeCommandListAppendBarrier)(l, m->a.event, nwait,
							 (ze_event_handle_t *)waits);
}

void ze_track__mark_end(struct ze_mark *m, ze_result_t r, struct ze_call *c)
{
	if (!m->a.list)
		return;
	/* The command itself failed: our barrier is in the list, but marks nothing. */
	if (r != ZE_RESULT_SUCCESS)
		m->w.kind = 0;
	ze__append_end(&m->a, m->barrier, r, &m->w, c);
}

/* ---- regular lists run on a queue or an immediate list ---- */

/* Do some of these lists' commands still wait to be read? */
static bool ze__runs_again_locked(uint32_t n, ze_command_list_handle_t *lists)
{
	for (uint32_t i = 0; i < n; i++) {
		struct ze_list *L = (struct ze_list *)ze_map__get(&ze_lists, lists[i]);

		if (L && L->npend)
			return true;
	}
	return false;
}

/*
 * Is lists[i] named again later in the same call ({a, b, a})? Both runs signal the same
 * events of its commands, so the later run overwrites this one's times before anything
 * can read them: only the last occurrence is timed (held: ze_pend__held), each earlier
 * one counted lost (ze__lose_run). Scans of the call's handles: none for one list.
 */
static inline bool ze__runs_later(ze_command_list_handle_t *lists, uint32_t n, uint32_t i)
{
	for (uint32_t j = i + 1; j < n; j++)
		if (lists[j] == lists[i])
			return true;
	return false;
}

static inline bool ze__ran_earlier(ze_command_list_handle_t *lists, uint32_t i)
{
	for (uint32_t j = 0; j < i; j++)
		if (lists[j] == lists[i])
			return true;
	return false;
}

/* A run of L overwritten within its own call: each of its commands counted lost, as for a
 * run rerun before it was read (one without an event as for any run of it). */
static void ze__lose_run(const struct ze_list *L)
{
	for (size_t j = 0; j < L->ncmds; j++)
		gt_lost_add(L->cmds[j].event ? ze_str.lost_overwritten : ze_str.lost_no_event, 1);
}

static void ze__calls_done(const struct ze_exec *x);

void ze_track__execute_begin(struct ze_exec *x, ze_command_queue_handle_t q,
			     ze_command_list_handle_t imm, uint32_t n,
			     ze_command_list_handle_t *lists)
{
	static uint64_t seq; /* (lock held) */
	struct ze_queue *Q = NULL;
	struct ze_list *I = NULL;
	bool unfinished[ZE_EXEC_LISTS_SEEN] = { false };

	memset(x, 0, sizeof(*x));
	pthread_mutex_lock(&ze_lock);
	if (q)
		Q = (struct ze_queue *)ze_map__get(&ze_queues, q);
	else
		I = (struct ze_list *)ze_map__get(&ze_lists, imm);
	if ((!Q && !(I && I->immediate)) || !lists || atomic_load(&ze_closed)) {
		/* (a queue or list a fork child's parent made: counted at the end) */
		x->untracked = !Q && !I && (q || imm) && lists &&
			       !ze_map__get(&ze_rowless, q ? (const void *)q : (const void *)imm);
		x->n = n;
		x->lists = lists;
		goto out;
	}
	/* Take what earlier runs left: this run overwrites their timestamps. */
	if (!ze__defers() || ze__runs_again_locked(n, lists))
		ze__collect_locked();
	for (uint32_t i = 0; i < n; i++) {
		struct ze_list *L = (struct ze_list *)ze_map__get(&ze_lists, lists[i]);

		/* A list named twice is made ready once, for its last occurrence. */
		if (!L || L->immediate || ze__runs_later(lists, n, i))
			continue;
		for (size_t j = 0; j < L->ncmds; j++) {
			struct ze_cmd *cmd = &L->cmds[j];

			bool copying = cmd->pend && cmd->pend->run_copy;

			/* (not done: that run may signal the events after our reset) */
			if (cmd->pend && !copying &&
			    !ze_pend__settle(cmd->pend, ze_str.lost_overwritten) &&
			    i < ZE_EXEC_LISTS_SEEN)
				unfinished[i] = true;
			cmd->pend = NULL;
			/* Ours must be unsignaled again to tell this run's end. Not while the
			 * last run's copy is still to be made: the device may not have
			 * signaled it yet (this run signals it again, in order, and a run's
			 * copy waits for its gate, never for the event). */
			if (cmd->own && L->executed && !copying)
				ZE_REAL(zeEventHostReset)(cmd->event);
		}
		/* Queries exist only in kernel mode, set for the process at start: one test
		 * per list, not one per command, when it is off. */
		if (gt_metrics_on(ze_metrics_kernel_mode) && L->executed)
			for (size_t j = 0; j < L->ncmds; j++)
				if (ze_work_mq(&L->cmds[j].w))
					ze_metrics__kernel_rearm(ze_work_mq(&L->cmds[j].w));
	}
	x->imm = I;
	x->queue = Q;
	x->dev = Q ? Q->dev : I->dev;
	x->track = Q ? Q->track : I->track;
	x->anchor = Q ? Q->anchor : I->anchor;
	x->valid = true;
	x->n = n;
	x->lists = lists;
	x->seq = ++seq;
	for (uint32_t i = 0; i < n; i++) {
		struct ze_list *L = (struct ze_list *)ze_map__get(&ze_lists, lists[i]);

		if (!L || L->immediate || ze__runs_later(lists, n, i))
			continue;
		/* Another run of it in its call, or one not done when this one reset its
		 * events: both runs signal them (a list the device still references
		 * is not to be run again, the spec says; threads may do it all the same). */
		if (L->in_calls || i >= ZE_EXEC_LISTS_SEEN || unfinished[i])
			L->wary = true;
		L->in_calls++;
		L->begin_seq = x->seq;
	}
out:
	pthread_mutex_unlock(&ze_lock);
	/* The run's clock pair last, after the lock, right before the submission: the floor
	 * its work is never drawn before (ze_pend__read). Read before the unlock, the hand-off
	 * of the lock to a thread waiting on it (10 to 150 us on a loaded 2-core VM) came
	 * between the pair and the submission: work drawn early by another chain's split pair
	 * still fell after that floor, and was not moved. (Nor does the pair's call, up to
	 * ZE_PAIR_TRIES of them, hold the lock now.) */
	if (x->valid && ze_dev__sync(x->dev, &x->ref_host, &x->ref_ticks, &x->ref_err)) {
		x->valid = false;
		x->no_pair = true;
		ze__calls_done(x);
	}
}

/* Does this command (of the call's list i) of a run get a copy of its times
 * (gate->times)? Its event is one whose times the next run overwrites: ours, or the
 * program's with timestamps (a query of a counter-based one has its own slot already).
 * Not from a program's event that a later list of the call resets on the device: at the
 * run's end it holds nothing, and the copy, zeros, drew a 0 ns span (read from the event
 * itself, it is lost, counted). Its own list's reset after it took it off the event. */
static bool ze__run_copies(const struct ze_cmd *cmd, const struct ze_exec *x, uint32_t i)
{
	ze_event_handle_t from = cmd->src ? cmd->src : cmd->own ? NULL : cmd->event;

	if (!cmd->event || (cmd->slot && !cmd->src))
		return false;
	for (uint32_t k = i + 1; from && k < x->n; k++) {
		struct ze_list *K = (struct ze_list *)ze_map__get(&ze_lists, x->lists[k]);

		if (K && K->resets_all)
			return false;
		for (uint32_t r = 0; K && r < K->nresets; r++)
			if (K->resets[r] == from)
				return false;
	}
	return true;
}

/* On an in-order immediate list: a query copying the run's times into memory of the
 * gate's, right before its barrier. Without it (out of order, no memory, refused) a rerun
 * before this run was read loses it, as on a queue. */
static void ze__gate_copy(struct ze_gate *g, struct ze_list *I, const struct ze_exec *x)
{
	ze_host_mem_alloc_desc_t hdesc = { .stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC };
	ze_event_handle_t *events = NULL;
	uint32_t n = 0, cap = 0;
	void *times = NULL;

	pthread_mutex_lock(&ze_lock);
	for (uint32_t i = 0; i < x->n; i++) {
		struct ze_list *L = (struct ze_list *)ze_map__get(&ze_lists, x->lists[i]);

		if (ze__runs_later(x->lists, x->n, i))
			continue; /* (its copy would be the later run's times) */
		for (size_t j = 0; L && !L->immediate && j < L->ncmds; j++) {
			L->cmds[j].run_copy = ze__run_copies(&L->cmds[j], x, i);
			if (!L->cmds[j].run_copy)
				continue;
			if (n == cap) {
				ze_event_handle_t *more;

				cap = cap ? 2 * cap : 16;
				more = realloc(events, cap * sizeof(*events));
				if (!more) {
					n = 0;
					goto out;
				}
				events = more;
			}
			/* (a slot is the next run's too: the program's event holds this run's
			 * times until then) */
			events[n++] = L->cmds[j].src ? L->cmds[j].src : L->cmds[j].event;
		}
	}
out:
	pthread_mutex_unlock(&ze_lock);
	if (n && ZE_REAL(zeMemAllocHost)(g->ctx->handle, &hdesc, n * sizeof(*g->times), 64,
					 &times) == ZE_RESULT_SUCCESS) {
		if (ZE_REAL(zeCommandListAppendQueryKernelTimestamps)(I->handle, n, events, times,
								      NULL, NULL, 0, NULL) ==
		    ZE_RESULT_SUCCESS)
			g->times = times;
		else
			ZE_REAL(zeMemFree)(g->ctx->handle, times);
	}
	free(events);
}

/* A run on an immediate list: its gate, a barrier of ours after it (NULL: untimed). */
static struct ze_gate *ze__gate(struct ze_list *I, const struct ze_exec *x)
{
	struct ze_gate *g = calloc(1, sizeof(*g));
	ze_result_t r;

	pthread_mutex_lock(&ze_lock);
	if (g && I->ctx && !atomic_load(&ze_closed))
		g->event = ze_ctx__event(I->ctx);
	if (g && g->event)
		g->ctx = I->ctx;
	pthread_mutex_unlock(&ze_lock);
	if (!g || !g->event) {
		free(g);
		return NULL;
	}
	if (I->in_order)
		ze__gate_copy(g, I, x);
	r = ZE_REAL(zeCommandListAppendBarrier)(I->handle, g->event, 0, NULL);
	if (r == ZE_RESULT_SUCCESS)
		return g;
	pthread_mutex_lock(&ze_lock);
	ze_ctx__unused(g->ctx, g->event);
	pthread_mutex_unlock(&ze_lock);
	/* The query (if any) is in the list: its memory stays the device's. */
	free(g);
	return NULL;
}

/* A run gputrace cannot time, each command it knows of counted lost (reason), `unknown`
 * for a list it does not know: on a queue or immediate list it never saw made (a fork
 * child's of its parent's), ze_untracked_list, 1 a list; or one whose clock pair failed
 * (ze_track__execute_begin), ze_no_event (it was left out silently). */
static void ze__lose_untimed_run(const struct ze_exec *x, uint32_t reason, uint64_t unknown)
{
	uint64_t n = 0;

	if (ze__paused() || atomic_load(&ze_closed))
		return;
	pthread_mutex_lock(&ze_lock);
	for (uint32_t i = 0; i < x->n; i++) {
		struct ze_list *L = (struct ze_list *)ze_map__get(&ze_lists, x->lists[i]);

		n += !L ? unknown : L->immediate ? 0 : L->ncmds;
	}
	pthread_mutex_unlock(&ze_lock);
	if (n)
		gt_lost_add(reason, n);
}

/* A call that failed or timed nothing: its lists' runs are out of their calls. */
static void ze__calls_done(const struct ze_exec *x)
{
	pthread_mutex_lock(&ze_lock);
	for (uint32_t i = 0; i < x->n; i++) {
		struct ze_list *L = (struct ze_list *)ze_map__get(&ze_lists, x->lists[i]);

		if (L && !L->immediate && !ze__runs_later(x->lists, x->n, i) && L->in_calls)
			L->in_calls--;
	}
	pthread_mutex_unlock(&ze_lock);
}

void ze_track__execute_end(struct ze_exec *x, ze_result_t r, struct ze_call *c,
			   ze_fence_handle_t fence)
{
	struct ze_pending *last = NULL;
	struct ze_gate *gate = NULL;
	uint64_t submitted, corr = c->corr;
	uint32_t copied = 0; /* the gate's copies taken, in the query's order */
	int tid;
	bool counted;

	if (gt_unlikely(x->untracked) && r == ZE_RESULT_SUCCESS)
		ze__lose_untimed_run(x, ze_str.lost_untracked, 1);
	if (gt_unlikely(x->no_pair) && r == ZE_RESULT_SUCCESS)
		ze__lose_untimed_run(x, ze_str.lost_no_event, 0);
	if (!x->valid)
		return;
	if (r != ZE_RESULT_SUCCESS) {
		ze__calls_done(x);
		return;
	}
	ze_call__span_ready(c);
	if (x->imm && !(gate = ze__gate(x->imm, x))) {
		ze__calls_done(x);
		gt_lost_add(ze_str.lost_no_event, 1);
		return;
	}
	if (!ze__lock_unless_closed()) {
		free(gate); /* (the device's still: its event and memory are not reused) */
		return;
	}
	/* its span with its reads, in one step for the exit's last read (internal.h) */
	ze_call__span_now(c, r);
	tid = gt_gettid();
	/* (one left out of the trace, after its end: its work too, uncounted) */
	counted = ze_call__in_trace(c->rec ? c->t1 : 0, tid);
	/* The call returned (its span's end): read once for a queue's run (its
	 * synchronizes' bound), else only if a command has wait events */
	submitted = x->queue ? c->t1 : 0;
	for (uint32_t i = 0; i < x->n; i++) {
		struct ze_list *L = (struct ze_list *)ze_map__get(&ze_lists, x->lists[i]);
		bool held;

		if (!L || L->immediate) {
			/* a list a fork child's parent made: its commands unknown, one counted */
			if (!L && counted && x->lists[i] && !ze__paused() &&
			    !ze_map__get(&ze_rowless, x->lists[i]))
				gt_lost_add(ze_str.lost_untracked, 1);
			continue;
		}
		L->executed = true;
		if (ze__runs_later(x->lists, x->n, i)) {
			if (counted)
				ze__lose_run(L);
			continue;
		}
		if (L->in_calls)
			L->in_calls--;
		/* Another run of it began since this call did (another thread's): its reset
		 * and this run's signals of the same events interleave, nothing tells which
		 * run's times they show. This run is lost, as one rerun before it was read. */
		if (L->begin_seq != x->seq) {
			if (counted)
				ze__lose_run(L);
			continue;
		}
		/* (on an immediate list, the gate after the run holds its reads already) */
		held = x->queue && ze__ran_earlier(x->lists, i);
		for (size_t j = 0; j < L->ncmds; j++) {
			struct ze_cmd *cmd = &L->cmds[j];
			ze_kernel_timestamp_result_t *copy =
				gate && gate->times && cmd->run_copy ?
					&gate->times[copied++] : NULL;
			struct ze_pending *p;

			/* A mutable command whose signal event became one we cannot read. */
			if (gt_unlikely(!cmd->event)) {
				if (counted)
					gt_lost_add(ze_str.lost_no_event, 1);
				continue;
			}
			p = ze_pend__new();
			if (!p) {
				if (counted)
					gt_lost_add(ze_str.lost_no_event, 1);
				continue;
			}
			*p = (struct ze_pending){
				.w = cmd->w,
				.event = cmd->event,
				.ctx = L->ctx,
				.list = L,
				.cmd = j,
				.corr = corr,
				.corr2 = cmd->append_corr,
				.executed = true,
				.dev = x->dev,
				.track = x->track,
				.anchor = x->anchor,
				.ref_host = x->ref_host,
				.ref_ticks = x->ref_ticks,
				.ref_err = x->ref_err,
				.at = x->ref_host,
				.queue = x->queue,
				.returned = submitted,
				.gate = gate,
				.held = held,
				.overlapped = L->wary,
				.sync_bound = L->wary && x->queue && submitted <= x->queue->sync_begin
						      ? x->queue->sync_end : 0,
				.fence_h = L->wary && x->queue ? fence : NULL,
				.span_end = c->rec ? c->t1 : 0,
				.span_tid = tid,
			};
			if (gate)
				gate->refs++;
			p->host_domain = cmd->host_domain;
			if (gt_unlikely(cmd->w.waits | (uintptr_t)cmd->slot)) {
				p->slot = cmd->slot;
				if (cmd->w.waits) {
					/* The call returned: a command that started after this was
					 * held (by its wait events, or its engine's other work). */
					if (!submitted)
						submitted = gt_clock_ns();
					p->submitted = submitted;
				}
			}
			if (copy) {
				p->slot = copy;
				p->run_copy = true;
			}
			cmd->pend = p;
			L->npend++;
			ze_pend__push(p);
			if (gt_unlikely(p->overlapped && p->queue)) {
				p->queue->overlapped_pend++;
				if (p->fence_h)
					atomic_fetch_add(&ze_fenced_pend, 1);
			}
			last = p;
		}
	}
	if (last)
		last->fence = fence != NULL;
	if (gate && !gate->refs) {
		/* Nothing to time: the gate waits in a pending of its own for nothing. */
		gate->refs = 1;
		ze_gate__put(gate);
	}
	pthread_mutex_unlock(&ze_lock);
}

/* ---- objects ---- */

void ze_track__queue_created(ze_command_queue_handle_t q, ze_device_handle_t dev,
			     const ze_command_queue_desc_t *desc)
{
	struct ze_queue *Q = calloc(1, sizeof(*Q));
	uint32_t ordinal = desc ? desc->ordinal : 0, index = desc ? desc->index : 0;
	char name[64];

	if (!Q)
		return;
	pthread_mutex_lock(&ze_lock);
	Q->handle = q;
	Q->dev = ze_dev__get(dev);
	if (!Q->dev) {
		if (dev)
			ze_map__put(&ze_rowless, q, 1);
		goto fail;
	}
	snprintf(name, sizeof(name), "queue %u.%u", ordinal, index);
	Q->track = gt_queue_row(Q->dev->row, name, (int)(ordinal * 1000 + index));
	Q->anchor = ze_anchor__get(Q->track);
	if (ze_map__put(&ze_queues, q, (uintptr_t)Q))
		goto fail;
	pthread_mutex_unlock(&ze_lock);
	return;
fail:
	pthread_mutex_unlock(&ze_lock);
	free(Q);
}

void ze_track__queue_destroy(ze_command_queue_handle_t q)
{
	struct ze_queue *Q;

	pthread_mutex_lock(&ze_lock);
	ze__collect_locked();
	Q = (struct ze_queue *)ze_map__del(&ze_queues, q);
	if (!Q)
		ze_map__del(&ze_rowless, q);
	/* Pending reads keep their row and anchor, not the queue. */
	for (struct ze_pending *p = ze_pend_head; Q && p; p = p->next)
		if (p->queue == Q)
			p->queue = NULL;
	pthread_mutex_unlock(&ze_lock);
	free(Q);
}

/* A wait that began at t0 returned success at now, on queue Q (a synchronize) or fence f:
 * the overlapped runs waited for whose calls had returned by t0 ended by now, their
 * bound (sync_bound) unless an earlier wait's is tighter (lock held). */
static void ze__bound_overlapped(const struct ze_queue *Q, ze_fence_handle_t f, uint64_t t0,
				 uint64_t now)
{
	for (struct ze_pending *p = ze_pend_head; p; p = p->next)
		if (p->overlapped && (Q ? p->queue == Q : p->fence_h == f) && p->returned <= t0 &&
		    (!p->sync_bound || now < p->sync_bound))
			p->sync_bound = now;
}

void ze_track__queue_synced(ze_command_queue_handle_t q, uint64_t t0)
{
	struct ze_queue *Q;
	uint64_t now = gt_clock_ns();

	pthread_mutex_lock(&ze_lock);
	Q = (struct ze_queue *)ze_map__get(&ze_queues, q);
	/* (two threads' synchronizes may return in either order: the later-begun one's) */
	if (Q && t0 >= Q->sync_begin) {
		Q->sync_begin = t0;
		Q->sync_end = now;
	}
	if (Q && Q->overlapped_pend)
		ze__bound_overlapped(Q, NULL, t0, now);
	pthread_mutex_unlock(&ze_lock);
}

/* Its run ended when the fence was signaled: a program that waits for a fence, not its
 * queue, bounds an overlapped run too (else read later, its events could show a run on
 * another engine that ended milliseconds after, drawn as its own). */
void ze_track__fence_synced(ze_fence_handle_t f, uint64_t t0)
{
	uint64_t now;

	/* (counted under the lock as such a pending was pushed: 0 here, none to bound) */
	if (!atomic_load_explicit(&ze_fenced_pend, memory_order_relaxed))
		return;
	now = gt_clock_ns();
	pthread_mutex_lock(&ze_lock);
	ze__bound_overlapped(NULL, f, t0, now);
	pthread_mutex_unlock(&ze_lock);
}

void ze_track__list_created(ze_command_list_handle_t l, ze_context_handle_t ctx,
			    ze_device_handle_t dev, const ze_command_list_desc_t *desc,
			    const ze_command_queue_desc_t *imm)
{
	struct ze_list *L = calloc(1, sizeof(*L));
	char name[64];

	if (!L)
		return;
	pthread_mutex_lock(&ze_lock);
	L->handle = l;
	L->ctx = ze_ctx__get(ctx);
	L->dev = ze_dev__get(dev);
	if (!L->ctx || !L->dev) {
		if (L->ctx && dev)
			ze_map__put(&ze_rowless, l, 1);
		goto fail;
	}
	if (imm) {
		unsigned n = L->dev->immediate_lists++;

		L->immediate = true;
		L->synchronous = imm->mode == ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS;
		L->in_order = imm->flags & ZE_COMMAND_QUEUE_FLAG_IN_ORDER;
		snprintf(name, sizeof(name), "immediate list %u", n);
		L->track = gt_queue_row(L->dev->row, name, (int)(1000000 + n));
		L->anchor = ze_anchor__get(L->track);
	}
	if (desc)
		L->in_order = desc->flags & ZE_COMMAND_LIST_FLAG_IN_ORDER;
	if (ze_map__put(&ze_lists, l, (uintptr_t)L))
		goto fail;
	pthread_mutex_unlock(&ze_lock);
	return;
fail:
	pthread_mutex_unlock(&ze_lock);
	free(L);
}

/* A reset or destroyed regular list's pending reads, left to the drain thread: they
 * leave the list, and their events of ours go back once read (lock held). */
static void ze_list__defer_locked(struct ze_list *L)
{
	for (size_t j = 0; L->npend && j < L->ncmds; j++) {
		struct ze_cmd *cmd = &L->cmds[j];
		struct ze_pending *p = cmd->pend;

		if (!p || p->list != L || p->gate || p->slot || !cmd->own || p->event != cmd->event)
			continue;
		p->list = NULL;
		p->recycle = true;
		L->npend--;
		cmd->pend = NULL;
		cmd->own = false;
	}
}

void ze_track__list_release(ze_command_list_handle_t l, bool destroy)
{
	struct ze_list *L;
	bool read_now;

	pthread_mutex_lock(&ze_lock);
	L = (struct ze_list *)ze_map__get(&ze_lists, l);
	if (!L) {
		if (destroy)
			ze_map__del(&ze_rowless, l);
		goto out;
	}
	/* The device is done with the list (the program's promise): read it all, now or
	 * (a regular list's reads, as they are) on the drain thread. */
	if (!L->immediate && ze__defers())
		ze_list__defer_locked(L);
	read_now = L->immediate || L->npend || !ze__defers();
	if (read_now)
		ze__collect_locked();
	if (L->immediate) {
		/* What the program waited for is done, but our commands after its last one (a
		 * chain, a query, a run's end) may not be: their reads outlive the list (the
		 * driver finishes a list's work before it frees it), read at the next sync. */
		for (struct ze_pending *p = ze_pend_head; p; p = p->next) {
			if (p->imm == L)
				p->imm = NULL;
		}
		ze_list__unpark(L, 0, true);
	}
	/* Earlier runs' copies too (an immediate list may hold several runs). */
	for (struct ze_pending *p = read_now ? ze_pend_head : NULL, *next; p; p = next) {
		next = p->next;
		if (p->list == L)
			ze_pend__settle(p, ze_str.lost_unread);
	}
	for (size_t j = 0; j < L->ncmds; j++) {
		struct ze_cmd *cmd = &L->cmds[j];

		if (cmd->own)
			ze_ctx__put(L->ctx, cmd->event);
	}
	if (gt_metrics_on(ze_metrics_kernel_mode)) /* as above: one test per list */
		for (size_t j = 0; j < L->ncmds; j++)
			if (ze_work_mq(&L->cmds[j].w))
				ze_metrics__kernel_release(ze_work_mq(&L->cmds[j].w));
	L->ncmds = 0;
	L->nresets = 0;
	L->resets_all = false;
	L->executed = false;
	if (destroy) {
		ze_list__unstash_locked(L);
		ze_list__epoch_locked();
		ze_map__del(&ze_lists, l);
		free(L->cmds);
		free(L->resets);
		free(L->parked);
		free(L);
	}
out:
	pthread_mutex_unlock(&ze_lock);
}

/* ---- mutable command lists (ZE_experimental_mutable_command_list) ---- */

void ze_track__mutable_next(ze_command_list_handle_t l, uint64_t id, uint32_t flags)
{
	struct ze_list *L;

	pthread_mutex_lock(&ze_lock);
	L = (struct ze_list *)ze_map__get(&ze_lists, l);
	if (L && !L->immediate) {
		L->mut_pending = true;
		L->mut_id = id;
		L->mut_flags = flags;
	}
	pthread_mutex_unlock(&ze_lock);
}

/* The command of a closed list with that id, or NULL (lock held). */
static struct ze_cmd *ze__mutable_cmd_locked(ze_command_list_handle_t l, uint64_t id)
{
	struct ze_list *L = (struct ze_list *)ze_map__get(&ze_lists, l);

	for (size_t j = 0; L && j < L->ncmds; j++) {
		if (L->cmds[j].mutable && L->cmds[j].mut_id == id)
			return &L->cmds[j];
	}
	return NULL;
}

void ze_track__mutable_update(ze_command_list_handle_t l, const ze_mutable_commands_exp_desc_t *desc)
{
	pthread_mutex_lock(&ze_lock);
	for (const ze_base_desc_t *d = desc ? desc->pNext : NULL; d; d = d->pNext) {
		struct ze_cmd *cmd;

		if (d->stype == ZE_STRUCTURE_TYPE_MUTABLE_GROUP_COUNT_EXP_DESC) {
			const ze_mutable_group_count_exp_desc_t *g = (const void *)d;

			cmd = ze__mutable_cmd_locked(l, g->commandId);
			if (cmd && g->pGroupCount) {
				cmd->w.groups[0] = g->pGroupCount->groupCountX;
				cmd->w.groups[1] = g->pGroupCount->groupCountY;
				cmd->w.groups[2] = g->pGroupCount->groupCountZ;
			}
		} else if (d->stype == ZE_STRUCTURE_TYPE_MUTABLE_GROUP_SIZE_EXP_DESC) {
			const ze_mutable_group_size_exp_desc_t *g = (const void *)d;

			if ((cmd = ze__mutable_cmd_locked(l, g->commandId)) != NULL) {
				cmd->w.size[0] = g->groupSizeX;
				cmd->w.size[1] = g->groupSizeY;
				cmd->w.size[2] = g->groupSizeZ;
			}
		}
		/* Arguments, offsets: nothing the trace shows. */
	}
	pthread_mutex_unlock(&ze_lock);
}

void ze_track__mutable_kernel(ze_command_list_handle_t l, uint64_t id, uint32_t name,
			      const uint32_t size[3])
{
	struct ze_cmd *cmd;

	pthread_mutex_lock(&ze_lock);
	if ((cmd = ze__mutable_cmd_locked(l, id)) != NULL) {
		cmd->w.name = name;
		memcpy(cmd->w.size, size, sizeof(cmd->w.size));
	}
	pthread_mutex_unlock(&ze_lock);
}

void ze_track__mutable_signal(ze_command_list_handle_t l, uint64_t id, ze_event_handle_t ev)
{
	struct ze_event_info *info;
	struct ze_list *L;
	struct ze_cmd *cmd;

	pthread_mutex_lock(&ze_lock);
	L = (struct ze_list *)ze_map__get(&ze_lists, l);
	if (!L || !(cmd = ze__mutable_cmd_locked(l, id)) || cmd->event == ev)
		goto out;
	/* The list is not running (the program's promise): what earlier runs left is read
	 * now, then the command's times come from its new event, if we can read it. */
	ze__collect_locked();
	if (cmd->pend) {
		ze_pend__settle(cmd->pend, ze_str.lost_overwritten);
		cmd->pend = NULL;
	}
	if (cmd->own)
		ze_ctx__put(L->ctx, cmd->event);
	info = ev ? ze_event__get(ev) : NULL;
	cmd->own = false;
	cmd->slot = NULL;
	cmd->src = NULL;
	cmd->event = info && (info->flags & ZE_EV_TIMESTAMPED) &&
			     !(info->flags & ZE_EV_COUNTER_BASED) ? ev : NULL;
out:
	pthread_mutex_unlock(&ze_lock);
}

void ze_track__mutable_waits(ze_command_list_handle_t l, uint64_t id, uint32_t nwait,
			     const ze_event_handle_t *waits)
{
	struct ze_append a;
	struct ze_cmd *cmd;

	memset(&a, 0, sizeof(a));
	pthread_mutex_lock(&ze_lock);
	if ((cmd = ze__mutable_cmd_locked(l, id)) != NULL) {
		ze__waits_locked(&a, nwait, waits);
		cmd->w.waits = a.waits;
		cmd->w.wait_name = a.wait_name;
		cmd->w.wait_event = a.wait_event;
	}
	pthread_mutex_unlock(&ze_lock);
}

void ze_track__pool_created(ze_event_pool_handle_t p, const ze_event_pool_desc_t *desc)
{
	pthread_mutex_lock(&ze_lock);
	ze_event__pool_created(p, desc);
	pthread_mutex_unlock(&ze_lock);
}

/* A program's event is going away: reads still waiting on it are lost, and a chain of ours
 * signaling it must not ask about it any more. */
static void ze__forget_event_locked(ze_event_handle_t ev)
{
	ze__retire_event_locked(ev, ze_str.lost_unread, true);
	for (struct ze_pending *p = ze_pend_head; p; p = p->next) {
		if (p->chain == ev) {
			p->chain = NULL;
			p->chain_gone = true;
		}
	}
}

void ze_track__pool_destroy(ze_event_pool_handle_t p)
{
	pthread_mutex_lock(&ze_lock);
	ze__collect_locked();
	ze_event__pool_destroyed(p, ze__forget_event_locked);
	pthread_mutex_unlock(&ze_lock);
}

void ze_track__event_created(ze_event_handle_t e, ze_event_pool_handle_t p, uint32_t index)
{
	pthread_mutex_lock(&ze_lock);
	ze_event__created(e, p, index);
	pthread_mutex_unlock(&ze_lock);
}

void ze_track__cb_event_created(ze_event_handle_t e, const ze_event_counter_based_desc_t *desc)
{
	pthread_mutex_lock(&ze_lock);
	ze_event__cb_created(e, desc);
	pthread_mutex_unlock(&ze_lock);
}

void ze_track__event_retire(ze_event_handle_t e, bool destroy)
{
	struct ze_event_info *info;

	pthread_mutex_lock(&ze_lock);
	info = ze_event__get(e);
	if (info && (info->flags & ZE_EV_TIMESTAMPED)) {
		/* Its timestamps may be a command's of ours: read them before they go. */
		ze__collect_locked();
		ze__retire_event_locked(e, ze_str.lost_unread, true);
	}
	if (destroy) {
		ze__forget_event_locked(e);
		ze_event__destroyed(e);
	}
	pthread_mutex_unlock(&ze_lock);
}

/*
 * An immediate list about to reset the program's timestamped event ev (lock held): the
 * list's commands timed by it that are done are read now; one not done yet (the reset
 * is queued behind it) would find its times cleared: a query of ours, before the reset,
 * copies them into our slot, waiting for the event, and the command is read from there.
 */
static void ze__reset_immediate_locked(struct ze_list *L, ze_event_handle_t ev, bool host_domain)
{
	ze__collect_locked();
	for (struct ze_pending *p = ze_pend_head; p; p = p->next) {
		ze_kernel_timestamp_result_t ts, *slot;
		ze_event_handle_t ours;

		if (p->event != ev || p->imm != L || p->recycle || p->slot || p->gate ||
		    ze_pend__query(p, &ts) == ZE_RESULT_SUCCESS)
			continue;
		if (!(ours = ze_ctx__event(L->ctx)))
			break;
		slot = (ze_kernel_timestamp_result_t *)ze_map__get(&ze_slots, ours);
		if (!slot || ZE_REAL(zeCommandListAppendQueryKernelTimestamps)(
				     L->handle, 1, &ev, slot, NULL, ours, 1, &ev) != ZE_RESULT_SUCCESS) {
			ze_ctx__unused(L->ctx, ours);
			continue;
		}
		p->event = ours;
		p->recycle = true;
		p->slot = slot;
		p->host_domain = host_domain;
	}
	/* What still holds the event's times (another list's, done) is read now. */
	ze__retire_event_locked(ev, ze_str.lost_unread, true);
}

/*
 * Before the program's zeCommandListAppendEventReset. On an immediate list the reset
 * runs now: the event is read first (or copied, above). On a regular list it runs in
 * the same run as the commands of the list that signaled it before (the list signals,
 * waits, resets): a command timed by the program's own timestamped event would find its
 * times cleared before any read. A query of ours right before the reset copies them into our slot
 * (waiting for the event: a list may run out of order), and the command is read from
 * there, as one with device-only timestamps is. Only this list's commands: another
 * list's may run after the reset, where a query waiting for the event would hang.
 */
void ze_track__event_reset_appended(ze_command_list_handle_t l, ze_event_handle_t ev)
{
	struct ze_event_info *info;
	struct ze_list *L;
	bool timed, host_domain;

	if (atomic_load(&ze_closed) || !ev || !(L = ze_list__find(l)))
		return;
	if (!L->ctx)
		return;
	pthread_mutex_lock(&ze_lock);
	info = ze_event__get(ev);
	timed = info && (info->flags & ZE_EV_TIMESTAMPED) && !(info->flags & ZE_EV_COUNTER_BASED);
	host_domain = info && (info->flags & ZE_EV_HOST_DOMAIN);
	if (!L->immediate && info && !timed && (info->flags & ZE_EV_KERNEL_TS))
		/* Device-only timestamps: reset by the run itself, the event no longer holds
		 * them at the run's end, where a run's copy would query it (its slot has them) */
		for (size_t j = L->ncmds; j-- > 0;)
			if (L->cmds[j].src == ev)
				L->cmds[j].src = NULL;
	if (L->immediate) {
		if (timed)
			ze__reset_immediate_locked(L, ev, host_domain);
		pthread_mutex_unlock(&ze_lock);
		return;
	}
	pthread_mutex_unlock(&ze_lock);
	if (info && (info->flags & ZE_EV_KERNEL_TS) && !(info->flags & ZE_EV_COUNTER_BASED)) {
		/* (read by a run's execute, under the lock; the list is closed then) */
		if (L->nresets == L->cap_resets) {
			uint32_t cap = L->cap_resets ? 2 * L->cap_resets : 4;
			ze_event_handle_t *more = realloc(L->resets, cap * sizeof(*more));

			if (more) {
				L->resets = more;
				L->cap_resets = cap;
			}
		}
		if (L->nresets < L->cap_resets)
			L->resets[L->nresets++] = ev;
		else
			L->resets_all = true;
	}
	/* (the list is the appending thread's alone: its commands need no lock) The latest
	 * command that signaled it: an event is reset before it is signaled again, and an
	 * earlier one's reset took it off that command already. */
	for (size_t j = L->ncmds; timed && j-- > 0;) {
		struct ze_cmd *cmd = &L->cmds[j];
		ze_kernel_timestamp_result_t *slot;
		ze_event_handle_t ours;

		if (cmd->event != ev)
			continue;
		/* (a mutable command's signal event may be swapped: left as it is) */
		if (cmd->own || cmd->slot || cmd->mutable || !(ours = ze_list__event(L)))
			return;
		pthread_mutex_lock(&ze_lock);
		slot = (ze_kernel_timestamp_result_t *)ze_map__get(&ze_slots, ours);
		pthread_mutex_unlock(&ze_lock);
		if (!slot || ZE_REAL(zeCommandListAppendQueryKernelTimestamps)(
				     l, 1, &ev, slot, NULL, ours, 1, &ev) != ZE_RESULT_SUCCESS) {
			ze_list__unevent(L, ours);
			return;
		}
		cmd->event = ours;
		cmd->own = true;
		cmd->slot = slot;
		cmd->host_domain = host_domain;
		return;
	}
}

bool ze_track__event_counter_based(ze_event_handle_t e)
{
	struct ze_event_info *info;
	bool cb;

	pthread_mutex_lock(&ze_lock);
	info = ze_event__get(e);
	cb = info && (info->flags & ZE_EV_COUNTER_BASED);
	pthread_mutex_unlock(&ze_lock);
	return cb;
}

bool ze_track__list_is_immediate(ze_command_list_handle_t l)
{
	struct ze_list *L;
	bool imm;

	pthread_mutex_lock(&ze_lock);
	L = (struct ze_list *)ze_map__get(&ze_lists, l);
	imm = L && L->immediate;
	pthread_mutex_unlock(&ze_lock);
	return imm;
}

static void ze__orphan_list(const void *key, uintptr_t val, void *arg)
{
	struct ze_list *L = (struct ze_list *)val;

	if (L->ctx == arg) {
		L->ctx = NULL;
		L->nstash = 0; /* destroyed with it */
	}
}

void ze_track__context_destroy(ze_context_handle_t ctx)
{
	struct ze_pending *p, *next;
	struct ze_ctx *c;

	pthread_mutex_lock(&ze_lock);
	c = (struct ze_ctx *)ze_map__get(&ze_ctxs, ctx);
	/* The drain thread is making a pool in it: the context must outlive that. */
	while (c && ze_growing == c)
		pthread_cond_wait(&ze_grown, &ze_lock);
	c = (struct ze_ctx *)ze_map__del(&ze_ctxs, ctx);
	if (!c)
		goto out;
	ze__collect_locked();
	for (p = ze_pend_head; p; p = next) {
		next = p->next;
		if (p->ctx == c || (p->gate && p->gate->ctx == c))
			ze_pend__settle(p, ze_str.lost_unread);
	}
	for (unsigned i = 0; i < c->nall; i++)
		ze_map__del(&ze_slots, c->all[i]);
	if (!atomic_load(&ze_closed)) {
		ze_metrics__context_destroy(ctx);
		for (unsigned i = 0; i < c->nall; i++)
			ZE_REAL(zeEventDestroy)(c->all[i]);
		for (unsigned i = 0; i < c->npools; i++) {
			ZE_REAL(zeEventPoolDestroy)(c->pools[i]);
			if (c->slots[i])
				ZE_REAL(zeMemFree)(c->handle, c->slots[i]);
		}
	}
	/* Lists outliving their context (the program's mistake) keep no pointer to it. */
	ze_list__epoch_locked();
	ze_map__each(&ze_lists, ze__orphan_list, c);
	free(c->all);
	free(c->free);
	free(c->pools);
	free(c->slots);
	free(c);
out:
	pthread_mutex_unlock(&ze_lock);
}

GT_FORK_CODE void ze_track__forget(void)
{
	ze_map__forget(&ze_ctxs);
	ze_map__forget(&ze_lists);
	atomic_fetch_add(&ze_list_epoch, 1);
	ze_map__forget(&ze_queues);
	ze_map__forget(&ze_rowless);
	ze_map__forget(&ze_slots);
	ze_event__forget();
	ze_map__forget(&ze_anchors);
	ze_pend_head = ze_pend_tail = ze_pend_spare = NULL;
	atomic_store(&ze_pend_count, 0);
	ze_prog_reads = 0;
	atomic_store(&ze_pools_low, false);
	ze_growing = NULL;
	pthread_cond_init(&ze_grown, NULL);
}
