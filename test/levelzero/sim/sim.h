/* Internal interface of the simulated Level Zero device (libze_sim.so).
 * The behaviour contract is at the top of sim_driver.c and in README.md. */
#ifndef ZE_SIM_SIM_H
#define ZE_SIM_SIM_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <level_zero/ze_api.h>
#include <level_zero/ze_ddi.h>
#include "ddi_newer.h"
#include "backends/levelzero/ze_intel_ext.h"
#include <level_zero/zes_ddi.h>
#include <level_zero/zet_ddi.h>

#define SIM_DEVICE_NAME "gputrace simulated GPU"
#define SIM_FILL_PATTERN_MAX 128
#define SIM_COPY_MIN_NS 1000
#define SIM_MEM_POLL_NS 20000	/* how often an engine held by a wait on memory looks */
#define SIM_NAP_NS 100000	/* how often an engine that ran something lately looks */
#define SIM_NAP_WINDOW_NS 1000000 /* how long after its last command it keeps looking */
#define SIM_QUEUE_GROUPS 2	/* ordinal 0: compute, ordinal 1: copy */
#define SIM_ENGINES 3		/* compute 0.0 and 0.1, copy 1.0 */

/* ---- sim_driver.c: the spec version simulated (ZE_SIM_API_VERSION) ---- */
extern ze_api_version_t sim_api_version;
/* ZE_EVENT_POOL_FLAG_KERNEL_MAPPED_TIMESTAMP (spec 1.6; Debian's 1.4 headers lack it) */
#define SIM_POOL_MAPPED_TS 0x8u
#define SIM_HAS(minor) (sim_api_version >= ZE_MAKE_VERSION(1, minor))
/* Reads the environment once (the loader asks for tables before any init). */
void sim_setup(void);

/* ---- sim_clock.c: the deliberately awkward device clock ---- */
struct sim_clock {
	long double tick_ns;	/* ZE_SIM_TICK_NS */
	unsigned valid_bits;	/* ZE_SIM_VALID_BITS */
	uint64_t mask;
	uint64_t offset_ns;	/* ZE_SIM_CLOCK_OFFSET_NS */
	long double rate;	/* 1 + ZE_SIM_DRIFT_PPM / 1e6: device ns per host ns */
};
extern struct sim_clock sim_clock;
void sim_clock_setup(void);	/* part of sim_setup */
uint64_t sim_host_ns(void);	/* CLOCK_MONOTONIC_RAW */
uint64_t sim_dev_ticks(uint64_t host_ns);
void sim_sleep_until(uint64_t host_ns);
/* A thread held up inside a driver call, every Nth call (env: "US[/N]"). It spins
 * meanwhile: a sleep would overshoot by tens of microseconds, and the stall is to land
 * where the test puts it. */
struct sim_stall {
	const char *env;
	uint64_t ns, every;
	_Atomic unsigned long calls;
};
void sim_stall_parse(struct sim_stall *st);	/* a bad value: one line, no stall */
bool sim_stall_maybe(struct sim_stall *st);	/* counts the call; true if it spun */
extern struct sim_stall sim_pair_split;		/* ZE_SIM_PAIR_SPLIT_US */
bool sim_pair_split_maybe(void);	/* ... on a thread ZE_SIM_PAIR_SPLIT_THREAD names */

/* ---- sim_objects.c: handles, validated through a registry so that a stale or foreign
 * handle yields an error code instead of a crash ---- */
enum sim_kind {
	SIM_K_DRIVER = 1, SIM_K_DEVICE, SIM_K_CONTEXT, SIM_K_QUEUE, SIM_K_LIST, SIM_K_MODULE,
	SIM_K_BUILD_LOG, SIM_K_KERNEL, SIM_K_EVENT_POOL, SIM_K_EVENT, SIM_K_FENCE,
	SIM_K_METRIC_STREAMER, SIM_K_METRIC_QUERY_POOL, SIM_K_METRIC_QUERY,	/* sim_metrics.c */
};

struct sim_obj {
	uint32_t magic;		/* SIM_MAGIC while alive */
	uint32_t kind;
	struct sim_obj *hash_next;
	uint64_t serial;	/* unique per object made: a later one at the same address differs */
};
#define SIM_MAGIC 0x5a455349u	/* "ZESI" */

