// SPDX-License-Identifier: MIT
/*
 * Unit tests of the plug-in loader and trace builder (backends/plugins/),
 * linked against recording stand-ins of the core (gt_emit, strings, rows,
 * logging), so every event a plug-in produces can be checked field by
 * field: tracks, correlation namespaces, categories, typed args, and the
 * refusals of bad input. Loads the real plug-ins built in $(BUILD)/test/plugins.
 */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/plugins/gputrace_plugin.h"
#include "backends/plugins/internal.h"
#include "inject/config.h"
#include "inject/clock.h"
#include "inject/event.h"

/* ---- stand-ins of the core ---- */

struct gt_config gt_cfg;
GT_TLS int gt_in_tracer;
GT_TLS uintptr_t gt_guard_sp;
bool gt_guard_stale(uintptr_t sp)
{
	return false;
}

#define REC_MAX 8192
struct rec {
	struct gt_event ev;
	struct gt_arg args[GT_ARGS_MAX];
	unsigned nargs;
	int guarded; /* gt_in_tracer when emitted */
};
static struct rec recs[REC_MAX];
static unsigned nrecs;
static pthread_mutex_t recs_lock = PTHREAD_MUTEX_INITIALIZER;

int gt_emit(const struct gt_event *ev, const struct gt_arg *args, unsigned nargs)
{
	pthread_mutex_lock(&recs_lock);
	ck_assert_uint_lt(nrecs, REC_MAX);
	ck_assert_uint_le(nargs, GT_ARGS_MAX);
	recs[nrecs].ev = *ev;
	memcpy(recs[nrecs].args, args, nargs * sizeof(*args));
	recs[nrecs].nargs = nargs;
	recs[nrecs].guarded = gt_in_tracer;
	nrecs++;
	pthread_mutex_unlock(&recs_lock);
	return 0;
}

uint64_t gt_corr_next(void)
{
	return 1;
}

void gt_lost_add(uint32_t reason, uint64_t n)
{
}

#define STR_MAX 16384
static char *strs[STR_MAX];
static size_t nstrs;
static pthread_mutex_t strs_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *const static_strs[] = {
#define STATIC_STR(id, s) [GT_S_##id] = s,
	GT_STATIC_STRINGS(STATIC_STR)
#undef STATIC_STR
};

uint32_t gt_str_intern_n(const char *s, size_t len)
{
	uint32_t id;

	pthread_mutex_lock(&strs_lock);
	if (!nstrs) {
		for (nstrs = 1; nstrs < GT_S__COUNT; nstrs++)
			strs[nstrs] = strdup(static_strs[nstrs]);
	}
	for (id = 1; id < nstrs; id++)
		if (strlen(strs[id]) == len && !memcmp(strs[id], s, len))
			goto out;
	ck_assert_uint_lt(nstrs, STR_MAX);
	strs[nstrs] = strndup(s, len);
	id = (uint32_t)nstrs++;
out:
	pthread_mutex_unlock(&strs_lock);
	return id;
}

uint32_t gt_str_intern(const char *s)
{
	return gt_str_intern_n(s, strlen(s));
}

const char *gt_str_get(uint32_t id, size_t *len)
{
	const char *s;

	pthread_mutex_lock(&strs_lock);
	if (id < GT_S__COUNT)
		s = static_strs[id];
	else
		s = id < nstrs ? strs[id] : NULL;
	pthread_mutex_unlock(&strs_lock);
	if (len)
		*len = s ? strlen(s) : 0;
	return s;
}

static const char *str(uint32_t id)
{
	const char *s = gt_str_get(id, NULL);

	ck_assert_msg(s, "string id %u unknown", id);
	return s;
}

/* Devices are 1.., their own tracks 500 + device; queues are tracks 1000..
 * When full, both answer 0, as the registry does. */
static char *devices[GT_DEVICES_MAX];
static unsigned ndevices;
static struct {
	uint32_t device;
	char *name;
	int sort;
} queues[512];
static unsigned nqueues, queues_room = 512;

uint32_t gt_device_row(const char *name)
{
	for (unsigned i = 0; i < ndevices; i++)
		if (!strcmp(devices[i], name))
			return i + 1;
	if (ndevices == GT_DEVICES_MAX)
		return 0;
	devices[ndevices] = strdup(name);
	return ++ndevices;
}

uint32_t gt_queue_row(uint32_t device, const char *name, int sort)
{
	for (unsigned i = 0; i < nqueues; i++)
		if (queues[i].device == device && !strcmp(queues[i].name, name))
			return 1000 + i;
	if (nqueues == queues_room)
		return 0;
	queues[nqueues].device = device;
	queues[nqueues].name = strdup(name);
	queues[nqueues].sort = sort;
	return 1000 + nqueues++;
}

uint32_t gt_device_track(uint32_t device)
{
	return 500 + device;
}

void gt_device_rename(uint32_t device, const char *name)
{
	ck_assert_uint_ge(device, 1);
	ck_assert_uint_le(device, ndevices);
	free(devices[device - 1]);
	devices[device - 1] = strdup(name);
}

void gt_queue_rename(uint32_t track, const char *name, int sort)
{
	ck_assert_uint_ge(track, 1000);
	ck_assert_uint_lt(track, 1000 + nqueues);
	free(queues[track - 1000].name);
	queues[track - 1000].name = strdup(name);
	queues[track - 1000].sort = sort;
}

void gt_emit_wait_room(unsigned timeout_ms)
{
}

_Atomic int gt_phase = GT_PHASE_RUNNING;

/* The host asks for the drain cycle once a plug-in is loaded: none here. */
void gt_start_writer(void)
{
}

void gt_start_writer_paused(void)
{
}

bool gt_backend_enabled(unsigned enabled_by)
{
	return true;
}

/* How long a thread made by lifecycle__spawn takes to start running (a loaded
 * machine's, a sanitizer's): 0 here, but in the test of that. */
static unsigned spawn_delay_ms;

static void *start_late(void *main_fn)
{
	usleep(spawn_delay_ms * 1000);
	return ((void *(*)(void *))main_fn)(NULL);
}

/* The Kineto cycle thread, host.c's caller: a plain detached one (no fork
 * here to wait). */
int lifecycle__spawn(pthread_t *thread, void *(*main_fn)(void *))
{
	pthread_attr_t attr;
	int err;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(thread, &attr, start_late, (void *)main_fn);
	pthread_attr_destroy(&attr);
	return -err;
}

void lifecycle__thread_up(void)
{
}

bool lifecycle__finishing_here(void)
{
	return false;
}

bool lifecycle__crashed(int tid)
{
	(void)tid;
	return false;
}

const char *_Atomic gt_end_reason; /* the line of a call that crashed names it */

bool lifecycle__on_drain_thread(void)
{
	return false;
}

void lifecycle__finish_for(bool on)
{
}

#define LOG_MAX 64
static char *log_lines[LOG_MAX];
static int log_levels[LOG_MAX];
static unsigned nlog;
static int log_threshold = GT_LOG_WARN; /* what a default run shows */

void gt_log(int level, const char *fmt, ...)
{
	va_list ap;
	char *line;

	if (level > log_threshold)
		return;
	va_start(ap, fmt);
	ck_assert_int_ge(vasprintf(&line, fmt, ap), 0);
	va_end(ap);
	ck_assert_ptr_null(strchr(line, '\n'));
	if (nlog < LOG_MAX) {
		log_levels[nlog] = level;
		log_lines[nlog++] = line;
	}
}

/* ---- helpers ---- */

extern const struct gt_backend *const __start_gt_backends[];
extern const struct gt_backend *const __stop_gt_backends[];

static const struct gt_backend *backend(void)
{
	for (const struct gt_backend *const *b = __start_gt_backends; b < __stop_gt_backends; b++)
		if (!strcmp((*b)->name, "plugins"))
			return *b;
	ck_abort_msg("no backend named plugins registered");
	return NULL;
}

static char built[PATH_MAX]; /* $(BUILD)/test/plugins */

static void find_built(void)
{
	char exe[PATH_MAX - 16];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	ck_assert_int_gt(n, 0);
	exe[n] = '\0';
	*strrchr(exe, '/') = '\0';
	snprintf(built, sizeof(built), "%s/plugins", exe);
}

static char tmpdir[PATH_MAX];

/* A fresh plug-in directory with links to built plug-ins ("good/libsimaccel.so"). */
static const char *plugin_dir(const char *const *files)
{
	char link[PATH_MAX * 2], target[PATH_MAX * 2];

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/gt_check_plugins.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	for (; *files; files++) {
		snprintf(target, sizeof(target), "%s/%s", built, *files);
		snprintf(link, sizeof(link), "%s/%s", tmpdir, strrchr(*files, '/') + 1);
		ck_assert_msg(access(target, R_OK) == 0, "%s not built (run make)", target);
		ck_assert_int_eq(symlink(target, link), 0);
	}
	return tmpdir;
}

static void start_plugins(const char *path, unsigned kinds)
{
	gt_cfg.plugin_path = path;
	gt_cfg.kinds = kinds;
	ck_assert_int_eq(backend()->init(), 0);
}

/* as the exit has it: stop, the last drain's flush, and once the file is
 * written, release (destroy) */
