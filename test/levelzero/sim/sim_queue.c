/* Command queues and command lists: each queue and each immediate list is an in-order
 * engine with its own worker thread that runs commands one at a time on the simulated
 * timeline (see the contract in sim_driver.c). */
#include <stdlib.h>
#include <string.h>

#include "sim.h"

static struct sim_engine *all_engines;	/* sim_lock */

/* ---- commands ---- */
static void cmd_free(struct sim_cmd *c)
{
	free(c->wait);
	free(c);
}

static struct sim_cmd *cmd_clone(const struct sim_cmd *proto)
{
	struct sim_cmd *c = malloc(sizeof(*c));

	if (!c)
		return NULL;
	*c = *proto;
	c->next = NULL;
	c->wait = NULL;
	if (proto->nwait) {
		c->wait = malloc(proto->nwait * sizeof(*c->wait));
		if (!c->wait) {
			free(c);
			return NULL;
		}
		memcpy(c->wait, proto->wait, proto->nwait * sizeof(*c->wait));
	}
	return c;
}

static void cmd_chain_free(struct sim_cmd *c)
{
	while (c) {
		struct sim_cmd *next = c->next;

		cmd_free(c);
		c = next;
	}
}

static bool cmd_waits_done_locked(const struct sim_cmd *c, uint64_t *ready_ns)
{
	for (uint32_t i = 0; i < c->nwait; i++) {
		const struct sim_event *ev = c->wait[i];

		if (ev->obj.magic != SIM_MAGIC || !ev->signaled)
			return false;
		if (ev->signal_ns > *ready_ns)
			*ready_ns = ev->signal_ns;
	}
	return true;
}

/* Moves the bytes; the simulated duration was fixed at append time. */
static void cmd_execute(const struct sim_cmd *c, uint64_t start_ns)
{
	switch (c->op) {
	case SIM_OP_TIMESTAMP:
		*(uint64_t *)c->dst = sim_dev_ticks(start_ns);
		break;
	case SIM_OP_COPY:
		memmove(c->dst, c->src, c->size);
		break;
	case SIM_OP_FILL:
		for (size_t off = 0; off < c->size; off += c->pattern_size) {
			size_t n = c->size - off < c->pattern_size ? c->size - off : c->pattern_size;

			memcpy((uint8_t *)c->dst + off, c->pattern, n);
		}
		break;
	case SIM_OP_KERNEL:
	case SIM_OP_NOP:
		break;
	}
}

/* ---- engines ---- */
static void *engine_worker(void *arg)
{
	struct sim_engine *e = arg;

	pthread_mutex_lock(&sim_lock);
	for (;;) {
		struct sim_cmd *c = e->head;
		uint64_t ready, start, end;

		if (!c) {
			if (e->stop)
				break;
			pthread_cond_wait(&sim_cond, &sim_lock);
			continue;
		}
		ready = c->enqueue_ns;
		if (!cmd_waits_done_locked(c, &ready)) {
			/* Destroying the queue drops work that can never become runnable. */
			if (e->stop)
				break;
			pthread_cond_wait(&sim_cond, &sim_lock);
			continue;
		}
		start = ready > e->last_end_ns ? ready : e->last_end_ns;
		end = start + c->duration_ns;
		pthread_mutex_unlock(&sim_lock);

		cmd_execute(c, start);
		sim_sleep_until(end);

		pthread_mutex_lock(&sim_lock);
		e->last_end_ns = end;
		e->head = c->next;
		if (!e->head)
			e->tail = NULL;
		e->completed++;
		if (c->reset && c->reset->obj.magic == SIM_MAGIC)
			c->reset->signaled = false;
		if (c->signal)
			sim_event_signal_locked(c->signal, start, end);
		if (c->fence && c->fence->obj.magic == SIM_MAGIC)
			c->fence->signaled = true;
		pthread_cond_broadcast(&sim_cond);
		cmd_free(c);
	}
	pthread_mutex_unlock(&sim_lock);
	return NULL;
}

static void engine_init(struct sim_engine *e)
{
	memset(e, 0, sizeof(*e));
	pthread_mutex_lock(&sim_lock);
	e->all_next = all_engines;
	all_engines = e;
	pthread_mutex_unlock(&sim_lock);
}

