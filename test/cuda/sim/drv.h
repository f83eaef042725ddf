/* SPDX-License-Identifier: MIT */
/*
 * libcuda.so.1 (simulated) internals, shared by its files:
 *   drv_api.c     the exported entry points, generated from one table
 *   drv_core.c    cuInit and injection, devices, contexts, errors, export tables
 *   drv_clock.c   host, device and realtime clocks (CUDA_SIM_* knobs)
 *   drv_tools.c   the tools hub: API enter/exit, correlation ids, libcupti's ops
 *   drv_stream.c  streams, host functions, events, scheduling, waits, capture rules
 *   drv_mem.c     memory, copies, fills
 *   drv_launch.c  modules, functions, globals, kernel launches
 *   drv_graph.c   stream capture into graphs, instantiation, graph launches
 * One lock guards all objects; waits sleep outside it.
 */
#ifndef CUDA_SIM_DRV_H
#define CUDA_SIM_DRV_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "sim.h"

#define DRV_HIDDEN __attribute__((visibility("hidden")))

enum drv_magic {
	MAGIC_CTX = 0x43545831,
	MAGIC_STREAM = 0x53545231,
	MAGIC_EVENT = 0x45564e31,
	MAGIC_MODULE = 0x4d4f4431,
	MAGIC_FUNC = 0x46554e31,
	MAGIC_GRAPH = 0x47525031,
	MAGIC_EXEC = 0x45584531,
};

struct drv_stream;

struct drv_ctx {
	uint32_t magic, id;
	int device;
	struct drv_stream *legacy; /* the NULL stream */
	struct drv_stream *streams; /* every stream of the context, legacy included */
	uint32_t peers;             /* bit d: peer access to device d's memory enabled */
	bool destroyed;             /* by cuDevicePrimaryCtxReset, until retained again */
};

struct drv_capture {
	struct drv_stream *origin;
	CUstreamCaptureMode mode;
	pid_t tid;        /* the thread that began it */
	bool invalidated;
	struct drv_graph *graph;
	unsigned long long id;
	struct drv_capture *next;
};

struct drv_stream {
	uint32_t magic, id;
	unsigned flags;          /* CU_STREAM_NON_BLOCKING */
	bool legacy, per_thread;
	struct drv_ctx *ctx;
	uint64_t busy_until;     /* host ns: the end of the last work queued */
	unsigned host_fns;       /* host functions queued that have not returned */
	struct drv_capture *capture;
	struct drv_stream *next;
};

struct drv_event {
	uint32_t magic, id;
	struct drv_ctx *ctx;
	uint32_t ctx_id; /* the context's id when it was created: a reset ends it */
	unsigned flags;
	bool recorded, captured;
	uint64_t at; /* host ns: when the work before it is done */
};

struct drv_func {
	uint32_t magic;
	const char *name;  /* in the module's name storage: see drv_launch.c */
	struct drv_module *module;
	struct drv_func *next;
};

/* A module's __device__ variable: device memory of its context. */
struct drv_global {
	char *name;
	size_t size;
	void *storage;
	struct drv_global *next;
};

struct drv_module {
	uint32_t magic, id;
	struct drv_ctx *ctx;
	struct drv_func *funcs;
	struct drv_global *globals;
	struct drv_module *next; /* every loaded module */
};

enum drv_node_kind { NODE_KERNEL = 1, NODE_MEMCPY, NODE_MEMSET };

struct drv_node {
	enum drv_node_kind kind;
	uint64_t id;
	struct drv_func *func;
	uint32_t grid[3], block[3], shared;
	void *dst;
	const void *src;
	size_t bytes;
	/* 2D copies: `height` rows of bytes/height, each `pitch` apart (0: one row) */
	size_t height, src_pitch, dst_pitch;
	/* 3D copies: `depth` slices of those rows, each side's `slice` bytes apart (0: one) */
	size_t depth, src_slice, dst_slice;
	uint8_t copy_kind, src_kind, dst_kind;
	/* peer copies: the devices and contexts whose memory it moves */
	uint32_t src_device, dst_device, src_context, dst_context;
	unsigned char value;
};

struct drv_graph {
	uint32_t magic, id;
	struct drv_ctx *ctx; /* of the stream captured; a reset of it ends the graph */
	uint32_t ctx_id;
	struct drv_node *nodes;
	unsigned n, cap;
};

struct drv_exec {
	uint32_t magic, id;
	struct drv_ctx *ctx; /* its graph's */
	uint32_t ctx_id;
	uint32_t graph_id;
	struct drv_node *nodes;
	unsigned n;
};

