/* SPDX-License-Identifier: MIT */
/*
 * Internals of the plug-in backend, shared by its files:
 *   host.c      finds and loads the plug-ins, checks their ABI, calls them
 *               (create, start, flush, stop, destroy); the backend itself
 *   builder.c   the trace builder handed to each plug-in: its calls -> events
 *   kineto.c    hosts Kineto's dynamic plug-ins: registration, their life
 *               cycle as Kineto drives it, correlation push/pop
 *   kineto_builder.c  Kineto's trace builder: its calls -> events, rows
 *   utc.c       UTC (CLOCK_REALTIME) times of Kineto plug-ins -> trace clock
 *   jsoncheck.c is a metadata value valid JSON, and of what kind
 * and gputrace_plugin.h, the public ABI plug-ins are built against
 * (installed as <gputrace/gputrace_plugin.h>); kineto_plugin.h, Kineto's.
 */
#ifndef GPUTRACE_PLUGINS_INTERNAL_H
#define GPUTRACE_PLUGINS_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "backends/backend.h"
#include "backends/plugins/gputrace_plugin.h"
#include "inject/config.h"
#include "inject/event.h"

#define PLUGINS_MAX      16  /* each gets a correlation namespace */
#define PLUGIN_ROWS_MAX  256 /* devices and queues per plug-in */
#define PLUGIN_NAME_MAX  32

/* The limits a declaration can meet: each is said once per plug-in. */
enum plugin_limit {
	PLUGIN_LIMIT_ROWS,    /* PLUGIN_ROWS_MAX of the plug-in */
	PLUGIN_LIMIT_DEVICES, /* GT_DEVICES_MAX of the process */
	PLUGIN_LIMIT_TRACKS,  /* GT_TRACKS_MAX of the process */
};

struct plugin_row {
	uint32_t device; /* gputrace's device id */
	uint32_t track;  /* the queue's track, or the device's own track */
	uint32_t name;   /* string id of the name it was declared by */
	bool queue;
};

struct gputrace_builder {
	_Atomic bool open; /* accepts calls: created, not failed, not destroyed */
	uint32_t kinds;    /* enabled kinds */
	unsigned corr_ns;  /* correlation namespace of this plug-in */
	uint32_t kind_cat[GT_KIND__COUNT]; /* default category of each kind */
	char name[PLUGIN_NAME_MAX];
	pthread_mutex_t rows_lock; /* declarations only; lookups read rows lock-free */
	_Atomic uint32_t nrows;
	uint32_t limits_said; /* 1 << enum plugin_limit: its line was written */
	_Atomic bool times_said; /* the line for times out of range was written */
	_Atomic bool corr_said;  /* the line for a correlation id past 48 bits was */
	_Atomic bool bad_said;   /* the line for the first -EINVAL/-E2BIG event was */
	uint64_t opened_ns; /* times an hour before are not the plug-in's */
	struct plugin_row rows[PLUGIN_ROWS_MAX];
};

struct plugin {
	struct gputrace_plugin ops; /* a Kineto plug-in's: kineto.c's adapters */
	char *path;
	void *dl;
	void *state;
	_Atomic bool live; /* may be called: created, not failed, not destroyed */
	bool stopped;  /* not recording: between capture windows, or for good at exit */
	bool exec_stopped; /* stopped by an exec, started again if it fails */
	/* created while paused, not started yet (its start comes with the first
	 * window): no flush before it, as the contract orders create, start, flush */
	bool unstarted;
	bool destroy_due; /* flushed for good: destroy comes once the trace is written */
	/* its failure has had its line already: a call given up on may fail on
	 * its caller thread later, beside the waiter's own line (atomic_exchange
	 * decides who says it) */
	_Atomic bool reported;
	_Atomic bool hung; /* a call of it never returned: its later records are lost */
	const char *label; /* its name in lines: the builder's, a Kineto profiler's */
	/* the call under way, for the line if it never returns (Kineto's
	 * adapters name the profiler's own call) */
	const char *_Atomic calling;
	/* records handed over, from any of its threads: a bounded call that
	 * waits for its own worker to hand a batch over is not stuck */
	_Atomic uint64_t progress;
	struct gputrace_builder builder;
};

