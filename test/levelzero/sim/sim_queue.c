/* Command queues and command lists. The device has three engines (compute 0.0 and 0.1,
 * copy 1.0); every queue and immediate list is a stream of commands on the engine of its
 * (ordinal, index). An engine runs one command at a time, as hardware does: streams on
 * the same engine take turns, streams on different engines run side by side (see the
 * contract in sim_driver.c). */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

static const uint32_t queues_per_group[SIM_QUEUE_GROUPS] = { 2, 1 };
static struct sim_engine engines[SIM_ENGINES];	/* sim_lock */
static uint64_t submit_seq;			/* sim_lock */
unsigned sim_napping;				/* sim_lock: engines napping */

static struct sim_engine *engine_of(uint32_t ordinal, uint32_t index)
{
	return &engines[ordinal == 0 ? index : 2];
}

/* ---- commands ---- */
static void cmd_free_locked(struct sim_cmd *c)
{
	for (uint32_t i = 0; i < c->nwait; i++)
		sim_cb_put_locked(c->wait[i].cb);
	for (uint32_t i = 0; i < c->nquery; i++)
		sim_cb_put_locked(c->query[i].cb);
	sim_cb_put_locked(c->signal_cb);
	free(c->wait);
	free(c->query);
	free(c->offsets);
	free(c);
}

/* An array of n events to wait on or query, with no state taken yet. */
static struct sim_wait *waits_new(uint32_t n, struct sim_event *const *events,
				  const struct sim_wait *from)
{
	struct sim_wait *w = n ? calloc(n, sizeof(*w)) : NULL;

	for (uint32_t i = 0; w && i < n; i++) {
		w[i].ev = events ? events[i] : from[i].ev;
		w[i].serial = events ? sim_obj_serial(events[i]) : from[i].serial;
	}
	return w;
}

static void cmd_chain_free_locked(struct sim_cmd *c)
{
	while (c) {
		struct sim_cmd *next = c->next;

		cmd_free_locked(c);
		c = next;
	}
}

static void cmd_chain_free(struct sim_cmd *c)
{
	pthread_mutex_lock(&sim_lock);
	cmd_chain_free_locked(c);
	pthread_mutex_unlock(&sim_lock);
}

/* A copy of a recorded command, without the state submission gives it. */
static struct sim_cmd *cmd_clone(const struct sim_cmd *proto)
{
	struct sim_cmd *c = malloc(sizeof(*c));

	if (!c)
		return NULL;
	*c = *proto;
	c->next = NULL;
	c->signal_cb = NULL;
	c->wait = waits_new(proto->nwait, NULL, proto->wait);
	c->query = waits_new(proto->nquery, NULL, proto->query);
	c->offsets = NULL;
	if (proto->offsets && (c->offsets = malloc(proto->nquery * sizeof(size_t))))
		memcpy(c->offsets, proto->offsets, proto->nquery * sizeof(size_t));
	if ((proto->nwait && !c->wait) || (proto->nquery && !c->query) ||
	    (proto->offsets && !c->offsets)) {
		free(c->wait);
		free(c->query);
		free(c->offsets);
		free(c);
		return NULL;
	}
	return c;
}

/*
 * sim_lock held. The command is submitted: its waits on counter-based events take the
 * events' states as they are now, then its own counter-based signal event moves to a new
 * state it will complete (in that order: a command may wait on the event it signals).
 */
static void waits_take_locked(struct sim_wait *w, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		if (!sim_obj_same_locked(w[i].ev, SIM_K_EVENT, w[i].serial))
			continue;
		w[i].host_timestamps = w[i].ev->host_timestamps;
		if (w[i].ev->counter_based) {
			w[i].counter_based = true;
			w[i].cb = sim_cb_ref_locked(w[i].ev->cb);
		}
	}
}

static void cmd_submit_locked(struct sim_cmd *c)
{
	waits_take_locked(c->wait, c->nwait);
	waits_take_locked(c->query, c->nquery);
	if (c->signal && sim_obj_same_locked(c->signal, SIM_K_EVENT, c->signal_serial) &&
	    c->signal->counter_based) {
		struct sim_cb_state *st = sim_cb_new_locked();

		sim_cb_put_locked(c->signal->cb);
		c->signal->cb = st;
		c->signal_cb = sim_cb_ref_locked(st);
		c->signal = NULL; /* the event may be destroyed before this completes */
	}
}

/* Does the value at a wait on memory's address compare with its data as asked? */
static bool mem_wait_done(const struct sim_cmd *c)
{
	uint64_t v = c->mem_64 ? __atomic_load_n((uint64_t *)c->dst, __ATOMIC_ACQUIRE)
			       : __atomic_load_n((uint32_t *)c->dst, __ATOMIC_ACQUIRE);

	switch (c->mem_action) {
	case ZEX_WAIT_ON_MEMORY_FLAG_EQUAL: return v == c->mem_data;
	case ZEX_WAIT_ON_MEMORY_FLAG_NOT_EQUAL: return v != c->mem_data;
	case ZEX_WAIT_ON_MEMORY_FLAG_GREATER_THAN: return v > c->mem_data;
	case ZEX_WAIT_ON_MEMORY_FLAG_GREATER_THAN_EQUAL: return v >= c->mem_data;
	case ZEX_WAIT_ON_MEMORY_FLAG_LESSER_THAN: return v < c->mem_data;
	default: return v <= c->mem_data;
	}
}

static bool cmd_waits_done_locked(const struct sim_cmd *c, uint64_t *ready_ns)
{
	/* Memory is polled (a host write wakes nobody): ready when first seen so. */
	if (c->op == SIM_OP_WAIT_MEM) {
		uint64_t now = sim_host_ns();

		if (!mem_wait_done(c))
			return false;
		if (now > *ready_ns)
			*ready_ns = now;
	}
	for (uint32_t i = 0; i < c->nwait; i++) {
		const struct sim_wait *w = &c->wait[i];
		uint64_t at;

		if (w->counter_based) {
			if (w->cb && !w->cb->done)
				return false;
			at = w->cb ? w->cb->end_ns : 0;
		} else {
			if (!sim_obj_same_locked(w->ev, SIM_K_EVENT, w->serial) ||
			    !w->ev->signaled)
				return false;
			at = w->ev->signal_ns;
		}
		if (at > *ready_ns)
			*ready_ns = at;
	}
	return true;
}

/* sim_lock held. One event's kernel timestamps as a query command writes them: those of
 * the state it was submitted with; all ones when it had not completed (undefined). */
static void query_one_locked(const struct sim_wait *w, ze_kernel_timestamp_result_t *out)
{
	const struct sim_event *ev = w->ev;
	uint64_t start, end;
	bool done;

	if (w->counter_based) {
		done = w->cb && w->cb->done;
		start = done ? w->cb->start_ns : 0;
		end = done ? w->cb->end_ns : 0;
	} else if (sim_obj_same_locked(ev, SIM_K_EVENT, w->serial)) {
		done = ev->signaled;
		start = ev->start_ns;
		end = ev->end_ns;
	} else {
		done = false;
		start = end = 0;
	}
	if (!done) {
		memset(out, 0xff, sizeof(*out));
		return;
	}
	out->global.kernelStart = w->host_timestamps ? start : sim_dev_ticks(start);
	out->global.kernelEnd = w->host_timestamps ? end : sim_dev_ticks(end);
	out->context = out->global;
}

