/* SPDX-License-Identifier: MIT */
/*
 * The ITT collector's view of Intel's Instrumentation and Tracing
 * Technology API, from its published protocol (intel/ittapi,
 * include/ittnotify.h and src/ittnotify/ittnotify_config.h): the handle
 * layouts a program's static part hands us, and the global table through
 * which a version-2 collector fills the program's function pointers.
 * Declared here, not included: Debian ships no ITT headers.
 */
#ifndef GPUTRACE_ITT_H
#define GPUTRACE_ITT_H

#include <pthread.h>
#include <stdint.h>

/* __itt_domain: the header's call macros skip a call while flags is 0. */
struct itt_domain {
	volatile int flags;
	const char *nameA;
	void *nameW;
	int extra1;
	void *extra2;
	struct itt_domain *next;
};

struct itt_string_handle {
	const char *strA;
	void *strW;
	int extra1;
	void *extra2;
	struct itt_string_handle *next;
};

struct itt_id {
	unsigned long long d1, d2, d3;
};

enum itt_scope {
	ITT_SCOPE_UNKNOWN = 0,
	ITT_SCOPE_GLOBAL,
	ITT_SCOPE_TRACK_GROUP,
	ITT_SCOPE_TRACK,
	ITT_SCOPE_TASK,
	ITT_SCOPE_MARKER,
};

enum itt_metadata_type {
	ITT_META_UNKNOWN = 0,
	ITT_META_U64,
	ITT_META_S64,
	ITT_META_U32,
	ITT_META_S32,
	ITT_META_U16,
	ITT_META_S16,
	ITT_META_FLOAT,
	ITT_META_DOUBLE,
};

/* __itt_api_info: one function pointer of the static part. Builds after
 * 20101001 added null_func. */
struct itt_api_info {
	const char *name; /* "__itt_task_begin": the exported name, version 1 */
	void **func_ptr;
	void *init_func;
	void *null_func;
	int group;
};

#define ITT_API_INFO_NULL_FUNC_BUILD 20101001ul

/* __itt_global (#pragma pack(8)), up to the fields a collector reads. */
struct itt_global {
	unsigned char magic[8];
	unsigned long version_major, version_minor, version_build;
	volatile long api_initialized, mutex_initialized, atomic_counter;
	pthread_mutex_t mutex;
	void *lib;
	void *error_handler;
	const char **dll_path_ptr;
	struct itt_api_info *api_list_ptr;
	struct itt_global *next;
};

#endif
