/* SPDX-License-Identifier: MIT */
/*
 * Internals of the plug-in backend, shared by its files:
 *   host.c      finds and loads the plug-ins, checks their ABI, calls them
 *               (create, start, flush, stop, destroy); the backend itself
 *   builder.c   the trace builder handed to each plug-in: its calls -> events
 * and gputrace_plugin.h, the public ABI plug-ins are built against
 * (installed as <gputrace/gputrace_plugin.h>).
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

struct plugin_row {
	uint32_t device; /* gputrace's device id */
	uint32_t track;  /* the queue's track, or the device's own track */
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
	struct plugin_row rows[PLUGIN_ROWS_MAX];
};

struct plugin {
	struct gputrace_plugin ops;
	char *path;
	void *dl;
	void *state;
	bool live;    /* may be called: created, not failed, not destroyed */
	bool stopped;
	struct gputrace_builder builder;
};

/* Every plug-in loaded (host.c); a builder handle points into this array. */
extern GT_HIDDEN struct plugin plugins[PLUGINS_MAX];

/* ---- the builder (builder.c) ---- */

/* The functions every plug-in's builder handle is used with. */
extern GT_HIDDEN const struct gputrace_builder_api builder_api;
/* Make b ready for the plug-in called name, index-th loaded, recording kinds. */
GT_HIDDEN void builder__open(struct gputrace_builder *b, const char *name, uint32_t kinds,
			     unsigned index);

#endif
