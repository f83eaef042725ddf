/* SPDX-License-Identifier: MIT */
/*
 * Single-producer/single-consumer ring of 64-byte slots, one per thread.
 * The producer (the traced thread) never blocks: when there is no room it
 * goes on in overflow segments (ring_overflow.c) while the process's
 * overflow budget lasts; past it the event is dropped and counted, unless
 * --lossless asked it to wait for the drain (ring_wait.c). The consumer is
 * the drain thread.
 * head/tail are free-running slot counters; capacity is a power of two.
 */
#ifndef GPUTRACE_RING_H
#define GPUTRACE_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "event.h"
#include "ranges.h"

/* The page a ring's or an overflow segment's slots start on (its header is one
 * page), and are faulted in and given back by. */
#define RING_PAGE 4096

/* The drain is woken when a ring is this fraction full (its high-water mark,
 * writer/drain.c): it starts on a ring long before the ring fills. */
#define RING_WAKE_DIV 4
/* Past the wake mark the producer looks at the tail again every this
 * fraction of the ring: a drain that caught up and went back to sleep is
 * woken the next time the backlog reaches the mark (three quarters of the
 * ring still free), not only once the ring looks full from the tail seen at
 * the last wake (then a quarter was left: 2 ms at 8 M calls/s, 64 B a call,
 * the default 4 MiB; make bench row 2b lost events to that). */
#define RING_RECHECK_DIV 8

/*
 * An overflow segment: a full ring's producer writes on here, in order, until the
 * drain has read it all; then it goes back to the ring. Linear (no wrap), so a
 * record's continuation slots follow it; single producer, single consumer.
 */
struct ring_seg {
	_Atomic uint64_t head;  /* slots written; published with release (producer) */
	char pad0[64 - 8];
	_Atomic uint64_t tail;  /* slots read; published with release (consumer) */
	char pad1[64 - 8];
	uint64_t cap;                       /* slots */
	_Atomic(struct ring_seg *) next;    /* the producer's next one, once this is full */
	size_t map_bytes;
	struct gt_event *slots;
	uint64_t released;  /* consumer: slots before this given back to the kernel */
	uint64_t idle_head; /* consumer: head + 1 when first found read to its end (0: none) */
	uint64_t idle_ns;   /* consumer: then */
};

struct ring {
	/* producer-owned line */
	_Atomic uint64_t head;   /* next slot to write; published with release */
	uint64_t limit;          /* the head at which the producer takes the slow path:
				  * the wake mark, or past it its next look at the tail */
	_Atomic uint64_t lost;   /* events dropped because the ring was full */
	_Atomic uint64_t waits;  /* --lossless: stalls waited out (ring_wait.c) */
	_Atomic uint64_t wait_ns; /* ... and their total time */
	uint64_t gave_up_tail;   /* a wait timed out at this tail, + 1 (0: none): no
				  * more waits until the drain moves */
	struct ring_seg *seg_write; /* the newest overflow segment (NULL: none yet) */
	_Atomic bool overflowing; /* events go to seg_write, not the ring, until it is read */
	char pad0[64 - 57];
	/* consumer-owned line */
	_Atomic uint64_t tail; /* next slot to read; published with release */
	uint64_t recorded;     /* events the drain thread wrote out (to this file) */
	_Atomic uint32_t room;    /* futex word: bumped when a waiting producer has room */
	_Atomic uint32_t waiting; /* the producer waits on room (written only then) */
	uint64_t populated;       /* ring__populate: slots faulted in from 0 (or cannot be) */
	/* overflow: the oldest segment not yet freed, published once by the producer,
	 * then moved on by the consumer only (never past the newest) */
	_Atomic(struct ring_seg *) seg_read;
	/* the ring's head when the producer last began to overflow: ring slots before
	 * it are older than any unread overflow slot, those from it newer */
	_Atomic uint64_t overflow_from;
	/* a read segment kept for the producer's next one while it overflows: its
	 * pages are faulted in already (exchanged, so one side has it at a time) */
	_Atomic(struct ring_seg *) seg_spare;
	char pad1[64 - 56];
	/* shared, read-mostly */
	uint64_t mask;     /* capacity - 1 */
	pid_t tid;         /* OS thread id of the producer */
	uint32_t serial;   /* gputrace's own thread number (never reused) */
	_Atomic int dead;  /* producer thread has exited: free once drained */
	_Atomic uint64_t dead_ns; /* when it exited (trace clock), stored before dead */
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
	/* ... and of the last wait it reported: handle, call and the oldest device
	 * work pending then (0: none), which tell a poll on that hang (a timed wait
	 * made again) from a new hang */
	uint64_t wait_reported_handle, wait_reported_corr;
	uint32_t wait_reported_call;
	/* producer-owned: the thread's open push/pop ranges (ranges.c) */
	struct gt_range_stack ranges;
	/* range ends the full ring dropped (counted lost) whose begin records were
	 * written (ranges.c): the drain ends those ranges undrawn, or each would be
	 * drawn never ended, to the trace's end. Written by the producer, head
	 * published with release; read by the consumer, tail published with release.
	 * Past RING_LOST_ENDS unread, a range is drawn never ended as before. */
#define RING_LOST_ENDS 16
	_Atomic uint32_t lost_end_head;
	_Atomic uint32_t lost_end_tail;
	struct gt_event lost_end[RING_LOST_ENDS];
};

