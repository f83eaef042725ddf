// SPDX-License-Identifier: MIT
/*
 * The plug-in backend: loads the vendor plug-ins of GPUTRACE_PLUGIN_PATH
 * (every *.so of each directory, in name order, or a file named directly;
 * ABI in backends/gputrace_plugin.h) and turns their trace-builder calls
 * into events. To the rest of gputrace it is one more struct gt_backend.
 *
 * A broken plug-in costs one stderr line and nothing else: every failure
 * (load, symbol, ABI, a call returning an error) marks it failed, and a
 * failed plug-in is never called again. Builders live in a static array
 * and are never freed, so a failed plug-in's stray thread calling its
 * builder finds a closed builder, not freed memory.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/plugins/gputrace_plugin.h"
#include "inject/clock.h"
#include "inject/config.h"
#include "inject/event.h"

/* The ABI mirrors the internal values, so kinds and arg types pass as they are. */
#define PLUGIN_KIND_SAME(id, str)                                                  \
	_Static_assert(GPUTRACE_KIND_##id == GT_KIND(id), "plug-in kind " str);
GT_KINDS(PLUGIN_KIND_SAME)
#undef PLUGIN_KIND_SAME
_Static_assert(GPUTRACE_KIND_ALL == GT_KIND_ALL, "plug-in kinds");
#define PLUGIN_ARG_SAME(t) _Static_assert((int)GPUTRACE_ARG_##t == (int)GT_ARG_##t, "arg " #t);
PLUGIN_ARG_SAME(I64) PLUGIN_ARG_SAME(U64) PLUGIN_ARG_SAME(HEX) PLUGIN_ARG_SAME(F64)
PLUGIN_ARG_SAME(STR)
#undef PLUGIN_ARG_SAME
_Static_assert(GPUTRACE_ARGS_MAX <= GT_ARGS_MAX, "plug-in args fit an event");

/* The least a plug-in may pass: ABI 1's sizes (later versions only append). */
#define ABI1_PLUGIN_SIZE  sizeof(struct gputrace_plugin)
#define ABI1_EVENT_SIZE   sizeof(struct gputrace_event)
#define ABI1_COUNTER_SIZE sizeof(struct gputrace_counter)
#define ABI1_ARG_SIZE     sizeof(struct gputrace_arg)

#define PLUGINS_MAX      16  /* each gets a correlation namespace */
#define PLUGIN_ROWS_MAX  256 /* devices and queues per plug-in */
#define PLUGIN_NAME_MAX  32
#define PLUGIN_STR_MAX   4096 /* longer names are cut */
#define PLUGIN_CONFIG_MAX 4096
#define PLUGIN_LOCK_MS   2000 /* exit never waits longer on a plug-in call */

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

static struct plugin plugins[PLUGINS_MAX];
static unsigned nplugins;
/* One plug-in call at a time (drain thread vs. exit); never held while a
 * plug-in thread could need it: builder calls do not take it. */
static pthread_mutex_t calls_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- strings: intern once, then find lock-free ---- */

/* Builder calls may come from application threads, and gt_str_intern takes
 * a lock: known strings are found in this open-addressing cache of
 * (hash << 32 | id) entries, inserted with compare-and-swap. */
#define STR_CACHE_SLOTS  4096
#define STR_CACHE_PROBES 8
static _Atomic uint64_t str_cache[STR_CACHE_SLOTS];

static uint32_t str_hash(const char *s, size_t len)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

static uint32_t plugin_str(const char *s)
{
	size_t len = strnlen(s, PLUGIN_STR_MAX);
	uint32_t h = str_hash(s, len);
	uint64_t entry;
	uint32_t id;

	for (unsigned i = 0; i < STR_CACHE_PROBES; i++) {
		entry = atomic_load_explicit(&str_cache[(h + i) % STR_CACHE_SLOTS],
					     memory_order_acquire);
		if (!entry)
			break;
		if ((uint32_t)(entry >> 32) == h) {
			size_t known_len;
			const char *known = gt_str_get((uint32_t)entry, &known_len);

			if (known && known_len == len && !memcmp(known, s, len))
				return (uint32_t)entry;
		}
	}
	id = gt_str_intern_n(s, len);
	entry = (uint64_t)h << 32 | id;
	for (unsigned i = 0; i < STR_CACHE_PROBES; i++) {
		uint64_t expected = 0;

		if (atomic_compare_exchange_strong_explicit(
			    &str_cache[(h + i) % STR_CACHE_SLOTS], &expected, entry,
			    memory_order_acq_rel, memory_order_acquire) ||
		    expected == entry)
			break;
	}
	return id;
}

/* ---- the builder ---- */

/* The builder behind a handle, if the handle is one of ours and open. */
static struct gputrace_builder *builder__get(gputrace_builder *handle)
{
	uintptr_t p = (uintptr_t)handle, base = (uintptr_t)&plugins[0].builder;
	size_t i = (p - base) / sizeof(plugins[0]);

	if (p < base || i >= PLUGINS_MAX || handle != &plugins[i].builder)
		return NULL;
	if (!atomic_load_explicit(&handle->open, memory_order_acquire))
		return NULL;
	return handle;
}

static const struct plugin_row *builder__row(struct gputrace_builder *b, int32_t row)
{
	uint32_t n = atomic_load_explicit(&b->nrows, memory_order_acquire);

	if (row < 1 || (uint32_t)row > n)
		return NULL;
	return &b->rows[row - 1];
}

/* Copy a struct the plug-in sized: fields past its size read as zero. */
static int sized_copy(void *dst, size_t dst_size, const void *src, size_t min_size)
{
	uint32_t size;

	if (!src)
		return -EINVAL;
	memcpy(&size, src, sizeof(size));
	if (size < min_size)
		return -EINVAL;
	memset(dst, 0, dst_size);
	memcpy(dst, src, size < dst_size ? size : dst_size);
	return 0;
}

static bool one_kind(uint32_t kind)
{
	return kind && !(kind & (kind - 1)) && !(kind & ~(uint32_t)GPUTRACE_KIND_ALL);
}

static int builder__args(const struct gputrace_arg *in, uint32_t n, bool numbers_only,
			 struct gt_arg *out)
{
	uint32_t stride;

	if (!n)
		return 0;
	if (!in)
		return -EINVAL;
	if (n > GPUTRACE_ARGS_MAX)
		return -E2BIG;
	memcpy(&stride, in, sizeof(stride));
	for (uint32_t i = 0; i < n; i++) {
		struct gputrace_arg a;
		int rc = sized_copy(&a, sizeof(a), (const char *)in + (size_t)i * stride,
				    ABI1_ARG_SIZE);

		if (rc)
			return rc;
		if (!a.key)
			return -EINVAL;
		out[i].key = plugin_str(a.key);
		out[i].type = a.type;
		switch (a.type) {
		case GPUTRACE_ARG_I64:
		case GPUTRACE_ARG_U64:
		case GPUTRACE_ARG_F64:
			out[i].v.u = a.value.u;
			break;
		case GPUTRACE_ARG_HEX:
			if (numbers_only)
				return -EINVAL;
			out[i].v.u = a.value.u;
			break;
		case GPUTRACE_ARG_STR:
			if (numbers_only || !a.value.s)
				return -EINVAL;
			out[i].v.u = plugin_str(a.value.s);
			break;
		default:
			return -EINVAL;
		}
	}
	return (int)n;
}

static uint64_t builder_now_ns(void)
{
	return gt_clock_ns();
}

static int32_t builder__add_row(struct gputrace_builder *b, uint32_t device, uint32_t track,
				bool queue)
{
	uint32_t n = atomic_load_explicit(&b->nrows, memory_order_relaxed);

	for (uint32_t i = 0; i < n; i++)
		if (b->rows[i].track == track && b->rows[i].queue == queue)
			return (int32_t)i + 1;
	if (n == PLUGIN_ROWS_MAX)
		return -ENOSPC;
	b->rows[n] = (struct plugin_row){ .device = device, .track = track, .queue = queue };
	atomic_store_explicit(&b->nrows, n + 1, memory_order_release);
	return (int32_t)n + 1;
}

static int32_t builder_device(gputrace_builder *handle, const char *name)
{
	struct gputrace_builder *b = builder__get(handle);
	uint32_t device;
	int32_t row;

	if (!b)
		return -ECANCELED;
	if (!name || !name[0])
		return -EINVAL;
	pthread_mutex_lock(&b->rows_lock);
	device = gt_device_row(name);
	row = builder__add_row(b, device, gt_device_track(device), false);
	pthread_mutex_unlock(&b->rows_lock);
	return row;
}

static int32_t builder_queue(gputrace_builder *handle, int32_t device_row, const char *name,
			     int32_t sort)
{
	struct gputrace_builder *b = builder__get(handle);
	const struct plugin_row *dev;
	int32_t row;

	if (!b)
		return -ECANCELED;
	dev = builder__row(b, device_row);
	if (!dev || dev->queue || !name || !name[0])
		return -EINVAL;
	pthread_mutex_lock(&b->rows_lock);
	row = builder__add_row(b, dev->device, gt_queue_row(dev->device, name, sort), true);
	pthread_mutex_unlock(&b->rows_lock);
	return row;
}

static int builder__event(gputrace_builder *handle, const struct gputrace_event *in, bool span)
{
	struct gputrace_builder *b = builder__get(handle);
	struct gputrace_event e;
	struct gt_arg args[GPUTRACE_ARGS_MAX];
	struct gt_event ev = { 0 };
	int nargs, rc;

	if (!b)
		return -ECANCELED;
	rc = sized_copy(&e, sizeof(e), in, ABI1_EVENT_SIZE);
	if (rc)
		return rc;
	if (!one_kind(e.kind) || !e.name || (span && e.end_ns < e.start_ns))
		return -EINVAL;
	if (!(e.kind & b->kinds))
		return 1;
	if (e.row == GPUTRACE_ROW_HOST) {
		if (e.tid < 0)
			return -EINVAL;
		ev.type = span ? GT_EV_HOST_SPAN : GT_EV_INSTANT;
		ev.track = (uint32_t)e.tid;
		/* Device spans may point at it: the writer keeps launches for flows. */
		if (span && e.correlation)
			ev.flags = GT_EVF_LAUNCH;
	} else {
		const struct plugin_row *row = builder__row(b, e.row);

		if (!row || (span && !row->queue))
			return -EINVAL;
		ev.type = span ? GT_EV_DEVICE_SPAN : GT_EV_INSTANT;
		ev.flags = span ? 0 : GT_EVF_DEVICE;
		ev.track = row->track;
	}
	nargs = builder__args(e.args, e.nargs, false, args);
	if (nargs < 0)
		return nargs;
	ev.start_ns = e.start_ns;
	ev.end_ns = span ? e.end_ns : e.start_ns;
	ev.corr = e.correlation ? gt_corr_foreign(b->corr_ns, e.correlation) : 0;
	ev.name = plugin_str(e.name);
	ev.cat = e.category ? plugin_str(e.category) : b->kind_cat[__builtin_ctz(e.kind)];
	return gt_emit(&ev, args, (unsigned)nargs);
}

static int builder_span(gputrace_builder *handle, const struct gputrace_event *ev)
{
	return builder__event(handle, ev, true);
}

static int builder_instant(gputrace_builder *handle, const struct gputrace_event *ev)
{
	return builder__event(handle, ev, false);
}

static int builder_counter(gputrace_builder *handle, const struct gputrace_counter *in)
{
	struct gputrace_builder *b = builder__get(handle);
	struct gputrace_counter c;
	struct gt_arg values[GPUTRACE_ARGS_MAX];
	struct gt_event ev = { 0 };
	const struct plugin_row *row;
	int n, rc;

	if (!b)
		return -ECANCELED;
	rc = sized_copy(&c, sizeof(c), in, ABI1_COUNTER_SIZE);
	if (rc)
		return rc;
	row = builder__row(b, c.row);
	if (!row || row->queue || !c.name || !c.nvalues)
		return -EINVAL;
	if (!(b->kinds & GPUTRACE_KIND_COUNTER))
		return 1;
	n = builder__args(c.values, c.nvalues, true, values);
	if (n < 0)
		return n;
	ev.type = GT_EV_COUNTER;
	ev.track = row->track;
	ev.start_ns = ev.end_ns = c.time_ns;
	ev.name = plugin_str(c.name);
	ev.cat = GT_S_CAT_COUNTER;
	return gt_emit(&ev, values, (unsigned)n);
}

static void builder_log(gputrace_builder *handle, int level, const char *msg)
{
	struct gputrace_builder *b = builder__get(handle);
	char line[512];
	size_t i;

	if (!b || !msg)
		return;
	/* One line, whatever the plug-in sends. */
	for (i = 0; msg[i] && i < sizeof(line) - 1; i++)
		line[i] = (msg[i] == '\n' || msg[i] == '\r') ? ' ' : msg[i];
	line[i] = '\0';
	if (level < GT_LOG_ERROR)
		level = GT_LOG_ERROR;
	if (level > GT_LOG_DEBUG)
		level = GT_LOG_DEBUG;
	gt_log(level, "plug-in %s: %s", b->name, line);
}

static const struct gputrace_builder_api builder_api = {
	.size = sizeof(struct gputrace_builder_api),
	.abi_version = GPUTRACE_PLUGIN_ABI_VERSION,
	.now_ns = builder_now_ns,
	.device = builder_device,
	.queue = builder_queue,
	.span = builder_span,
	.instant = builder_instant,
	.counter = builder_counter,
	.log = builder_log,
};

static void builder__open(struct gputrace_builder *b, const char *name, uint32_t kinds,
			  unsigned index)
{
	char cat[PLUGIN_NAME_MAX + 16];

	pthread_mutex_init(&b->rows_lock, NULL);
	atomic_store_explicit(&b->nrows, 0, memory_order_relaxed);
	snprintf(b->name, sizeof(b->name), "%s", name);
	b->kinds = kinds;
	b->corr_ns = GT_CORR_NS_PLUGIN(index);
	/* Host calls of a vendor's runtime get the vendor's own category, as
	 * cuda_runtime and ze_api do. */
	snprintf(cat, sizeof(cat), "%s_runtime", name);
	b->kind_cat[GT_KIND_BIT_RUNTIME] = gt_str_intern(cat);
	snprintf(cat, sizeof(cat), "%s_driver", name);
	b->kind_cat[GT_KIND_BIT_DRIVER] = gt_str_intern(cat);
	b->kind_cat[GT_KIND_BIT_KERNEL] = GT_S_CAT_KERNEL;
	b->kind_cat[GT_KIND_BIT_MEMCPY] = GT_S_CAT_GPU_MEMCPY;
	b->kind_cat[GT_KIND_BIT_MEMSET] = GT_S_CAT_GPU_MEMSET;
	b->kind_cat[GT_KIND_BIT_SYNC] = GT_S_CAT_GPU_SYNC;
	b->kind_cat[GT_KIND_BIT_ANNOTATION] = GT_S_CAT_USER_ANNOTATION;
	b->kind_cat[GT_KIND_BIT_COUNTER] = GT_S_CAT_COUNTER;
	b->kind_cat[GT_KIND_BIT_OVERHEAD] = GT_S_CAT_OVERHEAD;
	atomic_store_explicit(&b->open, true, memory_order_release);
}

/* ---- GPUTRACE_PLUGIN_CONFIG: "name:text;name:text" ---- */

/* The text after "<name>:" in the entry for name, or "". */
static void plugin_config_for(const char *name, char *out, size_t outlen)
{
	const char *all = getenv("GPUTRACE_PLUGIN_CONFIG");
	size_t name_len = strlen(name);

	out[0] = '\0';
	while (all && *all) {
		const char *end = strchrnul(all, ';');

		if ((size_t)(end - all) > name_len && !strncmp(all, name, name_len) &&
		    all[name_len] == ':') {
			snprintf(out, outlen, "%.*s", (int)(end - all - name_len - 1),
				 all + name_len + 1);
			return;
		}
		all = *end ? end + 1 : end;
	}
}

/* Entries that name no loaded plug-in are reported (a typo would otherwise
 * silently leave a plug-in unconfigured). */
static void plugin_config_check(void)
{
	const char *all = getenv("GPUTRACE_PLUGIN_CONFIG");

	while (all && *all) {
		const char *end = strchrnul(all, ';');
		const char *colon = memchr(all, ':', (size_t)(end - all));
		bool found = false;

		if (end == all) {
			all = *end ? end + 1 : end;
			continue;
		}
		if (!colon) {
			pr_err("GPUTRACE_PLUGIN_CONFIG: entry '%.*s' lacks a plug-in name; "
			       "accepted: name:text;name:text",
			       (int)(end - all), all);
		} else {
			for (unsigned i = 0; i < nplugins && !found; i++)
				found = strlen(plugins[i].builder.name) == (size_t)(colon - all) &&
					!strncmp(plugins[i].builder.name, all, (size_t)(colon - all));
			if (!found)
				pr_err("GPUTRACE_PLUGIN_CONFIG: no plug-in named '%.*s' was loaded",
				       (int)(colon - all), all);
		}
		all = *end ? end + 1 : end;
	}
}

/* ---- calling plug-ins ---- */

/* Plug-in code runs inside the guard: what it calls through wrapped APIs
 * is gputrace's own work, not the program's. */
#define PLUGIN_CALL(expr)                                                          \
	({                                                                         \
		bool guarded_ = gt_guard_enter();                                  \
		__typeof__(expr) rc_ = (expr);                                     \
		if (guarded_)                                                      \
			gt_guard_leave();                                          \
		rc_;                                                               \
	})

static const char *rc_text(int rc)
{
	return rc < 0 && rc > -4096 ? strerror(-rc) : "not a negative errno";
}

/* A call failed: one line, and the plug-in is never called again. */
static void plugin__fail(struct plugin *p, const char *call, int rc)
{
	atomic_store_explicit(&p->builder.open, false, memory_order_release);
	p->live = false;
	pr_err("plug-in %s (%s): %s() failed: %d (%s); plug-in disabled, tracing goes on",
	       p->path, p->builder.name, call, rc, rc_text(rc));
}

static bool valid_name(const char *name)
{
	size_t len = name ? strnlen(name, PLUGIN_NAME_MAX) : 0;

	if (!len || len >= PLUGIN_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= 'A' && name[i] <= 'Z') ||
		      (name[i] >= '0' && name[i] <= '9') || name[i] == '_' || name[i] == '-'))
			return false;
	return true;
}