static void finish_plugins(void)
{
	backend()->stop();
	backend()->flush(true);
	backend()->release();
}

static unsigned log_count(const char *a, const char *b)
{
	unsigned n = 0;

	for (unsigned i = 0; i < nlog; i++)
		n += strstr(log_lines[i], a) && (!b || strstr(log_lines[i], b));
	return n;
}

static void dump_log(void)
{
	for (unsigned i = 0; i < nlog; i++)
		fprintf(stderr, "log[%u] level %d: %s\n", i, log_levels[i], log_lines[i]);
}

/* The log line i is "plug-in <tmpdir><rest>". */
static void expect_plugin_line(unsigned i, const char *rest)
{
	char want[PATH_MAX * 2];

	ck_assert_uint_lt(i, nlog);
	snprintf(want, sizeof(want), "plug-in %s%s", tmpdir, rest);
	ck_assert_str_eq(log_lines[i], want);
}

static unsigned errors_logged(void)
{
	unsigned n = 0;

	for (unsigned i = 0; i < nlog; i++)
		n += log_levels[i] <= GT_LOG_WARN;
	return n;
}

static char *read_file(const char *path)
{
	static char buf[4096];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static const struct rec *find(uint8_t type, const char *name, unsigned nth)
{
	for (unsigned i = 0; i < nrecs; i++)
		if (recs[i].ev.type == type && !strcmp(str(recs[i].ev.name), name) && !nth--)
			return &recs[i];
	return NULL;
}

static unsigned count(uint8_t type)
{
	unsigned n = 0;

	for (unsigned i = 0; i < nrecs; i++)
		n += recs[i].ev.type == type;
	return n;
}

static const struct gt_arg *arg(const struct rec *r, const char *key)
{
	for (unsigned i = 0; i < r->nargs; i++)
		if (!strcmp(str(r->args[i].key), key))
			return &r->args[i];
	ck_abort_msg("no arg %s", key);
	return NULL;
}

static uint64_t plugin_corr(unsigned index, uint64_t id)
{
	return ((uint64_t)GT_CORR_NS_PLUGIN(index) << GT_CORR_NS_SHIFT) | id;
}

/* ---- the example plug-in, end to end through the builder ---- */

START_TEST(simaccel_events)
{
	const char *files[] = { "good/libsimaccel.so", NULL };
	char kinds_file[PATH_MAX + 64], config[PATH_MAX + 128];
	const struct rec *host, *dev, *r;
	uint32_t compute, copy, dev_track;

	find_built();
	snprintf(kinds_file, sizeof(kinds_file), "%s/kinds", plugin_dir(files));
	snprintf(config, sizeof(config), "simaccel:kernels=2,kinds_file=%s", kinds_file);
	setenv("GPUTRACE_PLUGIN_CONFIG", config, 1);
	start_plugins(tmpdir, GT_KIND_ALL);
	backend()->flush(false);
	finish_plugins();
	if (errors_logged())
		dump_log();
	ck_assert_uint_eq(errors_logged(), 0);

	/* create got the configured kinds it supports, and its config text */
	ck_assert_str_eq(read_file(kinds_file), "runtime,kernel,memcpy,annotation,counter\n");

	/* rows: one device, two queues in order */
	ck_assert_uint_eq(ndevices, 1);
	ck_assert_str_eq(devices[0], "SimAccel 0");
	ck_assert_uint_eq(nqueues, 2);
	ck_assert_str_eq(queues[0].name, "compute");
	ck_assert_int_eq(queues[0].sort, 0);
	ck_assert_str_eq(queues[1].name, "copy");
	ck_assert_int_eq(queues[1].sort, 1);
	compute = 1000, copy = 1001, dev_track = 501;

	ck_assert_uint_eq(count(GT_EV_HOST_SPAN), 4);
	ck_assert_uint_eq(count(GT_EV_DEVICE_SPAN), 4);
	ck_assert_uint_eq(count(GT_EV_INSTANT), 1);
	ck_assert_uint_eq(count(GT_EV_COUNTER), 4);
	ck_assert_uint_eq(nrecs, 13);

	for (unsigned i = 0; i < 2; i++) {
		char name[32];

		snprintf(name, sizeof(name), "sim_kernel_%u", i);
		host = find(GT_EV_HOST_SPAN, "simLaunchKernel", i);
		dev = find(GT_EV_DEVICE_SPAN, name, 0);
		ck_assert_ptr_nonnull(host);
		ck_assert_ptr_nonnull(dev);
		ck_assert_str_eq(str(host->ev.cat), "simaccel_runtime");
		ck_assert_uint_eq(host->ev.track, (uint32_t)getpid());
		ck_assert_uint_eq(host->ev.flags & GT_EVF_LAUNCH, GT_EVF_LAUNCH);
		ck_assert_uint_eq(host->ev.corr, plugin_corr(0, 1 + i));
		ck_assert_uint_eq(host->ev.end_ns - host->ev.start_ns, 20000);
		ck_assert_str_eq(str(arg(host, "kernel")->v.u), name);
		ck_assert_uint_eq(arg(host, "kernel")->type, GT_ARG_STR);

		ck_assert_str_eq(str(dev->ev.cat), "kernel");
		ck_assert_uint_eq(dev->ev.track, compute);
		ck_assert_uint_eq(dev->ev.corr, plugin_corr(0, 1 + i));
		ck_assert_uint_eq(dev->ev.corr2, 0);
		ck_assert_uint_eq(dev->ev.start_ns - host->ev.start_ns, 50000);
		ck_assert_uint_eq(dev->ev.end_ns - dev->ev.start_ns, (100 + 10 * i) * 1000);
		ck_assert_uint_eq(dev->nargs, 3);
		ck_assert_uint_eq(arg(dev, "grid")->type, GT_ARG_U64);
		ck_assert_uint_eq(arg(dev, "grid")->v.u, 64 * (i + 1));
		ck_assert_uint_eq(arg(dev, "block")->v.u, 256);
		ck_assert_uint_eq(arg(dev, "stream")->type, GT_ARG_HEX);
		ck_assert_uint_eq(arg(dev, "stream")->v.u, 0xc0ffee);

		host = find(GT_EV_HOST_SPAN, "simMemcpyAsync", i);
		dev = find(GT_EV_DEVICE_SPAN, "Memcpy HtoD", i);
		ck_assert_ptr_nonnull(host);
		ck_assert_ptr_nonnull(dev);
		ck_assert_uint_eq(host->ev.corr, plugin_corr(0, 101 + i));
		ck_assert_uint_eq(host->nargs, 0);
		ck_assert_uint_eq(dev->ev.corr, plugin_corr(0, 101 + i));
		ck_assert_uint_eq(dev->ev.track, copy);
		ck_assert_str_eq(str(dev->ev.cat), "gpu_memcpy");
		ck_assert_str_eq(str(arg(dev, "kind")->v.u), "HtoD");
		ck_assert_uint_eq(arg(dev, "bytes")->v.u, 4096 * (i + 1));

		r = find(GT_EV_COUNTER, "sim_memory", i);
		ck_assert_ptr_nonnull(r);
		ck_assert_uint_eq(r->ev.track, dev_track);
		ck_assert_uint_eq(r->ev.start_ns, r->ev.end_ns);
		ck_assert_uint_eq(r->nargs, 2);
		ck_assert_uint_eq(arg(r, "used_bytes")->v.u, (i + 1) << 20);
		ck_assert_uint_eq(arg(r, "free_bytes")->v.u, (8u << 20) - ((i + 1) << 20));
		ck_assert_str_eq(str(r->ev.cat), "counter");
		r = find(GT_EV_COUNTER, "sim_utilization", i);
		ck_assert_ptr_nonnull(r);
		ck_assert_uint_eq(r->nargs, 1);
		ck_assert_uint_eq(arg(r, "percent")->type, GT_ARG_F64);
		ck_assert_double_eq(arg(r, "percent")->v.f, 12.5 * (i + 1));
	}
	r = find(GT_EV_INSTANT, "sim_checkpoint", 0);
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(r->ev.track, compute);
	ck_assert_str_eq(str(r->ev.cat), "user_annotation");
	ck_assert_uint_eq(r->ev.flags, GT_EVF_DEVICE);
	/* counters come from flush, on our (guarded) thread, 2 there: the
	 * drain waits for it, no wait for room; spans from the plug-in's own
	 * thread, which is not inside gputrace */
	ck_assert_int_eq(find(GT_EV_COUNTER, "sim_memory", 0)->guarded, 2);
	ck_assert_int_eq(find(GT_EV_HOST_SPAN, "simLaunchKernel", 0)->guarded, 0);
}
END_TEST

START_TEST(kinds_filtered)
{
	const char *files[] = { "good/libsimaccel.so", NULL };
	char kinds_file[PATH_MAX + 64], config[PATH_MAX + 128];

	find_built();
	snprintf(kinds_file, sizeof(kinds_file), "%s/kinds", plugin_dir(files));
	/* all_kinds: the plug-in ignores what it was given; the builder filters */
	snprintf(config, sizeof(config), "simaccel:kernels=3,all_kinds=1,kinds_file=%s",
		 kinds_file);
	setenv("GPUTRACE_PLUGIN_CONFIG", config, 1);
	start_plugins(tmpdir, GT_KIND(KERNEL) | GT_KIND(MEMCPY) | GT_KIND(SYNC));
	finish_plugins();
	ck_assert_str_eq(read_file(kinds_file), "kernel,memcpy\n");
	ck_assert_uint_eq(count(GT_EV_DEVICE_SPAN), 6);
	ck_assert_uint_eq(nrecs, 6);
}
END_TEST

START_TEST(no_kind_enabled)
{
	const char *files[] = { "capture/capture.so", NULL };

	find_built();
	log_threshold = GT_LOG_INFO;
	start_plugins(plugin_dir(files), GT_KIND(MEMSET));
	finish_plugins();
	ck_assert_uint_eq(log_count("capture.so (capture)", "none of its activity kinds"), 1);
	ck_assert_uint_eq(nlog, 1);
}
END_TEST

/* ---- broken plug-ins ---- */

static char broken_log[PATH_MAX + 32];

static void start_broken(const char *const *files)
{
	find_built();
	snprintf(broken_log, sizeof(broken_log), "%s/calls", plugin_dir(files));
	setenv("BROKEN_PLUGIN_LOG", broken_log, 1);
	start_plugins(tmpdir, GT_KIND_ALL);
}

static const char *calls(void)
{
	const char *s = read_file(broken_log);

	return s ? s : "";
}

START_TEST(broken_abi)
{
	const char *files[] = { "broken/bad_abi.so", NULL };

	start_broken(files);
	finish_plugins();
	ck_assert_uint_eq(nlog, 1);
	expect_plugin_line(0, "/bad_abi.so: built for plug-in ABI version 2, this gputrace supports "
			 "1 to 1: rebuild it against this gputrace's gputrace_plugin.h; skipped");
	ck_assert_str_eq(calls(), "bad_abi register\n");
}
END_TEST

START_TEST(broken_no_symbol)
{
	const char *files[] = { "broken/no_symbol.so", NULL };

	start_broken(files);
	finish_plugins();
	ck_assert_uint_eq(nlog, 1);
	expect_plugin_line(0, "/no_symbol.so: not a gputrace plug-in: it lacks the symbol "
			 "gputrace_plugin_register (or Kineto's KinetoPlugin_register); skipped");
}
END_TEST

START_TEST(broken_garbage)
{
	const char *files[] = { NULL };
	char path[PATH_MAX + 32], want[PATH_MAX * 3];
	FILE *f;

	find_built();
	snprintf(path, sizeof(path), "%s/garbage.so", plugin_dir(files));
	f = fopen(path, "w");
	fputs("\x7f" "ELF? not at all\n", f);
	fclose(f);
	start_plugins(tmpdir, GT_KIND_ALL);
	finish_plugins();
	ck_assert_uint_eq(nlog, 1);
	/* dlerror() names the file and what is wrong with it */
	snprintf(want, sizeof(want), "plug-in %s: cannot load it: %s: ", path, path);
	ck_assert_str_eq(strstr(log_lines[0], "; skipped"), "; skipped");
	ck_assert_int_eq(strncmp(log_lines[0], want, strlen(want)), 0);
}
END_TEST

START_TEST(broken_create)
{
	const char *files[] = { "broken/create_fails.so", NULL };

	start_broken(files);
	backend()->flush(false);
	finish_plugins();
	ck_assert_uint_eq(nlog, 1);
	expect_plugin_line(0, "/create_fails.so (create_fails): create() failed: -19 (No such device); "
			 "plug-in disabled, tracing goes on");
	ck_assert_str_eq(calls(), "create_fails register\ncreate_fails query\n"
				  "create_fails create\n");
}
END_TEST

START_TEST(broken_start)
{
	const char *files[] = { "broken/start_fails.so", NULL };

	start_broken(files);
	backend()->flush(false);
	finish_plugins();
	ck_assert_uint_eq(nlog, 1);
	expect_plugin_line(0, "/start_fails.so (start_fails): start() failed: -5 "
			      "(Input/output error); plug-in disabled, tracing goes on");
	ck_assert_str_eq(calls(), "start_fails register\nstart_fails query\nstart_fails create\n"
				  "start_fails start\n");
}
END_TEST

START_TEST(broken_flush)
{
	const char *files[] = { "broken/flush_fails.so", NULL };

	start_broken(files);
	backend()->flush(false);
	backend()->flush(false);
	finish_plugins();
	ck_assert_uint_eq(nlog, 1);
	expect_plugin_line(0, "/flush_fails.so (flush_fails): flush() failed: -71 "
			      "(Protocol error); plug-in disabled, tracing goes on");
	ck_assert_str_eq(calls(), "flush_fails register\nflush_fails query\nflush_fails create\n"
				  "flush_fails start\nflush_fails flush\n");
}
END_TEST

/* A caller thread that starts 1.5 s late has not begun the call: its flush,
 * which returns at once, is not taken for one that never returns (it was, once
 * 1 s had gone by with nothing handed over). */
START_TEST(caller_slow_to_start)
{
	const char *files[] = { "broken/flush_fails.so", NULL };

	spawn_delay_ms = 1500;
	start_broken(files);
	backend()->flush(false);
	finish_plugins();
	ck_assert_uint_eq(nlog, 1);
	expect_plugin_line(0, "/flush_fails.so (flush_fails): flush() failed: -71 "
			      "(Protocol error); plug-in disabled, tracing goes on");
}
END_TEST

/* All at once, next to a working plug-in: each costs one line, the good one works. */
START_TEST(broken_all_together)
{
	const char *files[] = { "broken/bad_abi.so",     "broken/no_symbol.so",
				"broken/create_fails.so", "broken/start_fails.so",
				"broken/flush_fails.so",  "good/libsimaccel.so",
				NULL };

	start_broken(files);
	backend()->flush(false);
	finish_plugins();
	if (nlog != 5)
		dump_log();
	ck_assert_uint_eq(nlog, 5);
	ck_assert_uint_eq(log_count("bad_abi.so", NULL), 1);
	ck_assert_uint_eq(log_count("no_symbol.so", NULL), 1);
	ck_assert_uint_eq(log_count("create_fails.so", NULL), 1);
	ck_assert_uint_eq(log_count("start_fails.so", NULL), 1);
	ck_assert_uint_eq(log_count("flush_fails.so", NULL), 1);
	ck_assert_uint_eq(count(GT_EV_DEVICE_SPAN), 6);
	ck_assert_uint_eq(count(GT_EV_COUNTER), 6);
}
END_TEST

START_TEST(missing_directory)
{
	start_plugins("/nonexistent/gt-plugins::", GT_KIND_ALL);
	finish_plugins();
	ck_assert_uint_eq(nlog, 1);
	ck_assert_str_eq(log_lines[0], "GPUTRACE_PLUGIN_PATH: cannot read directory "
				       "/nonexistent/gt-plugins: No such file or directory; "
				       "no plug-ins from it");
}
END_TEST

/* A path entry naming a file loads that file; the same plug-in twice once. */
START_TEST(path_file_entries)
{
	const char *files[] = { "good/libsimaccel.so", NULL };
	char path[PATH_MAX * 4];

	find_built();
	plugin_dir(files);
	snprintf(path, sizeof(path), "%s/libsimaccel.so:%s:%s/good/libsimaccel.so", tmpdir, tmpdir,
		 built);
	setenv("GPUTRACE_PLUGIN_CONFIG", "simaccel:kernels=1", 1);
	start_plugins(path, GT_KIND_ALL);
	finish_plugins();
	ck_assert_uint_eq(nlog, 0);
	ck_assert_uint_eq(count(GT_EV_DEVICE_SPAN), 2);
}
END_TEST

/* ---- the builder, call by call ---- */

static const struct gputrace_builder_api *api;
static gputrace_builder *b;
static void *capture;

static void start_capture(unsigned kinds)
{
	const char *files[] = { "capture/capture.so", NULL };
	char path[PATH_MAX + 32];

	find_built();
	start_plugins(plugin_dir(files), kinds);
	snprintf(path, sizeof(path), "%s/capture/capture.so", built);
	capture = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
	ck_assert_ptr_nonnull(capture);
	api = *(const struct gputrace_builder_api **)dlsym(capture, "capture_api");
	b = *(gputrace_builder **)dlsym(capture, "capture_builder");
	ck_assert_ptr_nonnull(api);
	ck_assert_ptr_nonnull(b);
}

static struct gputrace_event event(uint32_t kind, int32_t row, const char *name)
{
	struct gputrace_event ev;

	GPUTRACE_INIT(ev);
	ev.kind = kind;
	ev.row = row;
	ev.name = name;
	ev.start_ns = gt_clock_ns();
	ev.end_ns = ev.start_ns + 1000;
	return ev;
}

START_TEST(builder_rows)
{
	int32_t d0, d1, q0, q1;

	start_capture(GT_KIND_ALL);
	ck_assert_uint_eq(api->size, sizeof(struct gputrace_builder_api));
	ck_assert_uint_eq(api->abi_version, GPUTRACE_PLUGIN_ABI_VERSION);
	d0 = api->device(b, "NPU 0");
	d1 = api->device(b, "NPU 1");
	ck_assert_int_eq(d0, 1);
	ck_assert_int_eq(d1, 2);
	ck_assert_int_eq(api->device(b, "NPU 0"), d0);
	q0 = api->queue(b, d0, "q0", 0);
	q1 = api->queue(b, d1, "q0", 0);
	ck_assert_int_gt(q0, d1);
	ck_assert_int_ne(q0, q1);
	ck_assert_int_eq(api->queue(b, d0, "q0", 0), q0);
	ck_assert_int_eq(api->queue(b, q0, "q on q", 0), -EINVAL);
	ck_assert_int_eq(api->queue(b, 99, "q", 0), -EINVAL);
	ck_assert_int_eq(api->queue(b, d0, "", 0), -EINVAL);
	ck_assert_int_eq(api->device(b, NULL), -EINVAL);
	ck_assert_uint_eq(ndevices, 2);
	ck_assert_uint_eq(nqueues, 2);
	ck_assert_uint_eq(queues[1].device, 2);
}
END_TEST

/* Row names are cut as event names are, at 4096 bytes and a character whole:
 * a 1 MiB device name went whole into the trace's process_name, thread_name,
 * deviceProperties and trailer (4 MB for one event). */
START_TEST(builder_long_row_names)
{
	size_t n = 1 << 20;
	char *big = malloc(n + 1);
	int32_t d, q;

	ck_assert_ptr_nonnull(big);
	start_capture(GT_KIND_ALL);
	memset(big, 'D', n);
	big[n] = '\0';
	d = api->device(b, big);
	ck_assert_int_eq(d, 1);
	ck_assert_uint_eq(ndevices, 1);
	ck_assert_uint_eq(strlen(devices[0]), 4096);
	ck_assert_int_eq(api->device(b, big), d); /* found again by its cut name */
	memset(big, 'Q', n);
	q = api->queue(b, d, big, 0);
	ck_assert_int_eq(q, 2);
	ck_assert_uint_eq(nqueues, 1);
	ck_assert_uint_eq(strlen(queues[0].name), 4096);
	ck_assert_int_eq(api->queue(b, d, big, 0), q);
	/* "x", then 2-byte characters: the one across byte 4096 is left out whole */
	big[0] = 'x';
	for (size_t i = 1; i + 2 <= n; i += 2)
		memcpy(big + i, "\xc3\xa9", 2);
	ck_assert_int_eq(api->device(b, big), 3);
	ck_assert_uint_eq(strlen(devices[1]), 4095);
	ck_assert_int_eq(memcmp(devices[1], big, 4095), 0);
	ck_assert_int_eq(api->queue(b, d, big, 1), 4);
	ck_assert_uint_eq(strlen(queues[1].name), 4095);
	ck_assert_uint_eq(errors_logged(), 0);
	free(big);
}
END_TEST

/* Past the process's 64 devices, its rows, or the plug-in's 256 rows:
 * -ENOSPC and one line per limit, nothing filed on another row. */
START_TEST(builder_rows_full)
{
	struct gputrace_event ev;
	struct gputrace_counter c;
	struct gputrace_arg v = gputrace_arg_f64("v", 1.0);
	char name[32];
	int32_t d0, q0;

	start_capture(GT_KIND_ALL);
	for (int i = 0; i < 64; i++) {
		snprintf(name, sizeof(name), "Dev%d", i);
		ck_assert_int_eq(api->device(b, name), i + 1);
	}
	ck_assert_int_eq(api->device(b, "Extra A"), -ENOSPC);
	ck_assert_int_eq(api->device(b, "Extra B"), -ENOSPC);
	ck_assert_int_eq(api->device(b, "Extra A"), -ENOSPC);
	ck_assert_int_eq(api->device(b, "Dev0"), 1); /* known ones still found */
	ck_assert_uint_eq(ndevices, 64);
	ck_assert_uint_eq(nlog, 1);
	ck_assert_str_eq(log_lines[0], "plug-in capture: device \"Extra A\" refused (-ENOSPC): "
				       "at most 64 devices (and 4096 rows) per process; said once");
	ck_assert_int_eq(log_levels[0], GT_LOG_ERROR);

	/* nothing lands anywhere through the refused rows */
	ck_assert_int_eq(api->queue(b, -ENOSPC, "qa", 0), -EINVAL);
	ev = event(GPUTRACE_KIND_KERNEL, -ENOSPC, "on_extra_A");
	ck_assert_int_eq(api->span(b, &ev), -EINVAL);
	ck_assert_int_eq(api->instant(b, &ev), -EINVAL);
	GPUTRACE_INIT(c);
	c.row = -ENOSPC;
	c.name = "temp";
	c.values = &v;
	c.nvalues = 1;
	ck_assert_int_eq(api->counter(b, &c), -EINVAL);
	ck_assert_uint_eq(nrecs, 0);
	ck_assert_uint_eq(nlog, 1); /* the row's refusal said why */

	/* the process's rows full: queues refused, said once */
	queues_room = 3;
	d0 = 1;
	q0 = api->queue(b, d0, "q0", 0);
	ck_assert_int_eq(q0, 65);
	ck_assert_int_eq(api->queue(b, d0, "q1", 1), 66);
	ck_assert_int_eq(api->queue(b, 2, "q0", 0), 67);
	ck_assert_int_eq(api->queue(b, 2, "q1", 1), -ENOSPC);
	ck_assert_int_eq(api->queue(b, 3, "q0", 0), -ENOSPC);
	ck_assert_int_eq(api->queue(b, d0, "q0", 0), q0);
	ck_assert_uint_eq(nlog, 2);
	ck_assert_str_eq(log_lines[1], "plug-in capture: queue \"q1\" refused (-ENOSPC): "
				       "at most 4096 rows (devices and queues) per process; said once");
}
END_TEST

/* A plug-in's own 256 rows: the 257th is refused, said once, and makes no
 * row of the process's (an empty row in the trace). */
START_TEST(builder_plugin_rows_full)
{
	char name[32];
	int32_t dev, row = 0;

	start_capture(GT_KIND_ALL);
	dev = api->device(b, "NPU 0");
	for (int i = 1; i < 256; i++) {
		snprintf(name, sizeof(name), "q%d", i);
		row = api->queue(b, dev, name, i);
		ck_assert_int_eq(row, i + 1);
	}
	ck_assert_int_eq(api->queue(b, dev, "q256", 256), -ENOSPC);
	ck_assert_int_eq(api->device(b, "NPU 1"), -ENOSPC);
	ck_assert_int_eq(api->queue(b, dev, "q1", 1), 2);
	ck_assert_int_eq(api->device(b, "NPU 0"), dev);
	ck_assert_uint_eq(ndevices, 1);
	ck_assert_uint_eq(nqueues, 255);
	ck_assert_uint_eq(nlog, 1);
	ck_assert_str_eq(log_lines[0], "plug-in capture: queue \"q256\" refused (-ENOSPC): "
				       "at most 256 rows (devices and queues) per plug-in; said once");
}
END_TEST

/* A malformed event's refusal: its errno, and one line per plug-in saying why
 * (said once: the flag is put back after each, to see every reason). */
static void refused_as(int got, int want, const char *what, const char *name, const char *why)
{
	char line[512];
	struct gputrace_builder *bb = b;

	snprintf(line, sizeof(line), "plug-in capture: %s \"%s\" refused (%s): %s; said once "
		 "(later ones return the same, unsaid)", what, name,
		 want == -E2BIG ? "-E2BIG" : "-EINVAL", why);
	ck_assert_int_eq(got, want);
	ck_assert_uint_ge(nlog, 1);
	ck_assert_str_eq(log_lines[nlog - 1], line);
	ck_assert_int_eq(log_levels[nlog - 1], GT_LOG_ERROR);
	atomic_store(&bb->bad_said, false);
}
#define REFUSED(call, want, what, name, why) refused_as((call), (want), (what), (name), (why))

START_TEST(builder_refusals)
{
	struct gputrace_event ev;
	struct gputrace_counter c;
	struct gputrace_arg args[GPUTRACE_ARGS_MAX + 1];
	int32_t dev, q;
	unsigned nlog_before;

	start_capture(GT_KIND_ALL);
	dev = api->device(b, "NPU 0");
	q = api->queue(b, dev, "q", 0);
	static const char *const keys[GPUTRACE_ARGS_MAX + 1] = { "k0", "k1", "k2", "k3", "k4",
								 "k5", "k6", "k7", "k8" };

	for (int i = 0; i < GPUTRACE_ARGS_MAX + 1; i++)
		args[i] = gputrace_arg_i64(keys[i], i);

	ev = event(GPUTRACE_KIND_KERNEL, q, "ok");
	ck_assert_int_eq(api->span(b, &ev), 0);
	ev = event(GPUTRACE_KIND_KERNEL, dev, "span on a device row");
	REFUSED(api->span(b, &ev), -EINVAL, "span", "span on a device row",
		"a span on a device row (spans go on queues)");
	ck_assert_int_eq(api->instant(b, &ev), 0); /* instants may go there */
	ev = event(GPUTRACE_KIND_KERNEL, 77, "no such row");
	REFUSED(api->span(b, &ev), -EINVAL, "span", "no such row",
		"its row is not one the plug-in made");
	ev = event(0, q, "no kind");
	REFUSED(api->span(b, &ev), -EINVAL, "span", "no kind",
		"its kind is not one GPUTRACE_KIND_* bit");
	ev = event(GPUTRACE_KIND_KERNEL | GPUTRACE_KIND_MEMCPY, q, "two kinds");
	REFUSED(api->span(b, &ev), -EINVAL, "span", "two kinds",
		"its kind is not one GPUTRACE_KIND_* bit");
	ev = event(1u << 20, q, "unknown kind");
	REFUSED(api->span(b, &ev), -EINVAL, "span", "unknown kind",
		"its kind is not one GPUTRACE_KIND_* bit");
	ev = event(GPUTRACE_KIND_MEMCPY, q, "kind the plug-in did not declare");
	ck_assert_int_eq(api->span(b, &ev), 1);
	ev = event(GPUTRACE_KIND_KERNEL, q, NULL);
	REFUSED(api->span(b, &ev), -EINVAL, "span", "", "no name");
	/* an empty name is a missing one, as for device("") and queue("") */
	ev = event(GPUTRACE_KIND_KERNEL, q, "");
	REFUSED(api->span(b, &ev), -EINVAL, "span", "", "no name");
	REFUSED(api->instant(b, &ev), -EINVAL, "instant", "", "no name");
	ev = event(GPUTRACE_KIND_KERNEL, q, "backwards");
	ev.end_ns = 10;
	REFUSED(api->span(b, &ev), -EINVAL, "span", "backwards", "it ends before it starts");
	ck_assert_int_eq(api->instant(b, &ev), 0); /* end is ignored */
	ev = event(GPUTRACE_KIND_KERNEL, q, "too small");
	ev.size = 8;
	REFUSED(api->span(b, &ev), -EINVAL, "span", "",
		"its size field is below ABI 1's (GPUTRACE_INIT it)");
	REFUSED(api->span(b, NULL), -EINVAL, "span", "", "NULL");
	ev = event(GPUTRACE_KIND_KERNEL, q, "args");
	ev.args = args;
	ev.nargs = GPUTRACE_ARGS_MAX + 1;
	REFUSED(api->span(b, &ev), -E2BIG, "span", "args",
		"more than GPUTRACE_ARGS_MAX (16) args or values");
	ev.nargs = GPUTRACE_ARGS_MAX;
	ck_assert_int_eq(api->span(b, &ev), 0);
	/* a key twice: one JSON object's key twice (readers keep one of them) */
	args[3] = gputrace_arg_i64("k1", 3);
	REFUSED(api->span(b, &ev), -EINVAL, "span", "args", "a key given twice");
	args[3] = gputrace_arg_i64("k3", 3);
	ev.args = NULL;
	REFUSED(api->span(b, &ev), -EINVAL, "span", "args", "nargs is not 0 and args is NULL");
	args[0] = gputrace_arg_str("s", NULL);
	ev.args = args;
	REFUSED(api->span(b, &ev), -EINVAL, "span", "args", "a STR arg whose string is NULL");
	args[0] = gputrace_arg_i64(NULL, 1);
	REFUSED(api->span(b, &ev), -EINVAL, "span", "args", "an arg without a key");
	args[0] = gputrace_arg_i64("k", 0);
	args[0].type = 42;
	REFUSED(api->span(b, &ev), -EINVAL, "span", "args", "an arg of an unknown type");
	ev = event(GPUTRACE_KIND_RUNTIME, GPUTRACE_ROW_HOST, "host");
	ev.tid = -3;
	REFUSED(api->span(b, &ev), -EINVAL, "span", "host", "a host event with a negative tid");

	GPUTRACE_INIT(c);
	c.row = dev;
	c.name = "c";
	c.values = args;
	c.nvalues = 1;
	c.time_ns = gt_clock_ns();
	args[0] = gputrace_arg_u64("v", 1);
	ck_assert_int_eq(api->counter(b, &c), 0);
	c.row = q;
	REFUSED(api->counter(b, &c), -EINVAL, "counter", "c",
		"a counter on a queue (counters go on devices)");
	c.row = dev;
	args[0] = gputrace_arg_str("v", "text");
	REFUSED(api->counter(b, &c), -EINVAL, "counter", "c",
		"a counter value of type STR (numbers only)");
	args[0] = gputrace_arg_hex("v", 1);
	REFUSED(api->counter(b, &c), -EINVAL, "counter", "c",
		"a counter value of type HEX (numbers only)");
	args[0] = gputrace_arg_f64("v", 1);
	c.nvalues = 0;
	REFUSED(api->counter(b, &c), -EINVAL, "counter", "c", "no values");
	c.nvalues = 1;
	c.name = NULL;
	REFUSED(api->counter(b, &c), -EINVAL, "counter", "", "no name");
	c.name = "";
	REFUSED(api->counter(b, &c), -EINVAL, "counter", "", "no name");
	c.name = "c";
	args[0] = gputrace_arg_u64("v", 1);
	args[1] = gputrace_arg_u64("v", 2); /* {"v":1,"v":2}: one of them read */
	c.nvalues = 2;
	REFUSED(api->counter(b, &c), -EINVAL, "counter", "c", "a key given twice");

	/* said once: after its line, a refusal returns its errno without one */
	ck_assert_int_eq(api->counter(b, &c), -EINVAL);
	nlog_before = nlog;
	ck_assert_int_eq(api->counter(b, &c), -EINVAL);
	ck_assert_int_eq(api->counter(b, &c), -EINVAL);
	ck_assert_uint_eq(nlog, nlog_before);
	/* what got through: the one span, two instants, 8-arg span, one counter */
	ck_assert_uint_eq(nrecs, 5);
	ck_assert_uint_eq(recs[3].nargs, GPUTRACE_ARGS_MAX);
	ck_assert_int_eq(recs[3].args[7].v.i, 7);
	ck_assert_uint_eq(recs[1].ev.track, gt_device_track(1));
	ck_assert_uint_eq(recs[2].ev.end_ns, recs[2].ev.start_ns);
	ck_assert_uint_eq(errors_logged(), nlog_before);
}
END_TEST

/* Times that are not this run's CLOCK_MONOTONIC_RAW (0, a device's own ticks, an end
 * of UINT64_MAX) are refused with -ERANGE and one line per plug-in, naming the first:
 * accepted, they stretched the trace over hours and the summary's sums overflowed
 * (a span from 1 to UINT64_MAX summed as 1000 ns). */
START_TEST(builder_times_out_of_range)
{
	struct gputrace_event ev;
	struct gputrace_counter c;
	struct gputrace_arg v = gputrace_arg_u64("v", 1);
	uint64_t now;
	int32_t dev, q;

	start_capture(GT_KIND_ALL);
	dev = api->device(b, "NPU 0");
	q = api->queue(b, dev, "q", 0);
	now = gt_clock_ns();
	ev = event(GPUTRACE_KIND_KERNEL, q, "zero");
	ev.start_ns = 0;
	ck_assert_int_eq(api->span(b, &ev), -ERANGE);
	ck_assert_int_eq(api->instant(b, &ev), -ERANGE);
	ev = event(GPUTRACE_KIND_KERNEL, q, "to the end of time");
	ev.end_ns = UINT64_MAX;
	ck_assert_int_eq(api->span(b, &ev), -ERANGE);
	ev = event(GPUTRACE_KIND_KERNEL, q, "a day ahead");
	ev.start_ns = now + 86400ull * 1000000000ull;
	ev.end_ns = ev.start_ns + 10;
	ck_assert_int_eq(api->span(b, &ev), -ERANGE);
	GPUTRACE_INIT(c);
	c.row = dev;
	c.name = "c";
	c.values = &v;
	c.nvalues = 1;
	ck_assert_int_eq(api->counter(b, &c), -ERANGE);
	/* a minute ago and now are this run's */
	ev = event(GPUTRACE_KIND_KERNEL, q, "ok");
	ev.start_ns = now - 60ull * 1000000000ull;
	ck_assert_int_eq(api->span(b, &ev), 0);
	c.time_ns = now;
	ck_assert_int_eq(api->counter(b, &c), 0);
	ck_assert_uint_eq(nrecs, 2);
	if (log_count("refused (-ERANGE)", NULL) != 1)
		dump_log();
	ck_assert_uint_eq(log_count("refused (-ERANGE)", NULL), 1);
	ck_assert_uint_eq(log_count("plug-in capture: \"zero\" refused (-ERANGE): its time 0 ns (to ",
				    "is not CLOCK_MONOTONIC_RAW ns of this run (accepted: "), 1);
}
END_TEST

START_TEST(builder_counter_kind_off)
{
	struct gputrace_counter c;
	struct gputrace_arg v = gputrace_arg_u64("v", 1);

	start_capture(GT_KIND(KERNEL));
	GPUTRACE_INIT(c);
	c.row = api->device(b, "NPU 0");
	c.name = "c";
	c.values = &v;
	c.nvalues = 1;
	ck_assert_int_eq(api->counter(b, &c), 1);
	ck_assert_uint_eq(nrecs, 0);
	ck_assert_uint_eq(*(uint32_t *)dlsym(capture, "capture_kinds"), GPUTRACE_KIND_KERNEL);
}
END_TEST

/* Structs from an older or newer header: read by their own size. */
START_TEST(builder_sizes)
{
	struct bigger_event {
		struct gputrace_event ev;
		uint64_t later_field;
	} big;
	struct bigger_arg {
		struct gputrace_arg a;
		uint64_t later_field;
	} args[2];
	int32_t q;

	start_capture(GT_KIND_ALL);
	q = api->queue(b, api->device(b, "NPU 0"), "q", 0);
	memset(&big, 0xab, sizeof(big));
	big.ev = event(GPUTRACE_KIND_KERNEL, q, "bigger");
	big.ev.size = sizeof(big);
	memset(args, 0, sizeof(args));
	args[0].a = gputrace_arg_u64("first", 1);
	args[1].a = gputrace_arg_u64("second", 2);
	args[0].a.size = args[1].a.size = sizeof(args[0]);
	big.ev.args = &args[0].a;
	big.ev.nargs = 2;
	ck_assert_int_eq(api->span(b, &big.ev), 0);
	ck_assert_uint_eq(nrecs, 1);
	ck_assert_uint_eq(recs[0].nargs, 2);
	ck_assert_str_eq(str(recs[0].args[1].key), "second");
	ck_assert_uint_eq(recs[0].args[1].v.u, 2);
}
END_TEST

START_TEST(builder_host_and_categories)
{
	struct gputrace_event ev;

	start_capture(GT_KIND_ALL);
	ev = event(GPUTRACE_KIND_RUNTIME, GPUTRACE_ROW_HOST, "npuLaunch");
	ev.correlation = 7;
	ck_assert_int_eq(api->span(b, &ev), 0);
	ev = event(GPUTRACE_KIND_ANNOTATION, GPUTRACE_ROW_HOST, "mark");
	ev.tid = 4242;
	ev.category = "my_marks";
	ck_assert_int_eq(api->instant(b, &ev), 0);
	ev = event(GPUTRACE_KIND_RUNTIME, GPUTRACE_ROW_HOST, "no corr");
	ck_assert_int_eq(api->span(b, &ev), 0);
	/* an annotation span is a user range of its thread, handed over whole */
	ev = event(GPUTRACE_KIND_ANNOTATION, GPUTRACE_ROW_HOST, "phase");
	ck_assert_int_eq(api->span(b, &ev), 0);
	ck_assert_uint_eq(nrecs, 4);
	ck_assert_uint_eq(recs[3].ev.flags, GT_EVF_RANGE | GT_EVF_TIMED | GT_EVF_HANDED);
	ck_assert_str_eq(str(recs[3].ev.cat), "user_annotation");
	ck_assert_uint_eq(recs[0].ev.type, GT_EV_HOST_SPAN);
	ck_assert_uint_eq(recs[0].ev.track, 0);
	ck_assert_uint_eq(recs[0].ev.flags, GT_EVF_LAUNCH | GT_EVF_HANDED);
	ck_assert_uint_eq(recs[0].ev.corr, plugin_corr(0, 7));
	ck_assert_str_eq(str(recs[0].ev.cat), "capture_runtime");
	ck_assert_uint_eq(recs[1].ev.type, GT_EV_INSTANT);
	ck_assert_uint_eq(recs[1].ev.track, 4242);
	ck_assert_uint_eq(recs[1].ev.flags, GT_EVF_HANDED);
	ck_assert_str_eq(str(recs[1].ev.cat), "my_marks");
	ck_assert_uint_eq(recs[2].ev.flags, GT_EVF_HANDED);
	ck_assert_uint_eq(recs[2].ev.corr, 0);
	ck_assert_uint_eq(api->now_ns() > 0, 1);
}
END_TEST

/* An arg named as one the writer adds itself (the causing call's id, user
 * ranges) is the plug-in's "plugin_<key>": the args object never holds a key
 * twice. A counter's values are series named as given. */
START_TEST(builder_arg_keys_the_writer_writes)
{
	struct gputrace_event ev;
	struct gputrace_counter c;
	struct gputrace_arg a[3];
	int32_t dev, q;

	start_capture(GT_KIND_ALL);
	dev = api->device(b, "NPU 0");
	q = api->queue(b, dev, "q", 0);
	a[0] = gputrace_arg_u64("correlation", 5);
	a[1] = gputrace_arg_str("range", "0x1000-0x2000");
	a[2] = gputrace_arg_i64("tiles", 16);
	ev = event(GPUTRACE_KIND_KERNEL, q, "k");
	ev.correlation = 7;
	ev.args = a;
	ev.nargs = 3;
	ck_assert_int_eq(api->span(b, &ev), 0);
	ck_assert_uint_eq(nrecs, 1);
	ck_assert_uint_eq(recs[0].nargs, 3);
	ck_assert_str_eq(str(recs[0].args[0].key), "plugin_correlation");
	ck_assert_uint_eq(recs[0].args[0].v.u, 5);
	ck_assert_str_eq(str(recs[0].args[1].key), "plugin_range");
	ck_assert_str_eq(str(recs[0].args[2].key), "tiles");
	/* the same key twice, once by each name */
	a[1] = gputrace_arg_u64("plugin_correlation", 6);
	ck_assert_int_eq(api->span(b, &ev), -EINVAL);
	GPUTRACE_INIT(c);
	c.row = dev;
	c.name = "ids";
	c.time_ns = api->now_ns();
	c.values = a;
	c.nvalues = 1;
	ck_assert_int_eq(api->counter(b, &c), 0);
	ck_assert_uint_eq(nrecs, 2);
	ck_assert_str_eq(str(recs[1].args[0].key), "correlation");
}
END_TEST

/* More distinct strings than the lock-free cache holds: all still right. */
START_TEST(builder_many_strings)
{
	struct gputrace_event ev;
	char name[32];
	int32_t q;

	start_capture(GT_KIND_ALL);
	q = api->queue(b, api->device(b, "NPU 0"), "q", 0);
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 6000; i++) {
			snprintf(name, sizeof(name), "kernel_%d", i);
			ev = event(GPUTRACE_KIND_KERNEL, q, name);
			ck_assert_int_eq(api->instant(b, &ev), 0);
			ck_assert_str_eq(str(recs[nrecs - 1].ev.name), name);
			if (nrecs == REC_MAX)
				nrecs = 0;
		}
	}
}
END_TEST

