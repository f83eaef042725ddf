/* SPDX-License-Identifier: MIT */
/*
 * Level Zero declarations newer than the installed headers (Debian's libze-dev
 * 1.8.12 ships spec 1.4): the entry points, flags and descriptors of spec
 * 1.5 to 1.17 that current runtimes (SYCL's Level Zero adapter, PyTorch XPU)
 * use, written from the published specification (oneapi-src/level-zero-spec).
 *
 * Used by the backend (its wrappers, through test/levelzero/gen_api.py, which
 * reads the ZE_APIEXPORT lines below like the installed headers), by the
 * simulated device and the test-only loader (test/levelzero/), and by the
 * sample programs written for a current stack (test/apps/).
 *
 * With headers of spec 1.17 or later everything here is theirs: this file
 * declares nothing. Headers between 1.5 and 1.16 are refused (they declare
 * part of it under the same names).
 */
#ifndef GPUTRACE_LEVELZERO_ZE_NEWER_H
#define GPUTRACE_LEVELZERO_ZE_NEWER_H

#include <level_zero/ze_api.h>
#include <level_zero/zes_api.h>

#if defined(ZE_API_VERSION_CURRENT_M) && ZE_API_VERSION_CURRENT_M >= ZE_MAKE_VERSION(1, 17)
/* The installed headers have it all. */
#elif defined(ZE_API_VERSION_CURRENT_M) || defined(ZE_EVENT_POOL_COUNTER_BASED_EXP_NAME) || \
	defined(ZE_IMMEDIATE_COMMAND_LIST_APPEND_EXP_NAME)
#error "Level Zero headers between spec 1.5 and 1.16: use Debian's libze-dev (1.4) or headers of 1.17 or later"
#else

