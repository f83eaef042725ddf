/* Handles of the simulated device: a registry of live objects (so a stale, foreign or
 * garbage handle is rejected without being dereferenced), contexts, memory, modules,
 * kernels, event pools, events and fences. Queues and command lists are in sim_queue.c. */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim.h"

pthread_mutex_t sim_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t sim_cond;

/* ZE_SIM_SIGNAL_IN_WAIT: a signal sent once, to the first host thread that
 * synchronizes, while it holds the driver's lock (0: none) */
static int signal_in_wait;
static atomic_bool signal_in_wait_sent;
/* ZE_SIM_SIGNAL_IN_QUERY: a signal sent once, to the first host thread that
 * reads a kernel timestamp and does not block it, before the driver's lock is
 * taken: a tool's read of the device is where it holds its own lock */
static int signal_in_query;
static atomic_bool signal_in_query_sent;

static int signal_parse(const char *name)
{
	const char *s = getenv(name);
	char *end;
	long v;

	if (!s || !*s)
		return 0;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < 1 || v >= NSIG) {
		fprintf(stderr, "ze_sim: %s='%s' is not a signal number from 1 to %d; sending "
			"none\n", name, s, NSIG - 1);
		return 0;
	}
	return (int)v;
}

void sim_signal_in_wait_setup(void)
{
	signal_in_wait = signal_parse("ZE_SIM_SIGNAL_IN_WAIT");
	signal_in_query = signal_parse("ZE_SIM_SIGNAL_IN_QUERY");
}

/*
 * At a synchronize's start, sim_lock held. Not where it comes to wait: whether work is
 * still running then depends on the threads' timing, and a query (a synchronize with
 * timeout 0, which a tool makes under its own lock) is not a wait. A real driver's lock
 * is held where a signal lands too: its handler then runs with the lock held, on this
 * thread.
 */
void sim_signal_in_wait_locked(uint64_t timeout_ns)
{
	if (signal_in_wait && timeout_ns && !atomic_exchange(&signal_in_wait_sent, true))
		pthread_kill(pthread_self(), signal_in_wait);
}

static void signal_in_query_maybe(void)
{
	sigset_t blocked;

	if (!signal_in_query || atomic_load(&signal_in_query_sent) ||
	    pthread_sigmask(SIG_BLOCK, NULL, &blocked) || sigismember(&blocked, signal_in_query) ||
	    atomic_exchange(&signal_in_query_sent, true))
		return;
	pthread_kill(pthread_self(), signal_in_query);
}

void sim_lock_setup(void)
{
	pthread_condattr_t attr;

	pthread_mutex_init(&sim_lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&sim_cond, &attr);
	pthread_condattr_destroy(&attr);
}

uint64_t sim_deadline(uint64_t timeout_ns)
{
	uint64_t now = sim_host_ns();

	if (timeout_ns == UINT64_MAX || now + timeout_ns < now)
		return UINT64_MAX;
	return now + timeout_ns;
}

/* A host thread's wait: first what is due on idle engines, then napping engines look. */
bool sim_cond_wait_until(uint64_t deadline)
{
	if (sim_engines_run_due_locked())
		return true;
	if (sim_napping)
		pthread_cond_broadcast(&sim_cond);
	return sim_cond_nap_until(deadline);
}

bool sim_cond_nap_until(uint64_t deadline)
{
	struct timespec ts;
	uint64_t now, rel;

	if (deadline == UINT64_MAX) {
		pthread_cond_wait(&sim_cond, &sim_lock);
		return true;
	}
	now = sim_host_ns();
	if (now >= deadline)
		return false;
	rel = deadline - now;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += rel / 1000000000ULL;
	ts.tv_nsec += rel % 1000000000ULL;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&sim_cond, &sim_lock, &ts);
	return true;
}

/* ---- registry ---- */
#define SIM_BUCKETS 4096
static struct sim_obj *buckets[SIM_BUCKETS];

static struct sim_obj **bucket_of(const void *p)
{
	uint64_t h = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ULL;

	return &buckets[h >> 52];
}

void sim_obj_register(struct sim_obj *o, enum sim_kind kind)
{
	static uint64_t serials;	/* sim_lock */
	struct sim_obj **b = bucket_of(o);

	o->magic = SIM_MAGIC;
	o->kind = kind;
	pthread_mutex_lock(&sim_lock);
	o->serial = ++serials;
	o->hash_next = *b;
	*b = o;
	pthread_mutex_unlock(&sim_lock);
}

void sim_obj_unregister(struct sim_obj *o)
{
	struct sim_obj **b;

	pthread_mutex_lock(&sim_lock);
	for (b = bucket_of(o); *b; b = &(*b)->hash_next) {
		if (*b == o) {
			*b = o->hash_next;
			break;
		}
	}
	o->magic = 0;
	pthread_mutex_unlock(&sim_lock);
}

bool sim_obj_alive_locked(const void *handle, enum sim_kind kind)
{
	const struct sim_obj *o;

	if (handle == &sim_driver_obj || handle == &sim_device_obj)
		return ((const struct sim_obj *)handle)->kind == (uint32_t)kind;
	for (o = *bucket_of(handle); o; o = o->hash_next) {
		if (o == handle)
			return o->magic == SIM_MAGIC && o->kind == (uint32_t)kind;
	}
	return false;
}