START_TEST(builder_after_end)
{
	struct gputrace_event ev;
	int32_t q;

	start_capture(GT_KIND_ALL);
	q = api->queue(b, api->device(b, "NPU 0"), "q", 0);
	ev = event(GPUTRACE_KIND_KERNEL, q, "k");
	ck_assert_int_eq(api->span(b, &ev), 0);
	ck_assert_int_eq(api->span((gputrace_builder *)&ev, &ev), -ECANCELED);
	ck_assert_int_eq(api->span(NULL, &ev), -ECANCELED);
	finish_plugins();
	ck_assert_int_eq(*(int *)dlsym(capture, "capture_destroyed"), 1);
	ck_assert_int_eq(api->span(b, &ev), -ECANCELED);
	ck_assert_int_eq(api->device(b, "late"), -ECANCELED);
	ck_assert_uint_eq(nrecs, 1);
}
END_TEST

START_TEST(builder_after_fork)
{
	struct gputrace_event ev;
	int32_t q;

	start_capture(GT_KIND_ALL);
	q = api->queue(b, api->device(b, "NPU 0"), "q", 0);
	backend()->atfork_child();
	ev = event(GPUTRACE_KIND_KERNEL, q, "k");
	ck_assert_int_eq(api->span(b, &ev), -ECANCELED);
	finish_plugins();
	ck_assert_int_eq(*(int *)dlsym(capture, "capture_destroyed"), 0);
}
END_TEST