/* One lock guards the registry and all device state; `sim_cond` is broadcast whenever
 * anything completes, is signalled or is submitted (few threads: simplicity wins). */
extern pthread_mutex_t sim_lock;
extern pthread_cond_t sim_cond;
void sim_lock_setup(void);
/* ZE_SIM_SIGNAL_IN_WAIT and _IN_QUERY, read once at load (not again in a fork child) */
void sim_signal_in_wait_setup(void);
/* A host synchronize (timeout_ns: its timeout; 0 is a query) starts, sim_lock held. */
void sim_signal_in_wait_locked(uint64_t timeout_ns);
/* Waits on sim_cond (sim_lock held) until `deadline_host_ns` (UINT64_MAX = forever);
 * returns false once the deadline has passed. */
bool sim_cond_wait_until(uint64_t deadline_host_ns);
/* The same without waking napping engines first (the engines' own waits). */
bool sim_cond_nap_until(uint64_t deadline_host_ns);
extern unsigned sim_napping;	/* sim_lock: engines napping */
bool sim_engines_run_due_locked(void);
uint64_t sim_deadline(uint64_t timeout_ns);

void sim_obj_register(struct sim_obj *o, enum sim_kind kind);
void sim_obj_unregister(struct sim_obj *o);
ze_result_t sim_obj_check(const void *handle, enum sim_kind kind);
/* The checks every object made in a context on a device starts with. */
ze_result_t sim_check_context_device(ze_context_handle_t ctx, ze_device_handle_t dev);
/* Zeroes an output structure but for its stype and pNext (the caller's). */
void sim_clear_out(void *out, size_t size);
/* sim_lock held: is handle a live object of that kind? (never dereferenced otherwise) */
bool sim_obj_alive_locked(const void *handle, enum sim_kind kind);
/* A command holds the objects it names by handle and serial (sim_obj_serial of a handle
 * checked alive): sim_lock held, is it still that object? One destroyed while the command
 * was pending is gone for it, even when a later object took its freed address (a driver
 * writes the event memory it was given, never a later event's). */
uint64_t sim_obj_serial(const void *handle);
bool sim_obj_same_locked(const void *handle, enum sim_kind kind, uint64_t serial);

/* Validates handle `h` of kind K (NULL → INVALID_NULL_HANDLE, unknown or other kind →
 * INVALID_ARGUMENT) and declares `struct sim_<type> *var`. */
#define SIM_HANDLE(type, var, h, K)						\
	struct sim_##type *var = (struct sim_##type *)(void *)(h);		\
	do {									\
		ze_result_t r_ = sim_obj_check((h), (K));			\
		if (r_ != ZE_RESULT_SUCCESS)					\
			return r_;						\
	} while (0)
#define SIM_NOT_NULL(p)								\
	do {									\
		if ((p) == NULL)						\
			return ZE_RESULT_ERROR_INVALID_NULL_POINTER;		\
	} while (0)

struct sim_context {
	struct sim_obj obj;
	uint64_t id;	/* its memory's owner: a later context may get its address */
};
struct sim_module { struct sim_obj obj; };
struct sim_build_log { struct sim_obj obj; };
struct sim_kernel {
	struct sim_obj obj;
	char *name;
	uint32_t group_size[3];
};
struct sim_event_pool {
	struct sim_obj obj;
	ze_event_pool_flags_t flags;
	uint32_t count;
	bool counter_based;		/* ze_event_pool_counter_based_exp_desc_t in pNext */
	uint32_t cb_flags;		/* its IMMEDIATE / NON_IMMEDIATE */
	struct sim_event *events;	/* live events, for destroying them with the pool */
};

/* What the latest command that signals a counter-based event sets: the event points at
 * it, and so do the commands that wait on the event as it was when they were submitted. */
struct sim_cb_state {
	uint32_t refs;
	bool done;
	uint64_t start_ns, end_ns;
};

struct sim_event {
	struct sim_obj obj;
	struct sim_event_pool *pool;	/* NULL: zeEventCounterBasedCreate */
	struct sim_event *pool_next;
	bool timestamps;		/* kernel timestamps can be queried */
	bool host_timestamps;		/* ... in host ns (ZE_EVENT_COUNTER_BASED_FLAG_HOST_TIMESTAMP) */
	bool counter_based;
	uint32_t cb_flags;		/* IMMEDIATE and/or NON_IMMEDIATE: lists that may signal it */
	struct sim_cb_state *cb;	/* counter-based: latest assignment; NULL: never (complete) */
	bool signaled;			/* regular events */
	uint64_t signal_ns;		/* simulated host time it was signalled */
	uint64_t start_ns, end_ns;	/* simulated span of the signalling command */
};
struct sim_fence {
	struct sim_obj obj;
	struct sim_queue *queue;
	bool signaled;
};

