/* libze_sim.so: a simulated Level Zero GPU for testing gputrace without hardware.
 *
 * Load it into any unmodified Level Zero program (Debian loader libze1 1.8.12) with
 *   ZE_ENABLE_ALT_DRIVERS=/abs/path/to/build/libze_sim.so ./app
 *
 * BEHAVIOUR CONTRACT (tests and users rely on it; keep README.md in sync)
 * - One driver (API version 1.4) with one device named "gputrace simulated GPU".
 *   Command queue groups: ordinal 0 = compute (COMPUTE|COPY flags, 2 queues),
 *   ordinal 1 = copy (COPY flag, 1 queue). Fill patterns up to 128 bytes (power of two).
 * - Durations: a kernel launch runs groupCountX·Y·Z × groupSizeX·Y·Z ns (group size is
 *   1·1·1 until zeKernelSetGroupSize; it is captured at append time). A copy or fill of
 *   B bytes runs max(1000, B/10) ns. Barriers, signal, wait and event-reset commands take
 *   0 ns but stay ordered; zeCommandListAppendWriteGlobalTimestamp takes 0 ns and writes
 *   device_ticks(its simulated start).
 * - Each command queue and each immediate command list has one worker thread that runs its
 *   commands in submission order, one at a time; different queues/lists run concurrently.
 *   A command is runnable from the host time it was submitted (zeCommandQueueExecute-
 *   CommandLists for regular lists, the append for immediate lists), or later when it
 *   waits on events: then from the latest simulated signal time of those events (the end
 *   of the signalling command, or the host time of zeEventHostSignal).
 *   Simulated start = max(runnable, end of the previous command on that queue);
 *   end = start + duration. Copies and fills really move the bytes; a command completes
 *   (its signal event and a batch fence become signalled) no earlier in real time than its
 *   simulated end (CLOCK_MONOTONIC_RAW). Wait events block the worker.
 * - Device clock: tick = ZE_SIM_TICK_NS ns (default 52.083, fractional), with
 *   ZE_SIM_VALID_BITS valid bits (default 32, 8..64; with 16 timestamps wrap every ~3.4 ms)
 *   and an offset ZE_SIM_CLOCK_OFFSET_NS (default 7777777777777):
 *     device_ticks(host_ns) = floor((host_ns + offset) / tick_ns) & (2^bits - 1)
 *   zeEventQueryKernelTimestamp gives device_ticks(simulated start/end) in both `global`
 *   and `context` (so a kernel may start before a wrap and end after it).
 *   zeDeviceGetGlobalTimestamps gives host = CLOCK_MONOTONIC_RAW ns and
 *   device = device_ticks(that same host time).
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
 * - Synchronize calls take a timeout in ns (UINT64_MAX = forever, 0 = poll) and return
 *   ZE_RESULT_NOT_READY when it expires.
 * - Only the 53 zeGet*, zetGet*, zesGet*ProcAddrTable getters are exported; the zet/zes
 *   tables and unlisted entries stay empty (the loader reports UNSUPPORTED_FEATURE).
 * - fork(): workers are recreated lazily in the child. The library is linked
 *   -z nodelete, so workers never run unmapped code after the loader's dlclose.
 */
#include <math.h>
#include <string.h>

#include <level_zero/zes_ddi.h>
#include <level_zero/zet_ddi.h>

#include "sim.h"

struct sim_obj sim_driver_obj = { .magic = SIM_MAGIC, .kind = SIM_K_DRIVER };
struct sim_obj sim_device_obj = { .magic = SIM_MAGIC, .kind = SIM_K_DEVICE };

/* ---- global, driver ---- */
static ze_result_t sim_init(ze_init_flags_t flags)
{
	if (flags & ~(ze_init_flags_t)(ZE_INIT_FLAG_GPU_ONLY | ZE_INIT_FLAG_VPU_ONLY))
		return ZE_RESULT_ERROR_INVALID_ENUMERATION;
	if (flags == ZE_INIT_FLAG_VPU_ONLY)
		return ZE_RESULT_ERROR_UNINITIALIZED;	/* not a VPU */
	sim_clock_setup();
	return ZE_RESULT_SUCCESS;
}