/* ---- drv_core.c ---- */
extern DRV_HIDDEN pthread_mutex_t drv_lock;
/* The current context of the calling thread, made current if none (the
 * primary context of device 0); NULL before cuInit, or when it was destroyed. */
DRV_HIDDEN struct drv_ctx *drv_ctx_current(void);
/* Why there is none: CUDA_ERROR_CONTEXT_IS_DESTROYED or CUDA_ERROR_INVALID_CONTEXT. */
DRV_HIDDEN CUresult drv_no_context(void);
DRV_HIDDEN CUresult drv_initialized(void);
/* Abort: a contract the caller broke, named on one line. */
DRV_HIDDEN void drv_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
DRV_HIDDEN void drv_report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
DRV_HIDDEN pid_t drv_tid(void);
/* Live handles, checked before use: garbage and destroyed handles are errors. */
DRV_HIDDEN void drv_handle_add(void *h);
DRV_HIDDEN void drv_handle_del(void *h);
DRV_HIDDEN bool drv_handle_ok(const void *h, uint32_t magic); /* drv_lock held */
DRV_HIDDEN int drv_context_ids(CUcontext ctx, uint32_t *context_id, uint32_t *device_id);

/* ---- drv_clock.c ---- */
DRV_HIDDEN void drv_clock_setup(void);
DRV_HIDDEN uint64_t drv_host_ns(void);
DRV_HIDDEN uint64_t drv_device_ns(uint64_t host_ns);
DRV_HIDDEN uint64_t drv_realtime_ns(uint64_t host_ns, uint64_t as_of);
DRV_HIDDEN void drv_sleep_until(uint64_t host_ns);

/* ---- drv_tools.c ---- */
DRV_HIDDEN void drv_enter(struct sim_call *c);
DRV_HIDDEN void drv_exit(struct sim_call *c);
DRV_HIDDEN struct sim_call *drv_current_call(void);
DRV_HIDDEN uint32_t drv_current_corr(void);
DRV_HIDDEN uint32_t drv_runtime_corr(void);
DRV_HIDDEN void drv_tool_work(const struct sim_work *w);
/* set on the driver's thread while it runs a host function */
extern DRV_HIDDEN __thread bool drv_in_host_fn;
DRV_HIDDEN void drv_tool_graph(const struct sim_graph_run *g);
DRV_HIDDEN void drv_tool_sync(struct sim_sync *s, int site);
DRV_HIDDEN void drv_tool_context(struct drv_ctx *ctx, int created);
DRV_HIDDEN void drv_tool_module(struct drv_ctx *ctx, uint32_t module_id, int loaded);
/* when the tool's own work on the context ends (host ns; 0: none) */
DRV_HIDDEN uint64_t drv_tool_busy_until(const struct drv_ctx *ctx);
DRV_HIDDEN const struct sim_tools *drv_tools(void);

/* ---- drv_stream.c ---- */
/* A stream handle (NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD or a
 * created one) to its stream; NULL if invalid. drv_lock held. */
DRV_HIDDEN struct drv_stream *drv_stream_of(struct drv_ctx *ctx, CUstream h, bool per_thread);
DRV_HIDDEN struct drv_stream *drv_stream_new(struct drv_ctx *ctx, unsigned flags, bool legacy);
/* Queue `ns` of work submitted at host time `now` (drv_host_ns()); its
 * start. drv_lock held. */
DRV_HIDDEN uint64_t drv_schedule(struct drv_stream *s, uint64_t ns, uint64_t now);
/* What the capture rules say about an operation (drv_lock held):
 * CUDA_SUCCESS, or the error to return (the captures it breaks are
 * invalidated). */
enum drv_op {
	OP_UNSAFE,      /* potentially unsafe: allocation, synchronization, queries */
	OP_USE_STREAM,  /* work, a record or a wait on `s` */
	OP_SYNC_STREAM, /* synchronize or query `s` */
};
DRV_HIDDEN CUresult drv_capture_check(enum drv_op op, struct drv_stream *s);
/* The stream is capturing: work goes into its graph. */
DRV_HIDDEN struct drv_capture *drv_capturing(struct drv_stream *s);
DRV_HIDDEN bool drv_any_capture(void);
DRV_HIDDEN bool drv_profile_breaks_captures(uint32_t context_id);
/* A context's reset (drv_lock held): when its streams' work is done; its streams
 * freed (its events then fail with CUDA_ERROR_CONTEXT_IS_DESTROYED). */