uint64_t sim_obj_serial(const void *handle)
{
	return handle ? ((const struct sim_obj *)handle)->serial : 0;
}

bool sim_obj_same_locked(const void *handle, enum sim_kind kind, uint64_t serial)
{
	return sim_obj_alive_locked(handle, kind) &&
	       ((const struct sim_obj *)handle)->serial == serial;
}

void sim_clear_out(void *out, size_t size)
{
	ze_base_properties_t *head = out;
	ze_structure_type_t stype = head->stype;
	void *next = head->pNext;

	memset(out, 0, size);
	head->stype = stype;
	head->pNext = next;
}

ze_result_t sim_check_context_device(ze_context_handle_t ctx, ze_device_handle_t dev)
{
	ze_result_t r = sim_obj_check(ctx, SIM_K_CONTEXT);

	return r ? r : sim_obj_check(dev, SIM_K_DEVICE);
}

ze_result_t sim_obj_check(const void *handle, enum sim_kind kind)
{
	bool ok;

	if (!handle)
		return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
	/* The driver and device are static: no lock on the cheapest, most frequent calls. */
	if (handle == &sim_driver_obj)
		return kind == SIM_K_DRIVER ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_ARGUMENT;
	if (handle == &sim_device_obj)
		return kind == SIM_K_DEVICE ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_ARGUMENT;
	pthread_mutex_lock(&sim_lock);
	ok = sim_obj_alive_locked(handle, kind);
	pthread_mutex_unlock(&sim_lock);
	return ok ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_ARGUMENT;
}

static void *obj_new(size_t size, enum sim_kind kind)
{
	struct sim_obj *o = calloc(1, size);

	if (o)
		sim_obj_register(o, kind);
	return o;
}

static void obj_free(struct sim_obj *o)
{
	sim_obj_unregister(o);
	free(o);
}

