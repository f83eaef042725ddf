/* SPDX-License-Identifier: MIT */
/*
 * Kineto's dynamic plug-in ABI, declared by gputrace from its published
 * layout, so that gputrace hosts, unchanged and unrebuilt, the plug-ins
 * accelerator vendors write for the PyTorch profiler.
 *
 * Source of the layout: pytorch/kineto pull request 1148, header
 * libkineto/include/KinetoDynamicPluginInterface.h at commit 92fa2ffc
 * (Dec 2025), the latest revision. Identifiers are the ABI's own, so a
 * plug-in's source builds against this file as against Kineto's; the
 * assertions at the end pin every struct's size and every field's offset on
 * x86-64, as that header lays them out.
 *
 * Rules of the ABI, as gputrace applies them:
 * - a plug-in (a .so in KINETO_PLUGIN_LIB_DIR_PATH) exports
 *   KinetoPlugin_register(), which calls registry->registerProfiler() once
 *   per profiler it offers; gputrace copies the interface before that
 *   call returns;
 * - every struct starts with its "unpadded" size: offset + size of its last
 *   field (KINETO_PLUGIN_UNPADDED_STRUCT_SIZE). A struct smaller than the
 *   one here is an older revision's, a larger one a newer revision's whose
 *   extra fields gputrace does not read;
 * - calls return 0 on success, anything else is a failure;
 * - times are UTC nanoseconds (CLOCK_REALTIME);
 * - metadata values are JSON text ("\"a string\"", "[1, 2]", "3.5").
 *
 * Pure C (C99 with <stdbool.h>) and C++; Kineto's own header is C++ only
 * (enum types without the enum keyword): the typedefs below give C the same
 * spelling.
 */
#ifndef GPUTRACE_KINETO_PLUGIN_H
#define GPUTRACE_KINETO_PLUGIN_H

#include <stddef.h>
#include <stdint.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

#define KINETO_PLUGIN_LIB_DIR_PATH_ENV_VARIABLE "KINETO_PLUGIN_LIB_DIR_PATH"

/* Offset of a struct's last field plus its size: the struct's size
 * without the tail padding, its version. */
#define KINETO_PLUGIN_UNPADDED_STRUCT_SIZE(struct_type, last_field)                        \
	((size_t)(offsetof(struct_type, last_field) +                                      \
		  sizeof(((struct_type *)1000)->last_field)))

