/*
 * libze_loader.so.1 FOR TESTS ONLY: what a newer Level Zero loader (1.2x/1.3x) presents
 * to programs, on top of Debian's loader 1.8.12, which cannot route the newer entry
 * points to a driver.
 *
 * It has the loader's soname. Every function Debian's loader exports for programs
 * (backends/levelzero/api.h, kinds PLAIN and HOOK) is forwarded to that loader, opened by
 * its path (REAL_LOADER) beside this one. The newer functions (kinds NEW_*, declared in
 * backends/levelzero/ze_newer.h) go to the driver named by ZE_ENABLE_ALT_DRIVERS through
 * its newer tables (test/levelzero/sim/ddi_newer.h), as a newer loader's would:
 *  - zeInitDrivers initializes the real loader (zeInit for every type: the spec's loader
 *    initializes a driver once and then only filters what each call delivers) and returns
 *    the drivers of the types asked for: those whose pfnInitDrivers counts one. A driver
 *    older than spec 1.10 (no pfnInitDrivers) is never delivered; with no driver newer,
 *    the call answers ZE_RESULT_ERROR_UNSUPPORTED_FEATURE (loader 1.32.0 does both).
 *  - the others call the driver's entry, or answer ZE_RESULT_ERROR_UNSUPPORTED_FEATURE when
 *    it has none (a loader's answer for an empty entry). They need handles the driver made:
 *    with one driver Debian's loader passes them through; with two or more it wraps them,
 *    and these answer UNSUPPORTED_FEATURE.
 *  - Sysman (zesInit, zesDriverGet, zesDeviceGet) answers UNSUPPORTED_FEATURE: the
 *    simulated device has no Sysman tables yet.
 *
 * Tests put its folder first in LD_LIBRARY_PATH. Nothing here is for a real system.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <level_zero/ze_api.h>
#include <level_zero/zet_api.h>
#include <level_zero/zes_api.h>
#include <level_zero/loader/ze_loader.h>
#include <level_zero/layers/zel_tracing_api.h>
#include <level_zero/layers/zel_tracing_register_cb.h>
#include "backends/levelzero/ze_newer.h"
#include "backends/levelzero/api.h"
#include "test/levelzero/sim/ddi_newer.h"

#define EXPORT __attribute__((visibility("default")))
#define UNPAREN(...) __VA_ARGS__
#define NEWEST SIM_V(17)
#define MAX_DRIVERS 8

/* ---- Debian's loader, for everything it has ---- */
static void *real_loader(void)
{
	static _Atomic(void *) handle;
	void *h = atomic_load(&handle);

	if (!h) {
		h = dlopen(REAL_LOADER, RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			fprintf(stderr, "test loader: cannot open %s: %s\n", REAL_LOADER, dlerror());
			return NULL;
		}
		atomic_store(&handle, h);
	}
	return h;
}

/* glibc's dlsym itself: a tracer's dlsym would hand a loader its own wrappers back. */
static void *libc_dlsym(void *handle, const char *name)
{
	static _Atomic(void *(*)(void *, const char *)) fn;
	void *(*f)(void *, const char *) = atomic_load(&fn);

	if (!f) {
		void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);

		f = libc ? (void *(*)(void *, const char *))dlvsym(libc, "dlsym", "GLIBC_2.34")
			 : NULL;
		if (!f && libc)
			f = (void *(*)(void *, const char *))dlvsym(libc, "dlsym", "GLIBC_2.2.5");
		if (!f)
			f = dlsym;
		atomic_store(&fn, f);
	}
	return f(handle, name);
}

static void *real_fn(const char *name)
{
	void *h = real_loader();

	return h ? libc_dlsym(h, name) : NULL;
}

