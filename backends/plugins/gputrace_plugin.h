/* SPDX-License-Identifier: MIT */
/*
 * gputrace plug-in ABI: put the work of an accelerator gputrace does not
 * know (an NPU, an FPGA, an in-house chip) into the same trace, from a
 * shared object gputrace loads at start, without changing gputrace.
 *
 * Installed as <prefix>/include/gputrace/gputrace_plugin.h. Self-contained,
 * pure C (C99 and later, C++98 and later); nothing here needs gputrace's
 * library at link time: gputrace hands the plug-in a table of functions.
 *
 * Life of a plug-in. gputrace loads every *.so in the directories of
 * GPUTRACE_PLUGIN_PATH (colon-separated) and, for each:
 *   1. gputrace_plugin_register(table): the plug-in fills the table (use
 *      GPUTRACE_PLUGIN_EXPORT); a table of a newer ABI than gputrace's is
 *      refused with one stderr line;
 *   2. query(info): the plug-in's name and the activity kinds it can record;
 *   3. create(setup, &state): the enabled kinds, the configuration string
 *      and the trace builder, before anything runs;
 *   4. start(state): begin recording;
 *   5. flush(state, final): called by gputrace's drain thread every cycle
 *      (final != 0 once, at process exit): hand over what is complete;
 *   6. stop(state) at process exit, then flush(state, 1), then destroy(state).
 * With capture windows (recording only inside them), start(state) is made
 * as each window opens (not while paused), and stop(state), then
 * flush(state, 0), as each closes: a plug-in must accept start after stop.
 * A call that returns a negative value (or, for register, non-zero) fails
 * the plug-in: gputrace prints one line naming the file and the call, and
 * never calls that plug-in again (not even destroy: clean up before you
 * return the error). Tracing goes on without it.
 * gputrace makes these calls one at a time, never two at once for a plug-in.
 *
 * Events go through the opaque builder (struct gputrace_builder_api). No
 * memory changes owner across the boundary: gputrace copies every string
 * and struct it is given before the call returns, and the plug-in frees
 * nothing of gputrace's. The builder functions are thread-safe: call them
 * from any thread (your own collector thread, flush) between create and the
 * return of destroy; calls after a failure or after destroy are ignored.
 *
 * Time. All timestamps are host time on CLOCK_MONOTONIC_RAW, in
 * nanoseconds: api->now_ns() returns gputrace's current clock, so a device
 * timestamp converts with one (host, device) pair taken at start.
 *
 * Versioning. Every struct starts with its size in bytes. A struct the
 * plug-in passes in carries the plug-in's size: gputrace reads only that
 * many bytes and treats later fields as zero, so a plug-in built against an
 * older header keeps working. Structs gputrace passes out carry gputrace's
 * size. New ABI versions only append fields and functions.
 */
#ifndef GPUTRACE_PLUGIN_H
#define GPUTRACE_PLUGIN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI this header describes; gputrace accepts 1 up to its own. */
#define GPUTRACE_PLUGIN_ABI_VERSION 1

/* The one symbol a plug-in exports. */
#define GPUTRACE_PLUGIN_REGISTER_SYMBOL "gputrace_plugin_register"

/*
 * Generic activity kinds, as bits. Configuration (GPUTRACE_ACTIVITIES) names
 * them in lower case ("kernel,memcpy") or by vendor aliases (cuda_runtime,
 * xpu_driver, privateuse1_runtime, ...), so a new accelerator never needs a
 * new value here.
 */
#define GPUTRACE_KIND_RUNTIME    (1u << 0) /* host API calls of the runtime */
#define GPUTRACE_KIND_DRIVER     (1u << 1) /* host API calls of the driver */
#define GPUTRACE_KIND_KERNEL     (1u << 2) /* device kernels, concurrent */
#define GPUTRACE_KIND_MEMCPY     (1u << 3) /* device copies */
#define GPUTRACE_KIND_MEMSET     (1u << 4) /* device fills */
#define GPUTRACE_KIND_SYNC       (1u << 5) /* waits, synchronization */
#define GPUTRACE_KIND_ANNOTATION (1u << 6) /* user ranges and marks */
#define GPUTRACE_KIND_COUNTER    (1u << 7) /* hardware counter samples */
#define GPUTRACE_KIND_OVERHEAD   (1u << 8) /* the tool's own cost */
#define GPUTRACE_KIND_ALL        ((1u << 9) - 1)