/* sim_lock held. Counter-based state: a new one, a reference, letting one go. */
struct sim_cb_state *sim_cb_new_locked(void);
struct sim_cb_state *sim_cb_ref_locked(struct sim_cb_state *st);
void sim_cb_put_locked(struct sim_cb_state *st);
/* sim_lock held. Is the event complete (as the host sees it now)? */
bool sim_event_done_locked(const struct sim_event *ev);
/* Signals regular event `ev` (sim_lock held) as completed by a command spanning [start, end]. */
void sim_event_signal_locked(struct sim_event *ev, uint64_t start_ns, uint64_t end_ns);
/* A program broke a rule of counter-based events: one "ze_sim:" line on stderr, the
 * driver's error code back. */
ze_result_t sim_cb_misuse(const char *call, const char *rule);

/* ---- sim_queue.c: engines shared by the queues and immediate lists on them ---- */
/* zeCommandListAppendLaunchMultipleKernelsIndirect: the kernels one command holds */
#define SIM_INDIRECT_MAX 8

enum sim_cmd_op {
	SIM_OP_KERNEL, SIM_OP_COPY, SIM_OP_FILL, SIM_OP_TIMESTAMP, SIM_OP_QUERY, SIM_OP_NOP,
	SIM_OP_QUERY_BEGIN, SIM_OP_QUERY_END,	/* metric queries: dst is the query */
	SIM_OP_WAIT_MEM, SIM_OP_WRITE_MEM,	/* Intel's zex wait on / write to memory at dst */
	SIM_OP_COPY_REGION			/* zeCommandListAppendMemoryCopyRegion */
};

/* One side of a region copy: where it starts, and how rows and slices are laid out. */
struct sim_region {
	ze_copy_region_t r;
	uint32_t pitch, slice_pitch;
};
uint64_t sim_region_rows(const struct sim_region *g);
uintptr_t sim_region_row(const void *ptr, const struct sim_region *g, uint64_t i);

/* A wait on an event; for a counter-based one, on its state when the command was submitted. */
struct sim_wait {
	struct sim_event *ev;
	uint64_t serial;		/* ev's (sim_obj_same_locked) */
	bool counter_based;		/* set at submission: then cb is what it waits for */
	bool host_timestamps;		/* set at submission (the event may go before) */
	struct sim_cb_state *cb;	/* NULL: the event had never been signalled (complete) */
};

struct sim_cmd {
	enum sim_cmd_op op;
	uint64_t duration_ns;
	void *dst;
	const void *src;
	size_t size;
	size_t pattern_size;
	uint8_t pattern[SIM_FILL_PATTERN_MAX];
	struct sim_event *signal;	/* regular event, or counter-based in a recorded list */
	struct sim_cb_state *signal_cb;	/* submitted: the counter-based state it completes */
	struct sim_event *reset;	/* zeCommandListAppendEventReset */
	struct sim_fence *fence;	/* fence of an ExecuteCommandLists batch */
	uint64_t signal_serial, reset_serial, fence_serial; /* theirs (sim_obj_same_locked) */
	uint32_t nwait;
	struct sim_wait *wait;
	uint32_t nquery;		/* zeCommandListAppendQueryKernelTimestamps */
	struct sim_wait *query;		/* its events, as they were when it was submitted */
	size_t *offsets;		/* where each result goes in dst (NULL: one after another) */
	uint64_t enqueue_ns;
	uint64_t seq;			/* submission order across the engine's streams */
	/* Kernels: what the duration was made of (a mutable command may change it). */
	struct sim_kernel *kernel;
	ze_group_count_t count;
	uint32_t group_size[3];
	bool mutable_cmd;		/* has an id of a mutable list: */
	uint32_t mut_flags;		/* what may change (ze_mutable_command_exp_flags_t) */
	uint64_t mut_id;
	/* SIM_OP_WAIT_MEM: until the value at dst compares so (ZEX_WAIT_ON_MEMORY_FLAG_*);
	 * SIM_OP_WRITE_MEM: the value written at dst. */
	uint64_t mem_data;
	uint32_t mem_action;
	bool mem_64;			/* 8 bytes at dst, else 4 */
	struct sim_region dst_region, src_region; /* SIM_OP_COPY_REGION */
	/* Indirect launches: group counts (and for several kernels their number) read
	 * from device memory when the command starts, so the duration is decided then. */
	const ze_group_count_t *indirect_counts;
	const uint32_t *indirect_num;	/* NULL: one kernel */
	bool indirect_read;		/* duration_ns is theirs now */
	uint32_t nkernels;		/* kernels and their group sizes, as appended */
	struct sim_kernel *kernels[SIM_INDIRECT_MAX];
	uint32_t sizes[SIM_INDIRECT_MAX][3];
	struct sim_cmd *next;
};