/* sim_lock held. Workers start lazily: after fork() the child has none. */
static ze_result_t engine_ensure_worker_locked(struct sim_engine *e)
{
	if (e->running || e->stop)
		return ZE_RESULT_SUCCESS;
	if (pthread_create(&e->thread, NULL, engine_worker, e) != 0)
		return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
	e->running = true;
	return ZE_RESULT_SUCCESS;
}

/* sim_lock held. Appends a chain of n commands, all runnable from `now`. */
static ze_result_t engine_submit_locked(struct sim_engine *e, struct sim_cmd *first,
					uint64_t n, uint64_t now)
{
	struct sim_cmd *last = first;

	for (struct sim_cmd *c = first; c; c = c->next) {
		c->enqueue_ns = now;
		last = c;
	}
	if (e->tail)
		e->tail->next = first;
	else
		e->head = first;
	e->tail = last;
	e->submitted += n;
	pthread_cond_broadcast(&sim_cond);
	return engine_ensure_worker_locked(e);
}

/* sim_lock held. Waits until everything submitted so far has completed. */
static ze_result_t engine_wait_locked(struct sim_engine *e, uint64_t deadline)
{
	uint64_t target = e->submitted;

	while (e->completed < target) {
		ze_result_t r = engine_ensure_worker_locked(e);

		if (r)
			return r;
		if (!sim_cond_wait_until(deadline))
			return ZE_RESULT_NOT_READY;
	}
	return ZE_RESULT_SUCCESS;
}

/* Runs what can still run, drops what waits on events nobody will signal, joins. */
static void engine_fini(struct sim_engine *e)
{
	struct sim_engine **link;
	bool join;

	pthread_mutex_lock(&sim_lock);
	e->stop = true;
	join = e->running;
	pthread_cond_broadcast(&sim_cond);
	pthread_mutex_unlock(&sim_lock);
	if (join)
		pthread_join(e->thread, NULL);
	pthread_mutex_lock(&sim_lock);
	for (link = &all_engines; *link; link = &(*link)->all_next) {
		if (*link == e) {
			*link = e->all_next;
			break;
		}
	}
	cmd_chain_free(e->head);
	e->head = e->tail = NULL;
	pthread_mutex_unlock(&sim_lock);
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
	for (struct sim_engine *e = all_engines; e; e = e->all_next)
		e->running = false;	/* recreated on the next submit or synchronize */
}