/* ---- events, as the plug-in hands them over ---- */

enum gputrace_arg_type {
	GPUTRACE_ARG_I64 = 1,
	GPUTRACE_ARG_U64,
	GPUTRACE_ARG_HEX, /* a u64 written as "0x...": handles, addresses */
	GPUTRACE_ARG_F64,
	GPUTRACE_ARG_STR  /* value.s, copied */
};

/* One typed key/value argument. In an array, every element's size is the
 * first element's size. */
struct gputrace_arg {
	uint32_t size; /* sizeof(struct gputrace_arg) */
	uint32_t type; /* enum gputrace_arg_type */
	const char *key;
	union {
		int64_t i;
		uint64_t u;
		double f;
		const char *s;
	} value;
};

/* At most this many arguments per event (or values per counter sample). */
#define GPUTRACE_ARGS_MAX 8

/* The largest correlation id (struct gputrace_event): gputrace keeps 48 bits
 * of an id, the rest of its own id names the plug-in; a larger one is
 * refused (-ERANGE). */
#define GPUTRACE_CORRELATION_MAX ((((uint64_t)1) << 48) - 1)

/* Row of host events: the thread given by tid (0: the calling thread). */
#define GPUTRACE_ROW_HOST 0

/* A span (api->span) or an instant (api->instant; end_ns is ignored). */
struct gputrace_event {
	uint32_t size;        /* sizeof(struct gputrace_event) */
	uint32_t kind;        /* one GPUTRACE_KIND_*: dropped unless enabled */
	int32_t row;          /* a queue row (or, for instants, a device row) from
			       * api->queue/api->device, or GPUTRACE_ROW_HOST */
	int32_t tid;          /* host events: OS thread id, 0 = the calling thread */
	const char *category; /* NULL: the kind's category (kernel, gpu_memcpy,
			       * gpu_memset, cuda_sync, user_annotation, overhead,
			       * <plug-in>_runtime, <plug-in>_driver) */
	const char *name;     /* required, not "" */
	uint64_t start_ns;    /* CLOCK_MONOTONIC_RAW ns */
	uint64_t end_ns;      /* spans: >= start_ns */
	/* Host span: its own id, != 0 when device work follows from it.
	 * Device span: the id of the host span that caused it; the trace gets
	 * a flow arrow from that host span to this one. Ids are the plug-in's
	 * own (1 to GPUTRACE_CORRELATION_MAX, 2^48 - 1); they never clash with
	 * other backends'. */
	uint64_t correlation;
	const struct gputrace_arg *args; /* nargs entries, keys distinct; NULL if 0 */
	uint32_t nargs;                  /* at most GPUTRACE_ARGS_MAX */
	uint32_t reserved;               /* 0 */
};

/* A counter sample: on the device's row, one series per value; values
 * sampled together (used and free memory) belong in one sample. */
struct gputrace_counter {
	uint32_t size;        /* sizeof(struct gputrace_counter) */
	int32_t row;          /* a device row from api->device */
	const char *name;     /* the counter group, e.g. "memory"; not "" */
	uint64_t time_ns;     /* CLOCK_MONOTONIC_RAW ns */
	const struct gputrace_arg *values; /* numbers: I64, U64 or F64; keys distinct */
	uint32_t nvalues;                  /* 1 to GPUTRACE_ARGS_MAX */
	uint32_t reserved;                 /* 0 */
};

/* ---- the trace builder, as gputrace hands it out ---- */

typedef struct gputrace_builder gputrace_builder; /* opaque */