/* Register and check the table; returns false after reporting why not. */
static bool plugin__register(const char *path, void *dl, struct gputrace_plugin *ops)
{
	gputrace_plugin_register_fn reg;
	int rc;

	*(void **)&reg = dlsym(dl, GPUTRACE_PLUGIN_REGISTER_SYMBOL);
	if (!reg) {
		pr_err("plug-in %s: not a gputrace plug-in: it lacks the symbol %s; skipped", path,
		       GPUTRACE_PLUGIN_REGISTER_SYMBOL);
		return false;
	}
	memset(ops, 0, sizeof(*ops));
	ops->size = sizeof(*ops);
	ops->abi_version = GPUTRACE_PLUGIN_ABI_VERSION;
	rc = PLUGIN_CALL(reg(ops));
	if (rc) {
		pr_err("plug-in %s: %s() failed: %d; skipped", path,
		       GPUTRACE_PLUGIN_REGISTER_SYMBOL, rc);
		return false;
	}
	if (ops->abi_version < 1 || ops->abi_version > GPUTRACE_PLUGIN_ABI_VERSION) {
		pr_err("plug-in %s: built for plug-in ABI version %u, this gputrace supports "
		       "1 to %d: rebuild it against this gputrace's gputrace_plugin.h; skipped",
		       path, ops->abi_version, GPUTRACE_PLUGIN_ABI_VERSION);
		return false;
	}
	if (ops->size < ABI1_PLUGIN_SIZE) {
		pr_err("plug-in %s: its table is %u bytes, ABI version 1 needs %zu; skipped", path,
		       ops->size, ABI1_PLUGIN_SIZE);
		return false;
	}
	if (!ops->query || !ops->create) {
		pr_err("plug-in %s: its table lacks %s(), which is required; skipped", path,
		       !ops->query ? "query" : "create");
		return false;
	}
	return true;
}