/* Every plug-in loaded (host.c); a builder handle points into this array. */
extern GT_HIDDEN struct plugin *plugins; /* [PLUGINS_MAX], inject/tables.h */

/* Plug-in code runs inside the guard: what it calls through wrapped APIs
 * is gputrace's own work, not the program's. A call made inside the guard
 * already (the host calling a Kineto adapter, which calls the profiler)
 * keeps it: no nested call is counted lost. */
#define PLUGIN_CALL(expr)                                                          \
	({                                                                         \
		bool guarded_ = !gt_in_tracer && gt_guard_enter();                 \
		__typeof__(expr) rc_ = (expr);                                     \
		if (guarded_)                                                      \
			gt_guard_leave();                                          \
		rc_;                                                               \
	})

/* ---- the host (host.c), for kineto.c ---- */

/* A slot for a plug-in that registered (named, recording kinds), its
 * builder open; NULL (reported) when none is left. */
GT_HIDDEN struct plugin *plugin__add(const char *path, void *dl, const struct gputrace_plugin *ops,
				     const char *name, uint32_t kinds);
/* A call failed: one line (unless p->reported), never called again. */
GT_HIDDEN void plugin__fail(struct plugin *p, const char *call, int rc);
/* p's call named call is made now (for the lines that name it); true. */
GT_HIDDEN bool plugin__calling(struct plugin *p, const char *call);
/* p handed something over, from any of its threads: a bounded call of it
 * is alive (host.c). */
GT_HIDDEN void plugin__progress(struct plugin *p);
/* Paused between capture windows now: a plug-in created now is not
 * started (its start comes with the first window, host.c). */
GT_HIDDEN bool plugins__paused(void);
/* The lock every plug-in call is made under (one call at a time). */
GT_HIDDEN bool plugins__lock_calls(unsigned timeout_ms);
GT_HIDDEN void plugins__unlock_calls(void);
GT_HIDDEN int plugins__restart_locked(struct plugin *p);
/* Under the calls lock: p's first start, bounded (host.c). 0, or <0 with
 * p disabled and its line said. */
GT_HIDDEN int plugins__start_locked(struct plugin *p);

/* ---- Kineto's plug-ins (kineto.c) ---- */

/* A shared object exporting KinetoPlugin_register: register its profilers,
 * query, create and start each. Under the calls lock. */
GT_HIDDEN void kineto__load(const char *path, void *dl, void *register_fn);
/* After every plug-in is loaded: the GPUTRACE_KINETO_CYCLE_MS thread. */
GT_HIDDEN void kineto__started(void);
/* Exit is under way: no more cycles. */
GT_HIDDEN void kineto__stopping(void);
GT_HIDDEN void kineto__atfork_child(void);
/* A call of p was given up on (host.c): the event a Kineto profiler of p
 * was describing is counted lost. Nothing for gputrace's own plug-ins. */
GT_HIDDEN void kineto__given_up(struct plugin *p);

/* ---- the builder (builder.c) ---- */

/* The functions every plug-in's builder handle is used with. */
extern GT_HIDDEN const struct gputrace_builder_api builder_api;
/* Make b ready for the plug-in called name, index-th loaded, recording kinds. */
GT_HIDDEN void builder__open(struct gputrace_builder *b, const char *name, uint32_t kinds,
			     unsigned index);
/* The string id of a plug-in's string (at most 4096 bytes of it), found
 * lock-free when known: builder calls come from any thread. */
GT_HIDDEN uint32_t builder__str_n(const char *s, size_t len);
GT_HIDDEN uint32_t builder__str(const char *s);
/* The string id an event's arg key is written with: a key the writer adds
 * itself (correlation, range, ...) gets a "plugin_" prefix. */
GT_HIDDEN uint32_t builder__arg_key(const char *key);

#endif