DRV_HIDDEN uint64_t drv_streams_busy_until(const struct drv_ctx *ctx);
DRV_HIDDEN bool drv_streams_capturing(const struct drv_ctx *ctx);
DRV_HIDDEN void drv_streams_release(struct drv_ctx *ctx);
/* An event's state: CUDA_SUCCESS, or why it cannot be used (drv_lock held). */
DRV_HIDDEN CUresult drv_event_live(const struct drv_event *e);

/* ---- drv_mem.c ---- */
DRV_HIDDEN uint8_t drv_memory_kind(const void *p); /* CUpti_ActivityMemoryKind */
/* A context's reset: its allocations freed (drv_lock held). */
DRV_HIDDEN void drv_mem_release_context(uint32_t context_id);
/* A module's globals: zeroed device memory of ctx, freed with the module
 * (drv_lock held). */
DRV_HIDDEN void *drv_storage_new(const struct drv_ctx *ctx, size_t size);
DRV_HIDDEN void drv_storage_free(void *p);
/* Run (or capture) a kernel, copy or fill on a stream; sync: wait for it. */
DRV_HIDDEN CUresult drv_submit(struct drv_node *n, CUstream h, bool sync, bool per_thread);
/* Queue a node's work on a stream, submitted at `now` (the bytes of copies
 * and fills move at once); drv_lock held. A graph's nodes share one `now`:
 * the device runs them back to back however slow the host is. */
DRV_HIDDEN void drv_queue_node(struct drv_stream *s, const struct drv_node *n, uint32_t graph_id,
			       uint64_t now, struct sim_work *w);

/* ---- drv_launch.c ---- */
/* A context's reset: each of its modules unloaded (tools hear of each first). */
DRV_HIDDEN void drv_modules_unload_context(struct drv_ctx *ctx);
DRV_HIDDEN int drv_module_declare_global(CUmodule m, const char *name, size_t size);

/* ---- drv_graph.c ---- */
DRV_HIDDEN struct drv_node *drv_graph_add(struct drv_graph *g);
DRV_HIDDEN struct drv_graph *drv_graph_new(struct drv_ctx *ctx);

/* ---- what the entry points call (drv_api.c) ---- */
DRV_HIDDEN CUresult drv_init(unsigned flags);
DRV_HIDDEN CUresult drv_device_get(CUdevice *d, int ordinal);
DRV_HIDDEN CUresult drv_device_count(int *n);
DRV_HIDDEN CUresult drv_device_name(char *name, int len, CUdevice d);
DRV_HIDDEN CUresult drv_device_total_mem(size_t *bytes, CUdevice d);
DRV_HIDDEN CUresult drv_device_attribute(int *v, CUdevice_attribute a, CUdevice d);
DRV_HIDDEN CUresult drv_primary_retain(CUcontext *out, CUdevice d);
DRV_HIDDEN CUresult drv_primary_release(CUdevice d);
DRV_HIDDEN CUresult drv_primary_reset(CUdevice d);
DRV_HIDDEN CUresult drv_ctx_set_current(CUcontext c);
DRV_HIDDEN CUresult drv_ctx_get_current(CUcontext *c);
DRV_HIDDEN CUresult drv_ctx_get_device(CUdevice *d);
DRV_HIDDEN CUresult drv_ctx_synchronize(void);
DRV_HIDDEN CUresult drv_profiler(void);
DRV_HIDDEN CUresult drv_error_name(CUresult e, const char **s);
DRV_HIDDEN CUresult drv_error_string(CUresult e, const char **s);
DRV_HIDDEN CUresult drv_export_table(const void **table, const CUuuid *id);
DRV_HIDDEN CUresult drv_mem_alloc(CUdeviceptr *p, size_t size);
DRV_HIDDEN CUresult drv_mem_alloc_managed(CUdeviceptr *p, size_t size, unsigned flags);
DRV_HIDDEN CUresult drv_mem_free(CUdeviceptr p);
DRV_HIDDEN CUresult drv_copy_3d(const CUDA_MEMCPY3D *c, CUstream h, bool sync);
DRV_HIDDEN CUresult drv_fill_2d(void *dst, size_t pitch, unsigned char value, size_t width,
				size_t height, CUstream h, bool sync, bool per_thread);
DRV_HIDDEN CUresult drv_mem_alloc_pitch(CUdeviceptr *p, size_t *pitch, size_t width,
					size_t height, unsigned element_size);
DRV_HIDDEN CUresult drv_mem_alloc_async(CUdeviceptr *p, size_t size, CUstream h);
DRV_HIDDEN CUresult drv_mem_free_async(CUdeviceptr p, CUstream h);
DRV_HIDDEN CUresult drv_mem_alloc_host(void **p, size_t size);
DRV_HIDDEN CUresult drv_mem_host_alloc(void **p, size_t size, unsigned flags);
DRV_HIDDEN CUresult drv_mem_free_host(void *p);
DRV_HIDDEN CUresult drv_mem_get_info(size_t *free_bytes, size_t *total);
DRV_HIDDEN CUresult drv_copy(void *dst, const void *src, size_t bytes, CUstream h, bool sync,
			     bool per_thread);