#ifdef __cplusplus
extern "C" {
#endif

/* Activity types, in the order of Kineto's ActivityType (PR revision
 * 92fa2ffc). The PR's first revision numbered them differently (see
 * backends/plugins/kineto.c); its plug-ins are told apart by their size. */
enum KinetoPlugin_ProfileEventType {
	KINETO_PLUGIN_PROFILE_EVENT_TYPE_INVALID = 0,
	KINETO_PLUGIN_PROFILE_EVENT_TYPE_CPU_OP,
	KINETO_PLUGIN_PROFILE_EVENT_TYPE_USER_ANNOTATION,
	KINETO_PLUGIN_PROFILE_EVENT_TYPE_GPU_USER_ANNOTATION,
	KINETO_PLUGIN_PROFILE_EVENT_TYPE_GPU_MEMCPY,
	KINETO_PLUGIN_PROFILE_EVENT_TYPE_GPU_MEMSET,
	KINETO_PLUGIN_PROFILE_EVENT_TYPE_CONCURRENT_KERNEL,
	KINETO_PLUGIN_PROFILE_EVENT_TYPE_EXTERNAL_CORRELATION,
	KINETO_PLUGIN_PROFILE_EVENT_TYPE_CUDA_RUNTIME,
	KINETO_PLUGIN_PROFILE_EVENT_TYPE_CUDA_DRIVER,
	KINETO_PLUGIN_PROFILE_EVENT_TYPE_CPU_INSTANT_EVENT,
	KINETO_PLUGIN_PROFILE_EVENT_TYPE_PYTHON_FUNCTION,
	KINETO_PLUGIN_PROFILE_EVENT_TYPE_OVERHEAD,
	KINETO_PLUGIN_PROFILE_EVENT_TYPE_MTIA_RUNTIME,
	KINETO_PLUGIN_PROFILE_EVENT_TYPE_MTIA_CCP_EVENTS,
	KINETO_PLUGIN_PROFILE_EVENT_TYPE_MTIA_INSIGHT,
	KINETO_PLUGIN_PROFILE_EVENT_TYPE_CUDA_SYNC,
	KINETO_PLUGIN_PROFILE_EVENT_TYPE_GLOW_RUNTIME,
	KINETO_PLUGIN_PROFILE_EVENT_TYPE_CUDA_PROFILER_RANGE,
	KINETO_PLUGIN_PROFILE_EVENT_TYPE_HPU_OP,
	KINETO_PLUGIN_PROFILE_EVENT_TYPE_XPU_RUNTIME,
	KINETO_PLUGIN_PROFILE_EVENT_TYPE_COLLECTIVE_COMM,
	KINETO_PLUGIN_PROFILE_EVENT_TYPE_GPU_PM_COUNTER,
	KINETO_PLUGIN_PROFILE_EVENT_TYPE_PRIVATEUSE1_RUNTIME,
	KINETO_PLUGIN_PROFILE_EVENT_TYPE_PRIVATEUSE1_DRIVER,
	KINETO_PLUGIN_PROFILE_EVENT_NUM_TYPES
};
typedef enum KinetoPlugin_ProfileEventType KinetoPlugin_ProfileEventType;

/* One event: added with addEvent, then named, linked and annotated through
 * the builder's "last event" calls. CPU events give a process and thread,
 * device events a device and a resource (stream, queue, engine). */
struct KinetoPlugin_ProfileEvent {
	size_t unpaddedStructSize;
	KinetoPlugin_ProfileEventType eventType;
	int64_t startTimeUtcNs;
	int64_t endTimeUtcNs;
	int64_t eventId;
	union {
		int32_t deviceId;
		int32_t processId;
	};
	union {
		int32_t resourceId;
		int32_t threadId;
	};
};
typedef struct KinetoPlugin_ProfileEvent KinetoPlugin_ProfileEvent;
#define KINETO_PLUGIN_PROFILE_EVENT_UNPADDED_STRUCT_SIZE                                   \
	KINETO_PLUGIN_UNPADDED_STRUCT_SIZE(struct KinetoPlugin_ProfileEvent, threadId)

enum KinetoPlugin_ProfileEventFlowType {
	KINETO_PLUGIN_PROFILE_EVENT_FLOW_TYPE_INVALID = 0,
	KINETO_PLUGIN_PROFILE_EVENT_FLOW_TYPE_FWD_BWD,       /* forward op -> backward op */
	KINETO_PLUGIN_PROFILE_EVENT_FLOW_TYPE_ASYNC_CPU_GPU, /* host call -> device work */
	KINETO_PLUGIN_PROFILE_EVENT_NUM_FLOW_TYPES
};
typedef enum KinetoPlugin_ProfileEventFlowType KinetoPlugin_ProfileEventFlowType;

/* The last event is one end of a flow: the events with the same non-zero
 * flowId (and type) are joined, from the one with isStartPoint. */
struct KinetoPlugin_ProfileEventFlow {
	size_t unpaddedStructSize;
	KinetoPlugin_ProfileEventFlowType flowType;
	uint32_t flowId;
	bool isStartPoint;
};
typedef struct KinetoPlugin_ProfileEventFlow KinetoPlugin_ProfileEventFlow;
#define KINETO_PLUGIN_PROFILE_EVENT_FLOW_UNPADDED_STRUCT_SIZE                              \
	KINETO_PLUGIN_UNPADDED_STRUCT_SIZE(struct KinetoPlugin_ProfileEventFlow, isStartPoint)

/* A device (one process row of the trace). */
struct KinetoPlugin_ProfileDeviceInfo {
	size_t unpaddedStructSize;
	int64_t deviceId;
	int64_t sortIndex;
	const char *pName;
	const char *pLabel;
};
typedef struct KinetoPlugin_ProfileDeviceInfo KinetoPlugin_ProfileDeviceInfo;
#define KINETO_PLUGIN_PROFILE_DEVICE_INFO_UNPADDED_STRUCT_SIZE                             \
	KINETO_PLUGIN_UNPADDED_STRUCT_SIZE(struct KinetoPlugin_ProfileDeviceInfo, pLabel)

/* A resource of a device (one thread row under it); lower displayOrder
 * first. */
struct KinetoPlugin_ProfileResourceInfo {
	size_t unpaddedStructSize;
	union {
		int32_t deviceId;
		int32_t processId;
	};
	union {
		int32_t resourceId;
		int32_t threadId;
	};
	int32_t displayOrder;
	const char *pName;
};
typedef struct KinetoPlugin_ProfileResourceInfo KinetoPlugin_ProfileResourceInfo;
#define KINETO_PLUGIN_PROFILE_RESOURCE_INFO_UNPADDED_STRUCT_SIZE                           \
	KINETO_PLUGIN_UNPADDED_STRUCT_SIZE(struct KinetoPlugin_ProfileResourceInfo, pName)

typedef struct KinetoPlugin_TraceBuilderHandle KinetoPlugin_TraceBuilderHandle;

/* What processEvents gets to hand its events over. Each function returns 0,
 * or -1 when the call is refused. */
struct KinetoPlugin_TraceBuilder {
	size_t unpaddedStructSize;
	KinetoPlugin_TraceBuilderHandle *pTraceBuilderHandle;
	int (*addEvent)(KinetoPlugin_TraceBuilderHandle *pTraceBuilderHandle,
			const struct KinetoPlugin_ProfileEvent *pProfileEvent);
	int (*setLastEventName)(KinetoPlugin_TraceBuilderHandle *pTraceBuilderHandle,
				const char *pName);
	int (*setLastEventFlow)(KinetoPlugin_TraceBuilderHandle *pTraceBuilderHandle,
				const struct KinetoPlugin_ProfileEventFlow *pProfileEventFlow);
	/* pValue is JSON: a string comes with its quotes, a list in brackets. */
	int (*addLastEventMetadata)(KinetoPlugin_TraceBuilderHandle *pTraceBuilderHandle,
				    const char *pKey, const char *pValue);
	int (*addDeviceInfo)(KinetoPlugin_TraceBuilderHandle *pTraceBuilderHandle,
			     const struct KinetoPlugin_ProfileDeviceInfo *pProfileDeviceInfo);
	int (*addResourceInfo)(KinetoPlugin_TraceBuilderHandle *pTraceBuilderHandle,
			       const struct KinetoPlugin_ProfileResourceInfo *pProfileResourceInfo);
};
typedef struct KinetoPlugin_TraceBuilder KinetoPlugin_TraceBuilder;
#define KINETO_PLUGIN_TRACE_BUILDER_UNPADDED_STRUCT_SIZE                                   \
	KINETO_PLUGIN_UNPADDED_STRUCT_SIZE(struct KinetoPlugin_TraceBuilder, addResourceInfo)

typedef struct KinetoPlugin_ProfilerHandle KinetoPlugin_ProfilerHandle;

struct KinetoPlugin_ProfilerCreate_Params {
	size_t unpaddedStructSize;
	KinetoPlugin_ProfilerHandle *pProfilerHandle;          /* out */
	KinetoPlugin_ProfileEventType *pEnabledActivityTypes;  /* in */
	size_t enabledActivityTypesMaxLen;                     /* in: entries */
};
typedef struct KinetoPlugin_ProfilerCreate_Params KinetoPlugin_ProfilerCreate_Params;
#define KINETO_PLUGIN_PROFILER_CREATE_PARAMS_UNPADDED_STRUCT_SIZE                          \
	KINETO_PLUGIN_UNPADDED_STRUCT_SIZE(struct KinetoPlugin_ProfilerCreate_Params,       \
					   enabledActivityTypesMaxLen)

struct KinetoPlugin_ProfilerDestroy_Params {
	size_t unpaddedStructSize;
	KinetoPlugin_ProfilerHandle *pProfilerHandle;
};
typedef struct KinetoPlugin_ProfilerDestroy_Params KinetoPlugin_ProfilerDestroy_Params;
#define KINETO_PLUGIN_PROFILER_DESTROY_PARAMS_UNPADDED_STRUCT_SIZE                         \
	KINETO_PLUGIN_UNPADDED_STRUCT_SIZE(struct KinetoPlugin_ProfilerDestroy_Params,      \
					   pProfilerHandle)

struct KinetoPlugin_ProfilerQuery_Params {
	size_t unpaddedStructSize;
	KinetoPlugin_ProfilerHandle *pProfilerHandle;
	char *pProfilerName;       /* in/out: room for profilerNameMaxLen + 1 */
	size_t profilerNameMaxLen; /* without the terminating NUL */
	KinetoPlugin_ProfileEventType *pSupportedActivityTypes; /* in/out, INVALID-filled */
	size_t supportedActivityTypesMaxLen;
};
typedef struct KinetoPlugin_ProfilerQuery_Params KinetoPlugin_ProfilerQuery_Params;
#define KINETO_PLUGIN_PROFILER_QUERY_PARAMS_UNPADDED_STRUCT_SIZE                           \
	KINETO_PLUGIN_UNPADDED_STRUCT_SIZE(struct KinetoPlugin_ProfilerQuery_Params,        \
					   supportedActivityTypesMaxLen)

struct KinetoPlugin_ProfilerStart_Params {
	size_t unpaddedStructSize;
	KinetoPlugin_ProfilerHandle *pProfilerHandle;
};
typedef struct KinetoPlugin_ProfilerStart_Params KinetoPlugin_ProfilerStart_Params;
#define KINETO_PLUGIN_PROFILER_START_PARAMS_UNPADDED_STRUCT_SIZE                           \
	KINETO_PLUGIN_UNPADDED_STRUCT_SIZE(struct KinetoPlugin_ProfilerStart_Params,        \
					   pProfilerHandle)

struct KinetoPlugin_ProfilerStop_Params {
	size_t unpaddedStructSize;
	KinetoPlugin_ProfilerHandle *pProfilerHandle;
};
typedef struct KinetoPlugin_ProfilerStop_Params KinetoPlugin_ProfilerStop_Params;
#define KINETO_PLUGIN_PROFILER_STOP_PARAMS_UNPADDED_STRUCT_SIZE                            \
	KINETO_PLUGIN_UNPADDED_STRUCT_SIZE(struct KinetoPlugin_ProfilerStop_Params,         \
					   pProfilerHandle)

struct KinetoPlugin_ProfilerProcessEvents_Params {
	size_t unpaddedStructSize;
	KinetoPlugin_ProfilerHandle *pProfilerHandle;
	const struct KinetoPlugin_TraceBuilder *pTraceBuilder; /* valid during the call */
};
typedef struct KinetoPlugin_ProfilerProcessEvents_Params KinetoPlugin_ProfilerProcessEvents_Params;
#define KINETO_PLUGIN_PROFILER_PROCESS_EVENTS_PARAMS_UNPADDED_STRUCT_SIZE                  \
	KINETO_PLUGIN_UNPADDED_STRUCT_SIZE(struct KinetoPlugin_ProfilerProcessEvents_Params, \
					   pTraceBuilder)

/* The id comes before the handle in both push structs. */
struct KinetoPlugin_ProfilerPushCorrelationId_Params {
	size_t unpaddedStructSize;
	uint64_t correlationId;
	KinetoPlugin_ProfilerHandle *pProfilerHandle;
};
typedef struct KinetoPlugin_ProfilerPushCorrelationId_Params
	KinetoPlugin_ProfilerPushCorrelationId_Params;
#define KINETO_PLUGIN_PROFILER_PUSH_CORRELATION_ID_PARAMS_UNPADDED_STRUCT_SIZE             \
	KINETO_PLUGIN_UNPADDED_STRUCT_SIZE(                                                 \
		struct KinetoPlugin_ProfilerPushCorrelationId_Params, pProfilerHandle)

struct KinetoPlugin_ProfilerPopCorrelationId_Params {
	size_t unpaddedStructSize;
	KinetoPlugin_ProfilerHandle *pProfilerHandle;
};
typedef struct KinetoPlugin_ProfilerPopCorrelationId_Params
	KinetoPlugin_ProfilerPopCorrelationId_Params;
#define KINETO_PLUGIN_PROFILER_POP_CORRELATION_ID_PARAMS_UNPADDED_STRUCT_SIZE              \
	KINETO_PLUGIN_UNPADDED_STRUCT_SIZE(struct KinetoPlugin_ProfilerPopCorrelationId_Params, \
					   pProfilerHandle)

struct KinetoPlugin_ProfilerPushUserCorrelationId_Params {
	size_t unpaddedStructSize;
	uint64_t userCorrelationId;
	KinetoPlugin_ProfilerHandle *pProfilerHandle;
};
typedef struct KinetoPlugin_ProfilerPushUserCorrelationId_Params
	KinetoPlugin_ProfilerPushUserCorrelationId_Params;
#define KINETO_PLUGIN_PROFILER_PUSH_USER_CORRELATION_ID_PARAMS_UNPADDED_STRUCT_SIZE        \
	KINETO_PLUGIN_UNPADDED_STRUCT_SIZE(                                                 \
		struct KinetoPlugin_ProfilerPushUserCorrelationId_Params, pProfilerHandle)

struct KinetoPlugin_ProfilerPopUserCorrelationId_Params {
	size_t unpaddedStructSize;
	KinetoPlugin_ProfilerHandle *pProfilerHandle;
};
typedef struct KinetoPlugin_ProfilerPopUserCorrelationId_Params
	KinetoPlugin_ProfilerPopUserCorrelationId_Params;
#define KINETO_PLUGIN_PROFILER_POP_USER_CORRELATION_ID_PARAMS_UNPADDED_STRUCT_SIZE         \
	KINETO_PLUGIN_UNPADDED_STRUCT_SIZE(                                                 \
		struct KinetoPlugin_ProfilerPopUserCorrelationId_Params, pProfilerHandle)

/* A profiler, as the plug-in registers it. The four correlation calls may
 * be NULL; the others are required. */
struct KinetoPlugin_ProfilerInterface {
	size_t unpaddedStructSize;
	int (*profilerCreate)(struct KinetoPlugin_ProfilerCreate_Params *p);
	int (*profilerDestroy)(struct KinetoPlugin_ProfilerDestroy_Params *p);
	int (*profilerQuery)(struct KinetoPlugin_ProfilerQuery_Params *p);
	int (*profilerStart)(struct KinetoPlugin_ProfilerStart_Params *p);
	int (*profilerStop)(struct KinetoPlugin_ProfilerStop_Params *p);
	int (*profilerPushCorrelationId)(struct KinetoPlugin_ProfilerPushCorrelationId_Params *p);
	int (*profilerPopCorrelationId)(struct KinetoPlugin_ProfilerPopCorrelationId_Params *p);
	int (*profilerPushUserCorrelationId)(
		struct KinetoPlugin_ProfilerPushUserCorrelationId_Params *p);
	int (*profilerPopUserCorrelationId)(
		struct KinetoPlugin_ProfilerPopUserCorrelationId_Params *p);
	int (*profilerProcessEvents)(struct KinetoPlugin_ProfilerProcessEvents_Params *p);
};
typedef struct KinetoPlugin_ProfilerInterface KinetoPlugin_ProfilerInterface;
#define KINETO_PLUGIN_PROFILER_INTERFACE_UNPADDED_STRUCT_SIZE                              \
	KINETO_PLUGIN_UNPADDED_STRUCT_SIZE(struct KinetoPlugin_ProfilerInterface,           \
					   profilerProcessEvents)

typedef struct KinetoPlugin_RegistryHandle KinetoPlugin_RegistryHandle;

struct KinetoPlugin_Registry {
	size_t unpaddedStructSize;
	KinetoPlugin_RegistryHandle *pRegistryHandle;
	int (*registerProfiler)(KinetoPlugin_RegistryHandle *pRegistryHandle,
				const struct KinetoPlugin_ProfilerInterface *pProfiler);
};
typedef struct KinetoPlugin_Registry KinetoPlugin_Registry;
#define KINETO_PLUGIN_REGISTRY_UNPADDED_STRUCT_SIZE                                        \
	KINETO_PLUGIN_UNPADDED_STRUCT_SIZE(struct KinetoPlugin_Registry, registerProfiler)

/* What the plug-in exports. 0 on success. */
#define KINETO_PLUGIN_REGISTER_SYMBOL "KinetoPlugin_register"
#if defined(__GNUC__) || defined(__clang__)
__attribute__((visibility("default")))
#endif
int KinetoPlugin_register(const struct KinetoPlugin_Registry *pRegistry);
typedef int (*KinetoPlugin_register_fn)(const struct KinetoPlugin_Registry *pRegistry);

#ifdef __cplusplus
}
#endif