/* Moves the bytes; the simulated duration was fixed at append time. */
static void cmd_execute(const struct sim_cmd *c, uint64_t start_ns)
{
	switch (c->op) {
	case SIM_OP_QUERY:
		pthread_mutex_lock(&sim_lock);
		for (uint32_t i = 0; i < c->nquery; i++) {
			size_t off = c->offsets ? c->offsets[i]
						: i * sizeof(ze_kernel_timestamp_result_t);

			query_one_locked(&c->query[i], (ze_kernel_timestamp_result_t *)
					 ((uint8_t *)c->dst + off));
		}
		pthread_mutex_unlock(&sim_lock);
		break;
	case SIM_OP_TIMESTAMP:
		*(uint64_t *)c->dst = sim_dev_ticks(start_ns);
		break;
	case SIM_OP_WRITE_MEM:
		__atomic_store_n((uint64_t *)c->dst, c->mem_data, __ATOMIC_RELEASE);
		break;
	case SIM_OP_COPY:
		memmove(c->dst, c->src, c->size);
		break;
	case SIM_OP_COPY_REGION:
		for (uint64_t i = 0; i < sim_region_rows(&c->src_region); i++)
			memcpy((void *)sim_region_row(c->dst, &c->dst_region, i),
			       (const void *)sim_region_row(c->src, &c->src_region, i),
			       c->src_region.r.width);
		break;
	case SIM_OP_FILL:
		for (size_t off = 0; off < c->size; off += c->pattern_size) {
			size_t n = c->size - off < c->pattern_size ? c->size - off : c->pattern_size;

			memcpy((uint8_t *)c->dst + off, c->pattern, n);
		}
		break;
	case SIM_OP_KERNEL:
	case SIM_OP_WAIT_MEM:
	case SIM_OP_NOP:
	case SIM_OP_QUERY_BEGIN:
	case SIM_OP_QUERY_END:
		break;
	}
}

/* ZE_SIM_SUBMIT_STALL_US=US[/N]: every Nth (default every) kernel launched on an
 * immediate list is submitted US later than asked, as by a thread preempted inside the
 * driver's call (0: none). ZE_SIM_EXECUTE_STALL_US=US[/N]: every Nth run of command lists
 * on a queue returns US after it submitted them, as by a thread preempted on its way out
 * of the driver: a run submitted later on the same engine can return first. */
static struct sim_stall submit_stall = { "ZE_SIM_SUBMIT_STALL_US", 0, 1 },
			execute_stall = { "ZE_SIM_EXECUTE_STALL_US", 0, 1 };

/* ---- engines ---- */

/* sim_lock held. The head that runs next on e: the earliest runnable in simulated time,
 * then the first submitted. */
static struct sim_stream *engine_pick_locked(struct sim_engine *e, uint64_t *ready_out)
{
	struct sim_stream *best = NULL;
	uint64_t best_ready = 0;

	if (e->busy)	/* (a host thread runs one of its commands) */
		return NULL;
	for (struct sim_stream *s = e->streams; s; s = s->next) {
		uint64_t ready;

		if (!s->head || s->busy)
			continue;
		ready = s->head->enqueue_ns;
		if (!cmd_waits_done_locked(s->head, &ready))
			continue;
		if (!best || ready < best_ready ||
		    (ready == best_ready && s->head->seq < best->head->seq)) {
			best = s;
			best_ready = ready;
		}
	}
	*ready_out = best_ready;
	return best;
}

/* Is a stream of e held by a wait on memory? Then the engine looks again soon. */
static bool engine_polls_memory_locked(const struct sim_engine *e)
{
	for (const struct sim_stream *s = e->streams; s; s = s->next)
		if (s->head && !s->busy && s->head->op == SIM_OP_WAIT_MEM)
			return true;
	return false;
}

/* sim_lock held. When a head runnable from `ready` starts on e: after e's last command. */
static uint64_t engine_start_ns(const struct sim_engine *e, uint64_t ready)
{
	return ready > e->last_end_ns ? ready : e->last_end_ns;
}

/* An indirect launch's duration, from the group counts in device memory now: a number of
 * kernels past those appended is a program's bug no device survives. */
static uint64_t indirect_duration(const struct sim_cmd *c)
{
	uint32_t n = c->indirect_num ? __atomic_load_n(c->indirect_num, __ATOMIC_ACQUIRE) : 1;
	uint64_t ns = 0;

	if (n > c->nkernels) {
		fprintf(stderr, "ze_sim: FATAL: zeCommandListAppendLaunchMultipleKernelsIndirect: "
				"its count buffer says %u kernels, more than the %u appended\n",
			n, c->nkernels);
		abort();
	}
	for (uint32_t i = 0; i < n; i++)
		ns += sim_kernel_duration(&c->indirect_counts[i], c->sizes[i]);
	return ns;
}

/* sim_lock held. A command's duration; an indirect one's read once, when it is first
 * asked for (at its start, or when a waiting thread asks whether it is due). */
static uint64_t cmd_duration_locked(struct sim_cmd *c)
{
	if (c->indirect_counts && !c->indirect_read) {
		c->duration_ns = indirect_duration(c);
		c->indirect_read = true;
	}
	return c->duration_ns;
}

/*
 * sim_lock held. Runs stream s's head on engine e (the lock is let go meanwhile),
 * as the engine's worker or as a host thread that waits (sim_engines_run_due_locked).
 * Returns once the command has completed; waiters are not told yet.
 */
static void engine_run_locked(struct sim_engine *e, struct sim_stream *s, uint64_t ready)
{
	struct sim_cmd *c = s->head;
	uint64_t start, end;

	s->busy = true;
	start = engine_start_ns(e, ready);
	end = start + cmd_duration_locked(c);
	e->last_end_ns = end;
	e->busy = true;
	e->busy_end = end;
	if (sim_metrics_enabled || sim_sysman_enabled)
		sim_metrics_started_locked(c, start, end);
	pthread_mutex_unlock(&sim_lock);

	cmd_execute(c, start);
	sim_sleep_until(end);

	pthread_mutex_lock(&sim_lock);
	s->busy = false;
	e->busy = false;
	e->last_done_ns = sim_host_ns();
	if (c->op == SIM_OP_QUERY_BEGIN || c->op == SIM_OP_QUERY_END)
		sim_metrics_done_locked(c, start, end);
	s->head = c->next;
	if (!s->head)
		s->tail = NULL;
	s->completed++;
	if (c->reset && sim_obj_same_locked(c->reset, SIM_K_EVENT, c->reset_serial))
		c->reset->signaled = false;
	if (c->signal_cb) {
		c->signal_cb->done = true;
		c->signal_cb->start_ns = start;
		c->signal_cb->end_ns = end;
	} else if (c->signal && sim_obj_same_locked(c->signal, SIM_K_EVENT, c->signal_serial)) {
		sim_event_signal_locked(c->signal, start, end);
	}
	if (c->fence && sim_obj_same_locked(c->fence, SIM_K_FENCE, c->fence_serial))
		c->fence->signaled = true;
	cmd_free_locked(c);
}

/*
 * sim_lock held. An engine that ran something lately naps instead of sleeping until
 * woken, as a GPU's command streamer polls its ring for a while after work (Intel's
 * direct submission) before it idles and needs a doorbell: an append while it naps
 * wakes nobody. (A wake-up per append made each nanosecond a host thread spent
 * between appends cost it about 2.6 on a virtual machine: the wake's interrupt and
 * the worker taking the lock from under the next append.)
 */
static void engine_idle_locked(struct sim_engine *e)
{
	uint64_t now = sim_host_ns();

	if (engine_polls_memory_locked(e)) {
		sim_cond_nap_until(now + SIM_MEM_POLL_NS);
	} else if (now - e->last_done_ns < SIM_NAP_WINDOW_NS) {
		e->napping = true;
		sim_napping++;
		sim_cond_nap_until(now + SIM_NAP_NS);
		sim_napping--;
		e->napping = false;
	} else {
		pthread_cond_wait(&sim_cond, &sim_lock);
	}
}

static void *engine_worker(void *arg)
{
	struct sim_engine *e = arg;

	pthread_mutex_lock(&sim_lock);
	for (;;) {
		uint64_t ready;
		struct sim_stream *s = engine_pick_locked(e, &ready);

		if (!s) {
			engine_idle_locked(e);
			continue;
		}
		engine_run_locked(e, s, ready);
		/* Outside the lock: glibc's broadcast waits for the waiters it already woke
		 * to leave, and a host thread woken inside pthread_cond_wait may be in a
		 * signal handler that waits for a thread that needs this lock (gputrace's
		 * last cycle after a SIGTERM, querying the program's events): under the
		 * lock that was a deadlock until the handler gave up. */
		pthread_mutex_unlock(&sim_lock);
		pthread_cond_broadcast(&sim_cond);
		pthread_mutex_lock(&sim_lock);
	}
	return NULL;
}

