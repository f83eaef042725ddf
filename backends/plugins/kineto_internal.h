/* SPDX-License-Identifier: MIT */
/*
 * Internals of the Kineto plug-in host, shared by kineto.c (life cycle),
 * kineto_builder.c (the trace builder), utc.c and jsoncheck.c.
 */
#ifndef GPUTRACE_PLUGINS_KINETO_INTERNAL_H
#define GPUTRACE_PLUGINS_KINETO_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "backends/plugins/internal.h"
#include "backends/plugins/kineto_plugin.h"

#define KINETO_TYPES KINETO_PLUGIN_PROFILE_EVENT_NUM_TYPES
#define KINETO_NAME_MAX 31 /* as Kineto asks: 31 characters and the NUL */

/*
 * The PR's first revision (its header was DynamicPluginInterface.h): an
 * interface without the four correlation calls (processEvents at offset
 * 48, 56 bytes in all), a builder without addDeviceInfo (addResourceInfo at
 * 48, 56 bytes), and types numbered 0-14 (CUDA_SYNC 13, GPU_PM_COUNTER 14).
 * Its plug-ins are told apart by their interface's size and get a builder
 * laid out as they expect.
 */
#define KINETO_REV1_INTERFACE_SIZE 56
#define KINETO_REV1_TYPES          15

struct kineto_builder_rev1 {
	size_t unpaddedStructSize;
	KinetoPlugin_TraceBuilderHandle *pTraceBuilderHandle;
	int (*addEvent)(KinetoPlugin_TraceBuilderHandle *, const struct KinetoPlugin_ProfileEvent *);
	int (*setLastEventName)(KinetoPlugin_TraceBuilderHandle *, const char *);
	int (*setLastEventFlow)(KinetoPlugin_TraceBuilderHandle *,
				const struct KinetoPlugin_ProfileEventFlow *);
	int (*addLastEventMetadata)(KinetoPlugin_TraceBuilderHandle *, const char *, const char *);
	int (*addResourceInfo)(KinetoPlugin_TraceBuilderHandle *,
			       const struct KinetoPlugin_ProfileResourceInfo *);
};
_Static_assert(sizeof(struct kineto_builder_rev1) == 56, "first revision's builder");

/* Where events of a type go, as what. */
enum kineto_place { K_HOST, K_HOST_INSTANT, K_DEVICE, K_EITHER, K_COUNTER };

struct kineto_type {
	char cat[24];      /* Kineto's own name of the type: the event's category (text, not
			    * a pointer the loader would relocate in every process) */
	uint32_t kind;     /* the GPUTRACE_ACTIVITIES kind it belongs to */
	enum kineto_place place;
};
/* Indexed by the latest revision's KinetoPlugin_ProfileEventType. */
extern GT_HIDDEN const struct kineto_type kineto_types[KINETO_TYPES];

/* A plug-in's type value in the latest numbering; unknown ones are kernels,
 * as Kineto takes them. */
GT_HIDDEN int kineto__type(int value, bool rev1);

/* A device or resource of a profiler, and its row once used. */
#define KINETO_DEVICES_MAX   64
#define KINETO_RESOURCES_MAX 256
#define KINETO_ROW_NAME_MAX  96

struct kineto_device {
	int64_t id;
	uint32_t row; /* gputrace device, 0 until used */
	bool named;   /* by addDeviceInfo */
	char name[KINETO_ROW_NAME_MAX];
};

struct kineto_resource {
	int32_t device, id;
	int32_t order;
	uint32_t track; /* 0 until used */
	bool named;
	char name[KINETO_ROW_NAME_MAX];
};

/* The event being described: added, then named, linked, annotated. */
struct kineto_last {
	bool have;   /* an event was added */
	bool skip;   /* ...but is not recorded (kind off, or refused) */
	int type;    /* latest numbering */
	int64_t start_utc, end_utc;
	uint64_t start_ns; /* start_utc on gputrace's clock */
	double rate;       /* trace ns per UTC ns there (utc__to_clock) */
	int32_t device, resource; /* or process, thread */
	uint32_t name;
	int flow_type; /* KINETO_PLUGIN_PROFILE_EVENT_FLOW_TYPE_*, 0: none */
	uint32_t flow_id;
	bool flow_start;
	uint64_t external; /* "External id": the gputrace call it came from */
	struct gt_arg args[GT_ARGS_MAX];
	unsigned nargs;
};

