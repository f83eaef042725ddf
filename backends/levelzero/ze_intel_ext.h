/* SPDX-License-Identifier: MIT */
/*
 * Intel's driver extension functions (the "zex" functions of compute-runtime's
 * driver_experimental headers) that current runtimes call on their hot path:
 * SYCL's Level Zero adapter (unified-runtime, its v2 event pools),
 * OpenVINO, Level Zero's own benchmarks. No loader exports them: a program
 * gets each from zeDriverGetExtensionFunctionAddress, and gputrace hands it
 * its wrapper instead (backends/levelzero/real.c). Written from the published
 * headers; no installed header declares them.
 *
 * test/levelzero/gen_api.py reads the ZE_INTEL_EXT lines below into the one
 * wrapper table (kinds EXT_PLAIN, EXT_HOOK): keep one declaration a line group
 * of that shape.
 */
#ifndef GPUTRACE_LEVELZERO_ZE_INTEL_EXT_H
#define GPUTRACE_LEVELZERO_ZE_INTEL_EXT_H

#include <level_zero/ze_api.h>

#if defined(__cplusplus)
extern "C" {
#endif

/* Marks a driver extension function for gen_api.py (declared, never exported). */
#define ZE_INTEL_EXT

/* ---- counter-based events without a pool (zex_event.h) ---- */

/* The same bits as spec 1.15's ze_event_counter_based_flags_t (which took them over). */
#define ZEX_STRUCTURE_COUNTER_BASED_EVENT_DESC ((ze_structure_type_t)0x0003001C)
typedef uint32_t zex_counter_based_event_exp_flags_t;
#define ZEX_COUNTER_BASED_EVENT_FLAG_IMMEDIATE ZE_BIT(0)
#define ZEX_COUNTER_BASED_EVENT_FLAG_NON_IMMEDIATE ZE_BIT(1)
#define ZEX_COUNTER_BASED_EVENT_FLAG_HOST_VISIBLE ZE_BIT(2)
#define ZEX_COUNTER_BASED_EVENT_FLAG_IPC ZE_BIT(3)
#define ZEX_COUNTER_BASED_EVENT_FLAG_KERNEL_TIMESTAMP ZE_BIT(4)        /* device ticks */
#define ZEX_COUNTER_BASED_EVENT_FLAG_KERNEL_MAPPED_TIMESTAMP ZE_BIT(5) /* host time */
#define ZEX_COUNTER_BASED_EVENT_FLAG_GRAPH_EXTERNAL_EVENT ZE_BIT(6)

/* Laid out as ze_event_counter_based_desc_t. */
typedef struct _zex_counter_based_event_desc_t {
	ze_structure_type_t stype;
	const void *pNext;
	zex_counter_based_event_exp_flags_t flags;
	ze_event_scope_flags_t signalScope;
	ze_event_scope_flags_t waitScope;
} zex_counter_based_event_desc_t;

/* A counter-based event (spec 1.15's zeEventCounterBasedCreate, before it existed). */
ZE_INTEL_EXT ze_result_t ZE_APICALL zexCounterBasedEventCreate2(
	ze_context_handle_t hContext, ze_device_handle_t hDevice,
	const zex_counter_based_event_desc_t *desc, ze_event_handle_t *phEvent);

/* ---- waits on and writes to memory from a command list (zex_cmdlist.h) ---- */

typedef uint32_t zex_wait_on_mem_action_flags_t;
#define ZEX_WAIT_ON_MEMORY_FLAG_EQUAL ZE_BIT(0)
#define ZEX_WAIT_ON_MEMORY_FLAG_NOT_EQUAL ZE_BIT(1)
#define ZEX_WAIT_ON_MEMORY_FLAG_GREATER_THAN ZE_BIT(2)
#define ZEX_WAIT_ON_MEMORY_FLAG_GREATER_THAN_EQUAL ZE_BIT(3)
#define ZEX_WAIT_ON_MEMORY_FLAG_LESSER_THAN ZE_BIT(4)
#define ZEX_WAIT_ON_MEMORY_FLAG_LESSER_THAN_EQUAL ZE_BIT(5)
typedef uint32_t zex_mem_action_scope_flags_t;

typedef struct _zex_wait_on_mem_desc_t {
	zex_wait_on_mem_action_flags_t actionFlag;
	zex_mem_action_scope_flags_t waitScope;
} zex_wait_on_mem_desc_t;

typedef struct _zex_write_to_mem_desc_t {
	zex_mem_action_scope_flags_t writeScope;
} zex_write_to_mem_desc_t;

/* The list waits until the value at ptr compares with data as actionFlag says;
 * hSignalEvent signals when it goes on. */
ZE_INTEL_EXT ze_result_t ZE_APICALL zexCommandListAppendWaitOnMemory(
	ze_command_list_handle_t hCommandList, zex_wait_on_mem_desc_t *desc, void *ptr,
	uint32_t data, ze_event_handle_t hSignalEvent);
ZE_INTEL_EXT ze_result_t ZE_APICALL zexCommandListAppendWaitOnMemory64(
	ze_command_list_handle_t hCommandList, zex_wait_on_mem_desc_t *desc, void *ptr,
	uint64_t data, ze_event_handle_t hSignalEvent);
/* The list writes data at ptr when it gets there. */
ZE_INTEL_EXT ze_result_t ZE_APICALL zexCommandListAppendWriteToMemory(
	ze_command_list_handle_t hCommandList, zex_write_to_mem_desc_t *desc, void *ptr,
	uint64_t data);

/* ---- host memory imported for copies (ze_intel_gpu.h, SYCL's USM import) ---- */

ZE_INTEL_EXT ze_result_t ZE_APICALL zexDriverImportExternalPointer(
	ze_driver_handle_t hDriver, void *ptr, size_t size);
ZE_INTEL_EXT ze_result_t ZE_APICALL zexDriverReleaseImportedPointer(
	ze_driver_handle_t hDriver, void *ptr);
ZE_INTEL_EXT ze_result_t ZE_APICALL zexDriverGetHostPointerBaseAddress(
	ze_driver_handle_t hDriver, void *ptr, void **baseAddress);

#if defined(__cplusplus)
}
#endif

#endif