/* A queue or an immediate list: its own commands, in order, on one engine. */
struct sim_stream {
	struct sim_engine *engine;
	struct sim_cmd *head, *tail;
	uint64_t submitted, completed;
	bool busy;			/* its head runs on the engine */
	struct sim_stream *next;	/* the engine's streams */
};

/* One hardware engine (queue group ordinal, index): runs one command at a time. */
struct sim_engine {
	struct sim_stream *streams;
	uint64_t last_end_ns;
	pthread_t thread;
	bool running;			/* its worker exists in this process */
	bool busy;			/* the worker runs a command ending at busy_end */
	bool napping;			/* looks at its streams by itself soon */
	uint64_t busy_end;
	uint64_t last_done_ns;		/* host time its last command completed */
};

struct sim_queue {
	struct sim_obj obj;
	uint32_t ordinal, index;
	ze_command_queue_mode_t mode;
	struct sim_stream stream;
};

struct sim_list {
	struct sim_obj obj;
	struct sim_context *context;
	uint32_t ordinal, index;
	bool immediate;
	bool in_order;
	bool synchronous;	/* immediate list in ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS */
	bool closed;
	struct sim_cmd *head, *tail;	/* regular lists: recorded commands */
	struct sim_stream stream;	/* immediate lists */
	/* Mutable lists (ZE_experimental_mutable_command_list): ids given so far, the one
	 * the next kernel launch takes, and the kernels each id may switch to. */
	bool mutable_list;
	bool mut_pending;
	uint32_t mut_pending_flags;
	uint64_t mut_ids, mut_pending_id;
	struct sim_kernel **mut_pending_kernels;
	uint32_t mut_pending_nkernels;
	struct sim_mut_kernels *mut_kernels;
};

/* The kernels command id may switch to (GetNextCommandIdWithKernelsExp). */
struct sim_mut_kernels {
	uint64_t id;
	uint32_t n;
	struct sim_kernel **kernels;
	struct sim_mut_kernels *next;
};

/* ---- the implementations put in the DDI tables ---- */
void sim_fill_global(ze_global_dditable_t *t);
void sim_fill_driver(ze_driver_dditable_t *t);
void sim_fill_device(ze_device_dditable_t *t);
void sim_fill_context(ze_context_dditable_t *t);
void sim_fill_command_queue(ze_command_queue_dditable_t *t);
void sim_fill_command_list(ze_command_list_dditable_t *t);
void sim_fill_fence(ze_fence_dditable_t *t);
void sim_fill_event_pool(ze_event_pool_dditable_t *t);
void sim_fill_event(ze_event_dditable_t *t);
void sim_fill_module(ze_module_dditable_t *t);
void sim_fill_module_build_log(ze_module_build_log_dditable_t *t);
void sim_fill_kernel(ze_kernel_dditable_t *t);
void sim_fill_mem(ze_mem_dditable_t *t);
/* Entries of spec versions after 1.4, up to both the requested and the simulated one. */
void sim_fill_command_list_newer(void *table, ze_api_version_t version);
void sim_fill_command_list_exp(void *table, ze_api_version_t version);
void sim_fill_event_newer(void *table, ze_api_version_t version);
ze_result_t sim_device_synchronize(ze_device_handle_t h);
/* Mutable command lists and Intel's zex functions (sim_intel.c). */
void sim_fill_command_list_mutable(struct sim_command_list_exp_ddi *t, ze_api_version_t version);
ze_result_t sim_get_extension_function_address(ze_driver_handle_t h, const char *name,
					       void **out);