#define FORWARD(ret, name, params, args)                                                   \
	EXPORT ret name params                                                             \
	{                                                                                  \
		static _Atomic(void *) fn;                                                 \
		void *f = atomic_load_explicit(&fn, memory_order_acquire);                 \
                                                                                           \
		if (!f) {                                                                  \
			f = real_fn(#name);                                                \
			if (!f)                                                            \
				return ZE_RESULT_ERROR_UNINITIALIZED;                      \
			atomic_store_explicit(&fn, f, memory_order_release);               \
		}                                                                          \
		return ((__typeof__(&name))f) args;                                        \
	}
#define API_PLAIN FORWARD
#define API_HOOK FORWARD
#define API_NEW_PLAIN(ret, name, params, args)
#define API_NEW_HOOK(ret, name, params, args)
#define API_EXT_PLAIN(ret, name, params, args) /* the driver's, never the loader's */
#define API_EXT_HOOK(ret, name, params, args)
#define API(kind, ...) API_##kind(__VA_ARGS__)
ZE_API(API)
#undef API

/* ---- the drivers' newer tables ---- */
struct driver {
	struct sim_global_ddi global;
	struct sim_device_ddi device;
	struct sim_command_list_ddi list;
	struct sim_command_list_exp_ddi list_exp;
	struct sim_event_ddi event;
};

static struct driver drivers[MAX_DRIVERS];
static unsigned ndrivers;

#define GET_TABLE(lib, getter, table)                                                      \
	do {                                                                               \
		ze_result_t (*get_)(ze_api_version_t, void *) =                            \
			(ze_result_t(*)(ze_api_version_t, void *))libc_dlsym(lib, getter);  \
		if (get_)                                                                  \
			get_(NEWEST, &(table));                                            \
	} while (0)

/* The drivers the real loader found, in the same order: ZE_ENABLE_ALT_DRIVERS. */
static void load_drivers(void)
{
	const char *env = getenv("ZE_ENABLE_ALT_DRIVERS");
	char *list, *save = NULL;

	if (!env || !(list = strdup(env)))
		return;
	for (char *path = strtok_r(list, ",", &save); path && ndrivers < MAX_DRIVERS;
	     path = strtok_r(NULL, ",", &save)) {
		void *lib = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
		struct driver *d = &drivers[ndrivers];

		if (!lib)
			continue;
		GET_TABLE(lib, "zeGetGlobalProcAddrTable", d->global);
		GET_TABLE(lib, "zeGetDeviceProcAddrTable", d->device);
		GET_TABLE(lib, "zeGetCommandListProcAddrTable", d->list);
		GET_TABLE(lib, "zeGetCommandListExpProcAddrTable", d->list_exp);
		GET_TABLE(lib, "zeGetEventProcAddrTable", d->event);
		ndrivers++;
	}
	free(list);
}

static void drivers_once(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, load_drivers);
}

/* The one driver whose handles pass through the real loader, or NULL. */
static struct driver *only_driver(void)
{
	drivers_once();
	return ndrivers == 1 ? &drivers[0] : NULL;
}

/* ---- spec 1.10: zeInitDrivers ---- */
EXPORT ze_result_t zeInitDrivers(uint32_t *pCount, ze_driver_handle_t *phDrivers,
				 ze_init_driver_type_desc_t *desc)
{
	ze_driver_handle_t all[MAX_DRIVERS];
	uint32_t nall = MAX_DRIVERS, n = 0, newer = 0;
	ze_result_t r;

	if (!pCount || !desc)
		return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
	/* Debian's loader itself, not whatever zeInit the process binds first. */
	__typeof__(&zeInit) init = (__typeof__(&zeInit))real_fn("zeInit");
	__typeof__(&zeDriverGet) driver_get = (__typeof__(&zeDriverGet))real_fn("zeDriverGet");

	if (!init || !driver_get)
		return ZE_RESULT_ERROR_UNINITIALIZED;
	/* Every type: a later call asking for other types must not fail for the first's. */
	if ((r = init(0)) != ZE_RESULT_SUCCESS)
		return r;
	if ((r = driver_get(&nall, all)) != ZE_RESULT_SUCCESS)
		return r;
	drivers_once();
	for (uint32_t i = 0; i < nall; i++) {
		struct driver *d = i < ndrivers ? &drivers[i] : NULL;
		uint32_t count = 0;

		if (!d || !d->global.pfnInitDrivers)
			continue;
		newer++;
		if (d->global.pfnInitDrivers(&count, NULL, desc) != ZE_RESULT_SUCCESS || !count)
			continue;
		if (phDrivers && *pCount && n < *pCount)
			phDrivers[n] = all[i];
		n++;
	}
	if (!newer)
		return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
	if (phDrivers && *pCount && n > *pCount)
		n = *pCount;
	*pCount = n;
	return ZE_RESULT_SUCCESS;
}

/* ---- the other newer entries: straight to the driver ---- */
#define DISPATCH(table, entry, ret, name, params, args)                                   \
	EXPORT ret name params                                                             \
	{                                                                                  \
		struct driver *d = only_driver();                                          \
                                                                                           \
		if (!d || !d->table.entry)                                                 \
			return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;                        \
		return d->table.entry args;                                                \
	}

DISPATCH(list, pfnHostSynchronize, ze_result_t, zeCommandListHostSynchronize,
	 (ze_command_list_handle_t l, uint64_t timeout), (l, timeout))
DISPATCH(list, pfnGetDeviceHandle, ze_result_t, zeCommandListGetDeviceHandle,
	 (ze_command_list_handle_t l, ze_device_handle_t *out), (l, out))
DISPATCH(list, pfnGetContextHandle, ze_result_t, zeCommandListGetContextHandle,
	 (ze_command_list_handle_t l, ze_context_handle_t *out), (l, out))
DISPATCH(list, pfnGetOrdinal, ze_result_t, zeCommandListGetOrdinal,
	 (ze_command_list_handle_t l, uint32_t *out), (l, out))
DISPATCH(list, pfnImmediateGetIndex, ze_result_t, zeCommandListImmediateGetIndex,
	 (ze_command_list_handle_t l, uint32_t *out), (l, out))
DISPATCH(list, pfnIsImmediate, ze_result_t, zeCommandListIsImmediate,
	 (ze_command_list_handle_t l, ze_bool_t *out), (l, out))
