/* SPDX-License-Identifier: MIT */
/*
 * The simulated CUDA stack's private interface (see README.md). The three
 * libraries talk the way NVIDIA's do: libcudart and libcupti ask libcuda
 * for a private table with cuGetExportTable(&table, &sim_tools_uuid), and
 * nothing else of one library is visible to another.
 *
 *   libcudart --enter/exit/work--> libcuda (the "tools hub") --ops--> libcupti
 *
 * A runtime or driver API entry point announces itself with enter() and
 * exit(); a driver call made inside a runtime call shares the runtime
 * call's correlation id. Device work is announced when it is queued, with
 * the host times (CLOCK_MONOTONIC_RAW) at which it will run; the device
 * clock and CUPTI's clock are derived from those times (drv_clock.c).
 */
#ifndef CUDA_SIM_H
#define CUDA_SIM_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda.h>

#define SIM_EXPORT   __attribute__((visibility("default")))
#define SIM_NOINLINE __attribute__((noinline))
/* CU_DEVICE_ATTRIBUTE_MAX_PITCH: the widest pitch a 2D copy, fill or allocation takes */
#define SIM_PITCH_MAX 2147483647u
/* Every kernel's registers per thread (CUPTI's records, cudaFuncGetAttributes) */
#define SIM_KERNEL_REGISTERS 32

/* One line on stderr, "<who>: [FATAL: ]<what>"; a fatal one aborts (the
 * simulator's loud refusal of a wrong order or a forbidden call). */
static inline void sim_vreport(const char *who, bool fatal, const char *fmt, va_list ap)
{
	char line[512];

	vsnprintf(line, sizeof(line), fmt, ap);
	fprintf(stderr, "%s: %s%s\n", who, fatal ? "FATAL: " : "", line);
	if (fatal)
		abort();
}

/* "gputrace cudasim" */
static const CUuuid sim_tools_uuid = { { 0x67, 0x70, 0x75, 0x74, 0x72, 0x61, 0x63, 0x65,
					 0x20, 0x63, 0x75, 0x64, 0x61, 0x73, 0x69, 0x6d } };

#define SIM_DOMAIN_DRIVER  1 /* CUPTI_CB_DOMAIN_DRIVER_API */
#define SIM_DOMAIN_RUNTIME 2 /* CUPTI_CB_DOMAIN_RUNTIME_API */
#define SIM_SITE_ENTER 0
#define SIM_SITE_EXIT  1

/* One API call in flight on its thread (lives on the entry point's stack). */
struct sim_call {
	int domain;
	uint32_t cbid;          /* CUPTI_RUNTIME_TRACE_CBID_* / CUPTI_DRIVER_TRACE_CBID_* */
	const char *name;       /* "cudaMalloc_v3020", "cuMemAlloc_v2" */
	const void *params;     /* the *_params struct of generated_cuda*_meta.h, or NULL */
	const int *ret;         /* the return value, set before exit */
	const char *symbol;     /* launches: the kernel's name */
	CUcontext ctx;
	uint32_t corr;
	struct sim_call *outer; /* the call this one is nested in (the runtime's) */
	uint64_t tool[4];       /* libcupti's per-call storage */
};

enum sim_work_kind { SIM_WORK_KERNEL = 1, SIM_WORK_MEMCPY, SIM_WORK_MEMSET };

/* Device work, announced when queued. */
struct sim_work {
	enum sim_work_kind kind;
	uint64_t start, end; /* host CLOCK_MONOTONIC_RAW ns of the simulated execution */
	uint32_t device, context, stream;
	uint32_t corr, runtime_corr;
	uint32_t graph_id;   /* 0 outside graphs */
	uint64_t graph_node_id;
	/* kernels */
	const char *name;    /* owned by the module: valid until it is unloaded */
	uint32_t grid[3], block[3];
	uint32_t shared_static, shared_dynamic;
	uint16_t registers;
	/* copies and fills */
	uint64_t bytes;
	uint8_t copy_kind, src_kind, dst_kind; /* CUpti_ActivityMemcpyKind, CUpti_ActivityMemoryKind */
	uint8_t memory_kind;
	/* peer copies (copy_kind PTOP): whose memory it moves */
	uint32_t src_device, src_context, dst_device, dst_context;
	uint32_t value;
};

/* One graph launch, announced with its nodes (GRAPH_TRACE records). */
struct sim_graph_run {
	uint32_t graph_id, device, context, stream, corr;
	uint64_t start, end;
};

/* A host thread waiting on the device (SYNCHRONIZATION records): announced
 * at the start of the wait and again at its end. */
struct sim_sync {
	int type; /* CUpti_ActivitySynchronizationType */
	uint32_t context, stream, event; /* UINT32_MAX where not applicable */
	uint32_t corr;
	uint64_t tool[2];
};

/* What libcupti gives the hub. Called on the thread the event happens on,
 * never with a driver lock held. */
struct sim_tool_ops {
	void (*api)(struct sim_call *c, int site);
	void (*work)(const struct sim_work *w);
	void (*graph)(const struct sim_graph_run *g);
	void (*sync)(struct sim_sync *s, int site);
	/* a context was created (created 1), or is about to be destroyed (0) */
	void (*context)(CUcontext ctx, int created);
	/* a module was loaded (loaded 1), or is about to be unloaded (0) */
	void (*module)(CUcontext ctx, uint32_t module_id, int loaded);
	/* the host time by which the tool's own work on a context ends (the range
	 * profiler's kernels, on a stream of its own): a context's destruction
	 * waits for it as for the context's streams; 0 if none */
	uint64_t (*busy_until)(uint32_t context_id);
};

/* What libcuda hands out (cuGetExportTable with sim_tools_uuid). */
struct sim_tools {
	size_t size;
	/* API entry and exit (both libraries' entry points) */
	void (*enter)(struct sim_call *c);
	void (*exit)(struct sim_call *c);
	/* libcupti: 0, or -EBUSY when another tool is attached */
	int (*attach)(const struct sim_tool_ops *ops);
	void (*detach)(const struct sim_tool_ops *ops);
	/* clocks (sim_clock.c) */
	uint64_t (*host_ns)(void);               /* CLOCK_MONOTONIC_RAW */
	uint64_t (*device_ns)(uint64_t host_ns); /* the device's clock at a host time */
	/* the host's CLOCK_REALTIME at a host time, stepped as it stood at `as_of` */
	uint64_t (*realtime_ns)(uint64_t host_ns, uint64_t as_of);
	/* objects */
	int (*context_ids)(CUcontext ctx, uint32_t *context_id, uint32_t *device_id);
	/* a stream's id (cuptiGetStreamIdEx): ctx NULL for the current one */
	int (*stream_id)(CUcontext ctx, CUstream stream, bool per_thread, uint32_t *id);
	CUcontext (*current_context)(void);
	/* libcudart: the calling thread's innermost call, NULL if none */
	struct sim_call *(*current_call)(void);
	/* libcudart: a __device__ variable of a module, as nvcc registered it
	 * (__cudaRegisterVar), for cuModuleGetGlobal: what a cubin's symbol table
	 * tells a real driver (the simulator does not read the code); a CUresult */
	int (*module_global)(CUmodule module, const char *name, size_t size);
	/* one "cuda_sim: ..." line on stderr */
	void (*report)(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
	/* libcupti's range profiler starts a session on a context: the context's stream
	 * captures in progress are invalidated; true if there was one */
	bool (*profile_breaks_captures)(uint32_t context_id);
};

#endif
