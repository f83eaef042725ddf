// SPDX-License-Identifier: MIT
/*
 * CUPTI's activity buffers. Since CUDA 13 CUPTI asks for buffers per
 * application thread, so both callbacks run on any thread, concurrently:
 * they only move a buffer between two short lists under one leaf lock
 * (nothing else is called while it is held). Completed buffers wait for
 * the drain thread, which turns their records into events; emptied
 * buffers are reused, so steady state allocates nothing.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/mman.h>

#include <cupti.h>

#include "backends/cuda/internal.h"
#include "inject/shim.h"
#include "inject/watchdog.h"

/* Sits in front of the part CUPTI sees; CUPTI wants 8-byte alignment. */
struct buf_hdr {
	struct buf_hdr *next;
	size_t valid;
	uint64_t pad[6];
};
_Static_assert(sizeof(struct buf_hdr) == 64, "buffer header keeps records aligned");

#define FREE_MAX  8  /* kept for reuse; more are unmapped */
#define BATCH_MAX 64 /* buffers processed together (out-of-order completions) */

static pthread_mutex_t buf_lock = PTHREAD_MUTEX_INITIALIZER;
static struct buf_hdr *free_list, *done_head, **done_tail = &done_head;
static unsigned nfree;

void CUPTIAPI cupti__buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	struct buf_hdr *h;

	pthread_mutex_lock(&buf_lock);
	h = free_list;
	if (h) {
		free_list = h->next;
		nfree--;
	}
	pthread_mutex_unlock(&buf_lock);
	if (!h) {
		void *p = mmap(NULL, sizeof(*h) + CUPTI_BUF_BYTES, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			/* CUPTI drops records and counts them */
			*buffer = NULL;
			*size = 0;
			*max_records = 0;
			return;
		}
		h = p;
	}
	*buffer = (uint8_t *)(h + 1);
	*size = CUPTI_BUF_BYTES;
	*max_records = 0; /* as many as fit */
}

static void recycle(struct buf_hdr *h)
{
	pthread_mutex_lock(&buf_lock);
	if (nfree < FREE_MAX) {
		h->next = free_list;
		free_list = h;
		nfree++;
		h = NULL;
	}
	pthread_mutex_unlock(&buf_lock);
	if (h)
		munmap(h, sizeof(*h) + CUPTI_BUF_BYTES);
}

void CUPTIAPI cupti__buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t *buffer,
				      size_t size, size_t valid)
{
	struct buf_hdr *h;

	if (!buffer)
		return;
	h = (struct buf_hdr *)buffer - 1;
	if (!valid) {
		recycle(h);
		return;
	}
	/* now: the names' memory may go before the drain thread reads them */
	cupti__pin_names(buffer, valid);
	/* on this thread: a watchdog's flush sees its launches retired on return */
	if (gt_unlikely(gt_watchdog_on))
		cupti__retire_records(buffer, valid);
	h->valid = valid;
	h->next = NULL;
	pthread_mutex_lock(&buf_lock);
	*done_tail = h;
	done_tail = &h->next;
	pthread_mutex_unlock(&buf_lock);
}

void cupti__drain_completed(void)
{
	struct buf_hdr *list, *batch[BATCH_MAX];
	uint8_t *bufs[BATCH_MAX];
	size_t valid[BATCH_MAX];

	pthread_mutex_lock(&buf_lock);
	list = done_head;
	done_head = NULL;
	done_tail = &done_head;
	pthread_mutex_unlock(&buf_lock);
	while (list) {
		unsigned n = 0;

		while (list && n < BATCH_MAX) {
			batch[n] = list;
			bufs[n] = (uint8_t *)(list + 1);
			valid[n] = list->valid;
			list = list->next;
			n++;
		}
		cupti__process_buffers(bufs, valid, n);
		for (unsigned i = 0; i < n; i++)
			recycle(batch[i]);
	}
}

/* Never called with buf_lock held: CUPTI may call the buffer callbacks
 * from inside it (the ABBA deadlock Kineto met). */
void cupti__count_dropped(void)
{
	size_t n = 0;

	cupti_self++;
	if (cupti_fn.cuptiActivityGetNumDroppedRecords(NULL, 0, &n) == CUPTI_SUCCESS && n)
		gt_lost_add(GT_S_LOST_CUPTI_DROPPED, n);
	cupti_self--;
}

GT_FORK_CODE void cupti__buffers_forget(void)
{
	/* the fork child: the parent's buffers are not ours to process */
	pthread_mutex_init(&buf_lock, NULL);
	done_head = NULL;
	done_tail = &done_head;
}