/*
 * sim_lock held, by a host thread about to wait: it runs the commands of idle engines
 * that are due (their simulated end has passed) itself, as a napping engine would on
 * its next look, rather than wait for that look. True when it completed any (the
 * caller looks at what it waits for again).
 */
bool sim_engines_run_due_locked(void)
{
	bool ran = false;

	for (unsigned i = 0; i < SIM_ENGINES; i++) {
		struct sim_engine *e = &engines[i];
		uint64_t ready;
		struct sim_stream *s;

		while (e->running && (s = engine_pick_locked(e, &ready)) &&
		       engine_start_ns(e, ready) + cmd_duration_locked(s->head) <= sim_host_ns()) {
			engine_run_locked(e, s, ready);
			ran = true;
		}
	}
	if (ran)
		pthread_cond_broadcast(&sim_cond);
	return ran;
}

/* sim_lock held. Workers start lazily: after fork() the child has none. */
static ze_result_t engine_ensure_worker_locked(struct sim_engine *e)
{
	if (e->running)
		return ZE_RESULT_SUCCESS;
	if (pthread_create(&e->thread, NULL, engine_worker, e) != 0)
		return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
	pthread_detach(e->thread);
	e->running = true;
	return ZE_RESULT_SUCCESS;
}

static void stream_init(struct sim_stream *s, uint32_t ordinal, uint32_t index)
{
	memset(s, 0, sizeof(*s));
	s->engine = engine_of(ordinal, index);
	pthread_mutex_lock(&sim_lock);
	s->next = s->engine->streams;
	s->engine->streams = s;
	pthread_mutex_unlock(&sim_lock);
}

/* sim_lock held. Submits a chain of n commands, all runnable from `now`, in order. */
static ze_result_t stream_submit_locked(struct sim_stream *s, struct sim_cmd *first, uint64_t n,
					uint64_t now)
{
	struct sim_cmd *last = first;

	for (struct sim_cmd *c = first; c; c = c->next) {
		cmd_submit_locked(c);
		c->enqueue_ns = now;
		c->seq = ++submit_seq;
		last = c;
	}
	if (s->tail)
		s->tail->next = first;
	else
		s->head = first;
	s->tail = last;
	s->submitted += n;
	if (!s->engine->napping)	/* (a napping engine looks by itself) */
		pthread_cond_broadcast(&sim_cond);
	return engine_ensure_worker_locked(s->engine);
}

/* sim_lock held. Waits until everything submitted to s so far has completed. */
static ze_result_t stream_wait_locked(struct sim_stream *s, uint64_t deadline)
{
	uint64_t target = s->submitted;

	while (s->completed < target) {
		ze_result_t r = engine_ensure_worker_locked(s->engine);

		if (r)
			return r;
		if (!sim_cond_wait_until(deadline))
			return ZE_RESULT_NOT_READY;
	}
	return ZE_RESULT_SUCCESS;
}

/* Runs what can still run, drops what waits on events nobody signalled, leaves the engine. */
static void stream_fini(struct sim_stream *s)
{
	struct sim_stream **link;

	pthread_mutex_lock(&sim_lock);
	while (s->head) {
		uint64_t ready = 0;

		if (!s->busy && !cmd_waits_done_locked(s->head, &ready)) {
			cmd_chain_free_locked(s->head);
			s->head = s->tail = NULL;
			break;
		}
		if (engine_ensure_worker_locked(s->engine))
			break;
		pthread_cond_wait(&sim_cond, &sim_lock);
	}
	for (link = &s->engine->streams; *link; link = &(*link)->next) {
		if (*link == s) {
			*link = s->next;
			break;
		}
	}
	if (s->head)
		cmd_chain_free_locked(s->head);
	s->head = s->tail = NULL;
	pthread_mutex_unlock(&sim_lock);
}

ze_result_t sim_device_synchronize(ze_device_handle_t h)
{
	ze_result_t r = sim_obj_check(h, SIM_K_DEVICE);

	if (r)
		return r;
	pthread_mutex_lock(&sim_lock);
	sim_signal_in_wait_locked(UINT64_MAX);
	for (int i = 0; i < SIM_ENGINES && !r; i++) {
		for (struct sim_stream *s = engines[i].streams; s && !r; s = s->next)
			r = stream_wait_locked(s, UINT64_MAX);
	}
	pthread_mutex_unlock(&sim_lock);
	return r;
}

/* ---- fork: worker threads do not survive it ---- */
static void fork_prepare(void)
{
	pthread_mutex_lock(&sim_lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&sim_lock);
}

static void fork_child(void)
{
	sim_lock_setup();
	sim_napping = 0;
	for (int i = 0; i < SIM_ENGINES; i++) {
		engines[i].running = false;	/* recreated on the next submit or synchronize */
		engines[i].napping = false;
		for (struct sim_stream *s = engines[i].streams; s; s = s->next)
			s->busy = false;	/* a head the parent's worker ran starts over */
	}
}