/*
 * dlopen() maps a shared object's segments as its headers say; a file cut
 * short (a copy interrupted, a full disk) maps pages past its end and the
 * first touch is SIGBUS, in the program. Check the headers against the
 * file's size first. NULL when whole, else what is wrong.
 */
static const char *elf_not_whole(const char *path)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	struct stat st;
	const char *why = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL; /* dlopen says why */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return NULL;
	}
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64) {
		why = NULL; /* not ELF at all: dlopen refuses it safely, and says why */
	} else if (eh.e_phentsize != sizeof(ph) ||
		   eh.e_phoff + (uint64_t)eh.e_phnum * sizeof(ph) > (uint64_t)st.st_size) {
		why = "its program headers lie past its end (a truncated file?)";
	} else {
		for (unsigned i = 0; i < eh.e_phnum && !why; i++) {
			if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) !=
			    (ssize_t)sizeof(ph))
				why = "its program headers cannot be read";
			else if (ph.p_type == PT_LOAD &&
				 ph.p_offset + ph.p_filesz > (uint64_t)st.st_size)
				why = "a segment lies past its end (a truncated file?)";
		}
	}
	close(fd);
	return why;
}

static void plugin__load(const char *path)
{
	const char *broken;
	struct gputrace_plugin ops;
	struct gputrace_plugin_info info = { .size = sizeof(info) };
	struct gputrace_plugin_setup setup = { .size = sizeof(setup) };
	char config[PLUGIN_CONFIG_MAX];
	struct plugin *p;
	uint32_t kinds;
	void *dl;
	int rc;

	if (nplugins == PLUGINS_MAX) {
		pr_err("plug-in %s: more than %d plug-ins; skipped", path, PLUGINS_MAX);
		return;
	}
	if ((broken = elf_not_whole(path))) {
		pr_err("plug-in %s: cannot load it: %s: %s; skipped", path, path, broken);
		return;
	}
	/* Never dlclose()d: once its code has run, threads or handlers of the
	 * plug-in may still point into it. */
	dl = PLUGIN_CALL(dlopen(path, RTLD_NOW | RTLD_LOCAL));
	if (!dl) {
		pr_err("plug-in %s: cannot load it: %s; skipped", path, dlerror());
		return;
	}
	for (unsigned i = 0; i < nplugins; i++) {
		if (plugins[i].dl == dl) {
			pr_dbg("plug-in %s: already loaded as %s", path, plugins[i].path);
			return;
		}
	}
	if (!plugin__register(path, dl, &ops))
		return;

	rc = PLUGIN_CALL(ops.query(&info));
	if (rc < 0) {
		pr_err("plug-in %s: query() failed: %d (%s); skipped", path, rc, rc_text(rc));
		return;
	}
	if (!valid_name(info.name)) {
		pr_err("plug-in %s: query() gave no valid name (1 to %d of A-Z a-z 0-9 _ -); "
		       "skipped", path, PLUGIN_NAME_MAX - 1);
		return;
	}
	kinds = info.kinds & gt_cfg.kinds;
	if (!kinds) {
		pr_info("plug-in %s (%s): none of its activity kinds is enabled; not loaded", path,
			info.name);
		return;
	}

	p = &plugins[nplugins];
	p->ops = ops;
	p->dl = dl;
	p->path = strdup(path);
	if (!p->path) {
		pr_err("plug-in %s: out of memory; skipped", path);
		return;
	}
	builder__open(&p->builder, info.name, kinds, nplugins);
	nplugins++;

	plugin_config_for(info.name, config, sizeof(config));
	setup.abi_version = GPUTRACE_PLUGIN_ABI_VERSION;
	setup.kinds = kinds;
	setup.config = config;
	setup.path = p->path;
	setup.api = &builder_api;
	setup.builder = &p->builder;
	rc = PLUGIN_CALL(ops.create(&setup, &p->state));
	if (rc < 0) {
		plugin__fail(p, "create", rc);
		return;
	}
	p->live = true;
	if (ops.start) {
		rc = PLUGIN_CALL(ops.start(p->state));
		if (rc < 0) {
			plugin__fail(p, "start", rc);
			return;
		}
	}
	pr_dbg("plug-in %s (%s%s%s): started, kinds 0x%x", path, info.name,
	       info.version ? " " : "", info.version ? info.version : "", kinds);
}

