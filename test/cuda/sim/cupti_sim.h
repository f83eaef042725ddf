/* SPDX-License-Identifier: MIT */
/*
 * libcupti.so.13 (simulated) internals, shared by its files:
 *   cupti_core.c      init, versions, results, subscribers, callbacks, finalize
 *   cupti_activity.c  activity kinds, buffers, records, flushing, the worker thread
 *   cupti_clock.c     CUPTI's clock, the timestamp callback, GPU->CPU conversion
 *   cupti_profiler.c  the host profiler and the range profiler (per-kernel metrics)
 * CUPTI's one internal lock (C.lock) guards everything below; it is held
 * while the client's buffer callbacks run, as in the real library.
 */
#ifndef CUDA_SIM_CUPTI_H
#define CUDA_SIM_CUPTI_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

#include <cupti.h>

#include "sim.h"

#define CS_HIDDEN __attribute__((visibility("hidden")))

struct cs_buf;

/* Per application thread (never freed: threads are few). */
struct cs_thread {
	pid_t tid;
	uint64_t pthread_id;
	struct cs_buf *buf;          /* current activity buffer, NULL if none */
	uint64_t ext[CUPTI_EXTERNAL_CORRELATION_KIND_SIZE][16]; /* pushed external ids */
	unsigned next[CUPTI_EXTERNAL_CORRELATION_KIND_SIZE];
	struct cs_thread *next_thread;
};

struct cs_state {
	pthread_mutex_t lock;
	bool initialized;
	const struct sim_tools *tools; /* NULL: no (simulated) driver */
	/* the one subscriber */
	bool subscribed;
	unsigned generation;          /* handles of earlier subscribers are stale */
	CUpti_CallbackFunc callback;
	void *userdata;
	char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN];
	uint64_t enabled[CUPTI_CB_DOMAIN_SIZE][16]; /* callback ids, 1024 per domain */
	/* activity */
	CUpti_BuffersCallbackRequestFunc requested;
	CUpti_BuffersCallbackCompleteFunc completed;
	uint64_t kinds;               /* enabled CUpti_ActivityKind bits */
	CUpti_TimestampCallbackFunc timestamp;
	CUpti_ActivityThreadIdType tid_type;
	uint32_t flush_period_ms;
	size_t dropped;
	struct cs_thread *threads;
};

extern CS_HIDDEN struct cs_state C;
extern CS_HIDDEN unsigned cs_flush_us; /* CUDA_SIM_FLUSH_US */
/* the thread is inside a buffer callback / the timestamp callback */
extern CS_HIDDEN __thread int cs_in_buffer_callback, cs_in_timestamp;

/* ---- cupti_core.c ---- */
/* First thing in every API function: the lock-taking ones are forbidden in
 * a buffer or timestamp callback (abort, naming the call). */
CS_HIDDEN void cs_entry(const char *fn, bool takes_lock);
CS_HIDDEN void cs_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
CS_HIDDEN void cs_log(const char *fn, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Load the driver's tools table and attach (lock held). */
CS_HIDDEN CUptiResult cs_init_locked(void);
CS_HIDDEN struct cs_thread *cs_thread_self(void); /* lock held */
CS_HIDDEN uint32_t cs_thread_id(struct cs_thread *t);

/* ---- cupti_activity.c ---- */
CS_HIDDEN void cs_activity_api(struct sim_call *c, int site);
/* no_times: its record is completed with start = end = 0 */
CS_HIDDEN void cs_activity_work(const struct sim_work *w, bool no_times);
CS_HIDDEN void cs_activity_graph(const struct sim_graph_run *g);
CS_HIDDEN void cs_activity_sync(struct sim_sync *s, int site);
CS_HIDDEN void cs_activity_forget(void); /* finalize: drop buffers and records */
CS_HIDDEN void cs_worker_forget(void);   /* fork child: no worker thread */
CS_HIDDEN void cs_worker_fork_prepare(void); /* fork: the worker is idle throughout */
CS_HIDDEN void cs_worker_fork_parent(void);
CS_HIDDEN bool cs_kind_on(CUpti_ActivityKind k);

/* ---- cupti_profiler.c ---- */
/* A kernel queued: a range for its context's started range profiler. *no_times: an
 * auto range in kernel replay holds it, and its record has no timestamps; true when
 * the profiler runs a kernel of its own after it (*own, for its record). */
CS_HIDDEN bool cs_range_work(const struct sim_work *w, bool *no_times, struct sim_work *own);
/* when the profiler's own kernels on a context end (host ns; 0: none) */
CS_HIDDEN uint64_t cs_range_busy_until(uint32_t context_id);

/* ---- cupti_clock.c ---- */
/* CUPTI's CPU timestamp now: the client's timestamp callback if registered,
 * else CLOCK_REALTIME (as the simulated driver reports it). */
CS_HIDDEN uint64_t cs_now(void);
/* A GPU event at a host time (CLOCK_MONOTONIC_RAW), on CUPTI's clock:
 * the device's timestamp, converted by linear interpolation between
 * calibration pairs (lock held). */
CS_HIDDEN uint64_t cs_gpu_time(uint64_t host_ns, uint64_t started);
/* Take a (device, CPU) calibration pair, unless one is under 100 ms old
 * (lock held). */
CS_HIDDEN void cs_calibrate(void);
CS_HIDDEN void cs_clock_forget(void);

#endif