void sim_fill_global(ze_global_dditable_t *t)
{
	t->pfnInit = sim_init;
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
	*v = ZE_API_VERSION_1_4;
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

static ze_result_t driver_get_extension_properties(ze_driver_handle_t h, uint32_t *count,
						   ze_driver_extension_properties_t *p)
{
	SIM_HANDLE(obj, d, h, SIM_K_DRIVER);

	(void)d, (void)p;
	SIM_NOT_NULL(count);
	*count = 0;
	return ZE_RESULT_SUCCESS;
}

void sim_fill_driver(ze_driver_dditable_t *t)
{
	t->pfnGet = driver_get;
	t->pfnGetApiVersion = driver_get_api_version;
	t->pfnGetProperties = driver_get_properties;
	t->pfnGetIpcProperties = driver_get_ipc_properties;
	t->pfnGetExtensionProperties = driver_get_extension_properties;
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
		  ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY, 2 },
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

static ze_result_t device_get_memory_properties(ze_device_handle_t h, uint32_t *count,
						ze_device_memory_properties_t *p)
{
	SIM_HANDLE(obj, d, h, SIM_K_DEVICE);

	(void)d;
	SIM_NOT_NULL(count);
	if (*count == 0 || !p) {
		*count = 1;
		return ZE_RESULT_SUCCESS;
	}
	p->flags = 0;
	p->maxClockRate = 1000;
	p->maxBusWidth = 64;
	p->totalSize = 1ULL << 34;
	memset(p->name, 0, sizeof(p->name));
	strcpy(p->name, "sim-host-memory");
	*count = 1;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t device_get_status(ze_device_handle_t h)
{
	return sim_obj_check(h, SIM_K_DEVICE);
}

static ze_result_t device_get_global_timestamps(ze_device_handle_t h, uint64_t *host,
						uint64_t *dev)
{
	SIM_HANDLE(obj, d, h, SIM_K_DEVICE);
	uint64_t now;

	(void)d;
	SIM_NOT_NULL(host);
	SIM_NOT_NULL(dev);
	now = sim_host_ns();
	*host = now;
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
	t->pfnGetStatus = device_get_status;
	t->pfnGetGlobalTimestamps = device_get_global_timestamps;
	t->pfnCanAccessPeer = device_can_access_peer;
}

/* ---- the 53 table getters the loader requires ---- */
#define SIM_FILLED_TABLES(X)							\
	X(zeGetGlobalProcAddrTable, ze_global_dditable_t, sim_fill_global)	\
	X(zeGetDriverProcAddrTable, ze_driver_dditable_t, sim_fill_driver)	\
	X(zeGetDeviceProcAddrTable, ze_device_dditable_t, sim_fill_device)	\
	X(zeGetContextProcAddrTable, ze_context_dditable_t, sim_fill_context)	\
	X(zeGetCommandQueueProcAddrTable, ze_command_queue_dditable_t, sim_fill_command_queue) \
	X(zeGetCommandListProcAddrTable, ze_command_list_dditable_t, sim_fill_command_list) \
	X(zeGetFenceProcAddrTable, ze_fence_dditable_t, sim_fill_fence)	\
	X(zeGetEventPoolProcAddrTable, ze_event_pool_dditable_t, sim_fill_event_pool) \
	X(zeGetEventProcAddrTable, ze_event_dditable_t, sim_fill_event)	\
	X(zeGetModuleProcAddrTable, ze_module_dditable_t, sim_fill_module)	\
	X(zeGetModuleBuildLogProcAddrTable, ze_module_build_log_dditable_t,	\
	  sim_fill_module_build_log)						\
	X(zeGetKernelProcAddrTable, ze_kernel_dditable_t, sim_fill_kernel)	\
	X(zeGetMemProcAddrTable, ze_mem_dditable_t, sim_fill_mem)

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
	X(zetGetContextProcAddrTable, zet_context_dditable_t)			\
	X(zetGetCommandListProcAddrTable, zet_command_list_dditable_t)		\
	X(zetGetModuleProcAddrTable, zet_module_dditable_t)			\
	X(zetGetKernelProcAddrTable, zet_kernel_dditable_t)			\
	X(zetGetMetricGroupProcAddrTable, zet_metric_group_dditable_t)		\
	X(zetGetMetricGroupExpProcAddrTable, zet_metric_group_exp_dditable_t)	\
	X(zetGetMetricProcAddrTable, zet_metric_dditable_t)			\
	X(zetGetMetricStreamerProcAddrTable, zet_metric_streamer_dditable_t)	\
	X(zetGetMetricQueryPoolProcAddrTable, zet_metric_query_pool_dditable_t) \
	X(zetGetMetricQueryProcAddrTable, zet_metric_query_dditable_t)		\
	X(zetGetTracerExpProcAddrTable, zet_tracer_exp_dditable_t)		\
	X(zetGetDebugProcAddrTable, zet_debug_dditable_t)			\
	X(zesGetDriverProcAddrTable, zes_driver_dditable_t)			\
	X(zesGetDeviceProcAddrTable, zes_device_dditable_t)			\
	X(zesGetSchedulerProcAddrTable, zes_scheduler_dditable_t)		\
	X(zesGetPerformanceFactorProcAddrTable, zes_performance_factor_dditable_t) \
	X(zesGetPowerProcAddrTable, zes_power_dditable_t)			\
	X(zesGetFrequencyProcAddrTable, zes_frequency_dditable_t)		\
	X(zesGetEngineProcAddrTable, zes_engine_dditable_t)			\
	X(zesGetStandbyProcAddrTable, zes_standby_dditable_t)			\
	X(zesGetFirmwareProcAddrTable, zes_firmware_dditable_t)		\
	X(zesGetMemoryProcAddrTable, zes_memory_dditable_t)			\
	X(zesGetFabricPortProcAddrTable, zes_fabric_port_dditable_t)		\
	X(zesGetTemperatureProcAddrTable, zes_temperature_dditable_t)		\
	X(zesGetPsuProcAddrTable, zes_psu_dditable_t)				\
	X(zesGetFanProcAddrTable, zes_fan_dditable_t)				\
	X(zesGetLedProcAddrTable, zes_led_dditable_t)				\
	X(zesGetRasProcAddrTable, zes_ras_dditable_t)				\
	X(zesGetDiagnosticsProcAddrTable, zes_diagnostics_dditable_t)

/* Tables only grow at their end, so any 1.x loader can take the 1.4 prefix we fill. */
static ze_result_t check_ddi_request(ze_api_version_t version, const void *table)
{
	SIM_NOT_NULL(table);
	if (ZE_MAJOR_VERSION(version) != 1)
		return ZE_RESULT_ERROR_UNSUPPORTED_VERSION;
	return ZE_RESULT_SUCCESS;
}

#define SIM_FILLED_GETTER(getter, type, fill)					\
	ZE_DLLEXPORT ze_result_t ZE_APICALL getter(ze_api_version_t version, type *table) \
	{									\
		ze_result_t r = check_ddi_request(version, table);		\
		if (r == ZE_RESULT_SUCCESS)					\
			fill(table);						\
		return r;							\
	}
#define SIM_EMPTY_GETTER(getter, type)						\
	ZE_DLLEXPORT ze_result_t ZE_APICALL getter(ze_api_version_t version, type *table) \
	{									\
		return check_ddi_request(version, table);			\
	}

SIM_FILLED_TABLES(SIM_FILLED_GETTER)
SIM_EMPTY_TABLES(SIM_EMPTY_GETTER)
