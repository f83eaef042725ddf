/* libze_sim.so: a simulated Level Zero GPU for testing gputrace without hardware.
 *
 * Load it into any unmodified Level Zero program (Debian loader libze1 1.8.12) with
 *   ZE_ENABLE_ALT_DRIVERS=/abs/path/to/build/libze_sim.so ./app
 *
 * BEHAVIOUR CONTRACT (tests and users rely on it; keep README.md in sync)
 * - One driver playing spec 1.17, or ZE_SIM_API_VERSION (1.4 to 1.17), with one device
 *   named "gputrace simulated GPU". A table entry is filled only when the loader's requested
 *   version and the played one both have it (see README.md, "Versions": zeInitDrivers,
 *   zeCommandListHostSynchronize, mapped-timestamp event pools, in-order lists,
 *   counter-based events, launches with arguments, regular lists run on immediate lists,
 *   zeDeviceSynchronize...).
 *   Command queue groups: ordinal 0 = compute (COMPUTE|COPY|COOPERATIVE_KERNELS, 2 queues),
 *   ordinal 1 = copy (COPY flag, 1 queue). Fill patterns up to 128 bytes (power of two).
 * - Durations: a kernel launch runs groupCountX·Y·Z × groupSizeX·Y·Z ns (group size is
 *   1·1·1 until zeKernelSetGroupSize; it is captured at append time; an indirect launch's
 *   counts are read from memory when it starts, and several kernels run one after another).
 *   A copy or fill of B bytes (a region copy: width·height·depth) runs max(1000, B/10) ns.
 *   Barriers, signal, wait and event-reset commands take 0 ns but stay ordered; zeCommandListAppendWriteGlobalTimestamp takes 0 ns and writes
 *   device_ticks(its simulated start). Copies and fills move real bytes within their span:
 *   allocations are backed and zeroed when made, as a driver maps and pins them.
 * - Three engines (compute 0.0 and 0.1, copy 1.0), one worker thread each. Every queue and
 *   immediate list runs its commands in order on the engine of its (ordinal, index); an
 *   engine runs one command at a time (its earliest runnable head, then the first
 *   submitted), so queues on one engine take turns; different engines run concurrently.
 *   A command is runnable from the host time it was submitted (zeCommandQueueExecute-
 *   CommandLists for regular lists, the append for immediate lists), or later when it
 *   waits on events: then from the latest simulated signal time of those events (the end
 *   of the signalling command, or the host time of zeEventHostSignal).
 *   Simulated start = max(runnable, end of the previous command on that engine);
 *   end = start + duration. Copies and fills really move the bytes; a command completes
 *   (its signal event and a batch fence become signalled) no earlier in real time than its
 *   simulated end (CLOCK_MONOTONIC_RAW), maybe later (pick-up: README.md). Wait events
 *   block the worker.
 * - Device clock: tick = ZE_SIM_TICK_NS ns (default 52.083, fractional), with
 *   ZE_SIM_VALID_BITS valid bits (default 32, 8..64; with 16 timestamps wrap every ~3.4 ms)
 *   and an offset ZE_SIM_CLOCK_OFFSET_NS (default 7777777777777):
 *     device_ticks(host_ns) = floor((host_ns + offset) * rate / tick_ns) & (2^bits - 1)
 *   where rate = 1 + ZE_SIM_DRIFT_PPM / 1e6 (default 0; -1000..1000): the device clock
 *   runs fast or slow against the host's, the reported tick staying the nominal one.
 *   zeEventQueryKernelTimestamp gives device_ticks(simulated start/end) in both `global`
 *   and `context` (so a kernel may start before a wrap and end after it).
 *   zeDeviceGetGlobalTimestamps gives host = CLOCK_MONOTONIC_RAW ns and
 *   device = device_ticks(that same host time), or of a time ZE_SIM_PAIR_SPLIT_US later
 *   (on threads named ZE_SIM_PAIR_SPLIT_THREAD only, when set).
 *   With ZE_SIM_PAIR_FAIL_FROM=N (1-based), its Nth call and every later one fail
 *   (ZE_RESULT_ERROR_DEVICE_LOST): a device whose clock pair cannot be read any more.
 *   zeDeviceGetProperties: timerResolution = round(tick_ns) ns with the legacy stype
 *   ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES, round(1e9 / tick_ns) Hz with
 *   ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2; timestampValidBits = kernelTimestampValidBits
 *   = ZE_SIM_VALID_BITS. Bad env values get one "ze_sim:" stderr line and the default.
 * - zeEventQueryKernelTimestamp: ZE_RESULT_ERROR_INVALID_ARGUMENT for an event from a pool
 *   without ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP, ZE_RESULT_NOT_READY before it is signalled.
 *   A host-signalled event reports start = end = the signal time.
 * - Handles are checked against a registry of live objects, never dereferenced blindly:
 *   NULL → ZE_RESULT_ERROR_INVALID_NULL_HANDLE; destroyed, garbage or wrong-kind handle →
 *   ZE_RESULT_ERROR_INVALID_ARGUMENT; NULL output/descriptor pointers →
 *   ZE_RESULT_ERROR_INVALID_NULL_POINTER. Destroying an event pool retires its events.
 *   An event or fence destroyed before a command that names it runs or completes is gone
 *   for that command (nothing signalled or reset, a wait on it never passes), even if a
 *   later object got its freed address: a driver writes the memory it was given.
 * - Synchronize calls take a timeout in ns (UINT64_MAX = forever, 0 = poll) and return
 *   ZE_RESULT_NOT_READY when it expires.
 * - Counter-based events: complete until signalled; each signalling command gives the
 *   event a new state that completes (with its timestamps) with that command; waits take
 *   the state at submission. Only in-order lists signal them; host reset, host signal and
 *   device reset are refused: ZE_RESULT_ERROR_INVALID_ARGUMENT and one "ze_sim:" line.
 * - Only the 53 zeGet*, zetGet*, zesGet*ProcAddrTable getters and the 1.9
 *   zeGetCommandListExpProcAddrTable are exported; unlisted entries stay empty (the
 *   loader reports UNSUPPORTED_FEATURE). Metrics (zet: groups, streamers, queries;
 *   sim_metrics.c) and Sysman (zes: frequency, power, temperature, memory, engines;
 *   sim_sysman.c) answer only when ZET_ENABLE_METRICS=1 / ZES_ENABLE_SYSMAN=1 were
 *   set before the first zeInit; their values follow from the simulated work
 *   (README.md, "Metrics" and "Sysman").
 * - fork(): workers are recreated lazily in the child. The library is linked
 *   -z nodelete, so workers never run unmapped code after the loader's dlclose.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <level_zero/zes_ddi.h>
#include <level_zero/zet_ddi.h>

#include "sim.h"

struct sim_obj sim_driver_obj = { .magic = SIM_MAGIC, .kind = SIM_K_DRIVER };
struct sim_obj sim_device_obj = { .magic = SIM_MAGIC, .kind = SIM_K_DEVICE };

/* ---- the spec version played (ZE_SIM_API_VERSION) ---- */
#define SIM_NEWEST_MINOR 17
#define SIM_OLDEST_MINOR 4