__attribute__((constructor)) static void sim_setup(void)
{
	sim_lock_setup();
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* ---- command queues ---- */
static const uint32_t queues_per_group[SIM_QUEUE_GROUPS] = { 2, 1 };

static ze_result_t check_queue_desc(ze_context_handle_t ctx, ze_device_handle_t dev,
				    const ze_command_queue_desc_t *desc, void *out)
{
	ze_result_t r = sim_obj_check(ctx, SIM_K_CONTEXT);

	if (r || (r = sim_obj_check(dev, SIM_K_DEVICE)))
		return r;
	SIM_NOT_NULL(desc);
	SIM_NOT_NULL(out);
	if (desc->ordinal >= SIM_QUEUE_GROUPS || desc->index >= queues_per_group[desc->ordinal])
		return ZE_RESULT_ERROR_INVALID_ARGUMENT;
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
	q->mode = desc->mode;
	engine_init(&q->engine);
	sim_obj_register(&q->obj, SIM_K_QUEUE);
	*out = (ze_command_queue_handle_t)q;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t queue_destroy(ze_command_queue_handle_t h)
{
	SIM_HANDLE(queue, q, h, SIM_K_QUEUE);

	sim_obj_unregister(&q->obj);
	engine_fini(&q->engine);
	free(q);
	return ZE_RESULT_SUCCESS;
}

static ze_result_t queue_synchronize(ze_command_queue_handle_t h, uint64_t timeout_ns)
{
	SIM_HANDLE(queue, q, h, SIM_K_QUEUE);
	uint64_t deadline = sim_deadline(timeout_ns);
	ze_result_t r;

	pthread_mutex_lock(&sim_lock);
	r = engine_wait_locked(&q->engine, deadline);
	pthread_mutex_unlock(&sim_lock);
	return r;
}

static ze_result_t queue_execute(ze_command_queue_handle_t h, uint32_t nlists,
				 ze_command_list_handle_t *lists, ze_fence_handle_t fh)
{
	SIM_HANDLE(queue, q, h, SIM_K_QUEUE);
	struct sim_cmd *first = NULL, **tail = &first, fence_cmd = { .op = SIM_OP_NOP };
	uint64_t n = 0;
	ze_result_t r;

	SIM_NOT_NULL(lists);
	if (nlists == 0)
		return ZE_RESULT_ERROR_INVALID_SIZE;
	for (uint32_t i = 0; i < nlists; i++) {
		struct sim_list *l = (struct sim_list *)lists[i];

		if ((r = sim_obj_check(l, SIM_K_LIST)))
			return r;
		if (l->immediate || !l->closed)
			return ZE_RESULT_ERROR_INVALID_ARGUMENT;
		if (l->ordinal != q->ordinal)
			return ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE;
	}
	if (fh) {
		if ((r = sim_obj_check(fh, SIM_K_FENCE)))
			return r;
		if (((struct sim_fence *)fh)->queue != q)
			return ZE_RESULT_ERROR_INVALID_ARGUMENT;
		fence_cmd.fence = (struct sim_fence *)fh;
	}
	/* The queue runs copies: the lists may be reset or destroyed once this returns. */
	for (uint32_t i = 0; i < nlists; i++) {
		for (struct sim_cmd *p = ((struct sim_list *)lists[i])->head; p; p = p->next) {
			if (!(*tail = cmd_clone(p)))
				goto oom;
			tail = &(*tail)->next;
			n++;
		}
	}
	if (fence_cmd.fence) {
		if (!(*tail = cmd_clone(&fence_cmd)))
			goto oom;
		n++;
	}
	if (!first)
		return ZE_RESULT_SUCCESS;
	pthread_mutex_lock(&sim_lock);
	r = engine_submit_locked(&q->engine, first, n, sim_host_ns());
	if (!r && q->mode == ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS)
		r = engine_wait_locked(&q->engine, UINT64_MAX);
	pthread_mutex_unlock(&sim_lock);
	return r;
oom:
	cmd_chain_free(first);
	return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
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
	ze_result_t r = sim_obj_check(ctx, SIM_K_CONTEXT);
	struct sim_list *l;

	if (r || (r = sim_obj_check(dev, SIM_K_DEVICE)))
		return r;
	SIM_NOT_NULL(desc);
	SIM_NOT_NULL(out);
	if (desc->commandQueueGroupOrdinal >= SIM_QUEUE_GROUPS)
		return ZE_RESULT_ERROR_INVALID_ARGUMENT;
	if (desc->flags > 0xf)
		return ZE_RESULT_ERROR_INVALID_ENUMERATION;
	l = calloc(1, sizeof(*l));
	if (!l)
		return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
	l->ordinal = desc->commandQueueGroupOrdinal;
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
	l->ordinal = desc->ordinal;
	l->immediate = true;
	l->synchronous = desc->mode == ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS;
	engine_init(&l->engine);
	sim_obj_register(&l->obj, SIM_K_LIST);
	*out = (ze_command_list_handle_t)l;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t list_destroy(ze_command_list_handle_t h)
{
	SIM_HANDLE(list, l, h, SIM_K_LIST);

	sim_obj_unregister(&l->obj);
	if (l->immediate)
		engine_fini(&l->engine);
	cmd_chain_free(l->head);
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
		r = engine_wait_locked(&l->engine, UINT64_MAX);
		pthread_mutex_unlock(&sim_lock);
		return r;
	}
	cmd_chain_free(l->head);
	l->head = l->tail = NULL;
	l->closed = false;
	return r;
}

/* Records (regular list) or submits (immediate list) one command. */
static ze_result_t list_append(ze_command_list_handle_t h, struct sim_cmd *proto,
			       ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *waits)
{
	SIM_HANDLE(list, l, h, SIM_K_LIST);
	struct sim_cmd *c;
	ze_result_t r;

	if (signal) {
		if ((r = sim_obj_check(signal, SIM_K_EVENT)))
			return r;
		proto->signal = (struct sim_event *)signal;
	}
	if (nwait && !waits)
		return ZE_RESULT_ERROR_INVALID_SIZE;
	for (uint32_t i = 0; i < nwait; i++)
		if ((r = sim_obj_check(waits[i], SIM_K_EVENT)))
			return r;
	if (!l->immediate && l->closed)
		return ZE_RESULT_ERROR_INVALID_ARGUMENT;
	proto->nwait = nwait;
	proto->wait = (struct sim_event **)waits;
	if (!(c = cmd_clone(proto)))
		return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
	if (!l->immediate) {
		if (l->tail)
			l->tail->next = c;
		else
			l->head = c;
		l->tail = c;
		return ZE_RESULT_SUCCESS;
	}
	pthread_mutex_lock(&sim_lock);
	r = engine_submit_locked(&l->engine, c, 1, sim_host_ns());
	if (!r && l->synchronous)
		r = engine_wait_locked(&l->engine, UINT64_MAX);
	pthread_mutex_unlock(&sim_lock);
	return r;
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
	proto.duration_ns = (uint64_t)count->groupCountX * count->groupCountY *
			    count->groupCountZ * k->group_size[0] * k->group_size[1] *
			    k->group_size[2];
	return list_append(h, &proto, signal, nwait, waits);
}

static uint64_t copy_duration_ns(size_t bytes)
{
	return bytes / 10 > SIM_COPY_MIN_NS ? bytes / 10 : SIM_COPY_MIN_NS;
}

static ze_result_t list_append_memory_copy(ze_command_list_handle_t h, void *dst, const void *src,
					   size_t size, ze_event_handle_t signal, uint32_t nwait,
					   ze_event_handle_t *waits)
{
	struct sim_cmd proto = { .op = SIM_OP_COPY, .dst = dst, .src = src, .size = size };
	ze_result_t r = sim_obj_check(h, SIM_K_LIST);

	if (r)
		return r;
	SIM_NOT_NULL(dst);
	SIM_NOT_NULL(src);
	proto.duration_ns = copy_duration_ns(size);
	return list_append(h, &proto, signal, nwait, waits);
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
	return list_append(h, &proto, signal, nwait, waits);
}

static ze_result_t list_append_barrier(ze_command_list_handle_t h, ze_event_handle_t signal,
				       uint32_t nwait, ze_event_handle_t *waits)
{
	struct sim_cmd proto = { .op = SIM_OP_NOP };

	return list_append(h, &proto, signal, nwait, waits);
}

static ze_result_t list_append_signal_event(ze_command_list_handle_t h, ze_event_handle_t ev)
{
	struct sim_cmd proto = { .op = SIM_OP_NOP };
	ze_result_t r = sim_obj_check(h, SIM_K_LIST);

	if (r || (r = sim_obj_check(ev, SIM_K_EVENT)))
		return r;
	return list_append(h, &proto, ev, 0, NULL);
}

static ze_result_t list_append_wait_on_events(ze_command_list_handle_t h, uint32_t n,
					      ze_event_handle_t *events)
{
	struct sim_cmd proto = { .op = SIM_OP_NOP };
	ze_result_t r = sim_obj_check(h, SIM_K_LIST);

	if (r)
		return r;
	SIM_NOT_NULL(events);
	return list_append(h, &proto, NULL, n, events);
}

static ze_result_t list_append_event_reset(ze_command_list_handle_t h, ze_event_handle_t ev)
{
	struct sim_cmd proto = { .op = SIM_OP_NOP };
	ze_result_t r = sim_obj_check(h, SIM_K_LIST);

	if (r || (r = sim_obj_check(ev, SIM_K_EVENT)))
		return r;
	proto.reset = (struct sim_event *)ev;
	return list_append(h, &proto, NULL, 0, NULL);
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
	return list_append(h, &proto, signal, nwait, waits);
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

void sim_fill_command_list(ze_command_list_dditable_t *t)
{
	t->pfnCreate = list_create;
	t->pfnCreateImmediate = list_create_immediate;
	t->pfnDestroy = list_destroy;
	t->pfnClose = list_close;
	t->pfnReset = list_reset;
	t->pfnAppendBarrier = list_append_barrier;
	t->pfnAppendMemoryCopy = list_append_memory_copy;
	t->pfnAppendMemoryFill = list_append_memory_fill;
	t->pfnAppendSignalEvent = list_append_signal_event;
	t->pfnAppendWaitOnEvents = list_append_wait_on_events;
	t->pfnAppendEventReset = list_append_event_reset;
	t->pfnAppendLaunchKernel = list_append_launch_kernel;
	t->pfnAppendWriteGlobalTimestamp = list_append_write_global_timestamp;
	t->pfnAppendMemoryPrefetch = list_append_memory_prefetch;
	t->pfnAppendMemAdvise = list_append_mem_advise;
}