static int so_file(const struct dirent *d)
{
	size_t len = strlen(d->d_name);

	return len > 3 && !strcmp(d->d_name + len - 3, ".so") && d->d_type != DT_DIR;
}

static void plugins__scan_dir(const char *dir)
{
	struct dirent **names;
	char path[PATH_MAX];
	int n;

	n = scandir(dir, &names, so_file, alphasort);
	if (n < 0) {
		pr_err("GPUTRACE_PLUGIN_PATH: cannot read directory %s: %s; no plug-ins from it",
		       dir, strerror(errno));
		return;
	}
	for (int i = 0; i < n; i++) {
		if (snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name) <
		    (int)sizeof(path))
			plugin__load(path);
		free(names[i]);
	}
	free(names);
}

/* ---- the backend ---- */

static int plugins_init(void)
{
	char dirs[sizeof(gt_cfg.plugin_path)];
	char *save = NULL;

	if (!gt_cfg.plugin_path[0])
		return 0;
	snprintf(dirs, sizeof(dirs), "%s", gt_cfg.plugin_path);
	pthread_mutex_lock(&calls_lock);
	for (char *dir = strtok_r(dirs, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		struct stat st;

		/* A plug-in file named directly is taken as it is. */
		if (!stat(dir, &st) && S_ISREG(st.st_mode))
			plugin__load(dir);
		else
			plugins__scan_dir(dir);
	}
	pthread_mutex_unlock(&calls_lock);
	plugin_config_check();
	return 0;
}

/* Exit must not hang on a plug-in stuck in a call: wait a bounded time. */
static bool calls_lock_bounded(void)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += PLUGIN_LOCK_MS / 1000;
	if (!pthread_mutex_timedlock(&calls_lock, &until))
		return true;
	pr_err("plug-ins: a plug-in call is still running after %d ms; "
	       "the others are not stopped", PLUGIN_LOCK_MS);
	return false;
}