ze_api_version_t sim_api_version = ZE_MAKE_VERSION(1, SIM_NEWEST_MINOR);

static void parse_api_version(void)
{
	const char *s = getenv("ZE_SIM_API_VERSION");
	unsigned major, minor;
	char extra;

	if (!s || !*s)
		return;
	if (sscanf(s, "%u.%u%c", &major, &minor, &extra) != 2 || major != 1 ||
	    minor < SIM_OLDEST_MINOR || minor > SIM_NEWEST_MINOR) {
		fprintf(stderr, "ze_sim: ZE_SIM_API_VERSION='%s' is not a version from 1.%d to 1.%d; "
			"using 1.%d\n", s, SIM_OLDEST_MINOR, SIM_NEWEST_MINOR, SIM_NEWEST_MINOR);
		return;
	}
	sim_api_version = ZE_MAKE_VERSION(1, minor);
}

static void setup_once(void)
{
	parse_api_version();
	sim_clock_setup();
	sim_tools_setup();
}

void sim_setup(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, setup_once);
}

/* ---- global, driver ---- */
static ze_result_t sim_init(ze_init_flags_t flags)
{
	if (flags & ~(ze_init_flags_t)(ZE_INIT_FLAG_GPU_ONLY | ZE_INIT_FLAG_VPU_ONLY))
		return ZE_RESULT_ERROR_INVALID_ENUMERATION;
	if (flags == ZE_INIT_FLAG_VPU_ONLY)
		return ZE_RESULT_ERROR_UNINITIALIZED;	/* not a VPU */
	sim_setup();
	return ZE_RESULT_SUCCESS;
}