#if defined(__cplusplus)
extern "C" {
#endif

/* ---- spec 1.5: Sysman without ZES_ENABLE_SYSMAN ---- */

typedef uint32_t zes_init_flags_t;

ZE_APIEXPORT ze_result_t ZE_APICALL zesInit(zes_init_flags_t flags);
ZE_APIEXPORT ze_result_t ZE_APICALL zesDriverGet(uint32_t *pCount, zes_driver_handle_t *phDrivers);
ZE_APIEXPORT ze_result_t ZE_APICALL zesDeviceGet(zes_driver_handle_t hDriver, uint32_t *pCount,
						 zes_device_handle_t *phDevices);

/* ---- spec 1.6: waiting for an immediate command list ---- */

/* Waits until everything appended to the immediate list hCommandList so far has
 * completed, or timeout ns passed (ZE_RESULT_NOT_READY; UINT64_MAX waits forever). */
ZE_APIEXPORT ze_result_t ZE_APICALL zeCommandListHostSynchronize(
	ze_command_list_handle_t hCommandList, uint64_t timeout);

/* ---- spec 1.7: in-order lists ---- */

/* ze_command_queue_desc_t.flags of an immediate list: commands run in append order. */
#define ZE_COMMAND_QUEUE_FLAG_IN_ORDER ZE_BIT(1)
/* ze_command_list_desc_t.flags of a regular list: commands run in append order. */
#define ZE_COMMAND_LIST_FLAG_IN_ORDER ZE_BIT(3)

/* ---- spec 1.8: counter-based event pools (extension, deprecated by 1.15) ---- */

#define ZE_EVENT_POOL_COUNTER_BASED_EXP_NAME "ZE_experimental_event_pool_counter_based"
#define ZE_STRUCTURE_TYPE_COUNTER_BASED_EVENT_POOL_EXP_DESC ((ze_structure_type_t)0x00020014)

typedef uint32_t ze_event_pool_counter_based_exp_flags_t;
#define ZE_EVENT_POOL_COUNTER_BASED_EXP_FLAG_IMMEDIATE ZE_BIT(0)     /* for immediate lists (default) */
#define ZE_EVENT_POOL_COUNTER_BASED_EXP_FLAG_NON_IMMEDIATE ZE_BIT(1) /* for regular lists */

/* In the pNext chain of ze_event_pool_desc_t: the pool's events are counter-based. */
typedef struct _ze_event_pool_counter_based_exp_desc_t {
	ze_structure_type_t stype;
	const void *pNext;
	ze_event_pool_counter_based_exp_flags_t flags;
} ze_event_pool_counter_based_exp_desc_t;

/* ---- spec 1.9: list queries, regular lists appended to immediate ones ---- */

ZE_APIEXPORT ze_result_t ZE_APICALL zeCommandListGetDeviceHandle(
	ze_command_list_handle_t hCommandList, ze_device_handle_t *phDevice);
ZE_APIEXPORT ze_result_t ZE_APICALL zeCommandListGetContextHandle(
	ze_command_list_handle_t hCommandList, ze_context_handle_t *phContext);
ZE_APIEXPORT ze_result_t ZE_APICALL zeCommandListGetOrdinal(
	ze_command_list_handle_t hCommandList, uint32_t *pOrdinal);
ZE_APIEXPORT ze_result_t ZE_APICALL zeCommandListImmediateGetIndex(
	ze_command_list_handle_t hCommandListImmediate, uint32_t *pIndex);
ZE_APIEXPORT ze_result_t ZE_APICALL zeCommandListIsImmediate(
	ze_command_list_handle_t hCommandList, ze_bool_t *pIsImmediate);

#define ZE_IMMEDIATE_COMMAND_LIST_APPEND_EXP_NAME "ZE_experimental_immediate_command_list_append"
/* Runs closed regular lists on an immediate list, as ExecuteCommandLists runs them on a
 * queue; hSignalEvent signals when all of them completed. */
ZE_APIEXPORT ze_result_t ZE_APICALL zeCommandListImmediateAppendCommandListsExp(
	ze_command_list_handle_t hCommandListImmediate, uint32_t numCommandLists,
	ze_command_list_handle_t *phCommandLists, ze_event_handle_t hSignalEvent,
	uint32_t numWaitEvents, ze_event_handle_t *phWaitEvents);

/* ---- spec 1.9 (1.10 for kernel switches): mutable command lists (experimental) ---- */

#define ZE_MUTABLE_COMMAND_LIST_EXP_NAME "ZE_experimental_mutable_command_list"
#define ZE_STRUCTURE_TYPE_MUTABLE_COMMAND_LIST_EXP_DESC ((ze_structure_type_t)0x00020016)
#define ZE_STRUCTURE_TYPE_MUTABLE_COMMAND_ID_EXP_DESC ((ze_structure_type_t)0x00020017)
#define ZE_STRUCTURE_TYPE_MUTABLE_COMMANDS_EXP_DESC ((ze_structure_type_t)0x00020018)
#define ZE_STRUCTURE_TYPE_MUTABLE_KERNEL_ARGUMENT_EXP_DESC ((ze_structure_type_t)0x00020019)
#define ZE_STRUCTURE_TYPE_MUTABLE_GROUP_COUNT_EXP_DESC ((ze_structure_type_t)0x0002001A)
#define ZE_STRUCTURE_TYPE_MUTABLE_GROUP_SIZE_EXP_DESC ((ze_structure_type_t)0x0002001B)
#define ZE_STRUCTURE_TYPE_MUTABLE_GLOBAL_OFFSET_EXP_DESC ((ze_structure_type_t)0x0002001C)

/* What of a command may change after the list is closed (asked for at GetNextCommandId). */
typedef uint32_t ze_mutable_command_exp_flags_t;
#define ZE_MUTABLE_COMMAND_EXP_FLAG_KERNEL_ARGUMENTS ZE_BIT(0)
#define ZE_MUTABLE_COMMAND_EXP_FLAG_GROUP_COUNT ZE_BIT(1)
#define ZE_MUTABLE_COMMAND_EXP_FLAG_GROUP_SIZE ZE_BIT(2)
#define ZE_MUTABLE_COMMAND_EXP_FLAG_GLOBAL_OFFSET ZE_BIT(3)
#define ZE_MUTABLE_COMMAND_EXP_FLAG_SIGNAL_EVENT ZE_BIT(4)
#define ZE_MUTABLE_COMMAND_EXP_FLAG_WAIT_EVENTS ZE_BIT(5)
#define ZE_MUTABLE_COMMAND_EXP_FLAG_KERNEL_INSTRUCTION ZE_BIT(6)
#define ZE_MUTABLE_COMMAND_EXP_FLAG_GRAPH_ARGUMENTS ZE_BIT(7)

/* In the pNext chain of ze_command_list_desc_t: the list's commands can be mutated. */
typedef struct _ze_mutable_command_list_exp_desc_t {
	ze_structure_type_t stype;
	const void *pNext;
	uint32_t flags; /* must be 0 */
} ze_mutable_command_list_exp_desc_t;

typedef struct _ze_mutable_command_id_exp_desc_t {
	ze_structure_type_t stype;
	const void *pNext;
	ze_mutable_command_exp_flags_t flags;
} ze_mutable_command_id_exp_desc_t;

/* Head of an update: its pNext chain holds one descriptor per change. */
typedef struct _ze_mutable_commands_exp_desc_t {
	ze_structure_type_t stype;
	const void *pNext;
	uint32_t flags; /* must be 0 */
} ze_mutable_commands_exp_desc_t;

typedef struct _ze_mutable_kernel_argument_exp_desc_t {
	ze_structure_type_t stype;
	const void *pNext;
	uint64_t commandId;
	uint32_t argIndex;
	size_t argSize;
	const void *pArgValue;
} ze_mutable_kernel_argument_exp_desc_t;

typedef struct _ze_mutable_group_count_exp_desc_t {
	ze_structure_type_t stype;
	const void *pNext;
	uint64_t commandId;
	const ze_group_count_t *pGroupCount;
} ze_mutable_group_count_exp_desc_t;

typedef struct _ze_mutable_group_size_exp_desc_t {
	ze_structure_type_t stype;
	const void *pNext;
	uint64_t commandId;
	uint32_t groupSizeX;
	uint32_t groupSizeY;
	uint32_t groupSizeZ;
} ze_mutable_group_size_exp_desc_t;

typedef struct _ze_mutable_global_offset_exp_desc_t {
	ze_structure_type_t stype;
	const void *pNext;
	uint64_t commandId;
	uint32_t offsetX;
	uint32_t offsetY;
	uint32_t offsetZ;
} ze_mutable_global_offset_exp_desc_t;

/* The id the next kernel launch appended to the (open, mutable) list will have. */
ZE_APIEXPORT ze_result_t ZE_APICALL zeCommandListGetNextCommandIdExp(
	ze_command_list_handle_t hCommandList, const ze_mutable_command_id_exp_desc_t *desc,
	uint64_t *pCommandId);
/* The same, for a launch whose kernel may later be switched to one of phKernels. */
ZE_APIEXPORT ze_result_t ZE_APICALL zeCommandListGetNextCommandIdWithKernelsExp(
	ze_command_list_handle_t hCommandList, const ze_mutable_command_id_exp_desc_t *desc,
	uint32_t numKernels, ze_kernel_handle_t *phKernels, uint64_t *pCommandId);
/* Changes arguments, group counts, group sizes, offsets of commands of a closed list. */
ZE_APIEXPORT ze_result_t ZE_APICALL zeCommandListUpdateMutableCommandsExp(
	ze_command_list_handle_t hCommandList, const ze_mutable_commands_exp_desc_t *desc);
ZE_APIEXPORT ze_result_t ZE_APICALL zeCommandListUpdateMutableCommandSignalEventExp(
	ze_command_list_handle_t hCommandList, uint64_t commandId, ze_event_handle_t hSignalEvent);
ZE_APIEXPORT ze_result_t ZE_APICALL zeCommandListUpdateMutableCommandWaitEventsExp(
	ze_command_list_handle_t hCommandList, uint64_t commandId, uint32_t numWaitEvents,
	ze_event_handle_t *phWaitEvents);
/* Switches the kernels of commands (ids from GetNextCommandIdWithKernelsExp). */
ZE_APIEXPORT ze_result_t ZE_APICALL zeCommandListUpdateMutableCommandKernelsExp(
	ze_command_list_handle_t hCommandList, uint32_t numKernels, uint64_t *pCommandId,
	ze_kernel_handle_t *phKernels);

/* ---- spec 1.10: drivers by type ---- */

#define ZE_STRUCTURE_TYPE_INIT_DRIVER_TYPE_DESC ((ze_structure_type_t)0x00020021)

typedef uint32_t ze_init_driver_type_flags_t;
#define ZE_INIT_DRIVER_TYPE_FLAG_GPU ZE_BIT(0)
#define ZE_INIT_DRIVER_TYPE_FLAG_NPU ZE_BIT(1)

typedef struct _ze_init_driver_type_desc_t {
	ze_structure_type_t stype;
	const void *pNext;
	ze_init_driver_type_flags_t flags; /* GPU, NPU, both, or UINT32_MAX: every type */
} ze_init_driver_type_desc_t;

/* Initializes the drivers of the types in desc->flags and returns them (replaces zeInit +
 * zeDriverGet). *pCount 0 or phDrivers NULL: how many there are. */
ZE_APIEXPORT ze_result_t ZE_APICALL zeInitDrivers(
	uint32_t *pCount, ze_driver_handle_t *phDrivers, ze_init_driver_type_desc_t *desc);

/* ---- spec 1.14: launches with their parameters, device-wide wait ---- */

typedef struct _ze_group_size_t {
	uint32_t groupSizeX;
	uint32_t groupSizeY;
	uint32_t groupSizeZ;
} ze_group_size_t;

/* zeCommandListAppendLaunchKernel with an extension chain (cooperative launch, ...). */
ZE_APIEXPORT ze_result_t ZE_APICALL zeCommandListAppendLaunchKernelWithParameters(
	ze_command_list_handle_t hCommandList, ze_kernel_handle_t hKernel,
	const ze_group_count_t *pGroupCounts, const void *pNext, ze_event_handle_t hSignalEvent,
	uint32_t numWaitEvents, ze_event_handle_t *phWaitEvents);
/* A launch that carries its group size and every argument (pArguments[i] points to
 * argument i's value) instead of earlier zeKernelSetGroupSize / SetArgumentValue calls. */
ZE_APIEXPORT ze_result_t ZE_APICALL zeCommandListAppendLaunchKernelWithArguments(
	ze_command_list_handle_t hCommandList, ze_kernel_handle_t hKernel,
	const ze_group_count_t groupCounts, const ze_group_size_t groupSizes, void **pArguments,
	const void *pNext, ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
	ze_event_handle_t *phWaitEvents);
/* Waits until all work submitted to the device so far has completed. */
ZE_APIEXPORT ze_result_t ZE_APICALL zeDeviceSynchronize(ze_device_handle_t hDevice);

/* ---- spec 1.15: counter-based events (core) ---- */

#define ZE_STRUCTURE_TYPE_EVENT_COUNTER_BASED_DESC ((ze_structure_type_t)0x0002003A)

typedef uint32_t ze_event_counter_based_flags_t;
#define ZE_EVENT_COUNTER_BASED_FLAG_IMMEDIATE ZE_BIT(0)        /* for immediate lists (default) */
#define ZE_EVENT_COUNTER_BASED_FLAG_NON_IMMEDIATE ZE_BIT(1)    /* for regular lists */
#define ZE_EVENT_COUNTER_BASED_FLAG_HOST_VISIBLE ZE_BIT(2)
#define ZE_EVENT_COUNTER_BASED_FLAG_IPC ZE_BIT(3)
#define ZE_EVENT_COUNTER_BASED_FLAG_DEVICE_TIMESTAMP ZE_BIT(4) /* kernel timestamps, device ticks */
#define ZE_EVENT_COUNTER_BASED_FLAG_HOST_TIMESTAMP ZE_BIT(5)   /* kernel timestamps, host time */
#define ZE_EVENT_COUNTER_BASED_FLAG_GRAPH_EXTERNAL ZE_BIT(6)

typedef struct _ze_event_counter_based_desc_t {
	ze_structure_type_t stype;
	const void *pNext;
	ze_event_counter_based_flags_t flags;
	ze_event_scope_flags_t signal;
	ze_event_scope_flags_t wait;
} ze_event_counter_based_desc_t;

/* A counter-based event, without a pool. It starts completed; each append that signals it
 * replaces its state (it completes with that command); it cannot be reset or signalled
 * from the host, and only in-order lists may signal it. */
ZE_APIEXPORT ze_result_t ZE_APICALL zeEventCounterBasedCreate(
	ze_context_handle_t hContext, ze_device_handle_t hDevice,
	const ze_event_counter_based_desc_t *desc, ze_event_handle_t *phEvent);

/* ---- spec 1.16: copies and fills with an extension chain ---- */

ZE_APIEXPORT ze_result_t ZE_APICALL zeCommandListAppendMemoryCopyWithParameters(
	ze_command_list_handle_t hCommandList, void *dstptr, const void *srcptr, size_t size,
	const void *pNext, ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
	ze_event_handle_t *phWaitEvents);
ZE_APIEXPORT ze_result_t ZE_APICALL zeCommandListAppendMemoryFillWithParameters(
	ze_command_list_handle_t hCommandList, void *ptr, const void *pattern,
	size_t pattern_size, size_t size, const void *pNext, ze_event_handle_t hSignalEvent,
	uint32_t numWaitEvents, ze_event_handle_t *phWaitEvents);
ZE_APIEXPORT ze_result_t ZE_APICALL zeCommandListImmediateAppendCommandListsWithParameters(
	ze_command_list_handle_t hCommandListImmediate, uint32_t numCommandLists,
	ze_command_list_handle_t *phCommandLists, const void *pNext,
	ze_event_handle_t hSignalEvent, uint32_t numWaitEvents, ze_event_handle_t *phWaitEvents);

#if defined(__cplusplus)
}
#endif

#endif /* headers older than 1.5 */
#endif