START_TEST(builder_log_one_line)
{
	start_capture(GT_KIND_ALL);
	log_threshold = GT_LOG_DEBUG;
	api->log(b, GPUTRACE_LOG_WARN, "two\nlines");
	api->log(b, 99, "clamped");
	api->log(b, GPUTRACE_LOG_ERROR, NULL);
	/* a terminal's escape sequences reach no terminal: '?' for each control byte */
	api->log(b, GPUTRACE_LOG_WARN, "red \033[31mtext\033[0m\a\x7f.");
	ck_assert_uint_eq(nlog, 3);
	ck_assert_str_eq(log_lines[0], "plug-in capture: two lines");
	ck_assert_int_eq(log_levels[0], GT_LOG_WARN);
	ck_assert_int_eq(log_levels[1], GT_LOG_DEBUG);
	ck_assert_str_eq(log_lines[2], "plug-in capture: red ?[31mtext?[0m??.");
	/* a long message is cut at 511 bytes, at the end of a character: "é"
	 * (2 bytes) 300 times is 255 of them (it ended in half a character) */
	{
		char m[601], want[sizeof("plug-in capture: ") + 510];
		size_t n = strlen("plug-in capture: ");

		for (int i = 0; i < 600; i += 2)
			memcpy(m + i, "\xc3\xa9", 2);
		m[600] = '\0';
		memcpy(want, "plug-in capture: ", n);
		memcpy(want + n, m, 510);
		want[n + 510] = '\0';
		api->log(b, GPUTRACE_LOG_WARN, m);
		ck_assert_uint_eq(nlog, 4);
		ck_assert_str_eq(log_lines[3], want);
	}
}
END_TEST

