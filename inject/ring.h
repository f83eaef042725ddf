/* SPDX-License-Identifier: MIT */
/*
 * Single-producer/single-consumer ring of 64-byte slots, one per thread.
 * The producer (the traced thread) never blocks: when there is no room the
 * event is dropped and counted. The consumer is the drain thread.
 * head/tail are free-running slot counters; capacity is a power of two.
 */
#ifndef GPUTRACE_RING_H
#define GPUTRACE_RING_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>
#include "event.h"
#include "ranges.h"

struct ring {
	/* producer-owned line */
	_Atomic uint64_t head;   /* next slot to write; published with release */
	uint64_t cached_tail;    /* producer's last view of tail */
	_Atomic uint64_t lost;   /* events dropped because the ring was full */
	char pad0[64 - 24];
	/* consumer-owned line */
	_Atomic uint64_t tail; /* next slot to read; published with release */
	uint64_t recorded;     /* events the drain thread wrote out */
	char pad1[64 - 16];
	/* shared, read-mostly */
	uint64_t mask;     /* capacity - 1 */
	pid_t tid;         /* OS thread id of the producer */
	uint32_t serial;   /* gputrace's own thread number (never reused) */
	_Atomic int dead;  /* producer thread has exited: free once drained */
	char name_start[16]; /* the thread's name at its first event (TASK_COMM_LEN) */
	char name_exit[16];  /* ... and as it exited: written before dead is set */
	struct ring *next; /* registry list, pushed lock-free */
	size_t map_bytes;
	struct gt_event *slots;
	/* --watchdog (watchdog.h): the device wait the thread is inside, written
	 * by it without a lock (call and handle first, then since, release) */
	_Atomic uint64_t wait_since;  /* trace clock ns at entry; 0: in no wait */
	_Atomic uint64_t wait_handle; /* the queue, event, fence or stream waited on */
	_Atomic uint32_t wait_call;   /* string id of the call */
	uint32_t wait_depth;          /* the thread's: waits nested (cudaStreamSynchronize
				       * inside, cuStreamSynchronize: the outer one counts) */
	uint64_t wait_reported;       /* the watchdog's: the wait_since it reported */
	/* producer-owned: the thread's open push/pop ranges (ranges.c) */
	struct gt_range_stack ranges;
};

GT_HIDDEN struct ring *ring__new(size_t bytes, pid_t tid, uint32_t serial);
GT_HIDDEN void ring__free(struct ring *r);

static inline struct gt_event *ring__slot(struct ring *r, uint64_t seq)
{
	return &r->slots[seq & r->mask];
}

/* Producer: returns the first sequence number of n free slots, or -1. */
static inline int64_t ring__reserve(struct ring *r, unsigned n)
{
	uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
	uint64_t cap = r->mask + 1;

	if (gt_unlikely(head + n - r->cached_tail > cap)) {
		r->cached_tail = atomic_load_explicit(&r->tail, memory_order_acquire);
		if (head + n - r->cached_tail > cap)
			return -1;
	}
	return (int64_t)head;
}

/* Producer fast path: the next slot if the cached view of the consumer
 * shows room for one (no shared load); NULL sends the caller to
 * ring__reserve(), which refreshes that view. */
static inline struct gt_event *ring__try_one(struct ring *r, uint64_t *head)
{
	uint64_t h = atomic_load_explicit(&r->head, memory_order_relaxed);

	if (gt_unlikely(h - r->cached_tail > r->mask))
		return NULL;
	*head = h;
	return ring__slot(r, h);
}

static inline void ring__publish(struct ring *r, uint64_t new_head)
{
	atomic_store_explicit(&r->head, new_head, memory_order_release);
}

/* Consumer: slots [tail, head) are readable. */
static inline uint64_t ring__readable(struct ring *r, uint64_t *tail)
{
	*tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	return atomic_load_explicit(&r->head, memory_order_acquire) - *tail;
}

static inline void ring__consume(struct ring *r, uint64_t new_tail)
{
	atomic_store_explicit(&r->tail, new_tail, memory_order_release);
}

/* Fill level in slots, for the high-water check. */
static inline uint64_t ring__used(struct ring *r)
{
	return atomic_load_explicit(&r->head, memory_order_relaxed) -
	       atomic_load_explicit(&r->tail, memory_order_relaxed);
}

#endif