/* ---- contexts ---- */
static ze_result_t context_create(ze_driver_handle_t drv, const ze_context_desc_t *desc,
				  ze_context_handle_t *out)
{
	SIM_HANDLE(obj, d, drv, SIM_K_DRIVER);
	struct sim_context *c;

	(void)d;
	SIM_NOT_NULL(desc);
	SIM_NOT_NULL(out);
	static _Atomic uint64_t ids;

	c = obj_new(sizeof(*c), SIM_K_CONTEXT);
	if (!c)
		return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
	c->id = ++ids;
	*out = (ze_context_handle_t)c;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t context_create_ex(ze_driver_handle_t drv, const ze_context_desc_t *desc,
				     uint32_t ndev, ze_device_handle_t *devs,
				     ze_context_handle_t *out)
{
	for (uint32_t i = 0; devs && i < ndev; i++) {
		ze_result_t r = sim_obj_check(devs[i], SIM_K_DEVICE);

		if (r)
			return r;
	}
	if (ndev && !devs)
		return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
	return context_create(drv, desc, out);
}

static ze_result_t context_destroy(ze_context_handle_t h)
{
	SIM_HANDLE(context, c, h, SIM_K_CONTEXT);

	obj_free(&c->obj);
	return ZE_RESULT_SUCCESS;
}

static ze_result_t context_get_status(ze_context_handle_t h)
{
	SIM_HANDLE(context, c, h, SIM_K_CONTEXT);

	(void)c;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t context_nop_mem(ze_context_handle_t h, ze_device_handle_t dev, void *p,
				   size_t size)
{
	SIM_HANDLE(context, c, h, SIM_K_CONTEXT);
	ze_result_t r = sim_obj_check(dev, SIM_K_DEVICE);

	(void)c;
	if (r)
		return r;
	SIM_NOT_NULL(p);
	return ZE_RESULT_SUCCESS;
}

void sim_fill_context(ze_context_dditable_t *t)
{
	t->pfnCreate = context_create;
	t->pfnCreateEx = context_create_ex;
	t->pfnDestroy = context_destroy;
	t->pfnGetStatus = context_get_status;
	t->pfnMakeMemoryResident = context_nop_mem;
	t->pfnEvictMemory = context_nop_mem;
}

/* ---- memory: real host memory, so copies and fills really move bytes ---- */
struct sim_alloc {
	uintptr_t base;
	size_t size;
	ze_memory_type_t type;
	uint64_t context;	/* allocations belong to their context (its id) */
	uint64_t id;
	struct sim_alloc *next;
};
static struct sim_alloc *allocs;
static uint64_t alloc_ids;

static ze_result_t mem_alloc(ze_context_handle_t ctx, ze_memory_type_t type, size_t size,
			     size_t alignment, ze_device_handle_t dev, void **out)
{
	SIM_HANDLE(context, c, ctx, SIM_K_CONTEXT);
	struct sim_alloc *a;
	size_t rounded;
	void *p;

	if (type != ZE_MEMORY_TYPE_HOST) {
		ze_result_t r = sim_obj_check(dev, SIM_K_DEVICE);

		if (r && !(type == ZE_MEMORY_TYPE_SHARED && dev == NULL))
			return r;
	}
	SIM_NOT_NULL(out);
	if (size == 0)
		return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
	if (alignment & (alignment - 1))
		return ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT;
	if (alignment < 64)
		alignment = 64;
	if (size > (1ULL << 40))
		return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
	rounded = (size + alignment - 1) / alignment * alignment;
	a = malloc(sizeof(*a));
	p = aligned_alloc(alignment, rounded);
	if (!a || !p) {
		free(a);
		free(p);
		return type == ZE_MEMORY_TYPE_HOST ? ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY
						   : ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
	}
	/* Backed now, as a driver maps device memory and pins host memory when it allocates:
	 * a first touch inside a copy (up to 20 us a page on a virtual machine) made the
	 * engine finish 8 MiB copies ~70 ms after the timestamps it had reported. */
	memset(p, 0, rounded);
	a->base = (uintptr_t)p;
	a->size = size;
	a->type = type;
	a->context = c->id;
	pthread_mutex_lock(&sim_lock);
	a->id = ++alloc_ids;
	a->next = allocs;
	allocs = a;
	pthread_mutex_unlock(&sim_lock);
	*out = p;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t mem_alloc_device(ze_context_handle_t ctx, const ze_device_mem_alloc_desc_t *desc,
				    size_t size, size_t alignment, ze_device_handle_t dev,
				    void **out)
{
	if (!desc && sim_obj_check(ctx, SIM_K_CONTEXT) == ZE_RESULT_SUCCESS)
		return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
	return mem_alloc(ctx, ZE_MEMORY_TYPE_DEVICE, size, alignment, dev, out);
}

static ze_result_t mem_alloc_host(ze_context_handle_t ctx, const ze_host_mem_alloc_desc_t *desc,
				  size_t size, size_t alignment, void **out)
{
	if (!desc && sim_obj_check(ctx, SIM_K_CONTEXT) == ZE_RESULT_SUCCESS)
		return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
	return mem_alloc(ctx, ZE_MEMORY_TYPE_HOST, size, alignment, NULL, out);
}

static ze_result_t mem_alloc_shared(ze_context_handle_t ctx, const ze_device_mem_alloc_desc_t *ddesc,
				    const ze_host_mem_alloc_desc_t *hdesc, size_t size,
				    size_t alignment, ze_device_handle_t dev, void **out)
{
	if ((!ddesc || !hdesc) && sim_obj_check(ctx, SIM_K_CONTEXT) == ZE_RESULT_SUCCESS)
		return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
	return mem_alloc(ctx, ZE_MEMORY_TYPE_SHARED, size, alignment, dev, out);
}

/* sim_lock held. Finds the allocation containing p, made in ctx (any: NULL): another
 * context's memory is not this one's to describe or free. */
static struct sim_alloc **alloc_find_locked(const void *p, const struct sim_context *ctx)
{
	struct sim_alloc **a;

	for (a = &allocs; *a; a = &(*a)->next) {
		if ((uintptr_t)p >= (*a)->base && (uintptr_t)p < (*a)->base + (*a)->size)
			return !ctx || (*a)->context == ctx->id ? a : NULL;
	}
	return NULL;
}

bool sim_mem_owned_locked(const void *p, size_t size, const struct sim_context *ctx)
{
	struct sim_alloc **a = alloc_find_locked(p, ctx);

	return a && size <= (*a)->base + (*a)->size - (uintptr_t)p;
}

static ze_result_t mem_free(ze_context_handle_t ctx, void *p)
{
	SIM_HANDLE(context, c, ctx, SIM_K_CONTEXT);
	struct sim_alloc **link, *a = NULL;

	SIM_NOT_NULL(p);
	pthread_mutex_lock(&sim_lock);
	link = alloc_find_locked(p, c);
	if (link && (*link)->base == (uintptr_t)p) {
		a = *link;
		*link = a->next;
	}
	pthread_mutex_unlock(&sim_lock);
	if (!a)
		return ZE_RESULT_ERROR_INVALID_ARGUMENT;
	free((void *)a->base);
	free(a);
	return ZE_RESULT_SUCCESS;
}

static ze_result_t mem_get_alloc_properties(ze_context_handle_t ctx, const void *p,
					    ze_memory_allocation_properties_t *props,
					    ze_device_handle_t *dev)
{
	SIM_HANDLE(context, c, ctx, SIM_K_CONTEXT);
	struct sim_alloc **a;

	SIM_NOT_NULL(p);
	SIM_NOT_NULL(props);
	props->type = ZE_MEMORY_TYPE_UNKNOWN;
	props->id = 0;
	props->pageSize = 0;
	if (dev)
		*dev = NULL;
	pthread_mutex_lock(&sim_lock);
	a = alloc_find_locked(p, c);
	if (a) {
		props->type = (*a)->type;
		props->id = (*a)->id;
		props->pageSize = 4096;
		if (dev && (*a)->type != ZE_MEMORY_TYPE_HOST)
			*dev = (ze_device_handle_t)&sim_device_obj;
	}
	pthread_mutex_unlock(&sim_lock);
	return ZE_RESULT_SUCCESS;
}

static ze_result_t mem_get_address_range(ze_context_handle_t ctx, const void *p, void **base,
					 size_t *size)
{
	SIM_HANDLE(context, c, ctx, SIM_K_CONTEXT);
	struct sim_alloc **a;
	ze_result_t r = ZE_RESULT_ERROR_INVALID_ARGUMENT;

	SIM_NOT_NULL(p);
	pthread_mutex_lock(&sim_lock);
	a = alloc_find_locked(p, c);
	if (a) {
		if (base)
			*base = (void *)(*a)->base;
		if (size)
			*size = (*a)->size;
		r = ZE_RESULT_SUCCESS;
	}
	pthread_mutex_unlock(&sim_lock);
	return r;
}

void sim_fill_mem(ze_mem_dditable_t *t)
{
	t->pfnAllocShared = mem_alloc_shared;
	t->pfnAllocDevice = mem_alloc_device;
	t->pfnAllocHost = mem_alloc_host;
	t->pfnFree = mem_free;
	t->pfnGetAllocProperties = mem_get_alloc_properties;
	t->pfnGetAddressRange = mem_get_address_range;
}

/* ---- modules and kernels: any binary, any kernel name ---- */
static ze_result_t module_create(ze_context_handle_t ctx, ze_device_handle_t dev,
				 const ze_module_desc_t *desc, ze_module_handle_t *out,
				 ze_module_build_log_handle_t *log_out)
{
	SIM_HANDLE(context, c, ctx, SIM_K_CONTEXT);
	SIM_HANDLE(obj, d, dev, SIM_K_DEVICE);
	struct sim_module *m;

	(void)c, (void)d;
	SIM_NOT_NULL(desc);
	SIM_NOT_NULL(out);
	SIM_NOT_NULL(desc->pInputModule);
	if (desc->format > ZE_MODULE_FORMAT_NATIVE)
		return ZE_RESULT_ERROR_INVALID_ENUMERATION;
	if (desc->inputSize == 0)
		return ZE_RESULT_ERROR_INVALID_SIZE;
	if (log_out) {
		struct sim_build_log *l = obj_new(sizeof(*l), SIM_K_BUILD_LOG);

		if (!l)
			return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
		*log_out = (ze_module_build_log_handle_t)l;
	}
	m = obj_new(sizeof(*m), SIM_K_MODULE);
	if (!m)
		return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
	*out = (ze_module_handle_t)m;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t module_destroy(ze_module_handle_t h)
{
	SIM_HANDLE(module, m, h, SIM_K_MODULE);

	obj_free(&m->obj);
	return ZE_RESULT_SUCCESS;
}

static ze_result_t module_get_kernel_names(ze_module_handle_t h, uint32_t *count,
					   const char **names)
{
	SIM_HANDLE(module, m, h, SIM_K_MODULE);

	(void)m, (void)names;
	SIM_NOT_NULL(count);
	*count = 0;	/* any name is accepted, none is listed */
	return ZE_RESULT_SUCCESS;
}

static ze_result_t module_get_properties(ze_module_handle_t h, ze_module_properties_t *props)
{
	SIM_HANDLE(module, m, h, SIM_K_MODULE);

	(void)m;
	SIM_NOT_NULL(props);
	props->flags = 0;
	return ZE_RESULT_SUCCESS;
}

void sim_fill_module(ze_module_dditable_t *t)
{
	t->pfnCreate = module_create;
	t->pfnDestroy = module_destroy;
	t->pfnGetKernelNames = module_get_kernel_names;
	t->pfnGetProperties = module_get_properties;
}

static ze_result_t build_log_destroy(ze_module_build_log_handle_t h)
{
	SIM_HANDLE(build_log, l, h, SIM_K_BUILD_LOG);

	obj_free(&l->obj);
	return ZE_RESULT_SUCCESS;
}

static ze_result_t build_log_get_string(ze_module_build_log_handle_t h, size_t *size, char *s)
{
	SIM_HANDLE(build_log, l, h, SIM_K_BUILD_LOG);

	(void)l;
	SIM_NOT_NULL(size);
	if (s && *size)
		s[0] = '\0';
	*size = 1;
	return ZE_RESULT_SUCCESS;
}

void sim_fill_module_build_log(ze_module_build_log_dditable_t *t)
{
	t->pfnDestroy = build_log_destroy;
	t->pfnGetString = build_log_get_string;
}

#define SIM_MAX_GROUP_SIZE 1024

static ze_result_t kernel_create(ze_module_handle_t mh, const ze_kernel_desc_t *desc,
				 ze_kernel_handle_t *out)
{
	SIM_HANDLE(module, m, mh, SIM_K_MODULE);
	struct sim_kernel *k;

	(void)m;
	SIM_NOT_NULL(desc);
	SIM_NOT_NULL(out);
	SIM_NOT_NULL(desc->pKernelName);
	if (!desc->pKernelName[0])
		return ZE_RESULT_ERROR_INVALID_KERNEL_NAME;
	k = calloc(1, sizeof(*k));
	if (!k || !(k->name = strdup(desc->pKernelName))) {
		free(k);
		return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
	}
	k->group_size[0] = k->group_size[1] = k->group_size[2] = 1;
	sim_obj_register(&k->obj, SIM_K_KERNEL);
	*out = (ze_kernel_handle_t)k;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t kernel_destroy(ze_kernel_handle_t h)
{
	SIM_HANDLE(kernel, k, h, SIM_K_KERNEL);

	sim_obj_unregister(&k->obj);
	free(k->name);
	free(k);
	return ZE_RESULT_SUCCESS;
}

static ze_result_t kernel_set_group_size(ze_kernel_handle_t h, uint32_t x, uint32_t y, uint32_t z)
{
	SIM_HANDLE(kernel, k, h, SIM_K_KERNEL);

	if (!x || !y || !z || (uint64_t)x * y * z > SIM_MAX_GROUP_SIZE)
		return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
	k->group_size[0] = x;
	k->group_size[1] = y;
	k->group_size[2] = z;
	return ZE_RESULT_SUCCESS;
}

/* Largest divisor of n not above limit. */
static uint32_t divisor_upto(uint32_t n, uint32_t limit)
{
	for (uint32_t d = limit < n ? limit : n; d > 1; d--)
		if (n % d == 0)
			return d;
	return 1;
}

static ze_result_t kernel_suggest_group_size(ze_kernel_handle_t h, uint32_t gx, uint32_t gy,
					     uint32_t gz, uint32_t *x, uint32_t *y, uint32_t *z)
{
	SIM_HANDLE(kernel, k, h, SIM_K_KERNEL);
	uint32_t budget = 256;

	(void)k;
	SIM_NOT_NULL(x);
	SIM_NOT_NULL(y);
	SIM_NOT_NULL(z);
	if (!gx || !gy || !gz)
		return ZE_RESULT_ERROR_INVALID_GLOBAL_WIDTH_DIMENSION;
	*x = divisor_upto(gx, budget);
	budget /= *x;
	*y = divisor_upto(gy, budget);
	budget /= *y;
	*z = divisor_upto(gz, budget);
	return ZE_RESULT_SUCCESS;
}

static ze_result_t kernel_suggest_max_cooperative_group_count(ze_kernel_handle_t h,
							     uint32_t *total)
{
	SIM_HANDLE(kernel, k, h, SIM_K_KERNEL);

	SIM_NOT_NULL(total);
	*total = sim_cooperative_groups(k->group_size);
	return ZE_RESULT_SUCCESS;
}

static ze_result_t kernel_set_argument_value(ze_kernel_handle_t h, uint32_t index, size_t size,
					     const void *value)
{
	SIM_HANDLE(kernel, k, h, SIM_K_KERNEL);

	(void)k, (void)size, (void)value;
	if (index >= 64)
		return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t kernel_set_indirect_access(ze_kernel_handle_t h,
					      ze_kernel_indirect_access_flags_t flags)
{
	SIM_HANDLE(kernel, k, h, SIM_K_KERNEL);

	(void)k, (void)flags;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t kernel_get_properties(ze_kernel_handle_t h, ze_kernel_properties_t *props)
{
	SIM_HANDLE(kernel, k, h, SIM_K_KERNEL);

	SIM_NOT_NULL(props);
	sim_clear_out(props, sizeof(*props));
	props->maxSubgroupSize = 32;
	props->maxNumSubgroups = SIM_MAX_GROUP_SIZE / 8;
	memcpy(props->uuid.kid, &k, sizeof(k) < ZE_MAX_KERNEL_UUID_SIZE ? sizeof(k)
									  : ZE_MAX_KERNEL_UUID_SIZE);
	return ZE_RESULT_SUCCESS;
}

static ze_result_t kernel_get_name(ze_kernel_handle_t h, size_t *size, char *name)
{
	SIM_HANDLE(kernel, k, h, SIM_K_KERNEL);
	size_t need = strlen(k->name) + 1;

	SIM_NOT_NULL(size);
	if (name) {
		size_t n = *size < need ? *size : need;

		if (n) {
			memcpy(name, k->name, n - 1);
			name[n - 1] = '\0';
		}
	}
	*size = need;
	return ZE_RESULT_SUCCESS;
}

void sim_fill_kernel(ze_kernel_dditable_t *t)
{
	t->pfnCreate = kernel_create;
	t->pfnDestroy = kernel_destroy;
	t->pfnSetGroupSize = kernel_set_group_size;
	t->pfnSuggestGroupSize = kernel_suggest_group_size;
	t->pfnSuggestMaxCooperativeGroupCount = kernel_suggest_max_cooperative_group_count;
	t->pfnSetArgumentValue = kernel_set_argument_value;
	t->pfnSetIndirectAccess = kernel_set_indirect_access;
	t->pfnGetProperties = kernel_get_properties;
	t->pfnGetName = kernel_get_name;
}

/* ---- event pools and events ---- */

/* The counter-based extension in a pool descriptor's pNext chain (spec 1.8), if any. */
static const ze_event_pool_counter_based_exp_desc_t *pool_cb_desc(const ze_event_pool_desc_t *d)
{
	for (const ze_base_desc_t *p = d->pNext; p; p = p->pNext) {
		if (p->stype == ZE_STRUCTURE_TYPE_COUNTER_BASED_EVENT_POOL_EXP_DESC)
			return (const ze_event_pool_counter_based_exp_desc_t *)p;
	}
	return NULL;
}

static ze_result_t event_pool_create(ze_context_handle_t ctx, const ze_event_pool_desc_t *desc,
				     uint32_t ndev, ze_device_handle_t *devs,
				     ze_event_pool_handle_t *out)
{
	SIM_HANDLE(context, c, ctx, SIM_K_CONTEXT);
	const ze_event_pool_counter_based_exp_desc_t *cb;
	struct sim_event_pool *p;

	(void)c;
	SIM_NOT_NULL(desc);
	SIM_NOT_NULL(out);
	if (ndev && !devs)
		return ZE_RESULT_ERROR_INVALID_SIZE;
	for (uint32_t i = 0; i < ndev; i++) {
		ze_result_t r = sim_obj_check(devs[i], SIM_K_DEVICE);

		if (r)
			return r;
	}
	/* 1.6: ZE_EVENT_POOL_FLAG_KERNEL_MAPPED_TIMESTAMP (bit 3), kernel timestamps in host
	 * ns, not to be combined with KERNEL_TIMESTAMP. */
	if (desc->flags > (SIM_HAS(6) ? 0xfu : 0x7u))
		return ZE_RESULT_ERROR_INVALID_ENUMERATION;
	if ((desc->flags & SIM_POOL_MAPPED_TS) && (desc->flags & ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP))
		return ZE_RESULT_ERROR_INVALID_ENUMERATION;
	if (desc->count == 0)
		return ZE_RESULT_ERROR_INVALID_SIZE;
	/* A driver older than the extension does not know its descriptor: ignored. */
	cb = SIM_HAS(8) ? pool_cb_desc(desc) : NULL;
	if (cb && cb->flags > (ZE_EVENT_POOL_COUNTER_BASED_EXP_FLAG_IMMEDIATE |
			       ZE_EVENT_POOL_COUNTER_BASED_EXP_FLAG_NON_IMMEDIATE))
		return ZE_RESULT_ERROR_INVALID_ENUMERATION;
	p = obj_new(sizeof(*p), SIM_K_EVENT_POOL);
	if (!p)
		return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
	p->flags = desc->flags;
	p->count = desc->count;
	if (cb) {
		p->counter_based = true;
		/* The extension's flags have the core flags' values; none means immediate. */
		p->cb_flags = cb->flags ? cb->flags : ZE_EVENT_COUNTER_BASED_FLAG_IMMEDIATE;
	}
	*out = (ze_event_pool_handle_t)p;
	return ZE_RESULT_SUCCESS;
}

static void event_free(struct sim_event *ev)
{
	pthread_mutex_lock(&sim_lock);
	sim_cb_put_locked(ev->cb);
	ev->cb = NULL;
	pthread_mutex_unlock(&sim_lock);
	obj_free(&ev->obj);
}

/* Destroying a pool also retires the events still created from it: their handles then
 * fail validation instead of pointing at freed memory. */
static ze_result_t event_pool_destroy(ze_event_pool_handle_t h)
{
	SIM_HANDLE(event_pool, p, h, SIM_K_EVENT_POOL);
	struct sim_event *ev, *next;

	pthread_mutex_lock(&sim_lock);
	ev = p->events;
	p->events = NULL;
	pthread_mutex_unlock(&sim_lock);
	for (; ev; ev = next) {
		next = ev->pool_next;
		event_free(ev);
	}
	obj_free(&p->obj);
	return ZE_RESULT_SUCCESS;
}

static ze_result_t event_create(ze_event_pool_handle_t ph, const ze_event_desc_t *desc,
				ze_event_handle_t *out)
{
	SIM_HANDLE(event_pool, p, ph, SIM_K_EVENT_POOL);
	struct sim_event *ev;

	SIM_NOT_NULL(desc);
	SIM_NOT_NULL(out);
	if (desc->index >= p->count)
		return ZE_RESULT_ERROR_INVALID_ARGUMENT;
	ev = obj_new(sizeof(*ev), SIM_K_EVENT);
	if (!ev)
		return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
	pthread_mutex_lock(&sim_lock);
	ev->pool = p;
	ev->timestamps = p->flags & (ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP | SIM_POOL_MAPPED_TS);
	ev->host_timestamps = p->flags & SIM_POOL_MAPPED_TS;
	ev->counter_based = p->counter_based;
	ev->cb_flags = p->cb_flags;
	ev->pool_next = p->events;
	p->events = ev;
	pthread_mutex_unlock(&sim_lock);
	*out = (ze_event_handle_t)ev;
	return ZE_RESULT_SUCCESS;
}

/* 1.15: a counter-based event of its own, complete until a command signals it. */
ze_result_t sim_event_counter_based_create(ze_context_handle_t ctx, ze_device_handle_t dev,
					   const ze_event_counter_based_desc_t *desc,
					   ze_event_handle_t *out)
{
	const ze_event_counter_based_flags_t known = 0x7f;
	ze_result_t r = sim_check_context_device(ctx, dev);
	struct sim_event *ev;

	if (r)
		return r;
	SIM_NOT_NULL(desc);
	SIM_NOT_NULL(out);
	if (desc->flags & ~known)
		return ZE_RESULT_ERROR_INVALID_ENUMERATION;
	if ((desc->flags & ZE_EVENT_COUNTER_BASED_FLAG_DEVICE_TIMESTAMP) &&
	    (desc->flags & ZE_EVENT_COUNTER_BASED_FLAG_HOST_TIMESTAMP))
		return ZE_RESULT_ERROR_INVALID_ARGUMENT;
	ev = obj_new(sizeof(*ev), SIM_K_EVENT);
	if (!ev)
		return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
	ev->counter_based = true;
	ev->cb_flags = desc->flags & (ZE_EVENT_COUNTER_BASED_FLAG_IMMEDIATE |
				      ZE_EVENT_COUNTER_BASED_FLAG_NON_IMMEDIATE);
	if (!ev->cb_flags)
		ev->cb_flags = ZE_EVENT_COUNTER_BASED_FLAG_IMMEDIATE;
	ev->timestamps = desc->flags & (ZE_EVENT_COUNTER_BASED_FLAG_DEVICE_TIMESTAMP |
					ZE_EVENT_COUNTER_BASED_FLAG_HOST_TIMESTAMP);
	ev->host_timestamps = desc->flags & ZE_EVENT_COUNTER_BASED_FLAG_HOST_TIMESTAMP;
	*out = (ze_event_handle_t)ev;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t event_destroy(ze_event_handle_t h)
{
	SIM_HANDLE(event, ev, h, SIM_K_EVENT);
	struct sim_event **link;

	pthread_mutex_lock(&sim_lock);
	for (link = ev->pool ? &ev->pool->events : NULL; link && *link;
	     link = &(*link)->pool_next) {
		if (*link == ev) {
			*link = ev->pool_next;
			break;
		}
	}
	pthread_mutex_unlock(&sim_lock);
	event_free(ev);
	return ZE_RESULT_SUCCESS;
}

struct sim_cb_state *sim_cb_new_locked(void)
{
	struct sim_cb_state *st = calloc(1, sizeof(*st));

	if (st)
		st->refs = 1;
	return st;
}

struct sim_cb_state *sim_cb_ref_locked(struct sim_cb_state *st)
{
	if (st)
		st->refs++;
	return st;
}

void sim_cb_put_locked(struct sim_cb_state *st)
{
	if (st && --st->refs == 0)
		free(st);
}

ze_result_t sim_cb_misuse(const char *call, const char *rule)
{
	fprintf(stderr, "ze_sim: %s: %s (counter-based events, spec 1.8 and 1.15)\n", call, rule);
	return ZE_RESULT_ERROR_INVALID_ARGUMENT;
}

bool sim_event_done_locked(const struct sim_event *ev)
{
	if (ev->counter_based)
		return !ev->cb || ev->cb->done;
	return ev->signaled;
}

void sim_event_signal_locked(struct sim_event *ev, uint64_t start_ns, uint64_t end_ns)
{
	if (ev->obj.magic != SIM_MAGIC)
		return;
	ev->signaled = true;
	ev->signal_ns = end_ns;
	ev->start_ns = start_ns;
	ev->end_ns = end_ns;
}

static ze_result_t event_host_signal(ze_event_handle_t h)
{
	SIM_HANDLE(event, ev, h, SIM_K_EVENT);
	uint64_t now = sim_host_ns();

	if (ev->counter_based)
		return sim_cb_misuse("zeEventHostSignal",
				     "only an in-order list signals a counter-based event");
	pthread_mutex_lock(&sim_lock);
	sim_event_signal_locked(ev, now, now);
	pthread_cond_broadcast(&sim_cond);
	pthread_mutex_unlock(&sim_lock);
	return ZE_RESULT_SUCCESS;
}

/* A counter-based event is waited for as it is when the call starts: a later append that
 * signals it again does not move this wait. */
static ze_result_t event_host_synchronize(ze_event_handle_t h, uint64_t timeout_ns)
{
	SIM_HANDLE(event, ev, h, SIM_K_EVENT);
	uint64_t deadline = sim_deadline(timeout_ns);
	ze_result_t r = ZE_RESULT_SUCCESS;
	struct sim_cb_state *st = NULL;

	pthread_mutex_lock(&sim_lock);
	sim_signal_in_wait_locked(timeout_ns);
	if (ev->counter_based)
		st = sim_cb_ref_locked(ev->cb);
	while (ev->counter_based ? (st && !st->done) : !ev->signaled) {
		if (!sim_cond_wait_until(deadline)) {
			r = ZE_RESULT_NOT_READY;
			break;
		}
	}
	sim_cb_put_locked(st);
	pthread_mutex_unlock(&sim_lock);
	return r;
}

static ze_result_t event_query_status(ze_event_handle_t h)
{
	return event_host_synchronize(h, 0);
}

static ze_result_t event_host_reset(ze_event_handle_t h)
{
	SIM_HANDLE(event, ev, h, SIM_K_EVENT);

	if (ev->counter_based)
		return sim_cb_misuse("zeEventHostReset", "a counter-based event is never reset");
	pthread_mutex_lock(&sim_lock);
	ev->signaled = false;
	pthread_mutex_unlock(&sim_lock);
	return ZE_RESULT_SUCCESS;
}

static ze_result_t event_query_kernel_timestamp(ze_event_handle_t h,
						ze_kernel_timestamp_result_t *out)
{
	SIM_HANDLE(event, ev, h, SIM_K_EVENT);
	ze_result_t r = ZE_RESULT_SUCCESS;
	uint64_t start = 0, end = 0;
	bool done;

	SIM_NOT_NULL(out);
	signal_in_query_maybe();
	pthread_mutex_lock(&sim_lock);
	if (ev->counter_based) {
		/* Never signalled: no times yet. */
		done = ev->cb && ev->cb->done;
		if (done) {
			start = ev->cb->start_ns;
			end = ev->cb->end_ns;
		}
	} else {
		done = ev->signaled;
		start = ev->start_ns;
		end = ev->end_ns;
	}
	if (!ev->timestamps) {
		r = ZE_RESULT_ERROR_INVALID_ARGUMENT;
	} else if (!done) {
		r = ZE_RESULT_NOT_READY;
	} else if (ev->host_timestamps) {
		out->global.kernelStart = start;
		out->global.kernelEnd = end;
		out->context = out->global;
	} else {
		out->global.kernelStart = sim_dev_ticks(start);
		out->global.kernelEnd = sim_dev_ticks(end);
		out->context = out->global;	/* one context: always active while running */
	}
	pthread_mutex_unlock(&sim_lock);
	return r;
}

void sim_fill_event_pool(ze_event_pool_dditable_t *t)
{
	t->pfnCreate = event_pool_create;
	t->pfnDestroy = event_pool_destroy;
}

void sim_fill_event(ze_event_dditable_t *t)
{
	t->pfnCreate = event_create;
	t->pfnDestroy = event_destroy;
	t->pfnHostSignal = event_host_signal;
	t->pfnHostSynchronize = event_host_synchronize;
	t->pfnQueryStatus = event_query_status;
	t->pfnHostReset = event_host_reset;
	t->pfnQueryKernelTimestamp = event_query_kernel_timestamp;
}

void sim_fill_event_newer(void *table, ze_api_version_t version)
{
	struct sim_event_ddi *t = table;

	if (version >= SIM_V(15) && SIM_HAS(15))
		t->pfnCounterBasedCreate = sim_event_counter_based_create;
}

/* ---- fences ---- */
static ze_result_t fence_create(ze_command_queue_handle_t qh, const ze_fence_desc_t *desc,
				ze_fence_handle_t *out)
{
	SIM_HANDLE(queue, q, qh, SIM_K_QUEUE);
	struct sim_fence *f;

	SIM_NOT_NULL(desc);
	SIM_NOT_NULL(out);
	if (desc->flags > ZE_FENCE_FLAG_SIGNALED)
		return ZE_RESULT_ERROR_INVALID_ENUMERATION;
	f = obj_new(sizeof(*f), SIM_K_FENCE);
	if (!f)
		return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
	f->queue = q;
	f->signaled = desc->flags & ZE_FENCE_FLAG_SIGNALED;
	*out = (ze_fence_handle_t)f;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t fence_destroy(ze_fence_handle_t h)
{
	SIM_HANDLE(fence, f, h, SIM_K_FENCE);

	obj_free(&f->obj);
	return ZE_RESULT_SUCCESS;
}

static ze_result_t fence_host_synchronize(ze_fence_handle_t h, uint64_t timeout_ns)
{
	SIM_HANDLE(fence, f, h, SIM_K_FENCE);
	uint64_t deadline = sim_deadline(timeout_ns);
	ze_result_t r = ZE_RESULT_SUCCESS;

	pthread_mutex_lock(&sim_lock);
	sim_signal_in_wait_locked(timeout_ns);
	while (!f->signaled) {
		if (!sim_cond_wait_until(deadline)) {
			r = ZE_RESULT_NOT_READY;
			break;
		}
	}
	pthread_mutex_unlock(&sim_lock);
	return r;
}

static ze_result_t fence_query_status(ze_fence_handle_t h)
{
	return fence_host_synchronize(h, 0);
}

static ze_result_t fence_reset(ze_fence_handle_t h)
{
	SIM_HANDLE(fence, f, h, SIM_K_FENCE);

	pthread_mutex_lock(&sim_lock);
	f->signaled = false;
	pthread_mutex_unlock(&sim_lock);
	return ZE_RESULT_SUCCESS;
}

void sim_fill_fence(ze_fence_dditable_t *t)
{
	t->pfnCreate = fence_create;
	t->pfnDestroy = fence_destroy;
	t->pfnHostSynchronize = fence_host_synchronize;
	t->pfnQueryStatus = fence_query_status;
	t->pfnReset = fence_reset;
}

uint64_t sim_mem_in_use_locked(void)
{
	uint64_t n = 0;

	for (const struct sim_alloc *a = allocs; a; a = a->next)
		if (a->type != ZE_MEMORY_TYPE_HOST)
			n += a->size;
	return n;
}