/* One registered profiler (a plug-in may register several). */
struct kineto_prof {
	struct plugin *p;
	struct KinetoPlugin_ProfilerInterface ops; /* copied; absent calls NULL */
	bool rev1;
	KinetoPlugin_ProfilerHandle *handle;
	char name[KINETO_NAME_MAX + 1];
	bool enabled[KINETO_TYPES];
	_Atomic bool corr_on;        /* push/pop go to it */
	_Atomic unsigned corr_inside; /* push/pop calls under way */
	_Atomic bool failed;          /* a call from a program thread failed */

	/* the builder; everything below under lock */
	pthread_mutex_t lock;
	bool open; /* inside processEvents */
	uint32_t batch; /* processEvents calls: flow ids are the batch's */
	struct KinetoPlugin_TraceBuilder api;
	struct kineto_builder_rev1 api_rev1;
	struct kineto_last last;
	struct kineto_device devices[KINETO_DEVICES_MAX];
	unsigned ndevices;
	struct kineto_resource resources[KINETO_RESOURCES_MAX];
	unsigned nresources;
	uint64_t refused, metadata_dropped, flows_dropped, rows_full;
	bool warned; /* the first refusal has had its line */
};

/* Indexed like plugins[] (host.c). */
extern GT_HIDDEN struct kineto_prof *kineto_profs; /* [PLUGINS_MAX] */

/* ---- the builder (kineto_builder.c) ---- */

/* Fill k's builder tables (once, at registration). */
GT_HIDDEN void kbuilder__init(struct kineto_prof *k);
/* Open for a processEvents call; what to hand the plug-in. */
GT_HIDDEN const void *kbuilder__open(struct kineto_prof *k);
/* processEvents returned: record the last event, refuse further calls. */
GT_HIDDEN void kbuilder__close(struct kineto_prof *k);

/* ---- UTC to the trace clock (utc.c) ---- */

/* Take a (trace clock, CLOCK_REALTIME) pair now. */
GT_HIDDEN void utc__sample(void);
/* on: a batch is converted from now on, through the pairs as they are (other
 * threads' samples are left out until off; a time past the newest still takes
 * a new pair); calls nest. */
GT_HIDDEN void utc__hold(bool on);
/* A UTC time on the trace clock, through the pairs around it; -ERANGE for a
 * time before the clock's zero. rate (may be NULL): trace ns per UTC ns
 * there, 1 where the pairs around differ by no more than their reads' error. */
GT_HIDDEN int utc__to_clock(int64_t utc_ns, uint64_t *clock_ns, double *rate);
/* The widest read of every pair taken since utc__forget, those the newest pair
 * stood in for and gave way to included (a time converted before such a change
 * went through the pair it replaced): two times converted through different pairs
 * may be that much further apart or closer than on the wall clock (each pair is
 * good to half its read). */
GT_HIDDEN uint64_t utc__widest(void);
GT_HIDDEN void utc__forget(void);

/* ---- JSON values (jsoncheck.c) ---- */

enum json_kind {
	JSON_INVALID = 0,
	JSON_INTEGER,   /* -?digits */
	JSON_NUMBER,    /* with a fraction or an exponent */
	JSON_STRING,    /* no escapes: the bytes between the quotes are the string */
	JSON_STRING_ESCAPED,
	JSON_LITERAL,   /* true, false, null */
	JSON_ARRAY,
	JSON_OBJECT,
};

/* What text[0..n) is: exactly one JSON value (RFC 8259, valid UTF-8,
 * nested at most 64 deep), blanks around it allowed; [*start, *start +
 * *len) is the value without them. JSON_INVALID otherwise. */
GT_HIDDEN enum json_kind json__check(const char *text, size_t n, size_t *start, size_t *len);

#endif