GT_HIDDEN struct ring *ring__new(size_t bytes, pid_t tid, uint32_t serial);
GT_HIDDEN void ring__free(struct ring *r);
/* Consumer: once its thread has written RING_POPULATE_AFTER slots, the ring's pages
 * are faulted in by the caller (the drain thread), RING_POPULATE_AHEAD slots (4 MiB)
 * ahead of the producer at most, not by the producer's writes. 1 when it did now, 0
 * when not now, -errno when the kernel could not (ThreadSanitizer builds: then never
 * again). */
#define RING_POPULATE_AFTER 1024
#define RING_POPULATE_AHEAD 65536
GT_HIDDEN int ring__populate(struct ring *r);
/* Consumer, in a process's last cycle, before handing read slots [from, to) back: the
 * whole pages they fill are given back to the kernel (the exit then has that much less
 * to free): past the ring's first RING_POPULATE_AFTER slots, whole 2 MiB pages only
 * (ring.c). Returns where to hand back up to: the end of the last page given back, or
 * to when no whole page was. The drain does it RING_RELEASE_SLOTS (4 MiB) at a time,
 * for rings of at least RING_RELEASE_MIN slots (32 MiB; the default ring is 4 MiB):
 * each call stops the other CPUs running the program for a TLB flush (64 pages a call
 * gained nothing in make bench row 7w, 4 MiB a call 3-4 ms of its ~72), and a smaller
 * ring's chunks would hold back a live producer's room for nothing much. */
#define RING_RELEASE_SLOTS 65536
#define RING_RELEASE_MIN (8 * RING_RELEASE_SLOTS)
GT_HIDDEN uint64_t ring__release(struct ring *r, uint64_t from, uint64_t to);
/* A segment holds the ring's slots, and no fewer than these (256 KiB): a tiny
 * ring's overflow is not a page at a time */
#define RING_SEG_MIN_SLOTS 4096

/* The slots of each of r's overflow segments (a power of two, as the ring's). */
static inline uint64_t ring__seg_slots(const struct ring *r)
{
	return r->mask + 1 > RING_SEG_MIN_SLOTS ? r->mask + 1 : RING_SEG_MIN_SLOTS;
}

/* Producer, while overflowing: its newest segment is read to its end (and so is
 * everything before it), so it may go back to the ring. */
static inline bool ring__overflow_read_all(const struct ring *r)
{
	const struct ring_seg *s = r->seg_write;

	return atomic_load_explicit(&s->tail, memory_order_seq_cst) ==
	       atomic_load_explicit(&s->head, memory_order_relaxed);
}

/*
 * Overflow (ring_overflow.c). Producer: a full ring's next record goes to nslots
 * contiguous slots of an overflow segment while the process's budget
 * (gt_cfg.overflow_mb) lasts: the first of them, or NULL (no budget left, or none
 * asked for). *wake: the drain should be woken. Once it overflowed, every record
 * goes there (ring__overflow_reserve) until the drain has read all of it.
 */
