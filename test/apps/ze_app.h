/* Helpers shared by the sample Level Zero programs: checked calls, setup, checksums.
 * Programs print deterministic lines on stdout and exit 0 on success, 1 on a failed check. */
#ifndef ZE_APP_H
#define ZE_APP_H

#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <level_zero/ze_api.h>
#include "../arg.h"

#define ZE_CHECK(call)								\
	do {									\
		ze_result_t r_ = (call);					\
		if (r_ != ZE_RESULT_SUCCESS) {					\
			fprintf(stderr, "%s:%d: %s failed: 0x%x\n", __FILE__,	\
				__LINE__, #call, (unsigned)r_);			\
			exit(1);						\
		}								\
	} while (0)

#define APP_EXPECT(cond, ...)							\
	do {									\
		if (!(cond)) {							\
			fprintf(stderr, "check failed: " __VA_ARGS__);		\
			fputc('\n', stderr);					\
			exit(1);						\
		}								\
	} while (0)

/* Threads a and b, meeting at start (a barrier of two, made here), joined. */
static inline void app_run_two_threads(pthread_barrier_t *start, void *(*a)(void *),
				       void *(*b)(void *))
{
	pthread_t ta, tb;

	APP_EXPECT(pthread_barrier_init(start, NULL, 2) == 0, "pthread_barrier_init");
	APP_EXPECT(pthread_create(&ta, NULL, a, NULL) == 0, "pthread_create");
	APP_EXPECT(pthread_create(&tb, NULL, b, NULL) == 0, "pthread_create");
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	pthread_barrier_destroy(start);
}

/* CLOCK_MONOTONIC_RAW in ns: the clock gputrace's timestamps are in. */
static inline uint64_t app_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* FNV-1a: a checksum that catches misplaced bytes, not only wrong sums. */
static inline uint64_t app_checksum(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	return h;
}

struct app_ze {
	ze_driver_handle_t driver;
	ze_device_handle_t device;
	ze_context_handle_t context;
};

static inline void app_ze_setup(struct app_ze *z)
{
	uint32_t n = 1;
	ze_context_desc_t cdesc = { ZE_STRUCTURE_TYPE_CONTEXT_DESC, NULL, 0 };

	ZE_CHECK(zeInit(ZE_INIT_FLAG_GPU_ONLY));
	ZE_CHECK(zeDriverGet(&n, &z->driver));
	n = 1;
	ZE_CHECK(zeDeviceGet(z->driver, &n, &z->device));
	ZE_CHECK(zeContextCreate(z->driver, &cdesc, &z->context));
}

static inline ze_command_queue_handle_t app_queue(struct app_ze *z, uint32_t ordinal,
						  uint32_t index)
{
	ze_command_queue_desc_t d = { ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, NULL, ordinal, index,
				      0, ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS,
				      ZE_COMMAND_QUEUE_PRIORITY_NORMAL };
	ze_command_queue_handle_t q;

	ZE_CHECK(zeCommandQueueCreate(z->context, z->device, &d, &q));
	return q;
}

static inline ze_command_list_handle_t app_list(struct app_ze *z, uint32_t ordinal)
{
	ze_command_list_desc_t d = { ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, NULL, ordinal, 0 };
	ze_command_list_handle_t l;

	ZE_CHECK(zeCommandListCreate(z->context, z->device, &d, &l));
	return l;
}

static inline ze_command_list_handle_t app_immediate_list(struct app_ze *z, uint32_t ordinal,
							  uint32_t index)
{
	ze_command_queue_desc_t d = { ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, NULL, ordinal, index,
				      0, ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS,
				      ZE_COMMAND_QUEUE_PRIORITY_NORMAL };
	ze_command_list_handle_t l;

	ZE_CHECK(zeCommandListCreateImmediate(z->context, z->device, &d, &l));
	return l;
}

/* The simulated device accepts any module bytes. */
static inline ze_module_handle_t app_module(struct app_ze *z)
{
	static const uint8_t fake_spirv[] = { 0x03, 0x02, 0x23, 0x07, 0x00, 0x00, 0x01, 0x00 };
	ze_module_desc_t d = { ZE_STRUCTURE_TYPE_MODULE_DESC, NULL, ZE_MODULE_FORMAT_IL_SPIRV,
			       sizeof(fake_spirv), fake_spirv, NULL, NULL };
	ze_module_handle_t m;

	ZE_CHECK(zeModuleCreate(z->context, z->device, &d, &m, NULL));
	return m;
}

static inline ze_kernel_handle_t app_kernel(ze_module_handle_t m, const char *name, uint32_t gx,
					    uint32_t gy, uint32_t gz)
{
	ze_kernel_desc_t d = { ZE_STRUCTURE_TYPE_KERNEL_DESC, NULL, 0, name };
	ze_kernel_handle_t k;

	ZE_CHECK(zeKernelCreate(m, &d, &k));
	ZE_CHECK(zeKernelSetGroupSize(k, gx, gy, gz));
	return k;
}

static inline void *app_host_alloc(struct app_ze *z, size_t n)
{
	ze_host_mem_alloc_desc_t d = { ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, NULL, 0 };
	void *p;

	ZE_CHECK(zeMemAllocHost(z->context, &d, n, 64, &p));
	return p;
}

static inline void *app_device_alloc(struct app_ze *z, size_t n)
{
	ze_device_mem_alloc_desc_t d = { ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, NULL, 0, 0 };
	void *p;

	ZE_CHECK(zeMemAllocDevice(z->context, &d, n, 64, z->device, &p));
	return p;
}

static inline ze_event_pool_handle_t app_event_pool(struct app_ze *z, ze_event_pool_flags_t flags,
						    uint32_t count)
{
	ze_event_pool_desc_t d = { ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, NULL, flags, count };
	ze_event_pool_handle_t p;

	ZE_CHECK(zeEventPoolCreate(z->context, &d, 1, &z->device, &p));
	return p;
}

#ifdef GPUTRACE_LEVELZERO_ZE_NEWER_H
/* A pool of counter-based events for immediate lists (spec 1.8 extension), with kernel
 * timestamps. */
static inline ze_event_pool_handle_t app_counter_based_pool(struct app_ze *z, uint32_t count)
{
	ze_event_pool_counter_based_exp_desc_t cb = {
		ZE_STRUCTURE_TYPE_COUNTER_BASED_EVENT_POOL_EXP_DESC, NULL,
		ZE_EVENT_POOL_COUNTER_BASED_EXP_FLAG_IMMEDIATE };
	ze_event_pool_desc_t d = { ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, &cb,
				   ZE_EVENT_POOL_FLAG_HOST_VISIBLE |
				   ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP, count };
	ze_event_pool_handle_t p;

	ZE_CHECK(zeEventPoolCreate(z->context, &d, 1, &z->device, &p));
	return p;
}

/* An in-order immediate list (spec 1.7) on queue group `ordinal`, index 0. */
static inline ze_command_list_handle_t app_in_order_list(struct app_ze *z, uint32_t ordinal)
{
	ze_command_queue_desc_t d = { ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, NULL, ordinal, 0,
				      ZE_COMMAND_QUEUE_FLAG_IN_ORDER,
				      ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS,
				      ZE_COMMAND_QUEUE_PRIORITY_NORMAL };
	ze_command_list_handle_t l;

	ZE_CHECK(zeCommandListCreateImmediate(z->context, z->device, &d, &l));
	return l;
}
#endif

static inline ze_event_handle_t app_event(ze_event_pool_handle_t pool, uint32_t index)
{
	ze_event_desc_t d = { ZE_STRUCTURE_TYPE_EVENT_DESC, NULL, index, ZE_EVENT_SCOPE_FLAG_HOST,
			      ZE_EVENT_SCOPE_FLAG_HOST };
	ze_event_handle_t e;

	ZE_CHECK(zeEventCreate(pool, &d, &e));
	return e;
}

#endif
