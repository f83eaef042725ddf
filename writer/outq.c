/* SPDX-License-Identifier: MIT */
/*
 * A compressed file is written on a thread of its own while the drain has
 * more to format: a checkpoint in the middle of a cycle (every 1 MiB of
 * JSON) hands its events and trailer over by swapping buffers, and the drain
 * formats the next events (and empties the rings) while they are compressed
 * and written; one checkpoint in flight at most (memory: two event
 * buffers). Compression takes about twice the formatting's CPU, so it pays
 * to run it beside the drain. A plain file's write is a copy into the page
 * cache: done on another core, that core first pulls the bytes out of the
 * drain's cache, and the drain then writes into lines the other core holds;
 * on the 2-core VM that cost more CPU than the copy (10^6 events into tmpfs:
 * 96-160 ms of CPU in 85-108 ms against 73-82 ms on the drain alone,
 * README "Overhead"), so the drain writes those itself. The cycle's last
 * checkpoint is written by the drain too, after the one in flight: handing
 * it over would only add a wake-up (~15 us here) to every small cycle. So
 * the thread starts with the first cycle of more than 1 MiB into a .gz, and
 * every cycle ends with the file written, a fork() finding the thread idle
 * and the drain reading the file's state only then. Where the thread cannot
 * be started, the drain writes itself; a cycle on another thread writes
 * itself too, unless the thread runs.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>

#include "inject/shim.h"
#include "internal.h"
#include "writer.h"

static void swap(struct jbuf *a, struct jbuf *b)
{
	struct jbuf t = *a;

	*a = *b;
	*b = t;
}

static int write_job(const struct jbuf *ev, const struct jbuf *trailer, bool final)
{
	int err = (final ? out__finish : out__commit)(&W.out, ev->p, ev->len, trailer->p,
						       trailer->len);

	atomic_fetch_add_explicit(&W.progress, 1, memory_order_relaxed);
	return err;
}

static void *outq_main(void *arg)
{
	struct outq *q = &W.q;
	sigset_t all;

	lifecycle__thread_up();
	/* signals meant for the program go to its threads, not ours */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	/* its own name (a thread starts with its creator's: the drain's) */
	prctl(PR_SET_NAME, "gputrace-write", 0, 0, 0);
	gt_in_tracer = 1;
	pthread_mutex_lock(&q->lock);
	for (;;) {
		while (!q->busy)
			pthread_cond_wait(&q->wake, &q->lock);
		pthread_mutex_unlock(&q->lock);
		int err = write_job(&q->ev, &q->trailer, q->final);
		pthread_mutex_lock(&q->lock);
		q->err = err;
		q->busy = false;
		pthread_cond_broadcast(&q->done);
	}
	return NULL;
}

int outq__wait(void)
{
	struct outq *q = &W.q;
	int err;

	if (!q->started)
		return 0;
	pthread_mutex_lock(&q->lock);
	while (q->busy)
		pthread_cond_wait(&q->done, &q->lock);
	err = q->err;
	q->err = 0;
	pthread_mutex_unlock(&q->lock);
	return err;
}

int outq__submit(struct jbuf *ev, struct jbuf *trailer, bool final, bool behind)
{
	struct outq *q = &W.q;
	int err = outq__wait();

	if (err)
		return err;
	/* only compression pays for the hand-over (see above) */
	behind = behind && W.out.gz;
	/* started by the drain thread only: it inherits the drain's mask (no
	 * signal of the program's ever lands on it), and a cycle run by a
	 * program's thread (no drain thread yet, a fatal signal's handler)
	 * starts no thread */
	if (behind && !q->started && !q->no_thread && writer__is_drain_thread()) {
		pthread_mutex_init(&q->lock, NULL);
		pthread_cond_init(&q->wake, NULL);
		pthread_cond_init(&q->done, NULL);
		q->started = !lifecycle__spawn(&q->thread, outq_main);
		q->no_thread = !q->started;
	}
	/* written here: from the caller's buffers, so a process whose thread
	 * never starts (a plain file) holds one JSON buffer, not two */
	if (!behind || !q->started)
		return write_job(ev, trailer, final);
	swap(&q->ev, ev);
	swap(&q->trailer, trailer);
	ev->len = 0;
	q->final = final;
	pthread_mutex_lock(&q->lock);
	q->busy = true;
	pthread_cond_signal(&q->wake);
	pthread_mutex_unlock(&q->lock);
	return 0;
}
