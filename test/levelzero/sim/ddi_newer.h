/* SPDX-License-Identifier: MIT */
/*
 * The driver tables (DDI) of spec 1.17 where they grew past spec 1.4, written
 * from the published specification: a loader asks a driver for each table with
 * the version it was built for and hands it a table of that version's size,
 * so a driver fills an entry only when the requested version has it. Each
 * table is the 1.4 table of the installed headers followed by the later
 * entries in the specification's order; entries nobody here calls are void *.
 *
 * Shared by the simulated device (which fills them) and the test-only loader
 * (which calls them), test/levelzero/.
 */
#ifndef ZE_SIM_DDI_NEWER_H
#define ZE_SIM_DDI_NEWER_H

#include <level_zero/ze_ddi.h>
#include "backends/levelzero/ze_newer.h"

#define SIM_V(minor) ZE_MAKE_VERSION(1, minor)

struct sim_global_ddi {
	ze_global_dditable_t v1_4; /* pfnInit */
	__typeof__(&zeInitDrivers) pfnInitDrivers; /* 1.10 */
};

struct sim_device_ddi {
	ze_device_dditable_t v1_4; /* ... pfnPciGetPropertiesExt */
	void *pfnGetRootDevice;                    /* 1.7 */
	void *pfnImportExternalSemaphoreExt;       /* 1.12 */
	void *pfnReleaseExternalSemaphoreExt;      /* 1.12 */
	void *pfnGetVectorWidthPropertiesExt;      /* 1.13 */
	__typeof__(&zeDeviceSynchronize) pfnSynchronize; /* 1.14 */
};

struct sim_command_list_ddi {
	ze_command_list_dditable_t v1_4; /* ... pfnAppendImageCopyFromMemoryExt */
	__typeof__(&zeCommandListHostSynchronize) pfnHostSynchronize;  /* 1.6 */
	__typeof__(&zeCommandListGetDeviceHandle) pfnGetDeviceHandle;  /* 1.9 */
	__typeof__(&zeCommandListGetContextHandle) pfnGetContextHandle;
	__typeof__(&zeCommandListGetOrdinal) pfnGetOrdinal;
	__typeof__(&zeCommandListImmediateGetIndex) pfnImmediateGetIndex;
	__typeof__(&zeCommandListIsImmediate) pfnIsImmediate;
	void *pfnAppendSignalExternalSemaphoreExt; /* 1.12 */
	void *pfnAppendWaitExternalSemaphoreExt;   /* 1.12 */
	__typeof__(&zeCommandListAppendLaunchKernelWithParameters)
		pfnAppendLaunchKernelWithParameters; /* 1.14 */
	__typeof__(&zeCommandListAppendLaunchKernelWithArguments)
		pfnAppendLaunchKernelWithArguments;  /* 1.14 */
	__typeof__(&zeCommandListAppendMemoryCopyWithParameters)
		pfnAppendMemoryCopyWithParameters;   /* 1.16 */
	__typeof__(&zeCommandListAppendMemoryFillWithParameters)
		pfnAppendMemoryFillWithParameters;   /* 1.16 */
	__typeof__(&zeCommandListImmediateAppendCommandListsWithParameters)
		pfnImmediateAppendCommandListsWithParameters; /* 1.16 */
};

/* A table of its own (zeGetCommandListExpProcAddrTable), first in spec 1.9. */
struct sim_command_list_exp_ddi {
	void *pfnCreateCloneExp; /* 1.9 */
	__typeof__(&zeCommandListImmediateAppendCommandListsExp)
		pfnImmediateAppendCommandListsExp; /* 1.9 */
	__typeof__(&zeCommandListGetNextCommandIdExp) pfnGetNextCommandIdExp;
	__typeof__(&zeCommandListUpdateMutableCommandsExp) pfnUpdateMutableCommandsExp;
	__typeof__(&zeCommandListUpdateMutableCommandSignalEventExp)
		pfnUpdateMutableCommandSignalEventExp;
	__typeof__(&zeCommandListUpdateMutableCommandWaitEventsExp)
		pfnUpdateMutableCommandWaitEventsExp;
	__typeof__(&zeCommandListGetNextCommandIdWithKernelsExp)
		pfnGetNextCommandIdWithKernelsExp; /* 1.10 */
	__typeof__(&zeCommandListUpdateMutableCommandKernelsExp)
		pfnUpdateMutableCommandKernelsExp; /* 1.10 */
	void *pfnIsMutableExp;                   /* 1.17 */
};

struct sim_event_ddi {
	ze_event_dditable_t v1_4; /* ... pfnQueryKernelTimestamp */
	void *pfnQueryKernelTimestampsExt; /* 1.6 */
	void *pfnGetEventPool;             /* 1.9 */
	void *pfnGetSignalScope;
	void *pfnGetWaitScope;
	__typeof__(&zeEventCounterBasedCreate) pfnCounterBasedCreate; /* 1.15 */
};

#endif