enum gputrace_log_level {
	GPUTRACE_LOG_ERROR = 0,
	GPUTRACE_LOG_WARN,
	GPUTRACE_LOG_INFO,
	GPUTRACE_LOG_DEBUG
};

/*
 * Functions return 0 (or a row id >= 1) on success and a negative errno
 * when the call is refused: -EINVAL (bad row, missing or "" name, end < start,
 * a size smaller than ABI 1's), -E2BIG (too many args), -ERANGE (a time that
 * is not this run's CLOCK_MONOTONIC_RAW, a correlation id past
 * GPUTRACE_CORRELATION_MAX), -ECANCELED (the
 * plug-in failed or was destroyed, or tracing has ended), -ENOSPC (no room:
 * the event was dropped and counted as lost; a device or queue past the
 * limits below, said once per plug-in on stderr). An event whose kind is
 * not enabled is dropped and the call returns 1.
 *
 * Rows: a plug-in has at most 256 (devices and queues together); a process
 * at most 64 devices and 4096 rows, whoever declares them. A device or
 * queue past them gets -ENOSPC (and an event given that as its row, -EINVAL).
 *
 * Strings (names of rows, events and counters, categories, arg keys and
 * values) longer than 4096 bytes are cut there, at the end of a character.
 */
struct gputrace_builder_api {
	uint32_t size;        /* sizeof(struct gputrace_builder_api) in gputrace */
	uint32_t abi_version; /* gputrace's GPUTRACE_PLUGIN_ABI_VERSION */
	/* gputrace's clock: CLOCK_MONOTONIC_RAW now, in ns. */
	uint64_t (*now_ns)(void);
	/* Declare (or find, by name) a device: one process row in the trace,
	 * where its queues and counters go. Returns a row id >= 1, or
	 * -ENOSPC past the limits on rows above. */
	int32_t (*device)(gputrace_builder *b, const char *name);
	/* Declare (or find, by device and name) a queue/stream row of a
	 * device; rows are ordered by sort. Returns a row id >= 1, or
	 * -ENOSPC past the limits on rows above. */
	int32_t (*queue)(gputrace_builder *b, int32_t device, const char *name, int32_t sort);
	/* A span on a queue row (device work) or on a host thread. */
	int (*span)(gputrace_builder *b, const struct gputrace_event *ev);
	/* An instant on a queue or device row or on a host thread. */
	int (*instant)(gputrace_builder *b, const struct gputrace_event *ev);
	/* A counter sample on a device row (needs GPUTRACE_KIND_COUNTER). */
	int (*counter)(gputrace_builder *b, const struct gputrace_counter *c);
	/* One line on stderr, "gputrace: plug-in <name>: msg", if the level is
	 * shown (GPUTRACE_LOG). Plug-ins never write the program's stdout. */
	void (*log)(gputrace_builder *b, int level, const char *msg);
};

/* ---- the plug-in, as it presents itself ---- */

/* Filled by query. gputrace copies the strings. */
struct gputrace_plugin_info {
	uint32_t size;       /* set by gputrace */
	uint32_t kinds;      /* GPUTRACE_KIND_* the plug-in can record */
	const char *name;    /* [A-Za-z0-9_-], 1 to 31 characters */
	const char *version; /* free text, may be NULL */
};

/* What create receives; valid during the create call only, except api and
 * builder which stay valid for the plug-in's life. */
struct gputrace_plugin_setup {
	uint32_t size;        /* set by gputrace */
	uint32_t abi_version; /* gputrace's */
	uint32_t kinds;       /* enabled: configured and supported */
	uint32_t reserved;
	/* The plug-in's part of GPUTRACE_PLUGIN_CONFIG
	 * ("name:text;other:text"): the text after "<name>:", or "". */
	const char *config;
	const char *path;     /* the shared object's path */
	const struct gputrace_builder_api *api;
	gputrace_builder *builder;
};