DRV_HIDDEN CUresult drv_copy_checked(void *dst, const void *src, size_t bytes, CUstream h,
				     bool sync, bool dst_device, bool src_device);
DRV_HIDDEN CUresult drv_copy_2d(const CUDA_MEMCPY2D *c, CUstream h, bool sync);
DRV_HIDDEN CUresult drv_copy_peer(void *dst, CUcontext dst_ctx, const void *src, CUcontext src_ctx,
				  size_t bytes, CUstream h, bool sync);
DRV_HIDDEN CUresult drv_can_access_peer(int *can, CUdevice dev, CUdevice peer);
DRV_HIDDEN CUresult drv_enable_peer(CUcontext peer, unsigned flags);
DRV_HIDDEN CUresult drv_disable_peer(CUcontext peer);
DRV_HIDDEN CUresult drv_fill(void *dst, unsigned char value, size_t bytes, CUstream h, bool sync,
			     bool per_thread);
DRV_HIDDEN CUresult drv_stream_create(CUstream *out, unsigned flags);
DRV_HIDDEN CUresult drv_stream_destroy(CUstream h);
DRV_HIDDEN CUresult drv_stream_synchronize(CUstream h, bool per_thread);
DRV_HIDDEN CUresult drv_stream_query(CUstream h, bool per_thread);
DRV_HIDDEN int drv_stream_cupti_id(CUcontext ctx, CUstream h, bool per_thread, uint32_t *id);
DRV_HIDDEN CUresult drv_stream_get_id(CUstream h, unsigned long long *id, bool per_thread);
/* cuLaunchHostFunc (fn) and cuStreamAddCallback (cb): run on a thread of the
 * driver's, in stream order. */
DRV_HIDDEN CUresult drv_host_fn(CUstream h, CUhostFn fn, CUstreamCallback cb, void *user,
				unsigned flags);
DRV_HIDDEN CUresult drv_stream_wait_event(CUstream s, CUevent e, unsigned flags, bool per_thread);
DRV_HIDDEN CUresult drv_begin_capture(CUstream h, CUstreamCaptureMode mode, bool per_thread);
DRV_HIDDEN CUresult drv_end_capture(CUstream h, CUgraph *out, bool per_thread);
DRV_HIDDEN CUresult drv_is_capturing(CUstream h, CUstreamCaptureStatus *st, bool per_thread);
DRV_HIDDEN CUresult drv_exchange_capture_mode(CUstreamCaptureMode *mode);
DRV_HIDDEN CUresult drv_event_create(CUevent *out, unsigned flags);
DRV_HIDDEN CUresult drv_event_destroy(CUevent h);
DRV_HIDDEN CUresult drv_event_record(CUevent e, CUstream s, bool per_thread);
DRV_HIDDEN CUresult drv_event_query(CUevent e);
DRV_HIDDEN CUresult drv_event_synchronize(CUevent e);
DRV_HIDDEN CUresult drv_event_elapsed(float *ms, CUevent a, CUevent b);
DRV_HIDDEN CUresult drv_module_load_fatbin(CUmodule *out, const void *image);
DRV_HIDDEN CUresult drv_module_unload(CUmodule m);
DRV_HIDDEN CUresult drv_module_get_function(CUfunction *out, CUmodule m, const char *name);
DRV_HIDDEN CUresult drv_module_get_global(CUdeviceptr *dptr, size_t *bytes, CUmodule m,
					  const char *name);
DRV_HIDDEN CUresult drv_func_get_name(const char **name, CUfunction f);
DRV_HIDDEN const char *drv_func_symbol(CUfunction f);
DRV_HIDDEN CUresult drv_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			       unsigned by, unsigned bz, unsigned shared, CUstream s, void **params,
			       void **extra);
DRV_HIDDEN CUresult drv_graph_instantiate(CUgraphExec *out, CUgraph g, unsigned long long flags);
DRV_HIDDEN CUresult drv_graph_launch(CUgraphExec x, CUstream s);
DRV_HIDDEN CUresult drv_graph_destroy(CUgraph g);
DRV_HIDDEN CUresult drv_graph_exec_destroy(CUgraphExec x);
DRV_HIDDEN CUresult drv_graph_get_nodes(CUgraph g, CUgraphNode *nodes, size_t *count);

#endif