START_TEST(config_entries)
{
	setenv("GPUTRACE_PLUGIN_CONFIG", "nosuch:x;capture:a=1,b=2;;stray;:x", 1);
	start_capture(GT_KIND_ALL);
	ck_assert_str_eq((char *)dlsym(capture, "capture_config"), "a=1,b=2");
	ck_assert_uint_eq(nlog, 3);
	ck_assert_str_eq(log_lines[0], "GPUTRACE_PLUGIN_CONFIG: no plug-in named 'nosuch' was loaded");
	/* each says what is missing (both said "lacks a plug-in name", and ':x' named '') */
	ck_assert_str_eq(log_lines[1], "GPUTRACE_PLUGIN_CONFIG: entry 'stray' has no ':' after a "
				       "plug-in's name; accepted: name:text;name:text");
	ck_assert_str_eq(log_lines[2], "GPUTRACE_PLUGIN_CONFIG: entry ':x' names no plug-in before "
				       "its ':'; accepted: name:text;name:text");
}
END_TEST

/* ---- Kineto's plug-ins (kineto*.c, utc.c, jsoncheck.c) ---- */

#include "backends/plugins/kineto_internal.h"

/* The wall clock against ours over a test: NTP may slew it (1.3% seen on a
 * CI machine), and a plug-in's UTC interval is then that much off in trace
 * ns. Checks an interval of the trace against the plug-in's UTC one at the
 * rate measured from `since`, within the reads' error (the test's own pairs, and
 * the widest of the pairs the plug-in's times went through: an interval's two
 * ends may take different ones) and a ns of rounding. */