/* The mutable command list descriptor in a list's pNext chain (sim_intel.c). */
bool sim_list_desc_mutable(const ze_command_list_desc_t *desc);
/* A kernel launch just recorded in regular list l takes the id asked for (sim_intel.c). */
void sim_mutable_take_id(struct sim_list *l, struct sim_cmd *c);
void sim_mutable_forget(struct sim_list *l);
uint64_t sim_kernel_duration(const ze_group_count_t *count, const uint32_t size[3]);
/* sim_lock held: is [p, p + size) inside one allocation made in ctx (any ctx: NULL)? */
bool sim_mem_owned_locked(const void *p, size_t size, const struct sim_context *ctx);
/* The most groups of this size a cooperative launch may have: all resident at once. */
uint32_t sim_cooperative_groups(const uint32_t size[3]);
ze_result_t sim_check_cb_signal(const struct sim_list *l, const struct sim_event *ev,
				const char *call);
ze_result_t sim_event_counter_based_create(ze_context_handle_t ctx, ze_device_handle_t dev,
					   const ze_event_counter_based_desc_t *desc,
					   ze_event_handle_t *out);

extern struct sim_obj sim_driver_obj, sim_device_obj;

/* Records (regular list) or submits (immediate list) one command (sim_queue.c); call:
 * the API's name, for messages. */
ze_result_t sim_list_append(ze_command_list_handle_t h, struct sim_cmd *proto,
			    ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t *waits,
			    const char *call);
/* The simulated time up to which every command's span is known (sim_lock held):
 * nothing that has not started yet can start before it. */
uint64_t sim_engines_horizon_locked(uint64_t now);
/* Bytes of device and shared allocations (sim_lock held; sim_objects.c). */
uint64_t sim_mem_in_use_locked(void);

/* ---- sim_metrics.c: metric groups, streamers, queries (zet); sim_sysman.c: zes ---- */
/* Reads ZET_ENABLE_METRICS / ZES_ENABLE_SYSMAN at the first zeInit, as a driver does. */
void sim_tools_setup(void);
extern bool sim_metrics_enabled, sim_sysman_enabled;
/* Every zet/zes entry point asks first: returns `enabled`; aborts under ZE_SIM_FORBID_TOOLS=1. */
bool sim_tool_call(bool enabled);
/* A command starts on an engine (sim_lock held): its span is recorded while metrics
 * or Sysman are on. A command completed (sim_lock held): queries take their times. */
void sim_metrics_started_locked(const struct sim_cmd *c, uint64_t start_ns, uint64_t end_ns);
void sim_metrics_done_locked(const struct sim_cmd *c, uint64_t start_ns, uint64_t end_ns);
/* Busy time of the recorded work inside [a, b), by kind (sim_lock held). */
struct sim_window {
	uint64_t busy_ns, kernel_ns, copy_ns;
	uint64_t occupancy;	/* lane-ns: kernels' time x the EU lanes their work-items fill */
	uint64_t bytes_read, bytes_written;
};
void sim_window_locked(uint64_t a, uint64_t b, struct sim_window *w);
void sim_fill_metric_context(zet_context_dditable_t *t);
void sim_fill_metric_command_list(zet_command_list_dditable_t *t);
void sim_fill_metric_group(zet_metric_group_dditable_t *t);
void sim_fill_metric_group_exp(zet_metric_group_exp_dditable_t *t);
void sim_fill_metric(zet_metric_dditable_t *t);
void sim_fill_metric_streamer(zet_metric_streamer_dditable_t *t);
void sim_fill_metric_query_pool(zet_metric_query_pool_dditable_t *t);
void sim_fill_metric_query(zet_metric_query_dditable_t *t);
void sim_fill_sysman_device(zes_device_dditable_t *t);
void sim_fill_sysman_frequency(zes_frequency_dditable_t *t);
void sim_fill_sysman_power(zes_power_dditable_t *t);
void sim_fill_sysman_temperature(zes_temperature_dditable_t *t);
void sim_fill_sysman_memory(zes_memory_dditable_t *t);
void sim_fill_sysman_engine(zes_engine_dditable_t *t);
#define SIM_EU_LANES 2048	/* slices x subslices x EUs x threads x SIMD of the device */

#endif
