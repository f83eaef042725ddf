// SPDX-License-Identifier: MIT
/*
 * Broken plug-ins, one per build variant (-DBROKEN_<variant>):
 *   bad_abi       a table from a future ABI (bigger, newer version)
 *   no_symbol     a shared object without gputrace_plugin_register
 *   create_fails  create() returns -ENODEV
 *   start_fails   start() returns -EIO
 *   flush_fails   flush() returns -EPROTO
 *   final_hangs   flush(final) never returns (a vendor library stuck at exit)
 *   flush_hangs   its second flush(0) never returns (stuck in a drain cycle);
 *                 a thread of its own then hands over 5 instants
 *                 "after_hang" once gputrace gave up on it (its builder
 *                 refuses calls), at least 1.5 s after the hang began
 *   flush_calls_ze   each flush(0) and stop calls zeDriverGet, as a Level
 *                 Zero plug-in reads its device (our work, not the program's)
 *   stop_hangs    stop() never returns (stuck as a capture window closes)
 *   flush_waits      its second flush(0) waits for a thread of its own, which
 *                 hands over 30 instants "from_worker", one every 70 ms
 *                 (2.1 s: no call is stuck that hands records over)
 *   flush_streams    its second flush(0) never returns, while a thread of its
 *                 own hands over an instant "streamed" every 10 ms, for good
 *   destroy_hangs    flush(final) hands over one instant "final_record", then
 *                 destroy() never returns
 *   start_hangs      start() never returns (at process start: in the constructor)
 *   flush_crashes    its second flush(0) raises SIGSEGV (a vendor library's
 *                 fault in a drain cycle)
 *   stop_crashes  stop() raises SIGSEGV (as a capture window closes)
 *   bad_name      query() names it "tiny npu\x1b[31m" (a space, an escape)
 * Each call into it appends "<variant> <call>" to $BROKEN_PLUGIN_LOG, so the
 * tests see that gputrace never calls a plug-in again after it failed.
 */
#ifdef BROKEN_flush_calls_ze
#define _GNU_SOURCE /* RTLD_DEFAULT */
#endif
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <gputrace/gputrace_plugin.h>

#ifndef BROKEN_VARIANT
#error "build with -DBROKEN_VARIANT=\"name\""
#endif

#ifdef BROKEN_no_symbol
/* Exports something, just not the registration function. */
GPUTRACE_PLUGIN_VISIBLE int not_a_gputrace_plugin(void);
GPUTRACE_PLUGIN_VISIBLE int not_a_gputrace_plugin(void)
{
	return 0;
}
#else
static void note(const char *call)
{
	const char *path = getenv("BROKEN_PLUGIN_LOG");
	FILE *f = path ? fopen(path, "a") : NULL;

	if (!f)
		return;
	fprintf(f, "%s %s\n", BROKEN_VARIANT, call);
	fclose(f);
}

static int broken_query(struct gputrace_plugin_info *info)
{
	note("query");
#ifdef BROKEN_bad_name
	info->name = "tiny npu\x1b[31m";
#else
	info->name = BROKEN_VARIANT;
#endif
#ifdef BROKEN_no_kinds
	info->kinds = 0; /* a vendor's slip */
#else
	info->kinds = GPUTRACE_KIND_KERNEL;
#endif
	return 0;
}

#if defined(BROKEN_flush_hangs) || defined(BROKEN_flush_waits) || \
	defined(BROKEN_flush_streams) || defined(BROKEN_destroy_hangs)
static const struct gputrace_builder_api *api;
static gputrace_builder *builder;

/* One instant of the plug-in's own thread, on that thread's row. */
static void hand_over(const char *name)
{
	struct gputrace_event ev;

	GPUTRACE_INIT(ev);
	ev.kind = GPUTRACE_KIND_KERNEL;
	ev.row = GPUTRACE_ROW_HOST;
	ev.name = name;
	ev.start_ns = api->now_ns();
	api->instant(builder, &ev);
}
#endif

#ifdef BROKEN_flush_hangs
static pthread_mutex_t hang_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hang_cond = PTHREAD_COND_INITIALIZER;
static int hanging;

/* Records of the plug-in's own thread, made after gputrace gave up on it:
 * a queue on no device is refused -EINVAL while the builder is open (and
 * adds nothing), -ECANCELED once it is closed; however slow the machine. */
static void *after_hang(void *arg)
{
	struct timespec later = { 1, 500000000L }, step = { 0, 20000000L };
	int i;

	(void)arg;
	pthread_mutex_lock(&hang_lock);
	while (!hanging)
		pthread_cond_wait(&hang_cond, &hang_lock);
	pthread_mutex_unlock(&hang_lock);
	nanosleep(&later, NULL);
	for (i = 0; i < 1500 && api->queue(builder, 9999, "probe", 0) != -ECANCELED; i++)
		nanosleep(&step, NULL);
	for (i = 0; i < 5; i++)
		hand_over("after_hang");
	return NULL;
}
#endif

