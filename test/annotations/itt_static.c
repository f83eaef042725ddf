// SPDX-License-Identifier: MIT
/* The test programs' static ITT part (itt_static.h). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "itt_static.h"

#define ITT_TEST_DEF(name, ret, params) ret(*itt_##name##_ptr) params;
ITT_TEST_API(ITT_TEST_DEF)
#undef ITT_TEST_DEF

/* The published layouts of __itt_api_info and __itt_global (pack 8). */
struct api_info {
	const char *name;
	void **func_ptr;
	void *init_func;
	void *null_func;
	int group;
};

struct global {
	unsigned char magic[8];
	unsigned long version_major, version_minor, version_build;
	volatile long api_initialized, mutex_initialized, atomic_counter;
	pthread_mutex_t mutex;
	void *lib;
	void *error_handler;
	const char **dll_path_ptr;
	struct api_info *api_list_ptr;
	struct global *next;
	void *thread_list;
	itt_domain *domain_list;
	itt_string_handle *string_list;
	int state;
	void *counter_list;
	unsigned int ipt_collect_events;
	void *histogram_list;
	void *counter_metadata_list;
};

#define GROUP_STRUCTURE (1 << 12)
#define GROUP_COUNTER   (1 << 8)
#define GROUP_THREAD    (1 << 2)

static struct api_info api_list[] = {
#define ITT_TEST_ROW(name, ret, params)                                                    \
	{ "__itt_" #name, (void **)&itt_##name##_ptr, NULL, NULL, GROUP_STRUCTURE },
	ITT_TEST_API(ITT_TEST_ROW)
#undef ITT_TEST_ROW
	{ NULL, NULL, NULL, NULL, 0 },
};

static struct global global = {
	.magic = { 0xED, 0xAB, 0xAB, 0xEC, 0x0D, 0xEE, 0xDA, 0x30 },
	.version_major = 3,
	.version_minor = 0,
	.version_build = 20250807,
	.mutex = PTHREAD_MUTEX_INITIALIZER,
	.api_list_ptr = api_list,
};

static int protocol;

int itt_test_protocol(void)
{
	return protocol;
}

int itt_test_init(void)
{
	const char *path, *knob;
	void (*api_init)(struct global *, int);

	if (global.api_initialized)
		return protocol > 0;
	pthread_mutex_lock(&global.mutex);
	if (global.api_initialized)
		goto out;
	path = getenv("INTEL_LIBITTNOTIFY64");
	knob = getenv("ITT_TEST_PROTOCOL");
	if (path && *path && (global.lib = dlopen(path, RTLD_LAZY))) {
		api_init = (knob && !strcmp(knob, "1")) ? NULL : dlsym(global.lib, "__itt_api_init");
		if (api_init) {
			protocol = 2;
			api_init(&global, -1);
		} else if (dlsym(global.lib, "__itt_api_version")) {
			protocol = 1;
			for (struct api_info *a = api_list; a->name; a++)
				*a->func_ptr = dlsym(global.lib, a->name);
		}
	}
	global.api_initialized = 1;
out:
	pthread_mutex_unlock(&global.mutex);
	return protocol > 0;
}

/* Before the collector is loaded, handles are the static part's own (and
 * only when a collector is named: otherwise the program gets none). */
itt_domain *itt_domain_create(const char *name)
{
	itt_domain *d;

	if (global.api_initialized)
		return itt_domain_create_ptr ? itt_domain_create_ptr(name) : NULL;
	if (!getenv("INTEL_LIBITTNOTIFY64"))
		return NULL;
	pthread_mutex_lock(&global.mutex);
	for (d = global.domain_list; d && strcmp(d->nameA, name); d = d->next)
		;
	if (!d && (d = calloc(1, sizeof(*d)))) {
		d->flags = 1;
		d->nameA = strdup(name);
		d->next = global.domain_list;
		global.domain_list = d;
	}
	pthread_mutex_unlock(&global.mutex);
	return d;
}

itt_string_handle *itt_string_handle_create(const char *name)
{
	itt_string_handle *h;

	if (global.api_initialized)
		return itt_string_handle_create_ptr ? itt_string_handle_create_ptr(name) : NULL;
	if (!getenv("INTEL_LIBITTNOTIFY64"))
		return NULL;
	pthread_mutex_lock(&global.mutex);
	for (h = global.string_list; h && strcmp(h->strA, name); h = h->next)
		;
	if (!h && (h = calloc(1, sizeof(*h)))) {
		h->strA = strdup(name);
		h->next = global.string_list;
		global.string_list = h;
	}
	pthread_mutex_unlock(&global.mutex);
	return h;
}

unsigned long long itt_get_timestamp(void)
{
	itt_test_init();
	return itt_get_timestamp_ptr ? itt_get_timestamp_ptr() : 0;
}

itt_counter itt_counter_create_typed(const char *name, const char *domain, int type)
{
	itt_test_init();
	return itt_counter_create_typed_ptr ? itt_counter_create_typed_ptr(name, domain, type)
					    : NULL;
}

void itt_counter_set_value(itt_counter c, void *value)
{
	itt_test_init();
	if (c && itt_counter_set_value_ptr)
		itt_counter_set_value_ptr(c, value);
}

void itt_counter_inc_delta(itt_counter c, unsigned long long delta)
{
	itt_test_init();
	if (c && itt_counter_inc_delta_ptr)
		itt_counter_inc_delta_ptr(c, delta);
}