static void ck_wall_interval(struct gt_clock_pair since, uint64_t trace_ns, int64_t utc_ns)
{
	struct gt_clock_pair now = gt_clock_pair_now();
	double span = (double)(now.clock_ns - since.clock_ns);
	double utc_per_ns = (double)(now.realtime_ns - since.realtime_ns) / span;
	double err = (double)(since.width_ns + now.width_ns) / span * (double)utc_ns + 2 +
		     (double)utc__widest();

	ck_assert_msg(fabs((double)trace_ns - (double)utc_ns / utc_per_ns) <= err,
		      "%" PRIu64 " trace ns for %" PRId64 " UTC ns, the wall clock at %.6f", trace_ns,
		      utc_ns, utc_per_ns);
}

/* The reference Kineto profiler through the host, to the records. */
START_TEST(kineto_reference)
{
	const char *files[] = { "kineto/npu.so", NULL };
	const struct rec *host, *dev, *r, *fwd, *bwd;
	uint32_t compute = 1000, copy = 1001;
	struct gt_clock_pair since = gt_clock_pair_now();

	find_built();
	setenv("KINETO_PLUGIN_LIB_DIR_PATH", plugin_dir(files), 1);
	start_plugins("", GT_KIND_ALL);
	backend()->flush(false);
	finish_plugins();
	if (errors_logged())
		dump_log();
	ck_assert_uint_eq(errors_logged(), 0);

	/* rows as the profiler named them (before its events) */
	ck_assert_uint_eq(ndevices, 1);
	ck_assert_str_eq(devices[0], "NPU 0: KinetoSim");
	ck_assert_uint_eq(nqueues, 2);
	ck_assert_str_eq(queues[0].name, "compute");
	ck_assert_int_eq(queues[0].sort, 0);
	ck_assert_str_eq(queues[1].name, "copy");
	ck_assert_int_eq(queues[1].sort, 1);

	ck_assert_uint_eq(count(GT_EV_HOST_SPAN), 5);   /* 3 launches, 2 cpu ops */
	ck_assert_uint_eq(count(GT_EV_DEVICE_SPAN), 10); /* 3 kernels, copies, fills; a region */
	ck_assert_uint_eq(count(GT_EV_COUNTER), 3);
	ck_assert_uint_eq(nrecs, 18);
	for (unsigned i = 0; i < 3; i++) {
		char name[32];

		snprintf(name, sizeof(name), "npu_kernel_%u", i);
		host = find(GT_EV_HOST_SPAN, "npuLaunchKernel", i);
		dev = find(GT_EV_DEVICE_SPAN, name, 0);
		ck_assert_ptr_nonnull(host);
		ck_assert_ptr_nonnull(dev);
		ck_assert_str_eq(str(host->ev.cat), "privateuse1_runtime");
		ck_assert_uint_eq(host->ev.track, (uint32_t)getpid());
		ck_assert_uint_eq(host->ev.flags, GT_EVF_LAUNCH | GT_EVF_HANDED);
		ck_assert_uint_ne(host->ev.corr, 0);
		ck_wall_interval(since, host->ev.end_ns - host->ev.start_ns, 20000);
		ck_assert_str_eq(str(dev->ev.cat), "kernel");
		ck_assert_uint_eq(dev->ev.track, compute);
		ck_assert_uint_eq(dev->ev.corr, host->ev.corr); /* the ASYNC_CPU_GPU flow */
		ck_assert_uint_eq(dev->ev.corr2, 0);
		/* UTC apart as the plug-in gave them, at the wall clock's rate */
		ck_wall_interval(since, dev->ev.start_ns - host->ev.start_ns, 50000);
		ck_wall_interval(since, dev->ev.end_ns - dev->ev.start_ns, (100 + 10 * i) * 1000);
		ck_assert_uint_eq(dev->nargs, 8);
		ck_assert_uint_eq(arg(dev, "registers")->type, GT_ARG_I64);
		ck_assert_int_eq(arg(dev, "registers")->v.i, 32 + i);
		ck_assert_uint_eq(arg(dev, "occupancy")->type, GT_ARG_F64);
		ck_assert_uint_eq(arg(dev, "stream")->type, GT_ARG_STR);
		ck_assert_str_eq(str(arg(dev, "stream")->v.u), "compute");
		ck_assert_uint_eq(arg(dev, "grid")->type, GT_ARG_JSON);
		ck_assert_str_eq(str(arg(dev, "grid")->v.u), "[64, 1, 1]");
		ck_assert_uint_eq(arg(dev, "queued")->type, GT_ARG_JSON);
		ck_assert_str_eq(str(arg(dev, "queued")->v.u), "true");
		ck_assert_uint_eq(arg(dev, "escaped")->type, GT_ARG_JSON);

		dev = find(GT_EV_DEVICE_SPAN, "Memcpy HtoD", i);
		ck_assert_uint_eq(dev->ev.track, copy);
		ck_assert_str_eq(str(dev->ev.cat), "gpu_memcpy");
		ck_assert_uint_eq(arg(dev, "bytes")->key, GT_S_ARG_BYTES);
		ck_assert_int_eq(arg(dev, "bytes")->v.i, 4096 * (i + 1));
		ck_assert_uint_eq(arg(dev, "kind")->key, GT_S_ARG_KIND);

		r = find(GT_EV_COUNTER, "npu_util", i);
		ck_assert_uint_eq(r->ev.track, 501); /* the device's own row */
		ck_assert_uint_eq(r->nargs, 2);      /* the string value is no series */
		/* "12.5" is a double, "25" an integer, as JSON says */
		if (i % 2)
			ck_assert_int_eq(arg(r, "busy_pct")->v.i, 25 * (i + 1) / 2);
		else
			ck_assert_double_eq(arg(r, "busy_pct")->v.f, 12.5 * (i + 1));
		ck_assert_int_eq(arg(r, "sm_active")->v.i, 10 * (i + 1));
	}
	fwd = find(GT_EV_HOST_SPAN, "aten::mm", 0);
	bwd = find(GT_EV_HOST_SPAN, "MmBackward0", 0);
	ck_assert_uint_eq(fwd->ev.flags, GT_EVF_LAUNCH | GT_EVF_HANDED);
	ck_assert_uint_eq(bwd->ev.flags, GT_EVF_FLOW_END | GT_EVF_FWDBWD | GT_EVF_HANDED);
	ck_assert_uint_eq(bwd->ev.corr2, fwd->ev.corr);
	ck_assert_uint_eq(bwd->ev.corr, 0);
	/* each flow in the plug-in's namespace, apart from the other type's */
	ck_assert_uint_eq(fwd->ev.corr >> GT_CORR_NS_SHIFT, GT_CORR_NS_PLUGIN(0));
	ck_assert_uint_ne(fwd->ev.corr & 0xffffffffu, find(GT_EV_HOST_SPAN, "npuLaunchKernel", 0)->ev.corr);
	/* processEvents ran on this (the exiting) thread, inside gputrace */
	ck_assert_int_eq(find(GT_EV_DEVICE_SPAN, "npu_kernel_0", 0)->guarded, 1);
}
END_TEST