DISPATCH(list_exp, pfnImmediateAppendCommandListsExp, ze_result_t,
	 zeCommandListImmediateAppendCommandListsExp,
	 (ze_command_list_handle_t l, uint32_t n, ze_command_list_handle_t *lists,
	  ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *waits),
	 (l, n, lists, signal, nwait, waits))
DISPATCH(list_exp, pfnGetNextCommandIdExp, ze_result_t, zeCommandListGetNextCommandIdExp,
	 (ze_command_list_handle_t l, const ze_mutable_command_id_exp_desc_t *desc,
	  uint64_t *id), (l, desc, id))
DISPATCH(list_exp, pfnGetNextCommandIdWithKernelsExp, ze_result_t,
	 zeCommandListGetNextCommandIdWithKernelsExp,
	 (ze_command_list_handle_t l, const ze_mutable_command_id_exp_desc_t *desc,
	  uint32_t n, ze_kernel_handle_t *kernels, uint64_t *id), (l, desc, n, kernels, id))
DISPATCH(list_exp, pfnUpdateMutableCommandsExp, ze_result_t,
	 zeCommandListUpdateMutableCommandsExp,
	 (ze_command_list_handle_t l, const ze_mutable_commands_exp_desc_t *desc), (l, desc))
DISPATCH(list_exp, pfnUpdateMutableCommandSignalEventExp, ze_result_t,
	 zeCommandListUpdateMutableCommandSignalEventExp,
	 (ze_command_list_handle_t l, uint64_t id, ze_event_handle_t signal), (l, id, signal))
DISPATCH(list_exp, pfnUpdateMutableCommandWaitEventsExp, ze_result_t,
	 zeCommandListUpdateMutableCommandWaitEventsExp,
	 (ze_command_list_handle_t l, uint64_t id, uint32_t nwait, ze_event_handle_t *waits),
	 (l, id, nwait, waits))
DISPATCH(list_exp, pfnUpdateMutableCommandKernelsExp, ze_result_t,
	 zeCommandListUpdateMutableCommandKernelsExp,
	 (ze_command_list_handle_t l, uint32_t n, uint64_t *ids, ze_kernel_handle_t *kernels),
	 (l, n, ids, kernels))
DISPATCH(list, pfnAppendLaunchKernelWithParameters, ze_result_t,
	 zeCommandListAppendLaunchKernelWithParameters,
	 (ze_command_list_handle_t l, ze_kernel_handle_t k, const ze_group_count_t *groups,
	  const void *next, ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *waits),
	 (l, k, groups, next, signal, nwait, waits))
DISPATCH(list, pfnAppendLaunchKernelWithArguments, ze_result_t,
	 zeCommandListAppendLaunchKernelWithArguments,
	 (ze_command_list_handle_t l, ze_kernel_handle_t k, const ze_group_count_t groups,
	  const ze_group_size_t size, void **args, const void *next, ze_event_handle_t signal,
	  uint32_t nwait, ze_event_handle_t *waits),
	 (l, k, groups, size, args, next, signal, nwait, waits))
DISPATCH(device, pfnSynchronize, ze_result_t, zeDeviceSynchronize, (ze_device_handle_t dev),
	 (dev))
DISPATCH(event, pfnCounterBasedCreate, ze_result_t, zeEventCounterBasedCreate,
	 (ze_context_handle_t ctx, ze_device_handle_t dev,
	  const ze_event_counter_based_desc_t *desc, ze_event_handle_t *out),
	 (ctx, dev, desc, out))
DISPATCH(list, pfnAppendMemoryCopyWithParameters, ze_result_t,
	 zeCommandListAppendMemoryCopyWithParameters,
	 (ze_command_list_handle_t l, void *dst, const void *src, size_t size, const void *next,
	  ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *waits),
	 (l, dst, src, size, next, signal, nwait, waits))
DISPATCH(list, pfnAppendMemoryFillWithParameters, ze_result_t,
	 zeCommandListAppendMemoryFillWithParameters,
	 (ze_command_list_handle_t l, void *ptr, const void *pattern, size_t pattern_size,
	  size_t size, const void *next, ze_event_handle_t signal, uint32_t nwait,
	  ze_event_handle_t *waits),
	 (l, ptr, pattern, pattern_size, size, next, signal, nwait, waits))
DISPATCH(list, pfnImmediateAppendCommandListsWithParameters, ze_result_t,
	 zeCommandListImmediateAppendCommandListsWithParameters,
	 (ze_command_list_handle_t l, uint32_t n, ze_command_list_handle_t *lists,
	  const void *next, ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *waits),
	 (l, n, lists, next, signal, nwait, waits))

/* ---- spec 1.5 Sysman: no driver here has it ---- */
EXPORT ze_result_t zesInit(zes_init_flags_t flags)
{
	return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
}

EXPORT ze_result_t zesDriverGet(uint32_t *pCount, zes_driver_handle_t *phDrivers)
{
	return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
}

EXPORT ze_result_t zesDeviceGet(zes_driver_handle_t hDriver, uint32_t *pCount,
				zes_device_handle_t *phDevices)
{
	return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
}