/* 1.10: the drivers of the types asked for; this one is a GPU driver. */
static ze_result_t sim_init_drivers(uint32_t *count, ze_driver_handle_t *out,
				    ze_init_driver_type_desc_t *desc)
{
	SIM_NOT_NULL(count);
	SIM_NOT_NULL(desc);
	if (desc->flags != UINT32_MAX &&
	    (desc->flags & ~(ZE_INIT_DRIVER_TYPE_FLAG_GPU | ZE_INIT_DRIVER_TYPE_FLAG_NPU)))
		return ZE_RESULT_ERROR_INVALID_ENUMERATION;
	sim_setup();
	if (!(desc->flags & ZE_INIT_DRIVER_TYPE_FLAG_GPU)) {
		*count = 0;
		return ZE_RESULT_SUCCESS;
	}
	if (*count && out)
		out[0] = (ze_driver_handle_t)&sim_driver_obj;
	*count = 1;
	return ZE_RESULT_SUCCESS;
}

void sim_fill_global(ze_global_dditable_t *t)
{
	t->pfnInit = sim_init;
}

static void sim_fill_global_newer(void *table, ze_api_version_t version)
{
	struct sim_global_ddi *t = table;

	if (version >= SIM_V(10) && SIM_HAS(10))
		t->pfnInitDrivers = sim_init_drivers;
}