START_TEST(kineto_json)
{
	static const struct {
		const char *text;
		enum json_kind kind;
	} cases[] = {
		{ "0", JSON_INTEGER }, { "-12", JSON_INTEGER }, { " 7 ", JSON_INTEGER },
		{ "1.5", JSON_NUMBER }, { "-1e-3", JSON_NUMBER }, { "2E+8", JSON_NUMBER },
		{ "\"a\"", JSON_STRING }, { "\"\\n\"", JSON_STRING_ESCAPED },
		{ "\"\\ud83d\\ude00\"", JSON_STRING_ESCAPED }, { "\"\xc3\xa9\"", JSON_STRING },
		{ "true", JSON_LITERAL }, { "null", JSON_LITERAL }, { "[]", JSON_ARRAY },
		{ "[1, \"x\", {\"k\": [null]}]", JSON_ARRAY }, { "{}", JSON_OBJECT },
		{ "{\"a\": 1, \"b\": {}}", JSON_OBJECT },
		{ "", JSON_INVALID }, { " ", JSON_INVALID }, { "01", JSON_INVALID },
		{ "1.", JSON_INVALID }, { ".5", JSON_INVALID }, { "+1", JSON_INVALID },
		{ "1 2", JSON_INVALID }, { "\"a", JSON_INVALID }, { "\"\x01\"", JSON_INVALID },
		{ "\"\xff\"", JSON_INVALID }, { "\"\xc3\"", JSON_INVALID },
		{ "\"\\ud800\"", JSON_INVALID }, { "\"\\udc00\"", JSON_INVALID },
		{ "\"\\ud800\\u0041\"", JSON_INVALID }, { "\"\\q\"", JSON_INVALID },
		{ "\"\\u12\"", JSON_INVALID }, { "[1,]", JSON_INVALID }, { "[1", JSON_INVALID },
		{ "{\"a\"}", JSON_INVALID }, { "{1: 2}", JSON_INVALID }, { "nul", JSON_INVALID },
		{ "True", JSON_INVALID }, { "NaN", JSON_INVALID }, { "'a'", JSON_INVALID },
	};
	char deep[200];
	size_t start, len;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_msg(json__check(cases[i].text, strlen(cases[i].text), &start, &len) ==
				      cases[i].kind,
			      "case %zu: %s", i, cases[i].text);
	ck_assert_int_eq(json__check("  [1] \n", 7, &start, &len), JSON_ARRAY);
	ck_assert_uint_eq(start, 2);
	ck_assert_uint_eq(len, 3);
	/* nesting: 64 deep is fine, 65 is refused (the check recurses) */
	memset(deep, '[', 64);
	memset(deep + 64, ']', 64);
	ck_assert_int_eq(json__check(deep, 128, &start, &len), JSON_ARRAY);
	memset(deep, '[', 65);
	memset(deep + 65, ']', 65);
	ck_assert_int_eq(json__check(deep, 130, &start, &len), JSON_INVALID);
}
END_TEST