/* The table a plug-in fills at registration. */
struct gputrace_plugin {
	uint32_t size;        /* sizeof(struct gputrace_plugin) */
	uint32_t abi_version; /* GPUTRACE_PLUGIN_ABI_VERSION */
	/* Required. 0 or -errno. */
	int (*query)(struct gputrace_plugin_info *info);
	/* Required. Sets *state (anything; passed back to every call). */
	int (*create)(const struct gputrace_plugin_setup *setup, void **state);
	/* The rest may be NULL. Each returns 0 or -errno. */
	int (*start)(void *state);
	int (*stop)(void *state);
	int (*flush)(void *state, int final);
	void (*destroy)(void *state);
};

/* The first two fields of a table, for a positional initializer:
 *   static const struct gputrace_plugin me = { GPUTRACE_PLUGIN_TABLE_HEAD,
 *		my_query, my_create, my_start, my_stop, my_flush, my_destroy };
 */
#define GPUTRACE_PLUGIN_TABLE_HEAD sizeof(struct gputrace_plugin), GPUTRACE_PLUGIN_ABI_VERSION

#if defined(__GNUC__) || defined(__clang__)
#define GPUTRACE_PLUGIN_VISIBLE __attribute__((visibility("default")))
#else
#define GPUTRACE_PLUGIN_VISIBLE
#endif

/*
 * The registration function. gputrace passes a zeroed table whose size
 * field is the room it has; the plug-in copies in at most that much, then
 * sets size and abi_version to its own, so gputrace can tell (and refuse)
 * a plug-in newer than itself. Returns 0.
 */
GPUTRACE_PLUGIN_VISIBLE int gputrace_plugin_register(struct gputrace_plugin *table);
typedef int (*gputrace_plugin_register_fn)(struct gputrace_plugin *table);

static inline int gputrace_plugin_fill(struct gputrace_plugin *table,
				       const struct gputrace_plugin *mine)
{
	size_t room = table->size;

	memcpy(table, mine, mine->size < room ? mine->size : room);
	table->size = mine->size;
	table->abi_version = mine->abi_version;
	return 0;
}

/* Defines gputrace_plugin_register for a static table. */
#define GPUTRACE_PLUGIN_EXPORT(table)                                          \
	GPUTRACE_PLUGIN_VISIBLE int gputrace_plugin_register(                  \
		struct gputrace_plugin *gputrace_table)                        \
	{                                                                      \
		return gputrace_plugin_fill(gputrace_table, &(table));         \
	}

/* ---- helpers ---- */

/* Zero a struct and set its size: GPUTRACE_INIT(ev); ev.name = "k"; */
#define GPUTRACE_INIT(s) (memset(&(s), 0, sizeof(s)), (s).size = (uint32_t)sizeof(s))

static inline struct gputrace_arg gputrace__arg(const char *key, uint32_t type)
{
	struct gputrace_arg a;

	memset(&a, 0, sizeof(a));
	a.size = (uint32_t)sizeof(a);
	a.type = type;
	a.key = key;
	return a;
}

static inline struct gputrace_arg gputrace_arg_i64(const char *key, int64_t v)
{
	struct gputrace_arg a = gputrace__arg(key, GPUTRACE_ARG_I64);

	a.value.i = v;
	return a;
}

static inline struct gputrace_arg gputrace_arg_u64(const char *key, uint64_t v)
{
	struct gputrace_arg a = gputrace__arg(key, GPUTRACE_ARG_U64);

	a.value.u = v;
	return a;
}

static inline struct gputrace_arg gputrace_arg_hex(const char *key, uint64_t v)
{
	struct gputrace_arg a = gputrace__arg(key, GPUTRACE_ARG_HEX);

	a.value.u = v;
	return a;
}

static inline struct gputrace_arg gputrace_arg_f64(const char *key, double v)
{
	struct gputrace_arg a = gputrace__arg(key, GPUTRACE_ARG_F64);

	a.value.f = v;
	return a;
}

static inline struct gputrace_arg gputrace_arg_str(const char *key, const char *v)
{
	struct gputrace_arg a = gputrace__arg(key, GPUTRACE_ARG_STR);

	a.value.s = v;
	return a;
}

#ifdef __cplusplus
}
#endif

#endif