/* The usual count protocol: *count == 0 or no array asks for the total. */
static ze_result_t report_handles(uint32_t *count, void **out, void *only)
{
	SIM_NOT_NULL(count);
	if (*count == 0 || !out) {
		*count = 1;
		return ZE_RESULT_SUCCESS;
	}
	out[0] = only;
	*count = 1;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t driver_get(uint32_t *count, ze_driver_handle_t *out)
{
	return report_handles(count, (void **)out, &sim_driver_obj);
}

static ze_result_t driver_get_api_version(ze_driver_handle_t h, ze_api_version_t *v)
{
	SIM_HANDLE(obj, d, h, SIM_K_DRIVER);

	(void)d;
	SIM_NOT_NULL(v);
	*v = sim_api_version;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t driver_get_properties(ze_driver_handle_t h, ze_driver_properties_t *p)
{
	static const char uuid[ZE_MAX_DRIVER_UUID_SIZE] = "gputrace-ze-sim";
	SIM_HANDLE(obj, d, h, SIM_K_DRIVER);

	(void)d;
	SIM_NOT_NULL(p);
	memcpy(p->uuid.id, uuid, sizeof(uuid));
	p->driverVersion = 1;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t driver_get_ipc_properties(ze_driver_handle_t h, ze_driver_ipc_properties_t *p)
{
	SIM_HANDLE(obj, d, h, SIM_K_DRIVER);

	(void)d;
	SIM_NOT_NULL(p);
	p->flags = 0;
	return ZE_RESULT_SUCCESS;
}

/* The extensions of later specs it plays, so programs that look before they use them find them. */
static ze_result_t driver_get_extension_properties(ze_driver_handle_t h, uint32_t *count,
						   ze_driver_extension_properties_t *p)
{
	static const struct { const char *name; unsigned minor; } exts[] = {
		{ ZE_EVENT_POOL_COUNTER_BASED_EXP_NAME, 8 },
		{ ZE_IMMEDIATE_COMMAND_LIST_APPEND_EXP_NAME, 9 },
		{ ZE_MUTABLE_COMMAND_LIST_EXP_NAME, 9 },
	};
	SIM_HANDLE(obj, d, h, SIM_K_DRIVER);
	uint32_t n = 0;

	(void)d;
	SIM_NOT_NULL(count);
	for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
		if (!SIM_HAS(exts[i].minor))
			continue;
		if (p && n < *count) {
			memset(p[n].name, 0, sizeof(p[n].name));
			strncpy(p[n].name, exts[i].name, sizeof(p[n].name) - 1);
			p[n].version = ZE_MAKE_VERSION(1, 0);
		}
		n++;
	}
	if (p && *count < n)
		n = *count;
	*count = n;
	return ZE_RESULT_SUCCESS;
}

void sim_fill_driver(ze_driver_dditable_t *t)
{
	t->pfnGet = driver_get;
	t->pfnGetApiVersion = driver_get_api_version;
	t->pfnGetProperties = driver_get_properties;
	t->pfnGetIpcProperties = driver_get_ipc_properties;
	t->pfnGetExtensionProperties = driver_get_extension_properties;
	t->pfnGetExtensionFunctionAddress = sim_get_extension_function_address;
}

/* ---- device ---- */
static ze_result_t device_get(ze_driver_handle_t h, uint32_t *count, ze_device_handle_t *out)
{
	SIM_HANDLE(obj, d, h, SIM_K_DRIVER);

	(void)d;
	return report_handles(count, (void **)out, &sim_device_obj);
}

static ze_result_t device_get_sub_devices(ze_device_handle_t h, uint32_t *count,
					  ze_device_handle_t *out)
{
	SIM_HANDLE(obj, d, h, SIM_K_DEVICE);

	(void)d, (void)out;
	SIM_NOT_NULL(count);
	*count = 0;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t device_get_properties(ze_device_handle_t h, ze_device_properties_t *p)
{
	static const uint8_t uuid[ZE_MAX_DEVICE_UUID_SIZE] = "gputrace-sim-gpu";
	SIM_HANDLE(obj, d, h, SIM_K_DEVICE);
	long double tick = sim_clock.tick_ns;

	(void)d;
	SIM_NOT_NULL(p);
	p->type = ZE_DEVICE_TYPE_GPU;
	p->vendorId = 0x1d1d;	/* not Intel's, so nothing takes it for real hardware */
	p->deviceId = 0x5157;
	p->flags = 0;
	p->subdeviceId = 0;
	p->coreClockRate = 1000;
	p->maxMemAllocSize = 1ULL << 32;
	p->maxHardwareContexts = 64;
	p->maxCommandQueuePriority = 2;
	p->numThreadsPerEU = 8;
	p->physicalEUSimdWidth = 8;
	p->numEUsPerSubslice = 8;
	p->numSubslicesPerSlice = 4;
	p->numSlices = 1;
	if (p->stype == ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2)
		p->timerResolution = (uint64_t)llroundl(1e9L / tick);	/* Hz */
	else
		p->timerResolution = tick < 1.5L ? 1 : (uint64_t)llroundl(tick);	/* ns */
	p->timestampValidBits = sim_clock.valid_bits;
	p->kernelTimestampValidBits = sim_clock.valid_bits;
	memcpy(p->uuid.id, uuid, sizeof(uuid));
	memset(p->name, 0, sizeof(p->name));
	strcpy(p->name, SIM_DEVICE_NAME);
	return ZE_RESULT_SUCCESS;
}

static ze_result_t device_get_compute_properties(ze_device_handle_t h,
						 ze_device_compute_properties_t *p)
{
	SIM_HANDLE(obj, d, h, SIM_K_DEVICE);

	(void)d;
	SIM_NOT_NULL(p);
	p->maxTotalGroupSize = 1024;
	p->maxGroupSizeX = p->maxGroupSizeY = p->maxGroupSizeZ = 1024;
	p->maxGroupCountX = p->maxGroupCountY = p->maxGroupCountZ = UINT32_MAX;
	p->maxSharedLocalMemory = 64 * 1024;
	p->numSubGroupSizes = 3;
	memset(p->subGroupSizes, 0, sizeof(p->subGroupSizes));
	p->subGroupSizes[0] = 8;
	p->subGroupSizes[1] = 16;
	p->subGroupSizes[2] = 32;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t device_get_command_queue_group_properties(ze_device_handle_t h, uint32_t *count,
							     ze_command_queue_group_properties_t *p)
{
	static const struct { ze_command_queue_group_property_flags_t flags; uint32_t queues; }
	groups[SIM_QUEUE_GROUPS] = {
		{ ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE |
		  ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY |
		  ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COOPERATIVE_KERNELS, 2 },
		{ ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY, 1 },
	};
	SIM_HANDLE(obj, d, h, SIM_K_DEVICE);
	uint32_t n;

	(void)d;
	SIM_NOT_NULL(count);
	if (*count == 0 || !p) {
		*count = SIM_QUEUE_GROUPS;
		return ZE_RESULT_SUCCESS;
	}
	n = *count < SIM_QUEUE_GROUPS ? *count : SIM_QUEUE_GROUPS;
	for (uint32_t i = 0; i < n; i++) {
		p[i].flags = groups[i].flags;
		p[i].maxMemoryFillPatternSize = SIM_FILL_PATTERN_MAX;
		p[i].numQueues = groups[i].queues;
	}
	*count = n;
	return ZE_RESULT_SUCCESS;
}

/* The count protocol of a list of one entry: true when the caller asks for it filled. */
static bool one_entry(uint32_t *count, const void *p)
{
	bool fill = *count && p;

	*count = 1;
	return fill;
}

static ze_result_t device_get_memory_properties(ze_device_handle_t h, uint32_t *count,
						ze_device_memory_properties_t *p)
{
	SIM_HANDLE(obj, d, h, SIM_K_DEVICE);

	(void)d;
	SIM_NOT_NULL(count);
	if (!one_entry(count, p))
		return ZE_RESULT_SUCCESS;
	p->flags = 0;
	p->maxClockRate = 1000;
	p->maxBusWidth = 64;
	p->totalSize = 1ULL << 34;
	memset(p->name, 0, sizeof(p->name));
	strcpy(p->name, "sim-host-memory");
	return ZE_RESULT_SUCCESS;
}

static ze_result_t device_get_module_properties(ze_device_handle_t h,
						ze_device_module_properties_t *p)
{
	const ze_device_fp_flags_t fp = ZE_DEVICE_FP_FLAG_DENORM | ZE_DEVICE_FP_FLAG_INF_NAN |
					ZE_DEVICE_FP_FLAG_ROUND_TO_NEAREST |
					ZE_DEVICE_FP_FLAG_ROUND_TO_ZERO |
					ZE_DEVICE_FP_FLAG_ROUND_TO_INF | ZE_DEVICE_FP_FLAG_FMA;
	SIM_HANDLE(obj, d, h, SIM_K_DEVICE);

	(void)d;
	SIM_NOT_NULL(p);
	p->spirvVersionSupported = ZE_MAKE_VERSION(1, 4);
	p->flags = ZE_DEVICE_MODULE_FLAG_FP16 | ZE_DEVICE_MODULE_FLAG_FP64 |
		   ZE_DEVICE_MODULE_FLAG_INT64_ATOMICS | ZE_DEVICE_MODULE_FLAG_DP4A;
	p->fp16flags = p->fp32flags = p->fp64flags = fp;
	p->maxArgumentsSize = 2048;
	p->printfBufferSize = 4 << 20;
	memset(p->nativeKernelSupported.id, 0x5a, sizeof(p->nativeKernelSupported.id));
	return ZE_RESULT_SUCCESS;
}

static ze_result_t device_get_memory_access_properties(ze_device_handle_t h,
						       ze_device_memory_access_properties_t *p)
{
	const ze_memory_access_cap_flags_t rw = ZE_MEMORY_ACCESS_CAP_FLAG_RW |
						ZE_MEMORY_ACCESS_CAP_FLAG_ATOMIC;
	SIM_HANDLE(obj, d, h, SIM_K_DEVICE);

	(void)d;
	SIM_NOT_NULL(p);
	/* Device memory is host memory here: every kind is read, written and atomic. */
	p->hostAllocCapabilities = rw;
	p->deviceAllocCapabilities = rw;
	p->sharedSingleDeviceAllocCapabilities = rw;
	p->sharedCrossDeviceAllocCapabilities = 0;
	p->sharedSystemAllocCapabilities = 0;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t device_get_cache_properties(ze_device_handle_t h, uint32_t *count,
					       ze_device_cache_properties_t *p)
{
	SIM_HANDLE(obj, d, h, SIM_K_DEVICE);

	(void)d;
	SIM_NOT_NULL(count);
	if (!one_entry(count, p))
		return ZE_RESULT_SUCCESS;
	p->flags = 0;
	p->cacheSize = 16u << 20;
	return ZE_RESULT_SUCCESS;
}

/* No image support (the image tables are empty): every limit is 0. */
static ze_result_t device_get_image_properties(ze_device_handle_t h,
					       ze_device_image_properties_t *p)
{
	SIM_HANDLE(obj, d, h, SIM_K_DEVICE);

	(void)d;
	SIM_NOT_NULL(p);
	sim_clear_out(p, sizeof(*p));
	return ZE_RESULT_SUCCESS;
}

static ze_result_t device_get_status(ze_device_handle_t h)
{
	return sim_obj_check(h, SIM_K_DEVICE);
}

/* ZE_SIM_PAIR_FAIL_FROM=N: the clock pair's Nth call and every later one fail. */
static unsigned long pair_fail_from = ~0ul;

static void pair_fail_parse(void)
{
	const char *v = getenv("ZE_SIM_PAIR_FAIL_FROM");

	if (v && *v)
		pair_fail_from = strtoul(v, NULL, 10);
}

static bool sim_pair_fails(void)
{
	static unsigned long calls;
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, pair_fail_parse);
	return __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED) >= pair_fail_from;
}

static ze_result_t device_get_global_timestamps(ze_device_handle_t h, uint64_t *host,
						uint64_t *dev)
{
	SIM_HANDLE(obj, d, h, SIM_K_DEVICE);
	uint64_t now;

	(void)d;
	SIM_NOT_NULL(host);
	SIM_NOT_NULL(dev);
	if (sim_pair_fails())
		return ZE_RESULT_ERROR_DEVICE_LOST;
	now = sim_host_ns();
	*host = now;
	if (sim_pair_split_maybe())
		now = sim_host_ns();
	*dev = sim_dev_ticks(now);
	return ZE_RESULT_SUCCESS;
}

static ze_result_t device_can_access_peer(ze_device_handle_t h, ze_device_handle_t peer,
					  ze_bool_t *out)
{
	ze_result_t r = sim_obj_check(h, SIM_K_DEVICE);

	if (r || (r = sim_obj_check(peer, SIM_K_DEVICE)))
		return r;
	SIM_NOT_NULL(out);
	*out = 1;
	return ZE_RESULT_SUCCESS;
}

void sim_fill_device(ze_device_dditable_t *t)
{
	t->pfnGet = device_get;
	t->pfnGetSubDevices = device_get_sub_devices;
	t->pfnGetProperties = device_get_properties;
	t->pfnGetComputeProperties = device_get_compute_properties;
	t->pfnGetCommandQueueGroupProperties = device_get_command_queue_group_properties;
	t->pfnGetMemoryProperties = device_get_memory_properties;
	t->pfnGetModuleProperties = device_get_module_properties;
	t->pfnGetMemoryAccessProperties = device_get_memory_access_properties;
	t->pfnGetCacheProperties = device_get_cache_properties;
	t->pfnGetImageProperties = device_get_image_properties;
	t->pfnGetStatus = device_get_status;
	t->pfnGetGlobalTimestamps = device_get_global_timestamps;
	t->pfnCanAccessPeer = device_can_access_peer;
}

static void sim_fill_device_newer(void *table, ze_api_version_t version)
{
	struct sim_device_ddi *t = table;

	if (version >= SIM_V(14) && SIM_HAS(14))
		t->pfnSynchronize = sim_device_synchronize;
}

/* ---- the table getters: the 53 that loader 1.8.12 requires, and newer ones ---- */
static void sim_fill_nothing_newer(void *table, ze_api_version_t version)
{
	(void)table, (void)version;
}

#define SIM_FILLED_TABLES(X)							\
	X(zeGetGlobalProcAddrTable, ze_global_dditable_t, sim_fill_global,	\
	  sim_fill_global_newer)						\
	X(zeGetDriverProcAddrTable, ze_driver_dditable_t, sim_fill_driver,	\
	  sim_fill_nothing_newer)						\
	X(zeGetDeviceProcAddrTable, ze_device_dditable_t, sim_fill_device,	\
	  sim_fill_device_newer)						\
	X(zeGetContextProcAddrTable, ze_context_dditable_t, sim_fill_context,	\
	  sim_fill_nothing_newer)						\
	X(zeGetCommandQueueProcAddrTable, ze_command_queue_dditable_t,		\
	  sim_fill_command_queue, sim_fill_nothing_newer)			\
	X(zeGetCommandListProcAddrTable, ze_command_list_dditable_t,		\
	  sim_fill_command_list, sim_fill_command_list_newer)			\
	X(zeGetFenceProcAddrTable, ze_fence_dditable_t, sim_fill_fence,	\
	  sim_fill_nothing_newer)						\
	X(zeGetEventPoolProcAddrTable, ze_event_pool_dditable_t,		\
	  sim_fill_event_pool, sim_fill_nothing_newer)				\
	X(zeGetEventProcAddrTable, ze_event_dditable_t, sim_fill_event,	\
	  sim_fill_event_newer)							\
	X(zeGetModuleProcAddrTable, ze_module_dditable_t, sim_fill_module,	\
	  sim_fill_nothing_newer)						\
	X(zeGetModuleBuildLogProcAddrTable, ze_module_build_log_dditable_t,	\
	  sim_fill_module_build_log, sim_fill_nothing_newer)			\
	X(zeGetKernelProcAddrTable, ze_kernel_dditable_t, sim_fill_kernel,	\
	  sim_fill_nothing_newer)						\
	X(zeGetMemProcAddrTable, ze_mem_dditable_t, sim_fill_mem,		\
	  sim_fill_nothing_newer) \
	X(zetGetContextProcAddrTable, zet_context_dditable_t, sim_fill_metric_context,	\
	  sim_fill_nothing_newer) \
	X(zetGetCommandListProcAddrTable, zet_command_list_dditable_t, sim_fill_metric_command_list,	\
	  sim_fill_nothing_newer) \
	X(zetGetMetricGroupProcAddrTable, zet_metric_group_dditable_t, sim_fill_metric_group,	\
	  sim_fill_nothing_newer) \
	X(zetGetMetricGroupExpProcAddrTable, zet_metric_group_exp_dditable_t, sim_fill_metric_group_exp,	\
	  sim_fill_nothing_newer) \
	X(zetGetMetricProcAddrTable, zet_metric_dditable_t, sim_fill_metric,	\
	  sim_fill_nothing_newer) \
	X(zetGetMetricStreamerProcAddrTable, zet_metric_streamer_dditable_t, sim_fill_metric_streamer,	\
	  sim_fill_nothing_newer) \
	X(zetGetMetricQueryPoolProcAddrTable, zet_metric_query_pool_dditable_t, sim_fill_metric_query_pool,	\
	  sim_fill_nothing_newer) \
	X(zetGetMetricQueryProcAddrTable, zet_metric_query_dditable_t, sim_fill_metric_query,	\
	  sim_fill_nothing_newer) \
	X(zesGetDeviceProcAddrTable, zes_device_dditable_t, sim_fill_sysman_device,	\
	  sim_fill_nothing_newer) \
	X(zesGetFrequencyProcAddrTable, zes_frequency_dditable_t, sim_fill_sysman_frequency,	\
	  sim_fill_nothing_newer) \
	X(zesGetPowerProcAddrTable, zes_power_dditable_t, sim_fill_sysman_power,	\
	  sim_fill_nothing_newer) \
	X(zesGetTemperatureProcAddrTable, zes_temperature_dditable_t, sim_fill_sysman_temperature,	\
	  sim_fill_nothing_newer) \
	X(zesGetMemoryProcAddrTable, zes_memory_dditable_t, sim_fill_sysman_memory,	\
	  sim_fill_nothing_newer) \
	X(zesGetEngineProcAddrTable, zes_engine_dditable_t, sim_fill_sysman_engine,	\
	  sim_fill_nothing_newer)

#define SIM_EMPTY_TABLES(X)							\
	X(zeGetDeviceExpProcAddrTable, ze_device_exp_dditable_t)		\
	X(zeGetImageProcAddrTable, ze_image_dditable_t)			\
	X(zeGetImageExpProcAddrTable, ze_image_exp_dditable_t)			\
	X(zeGetEventExpProcAddrTable, ze_event_exp_dditable_t)			\
	X(zeGetKernelExpProcAddrTable, ze_kernel_exp_dditable_t)		\
	X(zeGetSamplerProcAddrTable, ze_sampler_dditable_t)			\
	X(zeGetPhysicalMemProcAddrTable, ze_physical_mem_dditable_t)		\
	X(zeGetVirtualMemProcAddrTable, ze_virtual_mem_dditable_t)		\
	X(zeGetFabricVertexExpProcAddrTable, ze_fabric_vertex_exp_dditable_t)	\
	X(zeGetFabricEdgeExpProcAddrTable, ze_fabric_edge_exp_dditable_t)	\
	X(zetGetDeviceProcAddrTable, zet_device_dditable_t)			\
	X(zetGetModuleProcAddrTable, zet_module_dditable_t)			\
	X(zetGetKernelProcAddrTable, zet_kernel_dditable_t)			\
	X(zetGetTracerExpProcAddrTable, zet_tracer_exp_dditable_t)		\
	X(zetGetDebugProcAddrTable, zet_debug_dditable_t)			\
	X(zesGetDriverProcAddrTable, zes_driver_dditable_t)			\
	X(zesGetSchedulerProcAddrTable, zes_scheduler_dditable_t)		\
	X(zesGetPerformanceFactorProcAddrTable, zes_performance_factor_dditable_t) \
	X(zesGetStandbyProcAddrTable, zes_standby_dditable_t)			\
	X(zesGetFirmwareProcAddrTable, zes_firmware_dditable_t)		\
	X(zesGetFabricPortProcAddrTable, zes_fabric_port_dditable_t)		\
	X(zesGetPsuProcAddrTable, zes_psu_dditable_t)				\
	X(zesGetFanProcAddrTable, zes_fan_dditable_t)				\
	X(zesGetLedProcAddrTable, zes_led_dditable_t)				\
	X(zesGetRasProcAddrTable, zes_ras_dditable_t)				\
	X(zesGetDiagnosticsProcAddrTable, zes_diagnostics_dditable_t)

/* Tables only grow at their end, so any 1.x loader can take the 1.4 prefix we fill. */
static ze_result_t check_ddi_request(ze_api_version_t version, const void *table)
{
	sim_setup();
	SIM_NOT_NULL(table);
	if (ZE_MAJOR_VERSION(version) != 1)
		return ZE_RESULT_ERROR_UNSUPPORTED_VERSION;
	return ZE_RESULT_SUCCESS;
}

#define SIM_FILLED_GETTER(getter, type, fill, fill_newer)			\
	ZE_DLLEXPORT ze_result_t ZE_APICALL getter(ze_api_version_t version, type *table) \
	{									\
		ze_result_t r = check_ddi_request(version, table);		\
		if (r == ZE_RESULT_SUCCESS) {					\
			fill(table);						\
			fill_newer(table, version);				\
		}								\
		return r;							\
	}
#define SIM_EMPTY_GETTER(getter, type)						\
	ZE_DLLEXPORT ze_result_t ZE_APICALL getter(ze_api_version_t version, type *table) \
	{									\
		return check_ddi_request(version, table);			\
	}

SIM_FILLED_TABLES(SIM_FILLED_GETTER)
SIM_EMPTY_TABLES(SIM_EMPTY_GETTER)

/* A table of spec 1.9, unknown to loader 1.8.12 (newer loaders ask for it). */
ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetCommandListExpProcAddrTable(
	ze_api_version_t version, struct sim_command_list_exp_ddi *table)
{
	ze_result_t r = check_ddi_request(version, table);

	if (r == ZE_RESULT_SUCCESS)
		sim_fill_command_list_exp(table, version);
	return r;
}