START_TEST(kineto_utc)
{
	uint64_t c, before, after, prev = 0;

	utc__sample();
	for (int i = 0; i < 2000; i++) {
		before = gt_clock_ns();
		ck_assert_int_eq(utc__to_clock((int64_t)gt_realtime_ns(), &c, NULL), 0);
		after = gt_clock_ns();
		/* the wall clock's now is the trace clock's now, within a pair's width */
		ck_assert_uint_ge(c + 50000, before);
		ck_assert_uint_le(c, after + 50000);
		ck_assert_uint_ge(c + 50000, prev);
		prev = c;
		if (i % 3 == 0)
			utc__sample(); /* the table fills and thins out */
	}
	ck_assert_int_eq(utc__to_clock(0, &c, NULL), -ERANGE);
	ck_assert_int_eq(utc__to_clock(INT64_MIN, &c, NULL), -ERANGE);
	ck_assert_int_eq(utc__to_clock(INT64_MAX, &c, NULL), 0);
}
END_TEST

/* A batch's times go through one table: the drain's samples, taken every cycle
 * while the plug-ins' thread converts a batch, replaced the newest pair under it,
 * and a time converted again came out moved by the pairs' read error (a kernel
 * 50 us after its launch drawn 50.024 us after it, on a loaded CI machine). */
START_TEST(kineto_utc_held_for_a_batch)
{
	uint64_t first, again;
	int64_t t;

	utc__forget();
	utc__sample();
	usleep(2000);
	utc__sample();
	t = (int64_t)gt_realtime_ns() - 500000;
	utc__sample();
	utc__hold(true);
	ck_assert_int_eq(utc__to_clock(t, &first, NULL), 0);
	for (int i = 0; i < 200; i++) {
		utc__sample(); /* the drain's, each cycle */
		ck_assert_int_eq(utc__to_clock(t, &again, NULL), 0);
		ck_assert_msg(again == first, "converted again after a sample: %+lld ns (sample %d)",
			      (long long)(again - first), i);
	}
	utc__hold(false);
	utc__forget();
}
END_TEST

START_TEST(kineto_type_table)
{
	/* the first revision: 13 was cuda_sync, 14 gpu_pm_counter */
	ck_assert_int_eq(kineto__type(13, true), KINETO_PLUGIN_PROFILE_EVENT_TYPE_CUDA_SYNC);
	ck_assert_int_eq(kineto__type(14, true), KINETO_PLUGIN_PROFILE_EVENT_TYPE_GPU_PM_COUNTER);
	ck_assert_int_eq(kineto__type(8, true), KINETO_PLUGIN_PROFILE_EVENT_TYPE_CUDA_RUNTIME);
	ck_assert_int_eq(kineto__type(15, true), KINETO_PLUGIN_PROFILE_EVENT_TYPE_CONCURRENT_KERNEL);
	/* unknown types are kernels, as Kineto takes them */
	ck_assert_int_eq(kineto__type(0, false), KINETO_PLUGIN_PROFILE_EVENT_TYPE_CONCURRENT_KERNEL);
	ck_assert_int_eq(kineto__type(99, false), KINETO_PLUGIN_PROFILE_EVENT_TYPE_CONCURRENT_KERNEL);
	ck_assert_int_eq(kineto__type(-3, false), KINETO_PLUGIN_PROFILE_EVENT_TYPE_CONCURRENT_KERNEL);
	ck_assert_int_eq(kineto__type(23, false), KINETO_PLUGIN_PROFILE_EVENT_TYPE_PRIVATEUSE1_RUNTIME);
	/* every type has a category and a kind */
	for (int t = 0; t < KINETO_TYPES; t++) {
		ck_assert_ptr_nonnull(kineto_types[t].cat);
		ck_assert_uint_ne(kineto_types[t].kind, 0);
	}
}
END_TEST

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

/* Runs in each test's child, after the test. */
static void remove_tmpdir(void)
{
	if (tmpdir[0])
		nftw(tmpdir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static Suite *plugins_suite(void)
{
	Suite *s = suite_create("plugins");
	TCase *load = tcase_create("load"), *broken = tcase_create("broken"),
	      *builder = tcase_create("builder"), *kineto = tcase_create("kineto");

	tcase_add_test(load, simaccel_events);
	tcase_add_test(load, kinds_filtered);
	tcase_add_test(load, no_kind_enabled);
	tcase_add_test(load, config_entries);
	tcase_add_test(broken, broken_abi);
	tcase_add_test(broken, broken_no_symbol);
	tcase_add_test(broken, broken_garbage);
	tcase_add_test(broken, broken_create);
	tcase_add_test(broken, broken_start);
	tcase_add_test(broken, broken_flush);
	tcase_add_test(broken, caller_slow_to_start);
	tcase_add_test(broken, broken_all_together);
	tcase_add_test(broken, missing_directory);
	tcase_add_test(load, path_file_entries);
	tcase_add_test(builder, builder_rows);
	tcase_add_test(builder, builder_long_row_names);
	tcase_add_test(builder, builder_rows_full);
	tcase_add_test(builder, builder_plugin_rows_full);
	tcase_add_test(builder, builder_refusals);
	tcase_add_test(builder, builder_times_out_of_range);
	tcase_add_test(builder, builder_counter_kind_off);
	tcase_add_test(builder, builder_sizes);
	tcase_add_test(builder, builder_host_and_categories);
	tcase_add_test(builder, builder_arg_keys_the_writer_writes);
	tcase_add_test(builder, builder_many_strings);
	tcase_add_test(builder, builder_after_end);
	tcase_add_test(builder, builder_after_fork);
	tcase_add_test(builder, builder_log_one_line);
	tcase_add_test(kineto, kineto_reference);
	tcase_add_test(kineto, kineto_json);
	tcase_add_test(kineto, kineto_utc);
	tcase_add_test(kineto, kineto_utc_held_for_a_batch);
	tcase_add_test(kineto, kineto_type_table);
	tcase_add_checked_fixture(kineto, NULL, remove_tmpdir);
	tcase_add_checked_fixture(load, NULL, remove_tmpdir);
	tcase_add_checked_fixture(broken, NULL, remove_tmpdir);
	tcase_add_checked_fixture(builder, NULL, remove_tmpdir);
	suite_add_tcase(s, load);
	suite_add_tcase(s, broken);
	suite_add_tcase(s, builder);
	suite_add_tcase(s, kineto);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(plugins_suite());
	int failed;

	/* Each test in its own child: the loader's state is per process. */
	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