static void plugins__stop_locked(void)
{
	for (unsigned i = 0; i < nplugins; i++) {
		struct plugin *p = &plugins[i];
		int rc;

		if (!p->live || p->stopped)
			continue;
		p->stopped = true;
		if (!p->ops.stop)
			continue;
		rc = PLUGIN_CALL(p->ops.stop(p->state));
		if (rc < 0)
			plugin__fail(p, "stop", rc);
	}
}

static void plugins_stop(void)
{
	if (!nplugins || !calls_lock_bounded())
		return;
	plugins__stop_locked();
	pthread_mutex_unlock(&calls_lock);
}

static void plugins_flush(bool final)
{
	if (!nplugins)
		return;
	if (final) {
		if (!calls_lock_bounded())
			return;
		/* Stop first if the exit path did not: the final flush must be last. */
		plugins__stop_locked();
	} else if (pthread_mutex_trylock(&calls_lock)) {
		return; /* stopping now; the final flush follows */
	}
	for (unsigned i = 0; i < nplugins; i++) {
		struct plugin *p = &plugins[i];
		int rc;

		if (!p->live || !p->ops.flush)
			continue;
		rc = PLUGIN_CALL(p->ops.flush(p->state, final));
		if (rc < 0)
			plugin__fail(p, "flush", rc);
	}
	if (final) {
		for (unsigned i = 0; i < nplugins; i++) {
			struct plugin *p = &plugins[i];

			if (!p->live)
				continue;
			p->live = false;
			atomic_store_explicit(&p->builder.open, false, memory_order_release);
			if (p->ops.destroy)
				PLUGIN_CALL((p->ops.destroy(p->state), 0));
		}
	}
	pthread_mutex_unlock(&calls_lock);
}

/* The parent's plug-in threads do not exist in the child, and their state
 * may be mid-update: the child records nothing from plug-ins. */
static void plugins_atfork_child(void)
{
	pthread_mutex_init(&calls_lock, NULL);
	for (unsigned i = 0; i < nplugins; i++) {
		atomic_store_explicit(&plugins[i].builder.open, false, memory_order_release);
		pthread_mutex_init(&plugins[i].builder.rows_lock, NULL);
		plugins[i].live = false;
	}
}

static const struct gt_backend plugins_backend = {
	.name = "plugins",
	.init = plugins_init,
	.flush = plugins_flush,
	.stop = plugins_stop,
	.atfork_child = plugins_atfork_child,
};
GT_BACKEND_REGISTER(plugins_backend);