GT_HIDDEN struct gt_event *ring__overflow_reserve(struct ring *r, unsigned nslots, bool *wake);
/* Producer: the slots reserved above are written. */
static inline void ring__overflow_publish(struct ring *r, unsigned nslots)
{
	struct ring_seg *s = r->seg_write;

	atomic_store_explicit(&s->head, atomic_load_explicit(&s->head, memory_order_relaxed) + nslots,
			      memory_order_release);
}
/* Consumer: the oldest unread overflow slots, [*at, *at + n) of *seg, that may be
 * read now (the ring's older slots all read: its tail at overflow_from); 0 when
 * none. Fully read segments that the producer has left are freed on the way. */
GT_HIDDEN uint64_t ring__overflow_readable(struct ring *r, uint64_t ring_tail,
					   struct ring_seg **seg, uint64_t *at);
/* Consumer: slots of seg before tail are read. */
GT_HIDDEN void ring__overflow_consume(struct ring *r, struct ring_seg *seg, uint64_t tail);
/* Consumer: overflow slots written and not yet read (it walks the segments, which
 * only the consumer frees). */
GT_HIDDEN uint64_t ring__overflow_used(struct ring *r);
/* Every segment's memory back (ring__free, a fork child's rings). */
GT_HIDDEN void ring__overflow_free(struct ring *r);
/* The process's overflow memory now and at its most (bytes), and segments made. */
GT_HIDDEN void ring__overflow_stats(uint64_t *now, uint64_t *peak, uint64_t *segments);
/* A fork child starts with none in use (the parent's rings are freed). */
GT_HIDDEN void ring__overflow_forget(void);

/* --lossless (ring_wait.c): the calling producer waits until nslots are free
 * in its full ring, at most gt_cfg.lossless_ms: 0, -ETIMEDOUT (the event is
 * lost; no more waits until the drain moves), -EAGAIN (not a thread or a
 * moment that may wait). */
GT_HIDDEN int ring__wait_room(struct ring *r, unsigned nslots);
/* Consumer: wake the producer waiting in ring__wait_room. */
GT_HIDDEN void ring__wake_waiter(struct ring *r);

static inline struct gt_event *ring__slot(struct ring *r, uint64_t seq)
{
	return &r->slots[seq & r->mask];
}

/*
 * Producer: the first sequence number of n free slots, or -1 (full). *wake:
 * the ring is past its wake mark (the caller wakes the drain). The view of
 * the consumer is refreshed only when head reaches limit: at the wake mark,
 * then every RING_RECHECK_DIV-th of the ring while past it.
 */
static inline int64_t ring__reserve(struct ring *r, unsigned n, bool *wake)
{
	uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
	uint64_t cap = r->mask + 1, tail, mark;

	*wake = false;
	if (gt_likely(head + n <= r->limit))
		return (int64_t)head;
	tail = atomic_load_explicit(&r->tail, memory_order_acquire);
	mark = tail + cap / RING_WAKE_DIV;
	*wake = head + n > mark;
	if (head + n - tail > cap)
		return -1;
	if (*wake) {
		uint64_t recheck = head + cap / RING_RECHECK_DIV;

		r->limit = recheck < tail + cap ? recheck : tail + cap;
	} else {
		r->limit = mark;
	}
	return (int64_t)head;
}

/* Producer fast path: the first of n slots if they end by the limit (no shared
 * load); NULL sends the caller to ring__reserve(), which refreshes it. */
static inline struct gt_event *ring__try(struct ring *r, unsigned n, uint64_t *head)
{
	uint64_t h = atomic_load_explicit(&r->head, memory_order_relaxed);

	if (gt_unlikely(h + n > r->limit))
		return NULL;
	*head = h;
	return ring__slot(r, h);
}

static inline struct gt_event *ring__try_one(struct ring *r, uint64_t *head)
{
	return ring__try(r, 1, head);
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

/* Consumer: slots before new_tail are read; a producer waiting for room
 * (--lossless) is woken once a useful share of the ring is free. */
static inline void ring__consume(struct ring *r, uint64_t new_tail)
{
	/* seq_cst: ordered before the load of waiting (ring__wait_room's pair) */
	atomic_store_explicit(&r->tail, new_tail, memory_order_seq_cst);
	if (gt_unlikely(atomic_load_explicit(&r->waiting, memory_order_seq_cst)))
		ring__wake_waiter(r);
}

/* Fill level in slots, for the high-water check. */
static inline uint64_t ring__used(struct ring *r)
{
	return atomic_load_explicit(&r->head, memory_order_relaxed) -
	       atomic_load_explicit(&r->tail, memory_order_relaxed);
}

#endif