/* ---- the layout, pinned (x86-64, LP64) ---- */
#if defined(__x86_64__) && defined(__LP64__)
#ifdef __cplusplus
#define KINETO_PLUGIN_LAYOUT(cond, what) static_assert(cond, what)
#else
#define KINETO_PLUGIN_LAYOUT(cond, what) _Static_assert(cond, what)
#endif
#define KINETO_PLUGIN_AT(s, f, off)                                                        \
	KINETO_PLUGIN_LAYOUT(offsetof(struct s, f) == (off), #s "." #f " at " #off)

KINETO_PLUGIN_LAYOUT(sizeof(KinetoPlugin_ProfileEventType) == 4, "enums are 4 bytes");
KINETO_PLUGIN_LAYOUT(sizeof(KinetoPlugin_ProfileEventFlowType) == 4, "enums are 4 bytes");
KINETO_PLUGIN_LAYOUT(KINETO_PLUGIN_PROFILE_EVENT_TYPE_GPU_PM_COUNTER == 22, "enum values");
KINETO_PLUGIN_LAYOUT(KINETO_PLUGIN_PROFILE_EVENT_NUM_TYPES == 25, "enum values");

KINETO_PLUGIN_AT(KinetoPlugin_ProfileEvent, unpaddedStructSize, 0);
KINETO_PLUGIN_AT(KinetoPlugin_ProfileEvent, eventType, 8);
KINETO_PLUGIN_AT(KinetoPlugin_ProfileEvent, startTimeUtcNs, 16);
KINETO_PLUGIN_AT(KinetoPlugin_ProfileEvent, endTimeUtcNs, 24);
KINETO_PLUGIN_AT(KinetoPlugin_ProfileEvent, eventId, 32);
KINETO_PLUGIN_AT(KinetoPlugin_ProfileEvent, deviceId, 40);
KINETO_PLUGIN_AT(KinetoPlugin_ProfileEvent, processId, 40);
KINETO_PLUGIN_AT(KinetoPlugin_ProfileEvent, resourceId, 44);
KINETO_PLUGIN_AT(KinetoPlugin_ProfileEvent, threadId, 44);
KINETO_PLUGIN_LAYOUT(sizeof(struct KinetoPlugin_ProfileEvent) == 48, "event size");
KINETO_PLUGIN_LAYOUT(KINETO_PLUGIN_PROFILE_EVENT_UNPADDED_STRUCT_SIZE == 48, "event unpadded");

KINETO_PLUGIN_AT(KinetoPlugin_ProfileEventFlow, flowType, 8);
KINETO_PLUGIN_AT(KinetoPlugin_ProfileEventFlow, flowId, 12);
KINETO_PLUGIN_AT(KinetoPlugin_ProfileEventFlow, isStartPoint, 16);
KINETO_PLUGIN_LAYOUT(sizeof(struct KinetoPlugin_ProfileEventFlow) == 24, "flow size");
KINETO_PLUGIN_LAYOUT(KINETO_PLUGIN_PROFILE_EVENT_FLOW_UNPADDED_STRUCT_SIZE == 17, "flow unpadded");

KINETO_PLUGIN_AT(KinetoPlugin_ProfileDeviceInfo, deviceId, 8);
KINETO_PLUGIN_AT(KinetoPlugin_ProfileDeviceInfo, sortIndex, 16);
KINETO_PLUGIN_AT(KinetoPlugin_ProfileDeviceInfo, pName, 24);
KINETO_PLUGIN_AT(KinetoPlugin_ProfileDeviceInfo, pLabel, 32);
KINETO_PLUGIN_LAYOUT(sizeof(struct KinetoPlugin_ProfileDeviceInfo) == 40, "device info size");
KINETO_PLUGIN_LAYOUT(KINETO_PLUGIN_PROFILE_DEVICE_INFO_UNPADDED_STRUCT_SIZE == 40,
		     "device info unpadded");

KINETO_PLUGIN_AT(KinetoPlugin_ProfileResourceInfo, deviceId, 8);
KINETO_PLUGIN_AT(KinetoPlugin_ProfileResourceInfo, processId, 8);
KINETO_PLUGIN_AT(KinetoPlugin_ProfileResourceInfo, resourceId, 12);
KINETO_PLUGIN_AT(KinetoPlugin_ProfileResourceInfo, threadId, 12);
KINETO_PLUGIN_AT(KinetoPlugin_ProfileResourceInfo, displayOrder, 16);
KINETO_PLUGIN_AT(KinetoPlugin_ProfileResourceInfo, pName, 24);
KINETO_PLUGIN_LAYOUT(sizeof(struct KinetoPlugin_ProfileResourceInfo) == 32, "resource info size");
KINETO_PLUGIN_LAYOUT(KINETO_PLUGIN_PROFILE_RESOURCE_INFO_UNPADDED_STRUCT_SIZE == 32,
		     "resource info unpadded");

KINETO_PLUGIN_AT(KinetoPlugin_TraceBuilder, pTraceBuilderHandle, 8);
KINETO_PLUGIN_AT(KinetoPlugin_TraceBuilder, addEvent, 16);
KINETO_PLUGIN_AT(KinetoPlugin_TraceBuilder, setLastEventName, 24);
KINETO_PLUGIN_AT(KinetoPlugin_TraceBuilder, setLastEventFlow, 32);
KINETO_PLUGIN_AT(KinetoPlugin_TraceBuilder, addLastEventMetadata, 40);
KINETO_PLUGIN_AT(KinetoPlugin_TraceBuilder, addDeviceInfo, 48);
KINETO_PLUGIN_AT(KinetoPlugin_TraceBuilder, addResourceInfo, 56);
KINETO_PLUGIN_LAYOUT(sizeof(struct KinetoPlugin_TraceBuilder) == 64, "builder size");
KINETO_PLUGIN_LAYOUT(KINETO_PLUGIN_TRACE_BUILDER_UNPADDED_STRUCT_SIZE == 64, "builder unpadded");

KINETO_PLUGIN_AT(KinetoPlugin_ProfilerCreate_Params, pProfilerHandle, 8);
KINETO_PLUGIN_AT(KinetoPlugin_ProfilerCreate_Params, pEnabledActivityTypes, 16);
KINETO_PLUGIN_AT(KinetoPlugin_ProfilerCreate_Params, enabledActivityTypesMaxLen, 24);
KINETO_PLUGIN_LAYOUT(sizeof(struct KinetoPlugin_ProfilerCreate_Params) == 32, "create size");
KINETO_PLUGIN_LAYOUT(KINETO_PLUGIN_PROFILER_CREATE_PARAMS_UNPADDED_STRUCT_SIZE == 32,
		     "create unpadded");

KINETO_PLUGIN_AT(KinetoPlugin_ProfilerDestroy_Params, pProfilerHandle, 8);
KINETO_PLUGIN_LAYOUT(sizeof(struct KinetoPlugin_ProfilerDestroy_Params) == 16, "destroy size");
KINETO_PLUGIN_LAYOUT(KINETO_PLUGIN_PROFILER_DESTROY_PARAMS_UNPADDED_STRUCT_SIZE == 16,
		     "destroy unpadded");

KINETO_PLUGIN_AT(KinetoPlugin_ProfilerQuery_Params, pProfilerHandle, 8);
KINETO_PLUGIN_AT(KinetoPlugin_ProfilerQuery_Params, pProfilerName, 16);
KINETO_PLUGIN_AT(KinetoPlugin_ProfilerQuery_Params, profilerNameMaxLen, 24);
KINETO_PLUGIN_AT(KinetoPlugin_ProfilerQuery_Params, pSupportedActivityTypes, 32);
KINETO_PLUGIN_AT(KinetoPlugin_ProfilerQuery_Params, supportedActivityTypesMaxLen, 40);
KINETO_PLUGIN_LAYOUT(sizeof(struct KinetoPlugin_ProfilerQuery_Params) == 48, "query size");
KINETO_PLUGIN_LAYOUT(KINETO_PLUGIN_PROFILER_QUERY_PARAMS_UNPADDED_STRUCT_SIZE == 48,
		     "query unpadded");

KINETO_PLUGIN_AT(KinetoPlugin_ProfilerStart_Params, pProfilerHandle, 8);
KINETO_PLUGIN_LAYOUT(sizeof(struct KinetoPlugin_ProfilerStart_Params) == 16, "start size");
KINETO_PLUGIN_LAYOUT(KINETO_PLUGIN_PROFILER_START_PARAMS_UNPADDED_STRUCT_SIZE == 16,
		     "start unpadded");
KINETO_PLUGIN_AT(KinetoPlugin_ProfilerStop_Params, pProfilerHandle, 8);
KINETO_PLUGIN_LAYOUT(sizeof(struct KinetoPlugin_ProfilerStop_Params) == 16, "stop size");
KINETO_PLUGIN_LAYOUT(KINETO_PLUGIN_PROFILER_STOP_PARAMS_UNPADDED_STRUCT_SIZE == 16,
		     "stop unpadded");

KINETO_PLUGIN_AT(KinetoPlugin_ProfilerProcessEvents_Params, pProfilerHandle, 8);
KINETO_PLUGIN_AT(KinetoPlugin_ProfilerProcessEvents_Params, pTraceBuilder, 16);
KINETO_PLUGIN_LAYOUT(sizeof(struct KinetoPlugin_ProfilerProcessEvents_Params) == 24,
		     "process events size");
KINETO_PLUGIN_LAYOUT(KINETO_PLUGIN_PROFILER_PROCESS_EVENTS_PARAMS_UNPADDED_STRUCT_SIZE == 24,
		     "process events unpadded");

KINETO_PLUGIN_AT(KinetoPlugin_ProfilerPushCorrelationId_Params, correlationId, 8);
KINETO_PLUGIN_AT(KinetoPlugin_ProfilerPushCorrelationId_Params, pProfilerHandle, 16);
KINETO_PLUGIN_LAYOUT(sizeof(struct KinetoPlugin_ProfilerPushCorrelationId_Params) == 24,
		     "push size");
KINETO_PLUGIN_LAYOUT(KINETO_PLUGIN_PROFILER_PUSH_CORRELATION_ID_PARAMS_UNPADDED_STRUCT_SIZE == 24,
		     "push unpadded");
KINETO_PLUGIN_AT(KinetoPlugin_ProfilerPopCorrelationId_Params, pProfilerHandle, 8);
KINETO_PLUGIN_LAYOUT(sizeof(struct KinetoPlugin_ProfilerPopCorrelationId_Params) == 16,
		     "pop size");
KINETO_PLUGIN_LAYOUT(KINETO_PLUGIN_PROFILER_POP_CORRELATION_ID_PARAMS_UNPADDED_STRUCT_SIZE == 16,
		     "pop unpadded");
KINETO_PLUGIN_AT(KinetoPlugin_ProfilerPushUserCorrelationId_Params, userCorrelationId, 8);
KINETO_PLUGIN_AT(KinetoPlugin_ProfilerPushUserCorrelationId_Params, pProfilerHandle, 16);
KINETO_PLUGIN_LAYOUT(sizeof(struct KinetoPlugin_ProfilerPushUserCorrelationId_Params) == 24,
		     "push user size");
KINETO_PLUGIN_LAYOUT(
	KINETO_PLUGIN_PROFILER_PUSH_USER_CORRELATION_ID_PARAMS_UNPADDED_STRUCT_SIZE == 24,
	"push user unpadded");
KINETO_PLUGIN_AT(KinetoPlugin_ProfilerPopUserCorrelationId_Params, pProfilerHandle, 8);
KINETO_PLUGIN_LAYOUT(sizeof(struct KinetoPlugin_ProfilerPopUserCorrelationId_Params) == 16,
		     "pop user size");
KINETO_PLUGIN_LAYOUT(
	KINETO_PLUGIN_PROFILER_POP_USER_CORRELATION_ID_PARAMS_UNPADDED_STRUCT_SIZE == 16,
	"pop user unpadded");

KINETO_PLUGIN_AT(KinetoPlugin_ProfilerInterface, profilerCreate, 8);
KINETO_PLUGIN_AT(KinetoPlugin_ProfilerInterface, profilerDestroy, 16);
KINETO_PLUGIN_AT(KinetoPlugin_ProfilerInterface, profilerQuery, 24);
KINETO_PLUGIN_AT(KinetoPlugin_ProfilerInterface, profilerStart, 32);
KINETO_PLUGIN_AT(KinetoPlugin_ProfilerInterface, profilerStop, 40);
KINETO_PLUGIN_AT(KinetoPlugin_ProfilerInterface, profilerPushCorrelationId, 48);
KINETO_PLUGIN_AT(KinetoPlugin_ProfilerInterface, profilerPopCorrelationId, 56);
KINETO_PLUGIN_AT(KinetoPlugin_ProfilerInterface, profilerPushUserCorrelationId, 64);
KINETO_PLUGIN_AT(KinetoPlugin_ProfilerInterface, profilerPopUserCorrelationId, 72);
KINETO_PLUGIN_AT(KinetoPlugin_ProfilerInterface, profilerProcessEvents, 80);
KINETO_PLUGIN_LAYOUT(sizeof(struct KinetoPlugin_ProfilerInterface) == 88, "interface size");
KINETO_PLUGIN_LAYOUT(KINETO_PLUGIN_PROFILER_INTERFACE_UNPADDED_STRUCT_SIZE == 88,
		     "interface unpadded");

KINETO_PLUGIN_AT(KinetoPlugin_Registry, pRegistryHandle, 8);
KINETO_PLUGIN_AT(KinetoPlugin_Registry, registerProfiler, 16);
KINETO_PLUGIN_LAYOUT(sizeof(struct KinetoPlugin_Registry) == 24, "registry size");
KINETO_PLUGIN_LAYOUT(KINETO_PLUGIN_REGISTRY_UNPADDED_STRUCT_SIZE == 24, "registry unpadded");

#undef KINETO_PLUGIN_AT
#undef KINETO_PLUGIN_LAYOUT
#endif /* x86-64 */

#endif