#ifdef BROKEN_flush_calls_ze
/* zeDriverGet as the program's loader has it: through gputrace's wrapper */
static void call_ze(void)
{
	void *sym = dlsym(RTLD_DEFAULT, "zeDriverGet");
	int (*driver_get)(unsigned *, void **);
	unsigned n = 0;

	memcpy(&driver_get, &sym, sizeof(sym)); /* (ISO C has no cast for it) */
	if (sym)
		driver_get(&n, NULL);
}
#endif

#ifdef BROKEN_flush_streams
static void *streamer(void *arg)
{
	struct timespec step = { 0, 10000000L };

	(void)arg;
	for (;;) {
		nanosleep(&step, NULL);
		hand_over("streamed");
	}
	return NULL;
}
#endif

#ifdef BROKEN_flush_waits
static void *worker(void *arg)
{
	struct timespec step = { 0, 70000000L };

	(void)arg;
	for (int i = 0; i < 30; i++) {
		nanosleep(&step, NULL);
		hand_over("from_worker");
	}
	return NULL;
}
#endif

static int broken_create(const struct gputrace_plugin_setup *setup, void **state)
{
	note("create");
	*state = setup->builder;
#if defined(BROKEN_flush_waits) || defined(BROKEN_destroy_hangs)
	api = setup->api;
	builder = setup->builder;
#endif
#if defined(BROKEN_flush_streams) || defined(BROKEN_flush_hangs)
	{
		pthread_t thread;

		api = setup->api;
		builder = setup->builder;
#ifdef BROKEN_flush_streams
		pthread_create(&thread, NULL, streamer, NULL);
#else
		pthread_create(&thread, NULL, after_hang, NULL);
#endif
		pthread_detach(thread);
	}
#endif
#ifdef BROKEN_create_fails
	return -ENODEV;
#else
	return 0;
#endif
}

static int broken_start(void *state)
{
	note("start");
	(void)state;
#ifdef BROKEN_start_hangs
	for (;;)
		pause();
#endif
#ifdef BROKEN_start_fails
	return -EIO;
#else
	return 0;
#endif
}

static int broken_stop(void *state)
{
	note("stop");
	(void)state;
#ifdef BROKEN_flush_calls_ze
	call_ze();
#endif
#ifdef BROKEN_stop_hangs
	for (;;)
		pause();
#endif
#ifdef BROKEN_stop_crashes
	raise(SIGSEGV);
#endif
	return 0;
}

static int broken_flush(void *state, int final)
{
	note(final ? "flush final" : "flush");
	(void)state;
#ifdef BROKEN_flush_fails
	return -EPROTO;
#elif defined(BROKEN_final_hangs)
	while (final)
		pause();
	return 0;
#elif defined(BROKEN_flush_calls_ze)
	if (!final)
		call_ze();
	return 0;
#elif defined(BROKEN_flush_waits)
	static int flushes;

	if (!final && ++flushes == 2) {
		pthread_t thread;

		pthread_create(&thread, NULL, worker, NULL);
		pthread_join(thread, NULL);
	}
	return 0;
#elif defined(BROKEN_flush_streams)
	static int flushes;

	if (!final && ++flushes == 2)
		for (;;)
			pause();
	return 0;
#elif defined(BROKEN_destroy_hangs)
	if (final)
		hand_over("final_record");
	return 0;
#elif defined(BROKEN_flush_crashes)
	static int flushes;

	/* raised, as host_app's crash is: a sanitizer's runtime reports a fault
	 * of its own and exits rather than die by the signal */
	if (!final && ++flushes == 2)
		raise(SIGSEGV);
	return 0;
#elif defined(BROKEN_flush_hangs)
	static int flushes;

	if (!final && ++flushes == 2) {
		pthread_mutex_lock(&hang_lock);
		hanging = 1;
		pthread_cond_signal(&hang_cond);
		pthread_mutex_unlock(&hang_lock);
		for (;;)
			pause();
	}
	return 0;
#else
	return 0;
#endif
}

static void broken_destroy(void *state)
{
	note("destroy");
	(void)state;
#ifdef BROKEN_destroy_hangs
	for (;;)
		pause();
#endif
}

#ifdef BROKEN_bad_abi
/* What a plug-in built against a future header looks like: a bigger table
 * of a newer version. gputrace must refuse it without overrunning its own. */
struct future_plugin {
	struct gputrace_plugin v1;
	void (*later[8])(void);
};
static const struct future_plugin future = {
	{ sizeof(struct future_plugin), GPUTRACE_PLUGIN_ABI_VERSION + 1, broken_query,
	  broken_create, broken_start, broken_stop, broken_flush, broken_destroy },
	{ 0 },
};
GPUTRACE_PLUGIN_VISIBLE int gputrace_plugin_register(struct gputrace_plugin *table)
{
	note("register");
	return gputrace_plugin_fill(table, &future.v1);
}
#else
static const struct gputrace_plugin broken = {
	GPUTRACE_PLUGIN_TABLE_HEAD, broken_query, broken_create, broken_start,
	broken_stop,                broken_flush, broken_destroy,
};
GPUTRACE_PLUGIN_VISIBLE int gputrace_plugin_register(struct gputrace_plugin *table)
{
	note("register");
	return gputrace_plugin_fill(table, &broken);
}
#endif
#endif /* BROKEN_no_symbol */
