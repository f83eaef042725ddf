/* SPDX-License-Identifier: MIT */
/*
 * A program's static ITT part, as Intel's libittnotify.a is to real
 * programs, written here from the published protocol (intel/ittapi:
 * include/ittnotify.h, src/ittnotify/ittnotify_static.c): Debian ships
 * none. At the first call it reads INTEL_LIBITTNOTIFY64, dlopen()s that
 * collector and asks which protocol it speaks: __itt_api_init (version 2:
 * the collector fills our table of function pointers) or __itt_api_version
 * (version 1: we look each function up by its exported name). Calls go
 * through the pointers, skipped while a domain's flags is 0, as the
 * header's macros do. Domains and string handles made before the
 * collector is loaded are the static part's own, as Intel's are.
 *
 * ITT_TEST_PROTOCOL=1 in the environment makes this part an old one that
 * only knows version 1 (a test knob, not ITT's).
 */
#ifndef TEST_ITT_STATIC_H
#define TEST_ITT_STATIC_H

typedef struct itt_domain {
	volatile int flags;
	const char *nameA;
	void *nameW;
	int extra1;
	void *extra2;
	struct itt_domain *next;
} itt_domain;

typedef struct itt_string_handle {
	const char *strA;
	void *strW;
	int extra1;
	void *extra2;
	struct itt_string_handle *next;
} itt_string_handle;

typedef struct itt_id {
	unsigned long long d1, d2, d3;
} itt_id;

typedef struct itt_counter_opaque *itt_counter;

static const itt_id itt_null = { 0, 0, 0 };

/* The pointer table: one row per function, named as the collector exports it. */
#define ITT_TEST_API(X)                                                                    \
	X(domain_create, itt_domain *, (const char *name))                                 \
	X(string_handle_create, itt_string_handle *, (const char *name))                   \
	X(task_begin, void, (const itt_domain *d, itt_id id, itt_id parent,                \
			     itt_string_handle *name))                                     \
	X(task_end, void, (const itt_domain *d))                                           \
	X(task_begin_overlapped, void, (const itt_domain *d, itt_id id, itt_id parent,     \
					itt_string_handle *name))                          \
	X(task_end_overlapped, void, (const itt_domain *d, itt_id id))                     \
	X(region_begin, void, (const itt_domain *d, itt_id id, itt_id parent,              \
			       itt_string_handle *name))                                   \
	X(region_end, void, (const itt_domain *d, itt_id id))                              \
	X(frame_begin_v3, void, (const itt_domain *d, itt_id *id))                         \
	X(frame_end_v3, void, (const itt_domain *d, itt_id *id))                           \
	X(frame_submit_v3, void, (const itt_domain *d, itt_id *id, unsigned long long b,   \
				  unsigned long long e))                                   \
	X(get_timestamp, unsigned long long, (void))                                       \
	X(marker, void, (const itt_domain *d, itt_id id, itt_string_handle *name, int scope)) \
	X(counter_create_typed, itt_counter, (const char *name, const char *domain, int type)) \
	X(counter_set_value, void, (itt_counter c, void *value))                           \
	X(counter_inc_delta, void, (itt_counter c, unsigned long long delta))              \
	X(thread_set_name, void, (const char *name))                                       \
	X(pause, void, (void))                                                             \
	X(resume, void, (void))

#define ITT_TEST_DECL(name, ret, params) extern ret(*itt_##name##_ptr) params;
ITT_TEST_API(ITT_TEST_DECL)
#undef ITT_TEST_DECL

/* Loads the collector at most once; 1 when one is attached. */
int itt_test_init(void);
/* What the collector said it speaks: 2, 1, or 0 for none. */
int itt_test_protocol(void);

/* The calls, as the header's macros make them. */
itt_domain *itt_domain_create(const char *name);
itt_string_handle *itt_string_handle_create(const char *name);
#define ITT_CALL_D(name, d, ...)                                                           \
	do {                                                                               \
		itt_test_init();                                                           \
		if ((d) && (d)->flags && itt_##name##_ptr)                                 \
			itt_##name##_ptr(d, __VA_ARGS__);                                  \
	} while (0)
#define itt_task_begin(d, id, parent, n) ITT_CALL_D(task_begin, d, id, parent, n)
#define itt_task_end(d)                                                                    \
	do {                                                                               \
		itt_test_init();                                                           \
		if ((d) && (d)->flags && itt_task_end_ptr)                                 \
			itt_task_end_ptr(d);                                               \
	} while (0)
#define itt_task_begin_overlapped(d, id, parent, n)                                        \
	ITT_CALL_D(task_begin_overlapped, d, id, parent, n)
#define itt_task_end_overlapped(d, id) ITT_CALL_D(task_end_overlapped, d, id)
#define itt_region_begin(d, id, parent, n) ITT_CALL_D(region_begin, d, id, parent, n)
#define itt_region_end(d, id) ITT_CALL_D(region_end, d, id)
#define itt_frame_begin_v3(d, id) ITT_CALL_D(frame_begin_v3, d, id)
#define itt_frame_end_v3(d, id) ITT_CALL_D(frame_end_v3, d, id)
#define itt_frame_submit_v3(d, id, b, e) ITT_CALL_D(frame_submit_v3, d, id, b, e)
#define itt_marker(d, id, n, scope) ITT_CALL_D(marker, d, id, n, scope)
/* Collection control: no domain, called when the collector gave one. */
#define ITT_CALL_VOID(name)                                                                \
	do {                                                                               \
		itt_test_init();                                                           \
		if (itt_##name##_ptr)                                                      \
			itt_##name##_ptr();                                                \
	} while (0)
#define itt_pause()  ITT_CALL_VOID(pause)
#define itt_resume() ITT_CALL_VOID(resume)
unsigned long long itt_get_timestamp(void);
itt_counter itt_counter_create_typed(const char *name, const char *domain, int type);
void itt_counter_set_value(itt_counter c, void *value);
void itt_counter_inc_delta(itt_counter c, unsigned long long delta);

#define ITT_TIMESTAMP_NONE ((unsigned long long)-1LL) /* __itt_timestamp_none */
#define ITT_SCOPE_GLOBAL 1
#define ITT_SCOPE_TRACK  3
#define ITT_META_U64     1
#define ITT_META_DOUBLE  8

#endif