__attribute__((constructor)) static void sim_queue_setup(void)
{
	sim_stall_parse(&submit_stall);
	sim_stall_parse(&execute_stall);
	sim_signal_in_wait_setup();
	sim_lock_setup();
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* ---- command queues ---- */
static ze_result_t check_queue_desc(ze_context_handle_t ctx, ze_device_handle_t dev,
				    const ze_command_queue_desc_t *desc, void *out)
{
	ze_result_t r = sim_check_context_device(ctx, dev);

	if (r)
		return r;
	SIM_NOT_NULL(desc);
	SIM_NOT_NULL(out);
	if (desc->ordinal >= SIM_QUEUE_GROUPS || desc->index >= queues_per_group[desc->ordinal])
		return ZE_RESULT_ERROR_INVALID_ARGUMENT;
	/* EXPLICIT_ONLY and bit 1, which means IN_ORDER (for immediate lists) from 1.7. */
	if (desc->mode > ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS ||
	    desc->priority > ZE_COMMAND_QUEUE_PRIORITY_PRIORITY_HIGH || desc->flags > 0x3)
		return ZE_RESULT_ERROR_INVALID_ENUMERATION;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t queue_create(ze_context_handle_t ctx, ze_device_handle_t dev,
				const ze_command_queue_desc_t *desc, ze_command_queue_handle_t *out)
{
	ze_result_t r = check_queue_desc(ctx, dev, desc, out);
	struct sim_queue *q;

	if (r)
		return r;
	q = calloc(1, sizeof(*q));
	if (!q)
		return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
	q->ordinal = desc->ordinal;
	q->index = desc->index;
	q->mode = desc->mode;
	stream_init(&q->stream, q->ordinal, q->index);
	sim_obj_register(&q->obj, SIM_K_QUEUE);
	*out = (ze_command_queue_handle_t)q;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t queue_destroy(ze_command_queue_handle_t h)
{
	SIM_HANDLE(queue, q, h, SIM_K_QUEUE);

	sim_obj_unregister(&q->obj);
	stream_fini(&q->stream);
	free(q);
	return ZE_RESULT_SUCCESS;
}

static ze_result_t queue_synchronize(ze_command_queue_handle_t h, uint64_t timeout_ns)
{
	SIM_HANDLE(queue, q, h, SIM_K_QUEUE);
	uint64_t deadline = sim_deadline(timeout_ns);
	ze_result_t r;

	pthread_mutex_lock(&sim_lock);
	sim_signal_in_wait_locked(timeout_ns);
	r = stream_wait_locked(&q->stream, deadline);
	pthread_mutex_unlock(&sim_lock);
	return r;
}

/* Lists that may run on an engine of this ordinal: closed, regular, of the same ordinal. */
static ze_result_t check_lists(uint32_t n, ze_command_list_handle_t *lists, uint32_t ordinal)
{
	ze_result_t r;

	SIM_NOT_NULL(lists);
	if (n == 0)
		return ZE_RESULT_ERROR_INVALID_SIZE;
	for (uint32_t i = 0; i < n; i++) {
		struct sim_list *l = (struct sim_list *)lists[i];

		if ((r = sim_obj_check(l, SIM_K_LIST)))
			return r;
		if (l->immediate || !l->closed)
			return ZE_RESULT_ERROR_INVALID_ARGUMENT;
		if (l->ordinal != ordinal)
			return ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE;
	}
	return ZE_RESULT_SUCCESS;
}

/* Copies of the commands recorded in lists[0..n), chained at *tail; counted in *count.
 * The engine runs copies: the lists may be reset or destroyed once the call returns. */
static ze_result_t clone_lists(uint32_t n, ze_command_list_handle_t *lists,
			       struct sim_cmd ***tail, uint64_t *count)
{
	for (uint32_t i = 0; i < n; i++) {
		for (struct sim_cmd *p = ((struct sim_list *)lists[i])->head; p; p = p->next) {
			if (!(**tail = cmd_clone(p)))
				return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
			*tail = &(**tail)->next;
			(*count)++;
		}
	}
	return ZE_RESULT_SUCCESS;
}

static ze_result_t queue_execute(ze_command_queue_handle_t h, uint32_t nlists,
				 ze_command_list_handle_t *lists, ze_fence_handle_t fh)
{
	SIM_HANDLE(queue, q, h, SIM_K_QUEUE);
	struct sim_cmd *first = NULL, **tail = &first, fence_cmd = { .op = SIM_OP_NOP };
	uint64_t n = 0;
	ze_result_t r;

	if ((r = check_lists(nlists, lists, q->ordinal)))
		return r;
	if (fh) {
		if ((r = sim_obj_check(fh, SIM_K_FENCE)))
			return r;
		if (((struct sim_fence *)fh)->queue != q)
			return ZE_RESULT_ERROR_INVALID_ARGUMENT;
		fence_cmd.fence = (struct sim_fence *)fh;
		fence_cmd.fence_serial = sim_obj_serial(fh);
	}
	r = clone_lists(nlists, lists, &tail, &n);
	if (r == ZE_RESULT_SUCCESS && fence_cmd.fence) {
		if ((*tail = cmd_clone(&fence_cmd)) != NULL)
			n++;
		else
			r = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
	}
	if (r || !first) {
		cmd_chain_free(first);
		return r;
	}
	pthread_mutex_lock(&sim_lock);
	r = stream_submit_locked(&q->stream, first, n, sim_host_ns());
	if (!r && q->mode == ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS)
		r = stream_wait_locked(&q->stream, UINT64_MAX);
	pthread_mutex_unlock(&sim_lock);
	if (!r)
		sim_stall_maybe(&execute_stall);
	return r;
}

void sim_fill_command_queue(ze_command_queue_dditable_t *t)
{
	t->pfnCreate = queue_create;
	t->pfnDestroy = queue_destroy;
	t->pfnExecuteCommandLists = queue_execute;
	t->pfnSynchronize = queue_synchronize;
}

/* ---- command lists ---- */
static ze_result_t list_create(ze_context_handle_t ctx, ze_device_handle_t dev,
			       const ze_command_list_desc_t *desc, ze_command_list_handle_t *out)
{
	ze_result_t r = sim_check_context_device(ctx, dev);
	struct sim_list *l;

	if (r)
		return r;
	SIM_NOT_NULL(desc);
	SIM_NOT_NULL(out);
	if (desc->commandQueueGroupOrdinal >= SIM_QUEUE_GROUPS)
		return ZE_RESULT_ERROR_INVALID_ARGUMENT;
	/* Bits 0-2, and bit 3, which means IN_ORDER from 1.7. */
	if (desc->flags > 0xf)
		return ZE_RESULT_ERROR_INVALID_ENUMERATION;
	if (SIM_HAS(7) && (desc->flags & ZE_COMMAND_LIST_FLAG_IN_ORDER) &&
	    (desc->flags & ZE_COMMAND_LIST_FLAG_RELAXED_ORDERING))
		return ZE_RESULT_ERROR_INVALID_ARGUMENT;
	l = calloc(1, sizeof(*l));
	if (!l)
		return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
	l->context = (struct sim_context *)ctx;
	l->ordinal = desc->commandQueueGroupOrdinal;
	l->in_order = SIM_HAS(7) && (desc->flags & ZE_COMMAND_LIST_FLAG_IN_ORDER);
	l->mutable_list = SIM_HAS(9) && sim_list_desc_mutable(desc);
	sim_obj_register(&l->obj, SIM_K_LIST);
	*out = (ze_command_list_handle_t)l;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t list_create_immediate(ze_context_handle_t ctx, ze_device_handle_t dev,
					 const ze_command_queue_desc_t *desc,
					 ze_command_list_handle_t *out)
{
	ze_result_t r = check_queue_desc(ctx, dev, desc, out);
	struct sim_list *l;

	if (r)
		return r;
	l = calloc(1, sizeof(*l));
	if (!l)
		return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
	l->context = (struct sim_context *)ctx;
	l->ordinal = desc->ordinal;
	l->index = desc->index;
	l->immediate = true;
	l->in_order = SIM_HAS(7) && (desc->flags & ZE_COMMAND_QUEUE_FLAG_IN_ORDER);
	l->synchronous = desc->mode == ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS;
	stream_init(&l->stream, l->ordinal, l->index);
	sim_obj_register(&l->obj, SIM_K_LIST);
	*out = (ze_command_list_handle_t)l;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t list_destroy(ze_command_list_handle_t h)
{
	SIM_HANDLE(list, l, h, SIM_K_LIST);

	sim_obj_unregister(&l->obj);
	if (l->immediate)
		stream_fini(&l->stream);
	cmd_chain_free(l->head);
	sim_mutable_forget(l);
	free(l);
	return ZE_RESULT_SUCCESS;
}

static ze_result_t list_close(ze_command_list_handle_t h)
{
	SIM_HANDLE(list, l, h, SIM_K_LIST);

	if (!l->immediate)
		l->closed = true;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t list_reset(ze_command_list_handle_t h)
{
	SIM_HANDLE(list, l, h, SIM_K_LIST);
	ze_result_t r = ZE_RESULT_SUCCESS;

	if (l->immediate) {
		pthread_mutex_lock(&sim_lock);
		r = stream_wait_locked(&l->stream, UINT64_MAX);
		pthread_mutex_unlock(&sim_lock);
		return r;
	}
	cmd_chain_free(l->head);
	l->head = l->tail = NULL;
	l->closed = false;
	sim_mutable_forget(l);
	return r;
}

static ze_result_t list_host_synchronize(ze_command_list_handle_t h, uint64_t timeout_ns)
{
	SIM_HANDLE(list, l, h, SIM_K_LIST);
	uint64_t deadline = sim_deadline(timeout_ns);
	ze_result_t r;

	if (!l->immediate)
		return ZE_RESULT_ERROR_INVALID_ARGUMENT;
	pthread_mutex_lock(&sim_lock);
	sim_signal_in_wait_locked(timeout_ns);
	r = stream_wait_locked(&l->stream, deadline);
	pthread_mutex_unlock(&sim_lock);
	return r;
}

/* Is this list allowed to signal counter-based event ev? */
ze_result_t sim_check_cb_signal(const struct sim_list *l, const struct sim_event *ev,
				const char *call)
{
	uint32_t need = l->immediate ? ZE_EVENT_COUNTER_BASED_FLAG_IMMEDIATE
				     : ZE_EVENT_COUNTER_BASED_FLAG_NON_IMMEDIATE;

	if (!ev->counter_based)
		return ZE_RESULT_SUCCESS;
	if (!l->in_order)
		return sim_cb_misuse(call, "only in-order lists may signal a counter-based event");
	if (!(ev->cb_flags & need))
		return sim_cb_misuse(call, l->immediate ?
				     "a counter-based event without the IMMEDIATE flag signalled "
				     "by an immediate list" :
				     "a counter-based event without the NON_IMMEDIATE flag signalled "
				     "by a regular list");
	return ZE_RESULT_SUCCESS;
}

static ze_result_t check_events(ze_event_handle_t signal, uint32_t nwait,
				ze_event_handle_t *waits)
{
	ze_result_t r;

	if (signal && (r = sim_obj_check(signal, SIM_K_EVENT)))
		return r;
	if (nwait && !waits)
		return ZE_RESULT_ERROR_INVALID_SIZE;
	for (uint32_t i = 0; i < nwait; i++)
		if ((r = sim_obj_check(waits[i], SIM_K_EVENT)))
			return r;
	return ZE_RESULT_SUCCESS;
}

/* A command with its signal event and waits, not yet submitted. */
static struct sim_cmd *cmd_make(const struct sim_cmd *proto, ze_event_handle_t signal,
				uint32_t nwait, ze_event_handle_t *waits)
{
	struct sim_cmd *c = cmd_clone(proto);

	if (!c)
		return NULL;
	c->signal = (struct sim_event *)signal;
	c->signal_serial = sim_obj_serial(signal);
	c->nwait = nwait;
	free(c->wait);
	c->wait = waits_new(nwait, (struct sim_event *const *)waits, NULL);
	if (nwait && !c->wait) {
		c->nwait = 0;
		cmd_chain_free(c);
		return NULL;
	}
	return c;
}

/* Records (regular list) or submits (immediate list) a chain of n commands. */
static ze_result_t list_submit(struct sim_list *l, struct sim_cmd *first, uint64_t n)
{
	ze_result_t r;

	if (!l->immediate) {
		struct sim_cmd *last = first;

		while (last->next)
			last = last->next;
		if (l->tail)
			l->tail->next = first;
		else
			l->head = first;
		l->tail = last;
		return ZE_RESULT_SUCCESS;
	}
	if (first->op == SIM_OP_KERNEL)
		sim_stall_maybe(&submit_stall);
	pthread_mutex_lock(&sim_lock);
	r = stream_submit_locked(&l->stream, first, n, sim_host_ns());
	if (!r && l->synchronous)
		r = stream_wait_locked(&l->stream, UINT64_MAX);
	pthread_mutex_unlock(&sim_lock);
	return r;
}

/* Records (regular list) or submits (immediate list) one command. */
static ze_result_t list_append(ze_command_list_handle_t h, struct sim_cmd *proto,
			       ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *waits,
			       const char *call)
{
	SIM_HANDLE(list, l, h, SIM_K_LIST);
	struct sim_cmd *c;
	ze_result_t r;

	if ((r = check_events(signal, nwait, waits)))
		return r;
	if (!l->immediate && l->closed)
		return ZE_RESULT_ERROR_INVALID_ARGUMENT;
	if (signal && (r = sim_check_cb_signal(l, (struct sim_event *)signal, call)))
		return r;
	if (!(c = cmd_make(proto, signal, nwait, waits)))
		return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
	if (!l->immediate && c->op == SIM_OP_KERNEL && !c->indirect_counts)
		sim_mutable_take_id(l, c);
	return list_submit(l, c, 1);
}

uint64_t sim_kernel_duration(const ze_group_count_t *count, const uint32_t size[3])
{
	return (uint64_t)count->groupCountX * count->groupCountY * count->groupCountZ * size[0] *
	       size[1] * size[2];
}

static ze_result_t list_append_launch_kernel(ze_command_list_handle_t h, ze_kernel_handle_t kh,
					     const ze_group_count_t *count,
					     ze_event_handle_t signal, uint32_t nwait,
					     ze_event_handle_t *waits)
{
	struct sim_cmd proto = { .op = SIM_OP_KERNEL };
	struct sim_kernel *k = (struct sim_kernel *)kh;
	ze_result_t r = sim_obj_check(h, SIM_K_LIST);

	if (r || (r = sim_obj_check(kh, SIM_K_KERNEL)))
		return r;
	SIM_NOT_NULL(count);
	/* Group size is captured at append time, as on real devices. */
	proto.kernel = k;
	proto.count = *count;
	memcpy(proto.group_size, k->group_size, sizeof(proto.group_size));
	proto.duration_ns = sim_kernel_duration(count, k->group_size);
	return list_append(h, &proto, signal, nwait, waits, "zeCommandListAppendLaunchKernel");
}

uint32_t sim_cooperative_groups(const uint32_t size[3])
{
	uint64_t lanes = (uint64_t)size[0] * size[1] * size[2];

	return (uint32_t)(SIM_EU_LANES / (lanes < SIM_EU_LANES ? lanes : SIM_EU_LANES));
}

/* Every group resident at once, on an engine that runs cooperative kernels (ordinal 0's
 * group has the flag): else one "ze_sim:" line and ZE_RESULT_ERROR_INVALID_ARGUMENT. */
static ze_result_t list_append_launch_cooperative_kernel(ze_command_list_handle_t h,
							 ze_kernel_handle_t kh,
							 const ze_group_count_t *count,
							 ze_event_handle_t signal, uint32_t nwait,
							 ze_event_handle_t *waits)
{
	SIM_HANDLE(list, l, h, SIM_K_LIST);
	struct sim_kernel *k = (struct sim_kernel *)kh;
	ze_result_t r = sim_obj_check(kh, SIM_K_KERNEL);

	if (r)
		return r;
	SIM_NOT_NULL(count);
	if (l->ordinal != 0) {
		fprintf(stderr, "ze_sim: zeCommandListAppendLaunchCooperativeKernel: a list of "
				"ordinal %u, whose group has no COOPERATIVE_KERNELS flag\n", l->ordinal);
		return ZE_RESULT_ERROR_INVALID_ARGUMENT;
	}
	if ((uint64_t)count->groupCountX * count->groupCountY * count->groupCountZ >
	    sim_cooperative_groups(k->group_size)) {
		fprintf(stderr, "ze_sim: zeCommandListAppendLaunchCooperativeKernel: %llu groups, "
				"more than zeKernelSuggestMaxCooperativeGroupCount's %u\n",
			(unsigned long long)count->groupCountX * count->groupCountY *
				count->groupCountZ,
			sim_cooperative_groups(k->group_size));
		return ZE_RESULT_ERROR_INVALID_ARGUMENT;
	}
	return list_append_launch_kernel(h, kh, count, signal, nwait, waits);
}

/* An append the specification forbids: one "ze_sim:" line naming the call and the rule
 * broken, and the error. */
static ze_result_t append_misuse(const char *call, const char *rule, ze_result_t r)
{
	fprintf(stderr, "ze_sim: %s: %s\n", call, rule);
	return r;
}

/* Indirect launches (from the specification): the arguments buffer, and the count buffer
 * of several kernels, are device memory of the list's context, read when the command runs
 * (so the program may write them after appending); each kernel's group size is taken now.
 * Memory the device cannot read, or more kernels than SIM_INDIRECT_MAX: one "ze_sim:" line
 * and ZE_RESULT_ERROR_INVALID_ARGUMENT. */
static ze_result_t list_append_indirect(ze_command_list_handle_t h, uint32_t nkernels,
					ze_kernel_handle_t *kernels, const uint32_t *num,
					const ze_group_count_t *counts, ze_event_handle_t signal,
					uint32_t nwait, ze_event_handle_t *waits, const char *call)
{
	SIM_HANDLE(list, l, h, SIM_K_LIST);
	struct sim_cmd proto = { .op = SIM_OP_KERNEL, .indirect_counts = counts,
				 .indirect_num = num, .nkernels = nkernels };
	bool readable;
	ze_result_t r;

	SIM_NOT_NULL(counts);
	SIM_NOT_NULL(kernels);
	if (!nkernels || nkernels > SIM_INDIRECT_MAX)
		return append_misuse(call, "no kernel, or more than this simulator's 8",
				     ZE_RESULT_ERROR_INVALID_ARGUMENT);
	for (uint32_t i = 0; i < nkernels; i++) {
		if ((r = sim_obj_check(kernels[i], SIM_K_KERNEL)))
			return r;
		proto.kernels[i] = (struct sim_kernel *)kernels[i];
		memcpy(proto.sizes[i], proto.kernels[i]->group_size, sizeof(proto.sizes[i]));
	}
	proto.kernel = proto.kernels[0];
	memcpy(proto.group_size, proto.sizes[0], sizeof(proto.group_size));
	pthread_mutex_lock(&sim_lock);
	readable = sim_mem_owned_locked(counts, nkernels * sizeof(*counts), l->context) &&
		   (!num || sim_mem_owned_locked(num, sizeof(*num), l->context));
	pthread_mutex_unlock(&sim_lock);
	if (!readable)
		return append_misuse(call, "a launch-arguments or count buffer that is not "
					   "memory allocated in the list's context",
				     ZE_RESULT_ERROR_INVALID_ARGUMENT);
	return list_append(h, &proto, signal, nwait, waits, call);
}

static ze_result_t list_append_launch_kernel_indirect(ze_command_list_handle_t h,
						      ze_kernel_handle_t kh,
						      const ze_group_count_t *counts,
						      ze_event_handle_t signal, uint32_t nwait,
						      ze_event_handle_t *waits)
{
	return list_append_indirect(h, 1, &kh, NULL, counts, signal, nwait, waits,
				    "zeCommandListAppendLaunchKernelIndirect");
}

/* One command, one signal event for all the kernels: they run one after another. */
static ze_result_t list_append_launch_multiple_kernels_indirect(
	ze_command_list_handle_t h, uint32_t nkernels, ze_kernel_handle_t *kernels,
	const uint32_t *num, const ze_group_count_t *counts, ze_event_handle_t signal,
	uint32_t nwait, ze_event_handle_t *waits)
{
	SIM_NOT_NULL(num);
	return list_append_indirect(h, nkernels, kernels, num, counts, signal, nwait, waits,
				    "zeCommandListAppendLaunchMultipleKernelsIndirect");
}

/* 1.14: the extension chain (cooperative launch, ...) changes nothing here. */
static ze_result_t list_append_launch_kernel_with_parameters(
	ze_command_list_handle_t h, ze_kernel_handle_t kh, const ze_group_count_t *count,
	const void *next, ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *waits)
{
	return list_append_launch_kernel(h, kh, count, signal, nwait, waits);
}

/* 1.14: group size and arguments come with the launch and last for it only. */
static ze_result_t list_append_launch_kernel_with_arguments(
	ze_command_list_handle_t h, ze_kernel_handle_t kh, const ze_group_count_t count,
	const ze_group_size_t size, void **args, const void *next, ze_event_handle_t signal,
	uint32_t nwait, ze_event_handle_t *waits)
{
	struct sim_cmd proto = { .op = SIM_OP_KERNEL };
	uint32_t sz[3] = { size.groupSizeX, size.groupSizeY, size.groupSizeZ };
	ze_result_t r = sim_obj_check(h, SIM_K_LIST);

	if (r || (r = sim_obj_check(kh, SIM_K_KERNEL)))
		return r;
	if (!sz[0] || !sz[1] || !sz[2] || (uint64_t)sz[0] * sz[1] * sz[2] > 1024)
		return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
	proto.kernel = (struct sim_kernel *)kh;
	proto.count = count;
	memcpy(proto.group_size, sz, sizeof(proto.group_size));
	proto.duration_ns = sim_kernel_duration(&count, sz);
	return list_append(h, &proto, signal, nwait, waits,
			   "zeCommandListAppendLaunchKernelWithArguments");
}

static uint64_t copy_duration_ns(size_t bytes)
{
	return bytes / 10 > SIM_COPY_MIN_NS ? bytes / 10 : SIM_COPY_MIN_NS;
}

/* A copy appended by `call` (named in what it says of a misuse). */
static ze_result_t append_copy(ze_command_list_handle_t h, void *dst, const void *src,
			       size_t size, ze_event_handle_t signal, uint32_t nwait,
			       ze_event_handle_t *waits, const char *call)
{
	struct sim_cmd proto = { .op = SIM_OP_COPY, .dst = dst, .src = src, .size = size };
	ze_result_t r = sim_obj_check(h, SIM_K_LIST);

	if (r)
		return r;
	SIM_NOT_NULL(dst);
	SIM_NOT_NULL(src);
	proto.duration_ns = copy_duration_ns(size);
	return list_append(h, &proto, signal, nwait, waits, call);
}

static ze_result_t list_append_memory_copy(ze_command_list_handle_t h, void *dst, const void *src,
					   size_t size, ze_event_handle_t signal, uint32_t nwait,
					   ze_event_handle_t *waits)
{
	return append_copy(h, dst, src, size, signal, nwait, waits,
			   "zeCommandListAppendMemoryCopy");
}

/* The source is memory of another context (the specification's copy between contexts):
 * a source allocated in neither context named is one "ze_sim:" line and
 * ZE_RESULT_ERROR_INVALID_ARGUMENT; host memory the program allocated itself is read. */
#define FROM_CONTEXT "zeCommandListAppendMemoryCopyFromContext"
static ze_result_t list_append_memory_copy_from_context(ze_command_list_handle_t h, void *dst,
							ze_context_handle_t src_ctx,
							const void *src, size_t size,
							ze_event_handle_t signal, uint32_t nwait,
							ze_event_handle_t *waits)
{
	SIM_HANDLE(context, from, src_ctx, SIM_K_CONTEXT);
	bool foreign;

	SIM_NOT_NULL(src);
	pthread_mutex_lock(&sim_lock);
	foreign = sim_mem_owned_locked(src, 1, NULL) && !sim_mem_owned_locked(src, size, from);
	pthread_mutex_unlock(&sim_lock);
	if (foreign)
		return append_misuse(FROM_CONTEXT, "the source is not memory of the source context "
						   "(or runs past its allocation)",
				     ZE_RESULT_ERROR_INVALID_ARGUMENT);
	return append_copy(h, dst, src, size, signal, nwait, waits, FROM_CONTEXT);
}

static ze_result_t list_append_memory_copy_with_parameters(
	ze_command_list_handle_t h, void *dst, const void *src, size_t size, const void *next,
	ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *waits)
{
	return list_append_memory_copy(h, dst, src, size, signal, nwait, waits);
}

/* A region copy's rules (the specification's: the same width, height and depth on both
 * sides, no overlap; rows no wider than their pitch, slices no taller than theirs). */
#define region_misuse(rule, r) append_misuse("zeCommandListAppendMemoryCopyRegion", rule, r)

uint64_t sim_region_rows(const struct sim_region *g)
{
	return (uint64_t)g->r.height * (g->r.depth ? g->r.depth : 1);
}

/* Row i's first byte: rows of height rows a slice; depth 0 (a 2D copy) ignores
 * originZ and the slice pitch, as the specification says. In address order, once
 * rows fit their pitch and slices their slice pitch. */
uintptr_t sim_region_row(const void *ptr, const struct sim_region *g, uint64_t i)
{
	uint64_t h = g->r.height;
	uint64_t z = g->r.depth ? (uint64_t)g->r.originZ + i / h : 0;

	return (uintptr_t)ptr + z * g->slice_pitch + ((uint64_t)g->r.originY + i % h) * g->pitch +
	       g->r.originX;
}

/* Whether any byte is in both (rows of the same width, each region's in address
 * order: one walk over both). */
static bool regions_overlap(const void *dst, const struct sim_region *d, const void *src,
			    const struct sim_region *s)
{
	uint64_t n = sim_region_rows(s), w = s->r.width, i = 0, j = 0;

	while (i < n && j < n) {
		uintptr_t a = sim_region_row(dst, d, i), b = sim_region_row(src, s, j);

		if (a < b + w && b < a + w)
			return true;
		if (a < b)
			i++;
		else
			j++;
	}
	return false;
}

static ze_result_t list_append_memory_copy_region(
	ze_command_list_handle_t h, void *dst, const ze_copy_region_t *dst_region,
	uint32_t dst_pitch, uint32_t dst_slice_pitch, const void *src,
	const ze_copy_region_t *src_region, uint32_t src_pitch, uint32_t src_slice_pitch,
	ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *waits)
{
	struct sim_cmd proto = { .op = SIM_OP_COPY_REGION, .dst = dst, .src = src };
	ze_result_t r = sim_obj_check(h, SIM_K_LIST);

	if (r)
		return r;
	SIM_NOT_NULL(dst);
	SIM_NOT_NULL(src);
	SIM_NOT_NULL(dst_region);
	SIM_NOT_NULL(src_region);
	proto.dst_region = (struct sim_region){ *dst_region, dst_pitch, dst_slice_pitch };
	proto.src_region = (struct sim_region){ *src_region, src_pitch, src_slice_pitch };
	if (dst_region->width != src_region->width || dst_region->height != src_region->height ||
	    dst_region->depth != src_region->depth)
		return region_misuse("the two regions differ in width, height or depth",
				     ZE_RESULT_ERROR_INVALID_SIZE);
	if (!src_region->width || !src_region->height)
		return region_misuse("an empty region", ZE_RESULT_ERROR_INVALID_SIZE);
	for (int i = 0; i < 2; i++) {
		const struct sim_region *g = i ? &proto.src_region : &proto.dst_region;

		if ((uint64_t)g->r.originX + g->r.width > g->pitch ||
		    (g->r.depth &&
		     ((uint64_t)g->r.originY + g->r.height) * g->pitch > g->slice_pitch))
			return region_misuse("a row wider than its pitch, or a slice taller than "
					     "its slice pitch", ZE_RESULT_ERROR_INVALID_SIZE);
	}
	if (regions_overlap(dst, &proto.dst_region, src, &proto.src_region))
		return region_misuse("the regions overlap", ZE_RESULT_ERROR_OVERLAPPING_REGIONS);
	proto.size = (size_t)src_region->width * src_region->height *
		     (src_region->depth ? src_region->depth : 1);
	proto.duration_ns = copy_duration_ns(proto.size);
	return list_append(h, &proto, signal, nwait, waits, "zeCommandListAppendMemoryCopyRegion");
}

static ze_result_t list_append_memory_fill(ze_command_list_handle_t h, void *ptr,
					   const void *pattern, size_t pattern_size, size_t size,
					   ze_event_handle_t signal, uint32_t nwait,
					   ze_event_handle_t *waits)
{
	struct sim_cmd proto = { .op = SIM_OP_FILL, .dst = ptr, .size = size };
	ze_result_t r = sim_obj_check(h, SIM_K_LIST);

	if (r)
		return r;
	SIM_NOT_NULL(ptr);
	SIM_NOT_NULL(pattern);
	if (pattern_size == 0 || pattern_size > SIM_FILL_PATTERN_MAX ||
	    (pattern_size & (pattern_size - 1)))
		return ZE_RESULT_ERROR_INVALID_SIZE;
	memcpy(proto.pattern, pattern, pattern_size);	/* the caller may reuse it at once */
	proto.pattern_size = pattern_size;
	proto.duration_ns = copy_duration_ns(size);
	return list_append(h, &proto, signal, nwait, waits, "zeCommandListAppendMemoryFill");
}

static ze_result_t list_append_memory_fill_with_parameters(
	ze_command_list_handle_t h, void *ptr, const void *pattern, size_t pattern_size,
	size_t size, const void *next, ze_event_handle_t signal, uint32_t nwait,
	ze_event_handle_t *waits)
{
	return list_append_memory_fill(h, ptr, pattern, pattern_size, size, signal, nwait, waits);
}

static ze_result_t list_append_barrier(ze_command_list_handle_t h, ze_event_handle_t signal,
				       uint32_t nwait, ze_event_handle_t *waits)
{
	struct sim_cmd proto = { .op = SIM_OP_NOP };

	return list_append(h, &proto, signal, nwait, waits, "zeCommandListAppendBarrier");
}

static ze_result_t list_append_memory_ranges_barrier(ze_command_list_handle_t h, uint32_t nranges,
						     const size_t *sizes, const void **ranges,
						     ze_event_handle_t signal, uint32_t nwait,
						     ze_event_handle_t *waits)
{
	struct sim_cmd proto = { .op = SIM_OP_NOP };

	if (nranges && (!sizes || !ranges))
		return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
	return list_append(h, &proto, signal, nwait, waits,
			   "zeCommandListAppendMemoryRangesBarrier");
}

static ze_result_t list_append_signal_event(ze_command_list_handle_t h, ze_event_handle_t ev)
{
	struct sim_cmd proto = { .op = SIM_OP_NOP };
	ze_result_t r = sim_obj_check(h, SIM_K_LIST);

	if (r || (r = sim_obj_check(ev, SIM_K_EVENT)))
		return r;
	return list_append(h, &proto, ev, 0, NULL, "zeCommandListAppendSignalEvent");
}

static ze_result_t list_append_wait_on_events(ze_command_list_handle_t h, uint32_t n,
					      ze_event_handle_t *events)
{
	struct sim_cmd proto = { .op = SIM_OP_NOP };
	ze_result_t r = sim_obj_check(h, SIM_K_LIST);

	if (r)
		return r;
	SIM_NOT_NULL(events);
	return list_append(h, &proto, NULL, n, events, "zeCommandListAppendWaitOnEvents");
}

static ze_result_t list_append_event_reset(ze_command_list_handle_t h, ze_event_handle_t ev)
{
	struct sim_cmd proto = { .op = SIM_OP_NOP };
	ze_result_t r = sim_obj_check(h, SIM_K_LIST);

	if (r || (r = sim_obj_check(ev, SIM_K_EVENT)))
		return r;
	if (((struct sim_event *)ev)->counter_based)
		return sim_cb_misuse("zeCommandListAppendEventReset",
				     "a counter-based event is never reset");
	proto.reset = (struct sim_event *)ev;
	proto.reset_serial = sim_obj_serial(ev);
	return list_append(h, &proto, NULL, 0, NULL, "zeCommandListAppendEventReset");
}

static ze_result_t list_append_write_global_timestamp(ze_command_list_handle_t h, uint64_t *dst,
						       ze_event_handle_t signal, uint32_t nwait,
						       ze_event_handle_t *waits)
{
	struct sim_cmd proto = { .op = SIM_OP_TIMESTAMP, .dst = dst };
	ze_result_t r = sim_obj_check(h, SIM_K_LIST);

	if (r)
		return r;
	SIM_NOT_NULL(dst);
	return list_append(h, &proto, signal, nwait, waits,
			   "zeCommandListAppendWriteGlobalTimestamp");
}

static ze_result_t list_append_query_kernel_timestamps(ze_command_list_handle_t h, uint32_t n,
						       ze_event_handle_t *events, void *dst,
						       const size_t *offsets, ze_event_handle_t signal,
						       uint32_t nwait, ze_event_handle_t *waits)
{
	struct sim_cmd proto = { .op = SIM_OP_QUERY, .dst = dst };
	ze_result_t r = sim_obj_check(h, SIM_K_LIST);

	if (r)
		return r;
	SIM_NOT_NULL(events);
	SIM_NOT_NULL(dst);
	if (n == 0)
		return ZE_RESULT_ERROR_INVALID_SIZE;
	for (uint32_t i = 0; i < n; i++) {
		if ((r = sim_obj_check(events[i], SIM_K_EVENT)))
			return r;
		if (!((struct sim_event *)events[i])->timestamps)
			return ZE_RESULT_ERROR_INVALID_ARGUMENT;
	}
	proto.nquery = n;
	proto.query = waits_new(n, (struct sim_event *const *)events, NULL);
	if (!proto.query)
		return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
	if (offsets && (proto.offsets = malloc(n * sizeof(size_t))))
		memcpy(proto.offsets, offsets, n * sizeof(size_t));
	if (offsets && !proto.offsets) {
		free(proto.query);
		return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
	}
	r = list_append(h, &proto, signal, nwait, waits, "zeCommandListAppendQueryKernelTimestamps");
	free(proto.query);
	free(proto.offsets);
	return r;
}

static ze_result_t list_append_memory_prefetch(ze_command_list_handle_t h, const void *p,
					       size_t size)
{
	ze_result_t r = sim_obj_check(h, SIM_K_LIST);

	if (r)
		return r;
	SIM_NOT_NULL(p);
	return ZE_RESULT_SUCCESS;
}

static ze_result_t list_append_mem_advise(ze_command_list_handle_t h, ze_device_handle_t dev,
					  const void *p, size_t size, ze_memory_advice_t advice)
{
	ze_result_t r = sim_obj_check(h, SIM_K_LIST);

	if (r || (r = sim_obj_check(dev, SIM_K_DEVICE)))
		return r;
	SIM_NOT_NULL(p);
	return ZE_RESULT_SUCCESS;
}

/* 1.9: closed regular lists run on an immediate list, after its wait events; the signal
 * event signals when they all completed. */
static ze_result_t list_immediate_append_lists(ze_command_list_handle_t h, uint32_t nlists,
					       ze_command_list_handle_t *lists,
					       ze_event_handle_t signal, uint32_t nwait,
					       ze_event_handle_t *waits)
{
	SIM_HANDLE(list, l, h, SIM_K_LIST);
	struct sim_cmd nop = { .op = SIM_OP_NOP }, *first, **tail;
	uint64_t n = 1;
	ze_result_t r;

	if (!l->immediate)
		return ZE_RESULT_ERROR_INVALID_ARGUMENT;
	if ((r = check_events(signal, nwait, waits)))
		return r;
	if (signal && (r = sim_check_cb_signal(l, (struct sim_event *)signal,
					   "zeCommandListImmediateAppendCommandListsExp")))
		return r;
	if ((r = check_lists(nlists, lists, l->ordinal)))
		return r;
	if (!(first = cmd_make(&nop, NULL, nwait, waits)))
		return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
	tail = &first->next;
	r = clone_lists(nlists, lists, &tail, &n);
	if (r == ZE_RESULT_SUCCESS) {
		if ((*tail = cmd_make(&nop, signal, 0, NULL)) != NULL)
			n++;
		else
			r = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
	}
	if (r) {
		cmd_chain_free(first);
		return r;
	}
	return list_submit(l, first, n);
}

static ze_result_t list_immediate_append_lists_with_parameters(
	ze_command_list_handle_t h, uint32_t nlists, ze_command_list_handle_t *lists,
	const void *next, ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *waits)
{
	return list_immediate_append_lists(h, nlists, lists, signal, nwait, waits);
}

/* ---- 1.9: what a list is ---- */
static ze_result_t list_get_device(ze_command_list_handle_t h, ze_device_handle_t *out)
{
	SIM_HANDLE(list, l, h, SIM_K_LIST);

	(void)l;
	SIM_NOT_NULL(out);
	*out = (ze_device_handle_t)&sim_device_obj;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t list_get_context(ze_command_list_handle_t h, ze_context_handle_t *out)
{
	SIM_HANDLE(list, l, h, SIM_K_LIST);

	SIM_NOT_NULL(out);
	*out = (ze_context_handle_t)l->context;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t list_get_ordinal(ze_command_list_handle_t h, uint32_t *out)
{
	SIM_HANDLE(list, l, h, SIM_K_LIST);

	SIM_NOT_NULL(out);
	*out = l->ordinal;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t list_immediate_get_index(ze_command_list_handle_t h, uint32_t *out)
{
	SIM_HANDLE(list, l, h, SIM_K_LIST);

	SIM_NOT_NULL(out);
	if (!l->immediate)
		return ZE_RESULT_ERROR_INVALID_ARGUMENT;
	*out = l->index;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t list_is_immediate(ze_command_list_handle_t h, ze_bool_t *out)
{
	SIM_HANDLE(list, l, h, SIM_K_LIST);

	SIM_NOT_NULL(out);
	*out = l->immediate;
	return ZE_RESULT_SUCCESS;
}

void sim_fill_command_list(ze_command_list_dditable_t *t)
{
	t->pfnCreate = list_create;
	t->pfnCreateImmediate = list_create_immediate;
	t->pfnDestroy = list_destroy;
	t->pfnClose = list_close;
	t->pfnReset = list_reset;
	t->pfnAppendBarrier = list_append_barrier;
	t->pfnAppendMemoryRangesBarrier = list_append_memory_ranges_barrier;
	t->pfnAppendMemoryCopy = list_append_memory_copy;
	t->pfnAppendMemoryCopyRegion = list_append_memory_copy_region;
	t->pfnAppendLaunchCooperativeKernel = list_append_launch_cooperative_kernel;
	t->pfnAppendLaunchKernelIndirect = list_append_launch_kernel_indirect;
	t->pfnAppendLaunchMultipleKernelsIndirect = list_append_launch_multiple_kernels_indirect;
	t->pfnAppendMemoryCopyFromContext = list_append_memory_copy_from_context;
	t->pfnAppendMemoryFill = list_append_memory_fill;
	t->pfnAppendSignalEvent = list_append_signal_event;
	t->pfnAppendWaitOnEvents = list_append_wait_on_events;
	t->pfnAppendEventReset = list_append_event_reset;
	t->pfnAppendLaunchKernel = list_append_launch_kernel;
	t->pfnAppendWriteGlobalTimestamp = list_append_write_global_timestamp;
	t->pfnAppendMemoryPrefetch = list_append_memory_prefetch;
	t->pfnAppendMemAdvise = list_append_mem_advise;
	t->pfnAppendQueryKernelTimestamps = list_append_query_kernel_timestamps;
}

/* Each entry only when both the loader's table (version) and the simulated spec have it. */
#define SIM_SET(t, field, minor, fn)                                                       \
	do {                                                                               \
		if (version >= SIM_V(minor) && SIM_HAS(minor))                             \
			(t)->field = (fn);                                                 \
	} while (0)

void sim_fill_command_list_newer(void *table, ze_api_version_t version)
{
	struct sim_command_list_ddi *t = table;

	SIM_SET(t, pfnHostSynchronize, 6, list_host_synchronize);
	SIM_SET(t, pfnGetDeviceHandle, 9, list_get_device);
	SIM_SET(t, pfnGetContextHandle, 9, list_get_context);
	SIM_SET(t, pfnGetOrdinal, 9, list_get_ordinal);
	SIM_SET(t, pfnImmediateGetIndex, 9, list_immediate_get_index);
	SIM_SET(t, pfnIsImmediate, 9, list_is_immediate);
	SIM_SET(t, pfnAppendLaunchKernelWithParameters, 14,
		list_append_launch_kernel_with_parameters);
	SIM_SET(t, pfnAppendLaunchKernelWithArguments, 14,
		list_append_launch_kernel_with_arguments);
	SIM_SET(t, pfnAppendMemoryCopyWithParameters, 16, list_append_memory_copy_with_parameters);
	SIM_SET(t, pfnAppendMemoryFillWithParameters, 16, list_append_memory_fill_with_parameters);
	SIM_SET(t, pfnImmediateAppendCommandListsWithParameters, 16,
		list_immediate_append_lists_with_parameters);
}

void sim_fill_command_list_exp(void *table, ze_api_version_t version)
{
	struct sim_command_list_exp_ddi *t = table;

	SIM_SET(t, pfnImmediateAppendCommandListsExp, 9, list_immediate_append_lists);
	sim_fill_command_list_mutable(t, version);
}

ze_result_t sim_list_append(ze_command_list_handle_t h, struct sim_cmd *proto,
			    ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *waits,
			    const char *call)
{
	return list_append(h, proto, signal, nwait, waits, call);
}

/*
 * Counters that cover a stretch of simulated time (metric reports, queries,
 * Sysman's activity) must not be computed before every command that may
 * run in it is known. A running command's span is recorded; the next one on
 * an engine starts no earlier than the running one ends, or than the end of
 * the last one and its own waits; an idle engine's next command is submitted
 * now or later. An engine blocked on events starts no earlier than another
 * engine or the host (now) can signal them.
 */
uint64_t sim_engines_horizon_locked(uint64_t now)
{
	uint64_t h = now;

	for (unsigned i = 0; i < SIM_ENGINES; i++) {
		struct sim_engine *e = &engines[i];
		uint64_t eh = UINT64_MAX;

		if (e->busy) {
			eh = e->busy_end;
		} else {
			/* the next to run: a stream's head, no earlier than the engine is free */
			for (struct sim_stream *s = e->streams; s; s = s->next) {
				uint64_t ready;

				if (!s->head)
					continue;
				ready = s->head->enqueue_ns;
				/* blocked: signaled by the host (now or later) or by another
				 * engine (no earlier than that engine's horizon) */
				if (!cmd_waits_done_locked(s->head, &ready))
					continue;
				ready = engine_start_ns(e, ready);
				if (ready < eh)
					eh = ready;
			}
		}
		if (eh < h)
			h = eh;
	}
	return h;
}
