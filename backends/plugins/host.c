// SPDX-License-Identifier: MIT
/*
 * The plug-in backend: loads the vendor plug-ins of GPUTRACE_PLUGIN_PATH
 * (every *.so of each directory, in name order, or a file named directly;
 * ABI in backends/plugins/gputrace_plugin.h), then those of Kineto's
 * KINETO_PLUGIN_LIB_DIR_PATH (kineto.c; a Kineto plug-in on
 * GPUTRACE_PLUGIN_PATH is taken too), and calls them; builder.c turns
 * their trace-builder calls into events. To the rest of gputrace it is one
 * more struct gt_backend.
 *
 * A broken plug-in costs one stderr line and nothing else: every failure
 * (load, symbol, ABI, a call returning an error) marks it failed, and a
 * failed plug-in is never called again. A call that never returns is given
 * up on (bounded calls, below) and fails the plug-in the same way. Builders
 * live in a static array and are never freed, so a failed plug-in's stray
 * thread calling its builder finds a closed builder, not freed memory.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "backends/plugins/internal.h"
#include "inject/clock.h"
#include "inject/cstr.h"
#include "inject/state.h"
#include "backends/plugins/kineto_plugin.h"
#include "inject/tables.h"

/* The least a plug-in may pass: ABI 1's table size (later versions only append). */
#define ABI1_PLUGIN_SIZE  sizeof(struct gputrace_plugin)

#define PLUGIN_CONFIG_MAX 4096
#define PLUGIN_LOCK_MS   2000 /* exit never waits longer on a plug-in call */
/* A call the drain thread waits for (a drain cycle's flush): the trace's
 * drain stands still meanwhile, so it is given up soon. */
#define PLUGIN_DRAIN_QUIET_MS 1000
/* A call the exit waits for (stop; a Kineto profiler's last batch): as the
 * last drain, given up after this long without anything handed over. */
#define PLUGIN_EXIT_QUIET_MS  5000
/* A capture window's start, stop and hand-over, a Kineto cycle's: a stop may
 * rightly take seconds (a profiler flushing its device buffers, waiting for
 * long kernels) and hands nothing over meanwhile. */
#define PLUGIN_WINDOW_QUIET_MS 5000
/* destroy, after the trace is written: it hands nothing over, and the exit
 * waits for it */
#define PLUGIN_DESTROY_MS 1000

/* How long a bounded call may take: quiet_ms without anything handed over,
 * and most_ms in all, however much its threads hand over meanwhile (a
 * thread of the plug-in's may stream for good while the call is stuck). */
struct call_bound {
	unsigned quiet_ms, most_ms;
};
/* A drain cycle's flush: one stuck as the program ends is given up on
 * before the last drain is (the exit waits 2 s for the calls lock, then 5 s
 * for a drain that makes no progress), and the others still end well. */
static const struct call_bound drain_bound = { PLUGIN_DRAIN_QUIET_MS, 5000 };
/* the exit's (an exec's) stop: a profiler's last batch may be big, and the
 * drain goes on writing it */
static const struct call_bound exit_bound = { PLUGIN_EXIT_QUIET_MS, 30000 };
static const struct call_bound window_bound = { PLUGIN_WINDOW_QUIET_MS, 10000 };
static const struct call_bound destroy_bound = { PLUGIN_DESTROY_MS, PLUGIN_DESTROY_MS };

GT_TABLE_SHARED(struct plugin, plugins, PLUGINS_MAX);
static unsigned nplugins GT_STARTUP_STATE;
/* One plug-in call at a time (drain thread vs. exit); never held while a
 * plug-in thread could need it: builder calls do not take it. */
static pthread_mutex_t calls_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- GPUTRACE_PLUGIN_CONFIG: "name:text;name:text" ---- */

/* The text after "<name>:" in the entry for name, or "": also for a text
 * too long for out, said in one line (a text cut short would configure the
 * plug-in as nobody asked). */
static void plugin_config_for(const char *name, char *out, size_t outlen)
{
	const char *all = getenv("GPUTRACE_PLUGIN_CONFIG");
	size_t name_len = strlen(name);

	out[0] = '\0';
	while (all && *all) {
		const char *end = strchrnul(all, ';');
		size_t len = (size_t)(end - all);

		if (len > name_len && !strncmp(all, name, name_len) && all[name_len] == ':') {
			len -= name_len + 1;
			if (len >= outlen) {
				pr_err("GPUTRACE_PLUGIN_CONFIG: the entry for '%s' is longer than %zu "
				       "bytes (%zu); the plug-in gets no configuration (\"\")", name,
				       outlen - 1, len);
				return;
			}
			memcpy(out, all + name_len + 1, len);
			out[len] = '\0';
			return;
		}
		all = *end ? end + 1 : end;
	}
}

/* Does an entry before `before` in all name the plug-in name (len bytes)? */
static bool plugin_config_named_before(const char *all, const char *before, const char *name,
				       size_t len)
{
	while (all < before) {
		const char *end = strchrnul(all, ';');

		if ((size_t)(end - all) > len && !strncmp(all, name, len) && all[len] == ':')
			return true;
		all = *end ? end + 1 : end;
	}
	return false;
}

/* Entries that name no loaded plug-in are reported (a typo would otherwise
 * silently leave a plug-in unconfigured), and so are a plug-in's entries
 * after its first, which it never gets ("npu:a=1;npu:b=2" gave it "a=1"). */
static void plugin_config_check(void)
{
	const char *start = getenv("GPUTRACE_PLUGIN_CONFIG"), *all = start;

	while (all && *all) {
		const char *end = strchrnul(all, ';');
		const char *colon = memchr(all, ':', (size_t)(end - all));
		bool found = false;

		if (end == all) {
			all = *end ? end + 1 : end;
			continue;
		}
		if (!colon || colon == all) {
			pr_err("GPUTRACE_PLUGIN_CONFIG: entry '%.*s' %s; accepted: name:text;name:text",
			       (int)(end - all), all,
			       colon ? "names no plug-in before its ':'"
				     : "has no ':' after a plug-in's name");
		} else {
			for (unsigned i = 0; i < nplugins && !found; i++)
				found = strlen(plugins[i].builder.name) == (size_t)(colon - all) &&
					!strncmp(plugins[i].builder.name, all, (size_t)(colon - all));
			if (!found)
				pr_err("GPUTRACE_PLUGIN_CONFIG: no plug-in named '%.*s' was loaded",
				       (int)(colon - all), all);
			else if (plugin_config_named_before(start, all, all, (size_t)(colon - all)))
				pr_err("GPUTRACE_PLUGIN_CONFIG: entry '%.*s' is not used: the plug-in "
				       "'%.*s' gets its first entry's text only", (int)(end - all), all,
				       (int)(colon - all), all);
		}
		all = *end ? end + 1 : end;
	}
}

/* ---- calling plug-ins ---- */

static const char *rc_text(int rc)
{
	return rc < 0 && rc > -4096 ? strerror(-rc) : "not a negative errno";
}

/* A call failed: one line, and the plug-in is never called again. */
void plugin__fail(struct plugin *p, const char *call, int rc)
{
	atomic_store_explicit(&p->builder.open, false, memory_order_release);
	p->live = false;
	if (!atomic_exchange(&p->reported, true))
		pr_err("plug-in %s (%s): %s() failed: %d (%s); plug-in disabled, tracing goes on",
		       p->path, p->label, call, rc, rc_text(rc));
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
static bool plugin__register(const char *path, gputrace_plugin_register_fn reg,
			     struct gputrace_plugin *ops)
{
	int rc;

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
	/* O_NONBLOCK: the open of a FIFO named *.so (and dlopen's) waited for a
	 * writer, and the program hung before main without a word */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return NULL; /* dlopen says why */
	if (fstat(fd, &st)) {
		close(fd);
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		/* a directory: dlopen says so, safely */
		return S_ISDIR(st.st_mode) ? NULL : "not a regular file (a FIFO, a device, a socket)";
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

struct plugin *plugin__add(const char *path, void *dl, const struct gputrace_plugin *ops,
			   const char *name, uint32_t kinds)
{
	struct plugin *p;

	if (nplugins == PLUGINS_MAX) {
		pr_err("plug-in %s: more than %d plug-ins; skipped", path, PLUGINS_MAX);
		return NULL;
	}
	p = &plugins[nplugins];
	p->ops = *ops;
	p->dl = dl;
	p->path = strdup(path);
	if (!p->path) {
		pr_err("plug-in %s: out of memory; skipped", path);
		return NULL;
	}
	builder__open(&p->builder, name, kinds, nplugins);
	p->label = p->builder.name;
	nplugins++;
	return p;
}

static int call_start(struct plugin *p, int arg);
static int plugin__call_bounded(struct plugin *p, const char *call,
				int (*fn)(struct plugin *p, int arg), int arg,
				const struct call_bound *bound, bool for_drain);

/* A gputrace plug-in: register, query, create, start. */
static void plugin__start(const char *path, void *dl, gputrace_plugin_register_fn reg)
{
	struct gputrace_plugin ops;
	struct gputrace_plugin_info info = { .size = sizeof(info) };
	struct gputrace_plugin_setup setup = { .size = sizeof(setup) };
	char config[PLUGIN_CONFIG_MAX];
	struct plugin *p;
	uint32_t kinds;
	int rc;

	if (!plugin__register(path, reg, &ops))
		return;

	rc = PLUGIN_CALL(ops.query(&info));
	if (rc < 0) {
		pr_err("plug-in %s: query() failed: %d (%s); skipped", path, rc, rc_text(rc));
		return;
	}
	if (!valid_name(info.name)) {
		/* the name it gave, so the vendor sees what is wrong with it: cut, and
		 * no control byte (an escape sequence) reaches the terminal */
		char shown[48];
		size_t n = 0;

		for (; info.name && info.name[n] && n < sizeof(shown) - 4; n++)
			shown[n] = (unsigned char)info.name[n] < ' ' || info.name[n] == 0x7f
					   ? '?' : info.name[n];
		if (info.name && info.name[n])
			memcpy(shown + n, "...", 3), n += 3;
		shown[n] = '\0';
		if (info.name)
			pr_err("plug-in %s: query() gave the name \"%s\": not 1 to %d of A-Z a-z "
			       "0-9 _ -; skipped", path, shown, PLUGIN_NAME_MAX - 1);
		else
			pr_err("plug-in %s: query() gave no name (NULL): 1 to %d of A-Z a-z 0-9 _ - "
			       "are needed; skipped", path, PLUGIN_NAME_MAX - 1);
		return;
	}
	/* two copies of one plug-in (in two directories of the path): each
	 * event twice, on the same rows; and a name keys its configuration */
	for (unsigned i = 0; i < nplugins; i++)
		if (!strcmp(plugins[i].builder.name, info.name)) {
			pr_err("plug-in %s: a plug-in named '%s' is loaded already, from %s; "
			       "skipped (a name is one plug-in's, its key in "
			       "GPUTRACE_PLUGIN_CONFIG)", path, info.name, plugins[i].path);
			return;
		}
	if (!(info.kinds & GPUTRACE_KIND_ALL)) {
		/* a vendor's slip, not a choice of the user's: said at any log level */
		pr_err("plug-in %s (%s): query() declared no activity kind (kinds = %#x: "
		       "GPUTRACE_KIND_* bits); skipped", path, info.name, info.kinds);
		return;
	}
	kinds = info.kinds & gt_cfg.kinds;
	if (!kinds) {
		pr_info("plug-in %s (%s): none of its activity kinds is enabled; not loaded", path,
			info.name);
		return;
	}
	p = plugin__add(path, dl, &ops, info.name, kinds);
	if (!p)
		return;

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
	if (plugins__paused()) {
		p->stopped = true;
		p->unstarted = true;
		pr_dbg("plug-in %s (%s): created; starts with the first capture window", path,
		       info.name);
		return;
	}
	/* bounded as a window's start is: the program waits for it (create,
	 * on the program's own thread as documented, cannot be) */
	if (ops.start) {
		rc = plugin__call_bounded(p, "start", call_start, 0, &window_bound, false);
		if (rc < 0) {
			plugin__fail(p, "start", rc);
			return;
		}
	}
	pr_dbg("plug-in %s (%s%s%s): started, kinds 0x%x", path, info.name,
	       info.version ? " " : "", info.version ? info.version : "", kinds);
}

/* kineto_dir: found in KINETO_PLUGIN_LIB_DIR_PATH, where Kineto passes over
 * libraries that are no plug-in without a word. */
static void plugin__load(const char *path, bool kineto_dir)
{
	const char *broken;
	void *dl, *reg, *kreg;

	/* In Kineto's directory only a library that exports its register
	 * symbol counts: the rest are passed over silently even past the limit,
	 * so that one is looked for first (Kineto dlopen()s them all too). */
	if (nplugins == PLUGINS_MAX && !kineto_dir) {
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
	reg = dlsym(dl, GPUTRACE_PLUGIN_REGISTER_SYMBOL);
	kreg = reg ? NULL : dlsym(dl, KINETO_PLUGIN_REGISTER_SYMBOL);
	if (!reg && !kreg && kineto_dir) {
		pr_dbg("plug-in %s: no %s: not a Kineto plug-in; passed over", path,
		       KINETO_PLUGIN_REGISTER_SYMBOL);
	} else if (nplugins == PLUGINS_MAX) {
		pr_err("plug-in %s: more than %d plug-ins; skipped", path, PLUGINS_MAX);
	} else if (reg) {
		gputrace_plugin_register_fn fn;

		*(void **)&fn = reg;
		plugin__start(path, dl, fn);
	} else if (kreg) {
		kineto__load(path, dl, kreg);
	} else {
		pr_err("plug-in %s: not a gputrace plug-in: it lacks the symbol %s (or Kineto's "
		       "%s); skipped", path, GPUTRACE_PLUGIN_REGISTER_SYMBOL,
		       KINETO_PLUGIN_REGISTER_SYMBOL);
	}
}

static int so_file(const struct dirent *d)
{
	size_t len = strlen(d->d_name);

	return len > 3 && !strcmp(d->d_name + len - 3, ".so") && d->d_type != DT_DIR;
}

/* var: the variable that named dir (for its error line). */
static void plugins__scan_dir(const char *var, const char *dir, bool kineto_dir)
{
	struct dirent **names;
	char path[PATH_MAX];
	int n;

	n = scandir(dir, &names, so_file, alphasort);
	if (n < 0) {
		pr_err("%s: cannot read directory %s: %s; no plug-ins from it", var, dir,
		       strerror(errno));
		return;
	}
	for (int i = 0; i < n; i++) {
		if (snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name) <
		    (int)sizeof(path))
			plugin__load(path, kineto_dir);
		free(names[i]);
	}
	free(names);
}

/* Every entry of a colon-separated list: a directory, or a plug-in file. */
static void plugins__scan_list(const char *var, const char *list, bool kineto_dir)
{
	char dirs[PATH_MAX * 4];
	char *save = NULL;

	if (snprintf(dirs, sizeof(dirs), "%s", list) >= (int)sizeof(dirs)) {
		pr_err("%s: longer than %zu bytes; no plug-ins from it", var, sizeof(dirs) - 1);
		return;
	}
	for (char *dir = strtok_r(dirs, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		struct stat st;

		/* A plug-in file named directly is taken as it is. */
		if (!stat(dir, &st) && S_ISREG(st.st_mode))
			plugin__load(dir, kineto_dir);
		else
			plugins__scan_dir(var, dir, kineto_dir);
	}
}

bool plugins__paused(void)
{
	return atomic_load(&gt_phase) == GT_PHASE_PAUSED;
}

bool plugins__lock_calls(unsigned timeout_ms)
{
	struct timespec until = gt_timespec_after_ms(CLOCK_REALTIME, timeout_ms);

	return !pthread_mutex_timedlock(&calls_lock, &until);
}

void plugins__unlock_calls(void)
{
	pthread_mutex_unlock(&calls_lock);
}

/* the plug-in of the last call made under calls_lock, for the line of a
 * wait for that lock that ran out */
static struct plugin *_Atomic plugin_in_call;

bool plugin__calling(struct plugin *p, const char *call)
{
	atomic_store(&p->calling, call);
	atomic_store(&plugin_in_call, p);
	return true;
}

/* ---- bounded calls ---- */

/*
 * A call the drain thread or the exit waits for runs on a caller thread of
 * ours, so that a plug-in stuck in it costs that plug-in, not the trace: the
 * waiter gives up once the call has handed nothing over for a while, says so
 * in one line, disables the plug-in, and leaves the thread stuck there (a
 * new one serves the next call).
 */
struct plugin_caller {
	pthread_mutex_t lock;
	pthread_cond_t cond; /* CLOCK_MONOTONIC */
	int (*fn)(struct plugin *p, int arg);
	struct plugin *p;
	int arg, rc;
	bool posted, taken, done, abandoned, for_drain, for_exit;
};

static struct plugin_caller *caller; /* under calls_lock: the one that serves */
/* the caller thread inside a plug-in call now (0: none): if it crashes there,
 * the call it holds the calls lock for never returns */
static _Atomic int call_tid;
/* to the thread being started (lifecycle__spawn passes no argument) */
static struct plugin_caller *_Atomic caller_handoff;

void plugin__progress(struct plugin *p)
{
	atomic_fetch_add_explicit(&p->progress, 1, memory_order_relaxed);
}


static void *caller_main(void *arg)
{
	struct plugin_caller *c = atomic_exchange(&caller_handoff, NULL);
	int me = (int)syscall(SYS_gettid);
	sigset_t all;

	(void)arg;
	lifecycle__thread_up();
	/* the program's signals are not ours; a plug-in's fault or abort is
	 * handled here as it was on the thread that waits */
	sigfillset(&all);
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGBUS);
	sigdelset(&all, SIGILL);
	sigdelset(&all, SIGFPE);
	sigdelset(&all, SIGABRT);
	pthread_sigmask(SIG_SETMASK, &all, NULL);
	if (!c)
		return NULL; /* a later thread took it */
	/* as on the drain thread: what the plug-in calls through our wrappers
	 * is our own work, not the program's (nor counted lost) */
	gt_in_tracer = 1;
	pthread_mutex_lock(&c->lock);
	for (;;) {
		int rc;

		while (!c->posted && !c->abandoned)
			pthread_cond_wait(&c->cond, &c->lock);
		if (c->abandoned)
			break;
		c->posted = false;
		c->taken = true;
		pthread_cond_broadcast(&c->cond);
		pthread_mutex_unlock(&c->lock);
		lifecycle__finish_for(c->for_exit);
		/* the drain waits for this call: no wait for room in a ring
		 * (ring_wait.c), which only the drain makes */
		gt_in_tracer = c->for_drain ? 2 : 1;
		atomic_store(&call_tid, me);
		rc = c->fn(c->p, c->arg);
		atomic_store(&call_tid, 0);
		gt_in_tracer = 1;
		lifecycle__finish_for(false);
		pthread_mutex_lock(&c->lock);
		c->rc = rc;
		c->done = true;
		pthread_cond_broadcast(&c->cond);
	}
	pthread_mutex_unlock(&c->lock);
	/* given up on while in a call that returned at last: nobody else
	 * holds it now */
	free(c);
	return NULL;
}

/* Under calls_lock. NULL: no thread (calls are then made unbounded). */
static struct plugin_caller *caller_get(void)
{
	struct plugin_caller *c = caller;
	pthread_condattr_t cattr;
	sigset_t all, old;
	pthread_t thread;
	int err;

	if (c)
		return c;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	pthread_mutex_init(&c->lock, NULL);
	pthread_condattr_init(&cattr);
	pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cond, &cattr);
	pthread_condattr_destroy(&cattr);
	/* one still there was given up on before any thread took it (its thread
	 * did not start in time): nobody else will free it */
	free(atomic_exchange(&caller_handoff, c));
	/* made from a program thread at exit: no signal of the program's may
	 * run its handler on ours before its own mask is set (caller_main) */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = lifecycle__spawn(&thread, caller_main);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		if (atomic_exchange(&caller_handoff, NULL) == c)
			free(c);
		return NULL;
	}
	caller = c;
	return c;
}

/* A caller thread just made may take this long to run (a loaded machine, a
 * sanitizer's thread start): until it takes the call, the call has not begun. */
#define CALLER_START_MS 5000

/* A call given up on: one line naming it, and the plug-in is never called
 * again. One that began and never returned: what the plug-in hands over
 * later is counted lost (builder.c). One never made (our caller thread did
 * not start): not the plug-in's fault, but no call is possible. streaming:
 * it ran past bound->most_ms, its threads handing records over all along. */
static void plugin__hung(struct plugin *p, bool began, const struct call_bound *bound,
			 bool streaming)
{
	const char *call = atomic_load(&p->calling);

	if (began) {
		atomic_store(&p->hung, true); /* before the builder closes: its readers see both */
		kineto__given_up(p);
	}
	if (atomic_exchange(&p->reported, true))
		; /* the call failed on its thread meanwhile, and said so */
	else if (began && (!strcmp(call, "destroy") || !strcmp(call, "profilerDestroy")))
		pr_err("plug-in %s (%s): %s() did not return in %u ms; not waited for "
		       "(the trace was written before it)", p->path, p->label, call, bound->most_ms);
	else if (began && streaming)
		pr_err("plug-in %s (%s): %s() did not return in %u ms, though its threads kept "
		       "handing records over; plug-in disabled, tracing goes on", p->path,
		       p->label, call, bound->most_ms);
	else if (began)
		pr_err("plug-in %s (%s): %s() did not return: nothing handed over for %u ms; "
		       "plug-in disabled, tracing goes on", p->path, p->label, call,
		       bound->quiet_ms);
	else
		pr_err("plug-in %s (%s): %s() not made: gputrace's thread for plug-in calls "
		       "did not start in %d ms; plug-in disabled, tracing goes on",
		       p->path, p->label, call, CALLER_START_MS);
	plugin__fail(p, call, -ETIMEDOUT);
}

/* A call that crashed (its thread's fault ends the process): one line naming
 * the plug-in and the call, which the signal alone does not; the drain goes on
 * to the last cycle the fault's handler waits for. */
static void plugin__crashed(struct plugin *p)
{
	const char *call = atomic_load(&p->calling), *why = atomic_load(&gt_end_reason);

	atomic_store(&p->hung, true);
	if (!atomic_exchange(&p->reported, true))
		pr_err("plug-in %s (%s): %s() crashed (%s); the trace is written without it, "
		       "the process dies by the signal", p->path, p->label, call,
		       why ? why : "a fault");
	plugin__fail(p, call, -ECANCELED);
}

/*
 * fn(p, arg) on the caller thread, under calls_lock; call names it for the
 * line. Its rc, or -ETIMEDOUT (p disabled, its line said) once it handed
 * nothing over for bound->quiet_ms, or ran bound->most_ms, from when the
 * caller took it. for_drain: the drain thread is the waiter.
 */
static int plugin__call_bounded(struct plugin *p, const char *call,
				int (*fn)(struct plugin *p, int arg), int arg,
				const struct call_bound *bound, bool for_drain)
{
	struct plugin_caller *c = caller_get();
	unsigned quiet_ms = bound->quiet_ms;
	struct timespec until;
	uint64_t seen, quiet_since, taken_at;
	bool streaming = false, crashed = false;
	int rc;

	plugin__calling(p, call);
	if (!c)
		return fn(p, arg);
	pthread_mutex_lock(&c->lock);
	c->fn = fn;
	c->p = p;
	c->arg = arg;
	c->for_drain = for_drain;
	c->for_exit = lifecycle__finishing_here();
	c->done = false;
	c->taken = false;
	c->posted = true;
	pthread_cond_broadcast(&c->cond);
	seen = atomic_load(&p->progress);
	/* the quiet time runs from when the caller takes the call */
	until = gt_timespec_after_ms(CLOCK_MONOTONIC, CALLER_START_MS);
	while (!c->taken && !c->done &&
	       pthread_cond_timedwait(&c->cond, &c->lock, &until) != ETIMEDOUT)
		;
	/* looked at five times a quiet time: given up on within 1.2 of it
	 * after the last record handed over (a big batch streaming in is not
	 * stuck) */
	quiet_since = taken_at = gt_clock_gettime_ns();
	while (c->taken && !c->done) {
		uint64_t now, at;

		until = gt_timespec_after_ms(CLOCK_MONOTONIC, quiet_ms / 5 ? quiet_ms / 5 : 1);
		if (pthread_cond_timedwait(&c->cond, &c->lock, &until) != ETIMEDOUT || c->done)
			continue;
		/* the call crashed: it never returns, and its fault's handler
		 * waits for this drain (a quiet time's wait, and a line saying
		 * it hung, were all it got) */
		int tid = atomic_load(&call_tid);

		if (tid && lifecycle__crashed(tid)) {
			crashed = true;
			break;
		}
		now = atomic_load(&p->progress);
		at = gt_clock_gettime_ns();
		if (now != seen) {
			seen = now;
			quiet_since = at;
		} else if (at - quiet_since >= quiet_ms * 1000000ull) {
			break;
		}
		/* progress counts from any of its threads: one that streams for
		 * good must not keep a stuck call (and the drain) waiting */
		if (at - taken_at >= bound->most_ms * 1000000ull) {
			streaming = true;
			break;
		}
	}
	if (c->done) {
		rc = c->rc;
		pthread_mutex_unlock(&c->lock);
		return rc;
	}
	bool began = c->taken;

	c->abandoned = true; /* its thread frees it, if the call ever returns */
	pthread_mutex_unlock(&c->lock);
	caller = NULL;
	if (crashed)
		plugin__crashed(p);
	else
		plugin__hung(p, began, bound, streaming);
	return -ETIMEDOUT;
}

static int call_start(struct plugin *p, int arg)
{
	(void)arg;
	return PLUGIN_CALL(p->ops.start(p->state));
}

static int call_stop(struct plugin *p, int arg)
{
	(void)arg;
	return PLUGIN_CALL(p->ops.stop(p->state));
}

static int call_flush(struct plugin *p, int final)
{
	return PLUGIN_CALL(p->ops.flush(p->state, final));
}

/* Under calls_lock: p stopped (handing over what it recorded), then started
 * again, each call bounded as a window's are: a Kineto profiler's cycle
 * (kineto.c). 0, or the first call's error (said, p disabled). */
int plugins__restart_locked(struct plugin *p)
{
	int rc = plugin__call_bounded(p, "stop", call_stop, 0, &window_bound, false);

	if (!rc)
		rc = plugin__call_bounded(p, "start", call_start, 0, &window_bound, false);
	return rc;
}

/* Under calls_lock: p's first start (a Kineto profiler's, at process start),
 * bounded as a gputrace plug-in's is: a profilerStart that never returned
 * hung the program before main, with no line. 0, or its error (said, p
 * disabled). */
int plugins__start_locked(struct plugin *p)
{
	return plugin__call_bounded(p, "start", call_start, 0, &window_bound, false);
}

/* ---- the backend ---- */

GT_STARTUP_CODE static int plugins_init(void)
{
	/* no getenv: nothing of libc to bind at every start (cstr.h) */
	static const char kineto_var[] GT_STARTUP_CONST = KINETO_PLUGIN_LIB_DIR_PATH_ENV_VARIABLE;
	const char *kineto = gt_cstr_env(environ, kineto_var);
	const char *path = gt_cfg.plugin_path;
	bool listed = path && path[0];

	if (!listed && !(kineto && kineto[0]))
		return 0;
	pthread_mutex_lock(&calls_lock);
	if (listed)
		plugins__scan_list("GPUTRACE_PLUGIN_PATH", path, false);
	if (kineto && kineto[0])
		plugins__scan_list(KINETO_PLUGIN_LIB_DIR_PATH_ENV_VARIABLE, kineto, true);
	pthread_mutex_unlock(&calls_lock);
	plugin_config_check();
	kineto__started();
	/* plug-ins hand their records over in the drain cycle's flush: with
	 * one loaded, the cycle runs from the start; paused, the drain thread
	 * starts them when a window opens */
	if (nplugins && plugins__paused())
		gt_start_writer_paused();
	else if (nplugins)
		gt_start_writer();
	return 0;
}

/* Exit must not hang on a plug-in stuck in a call: wait a bounded time. */
static bool calls_lock_bounded(void)
{
	/* the exit and the final flush (the drain thread) wait for the same call */
	static atomic_bool said;
	struct plugin *p;
	int tid = atomic_load(&call_tid);

	/* the process dies by a crash inside the call under way: it will never
	 * return, so no waiting for it (and no line: the crash says it all) */
	if (tid && lifecycle__crashed(tid))
		return !pthread_mutex_trylock(&calls_lock);
	if (plugins__lock_calls(PLUGIN_LOCK_MS))
		return true;
	p = atomic_load(&plugin_in_call);
	if (atomic_exchange(&said, true))
		;
	else if (p)
		pr_err("plug-ins: plug-in %s (%s): %s() is still running after %d ms; "
		       "not waited for longer", p->path, p->label,
		       atomic_load(&p->calling), PLUGIN_LOCK_MS);
	else
		pr_err("plug-ins: a plug-in call is still running after %d ms; "
		       "not waited for longer", PLUGIN_LOCK_MS);
	return false;
}

/* for_drain: the drain thread stops them (the final flush), not the exit. */
static void plugins__stop_locked(bool for_drain)
{
	for (unsigned i = 0; i < nplugins; i++) {
		struct plugin *p = &plugins[i];
		int rc;

		if (!p->live || p->stopped)
			continue;
		p->stopped = true;
		if (!p->ops.stop)
			continue;
		rc = plugin__call_bounded(p, "stop", call_stop, 0, &exit_bound, for_drain);
		if (rc < 0)
			plugin__fail(p, "stop", rc);
	}
}

/* Under calls_lock: p, running, starts recording again; false: it failed (said). */
static bool plugin_resume(struct plugin *p, bool for_drain)
{
	int rc;

	p->stopped = false;
	p->unstarted = false;
	if (p->ops.start &&
	    (rc = plugin__call_bounded(p, "start", call_start, 0, &window_bound,
				       for_drain)) < 0) {
		plugin__fail(p, "start", rc);
		return false;
	}
	return true;
}

/* Under calls_lock: p stops and hands over what it recorded (ours: stop,
 * then flush(0); Kineto's: profilerStop, then profilerProcessEvents), each
 * call within bound. */
static void plugin_pause(struct plugin *p, const struct call_bound *bound, bool for_drain)
{
	int rc;

	p->stopped = true;
	if (p->ops.stop &&
	    (rc = plugin__call_bounded(p, "stop", call_stop, 0, bound, for_drain)) < 0) {
		plugin__fail(p, "stop", rc);
		return;
	}
	if (p->ops.flush &&
	    (rc = plugin__call_bounded(p, "flush", call_flush, 0, bound, for_drain)) < 0)
		plugin__fail(p, "flush", rc);
}

/*
 * Capture windows (backend.h, window): plug-ins record inside windows only.
 * A window closing: each running plug-in is stopped and hands over what it
 * recorded, into the file of that window. A window opened (and still
 * open): each is started again. Idempotent. Each call bounded as a drain
 * cycle's flush is: one stuck there held the drain thread (or the
 * program's thread that closed the window) for good, and the trace lost its
 * end.
 */
static void plugins_window(bool open)
{
	bool recording, for_drain;

	if (!nplugins || !calls_lock_bounded())
		return;
	recording = open && gt_tracing();
	for_drain = lifecycle__on_drain_thread();
	for (unsigned i = 0; i < nplugins; i++) {
		struct plugin *p = &plugins[i];

		if (!p->live || p->stopped == !recording)
			continue;
		if (recording)
			plugin_resume(p, for_drain);
		else
			plugin_pause(p, &window_bound, for_drain);
	}
	pthread_mutex_unlock(&calls_lock);
}

/*
 * exec (backend.h): the image's file is ended before the new image runs, and
 * a Kineto profiler hands nothing over until stopped: each running plug-in
 * is stopped and hands over now, as at a window's close, so its events are in
 * the replaced image's file. An exec that failed starts those again.
 */
static void plugins_exec(bool failed)
{
	if (!nplugins || !calls_lock_bounded())
		return;
	for (unsigned i = 0; i < nplugins; i++) {
		struct plugin *p = &plugins[i];

		if (!failed && p->live && !p->stopped) {
			p->exec_stopped = true;
			plugin_pause(p, &exit_bound, false); /* the image ends */
		} else if (failed && p->exec_stopped) {
			p->exec_stopped = false;
			if (p->live && p->stopped && gt_tracing())
				plugin_resume(p, false);
		}
	}
	pthread_mutex_unlock(&calls_lock);
}

/* The exit's wait for a call under way ran out: the final flush does not
 * wait for that call again (the exit took twice the time it says). */
static atomic_bool exit_gave_up;

GT_STARTUP_CODE static void plugins_stop(void)
{
	if (!nplugins)
		return;
	kineto__stopping();
	if (!calls_lock_bounded()) {
		atomic_store(&exit_gave_up, true);
		return;
	}
	plugins__stop_locked(false);
	pthread_mutex_unlock(&calls_lock);
}

static void plugins_flush(bool final)
{
	if (!nplugins)
		return;
	if (final) {
		if (atomic_load(&exit_gave_up) ? pthread_mutex_trylock(&calls_lock) != 0
					       : !calls_lock_bounded())
			return;
		/* Stop first if the exit path did not: the final flush must be last. */
		plugins__stop_locked(true);
	} else if (pthread_mutex_trylock(&calls_lock)) {
		return; /* stopping now; the final flush follows */
	}
	for (unsigned i = 0; i < nplugins; i++) {
		struct plugin *p = &plugins[i];
		int rc;

		/* one not started yet (paused since its create) has recorded
		 * nothing, and a flush before its start breaks the documented order:
		 * simaccel handed counters at its base time 0 to the drain cycle
		 * that ran before the --delay window opened (it races that window's
		 * open at the same 200 ms) */
		if (!p->live || !p->ops.flush || p->unstarted)
			continue;
		/* The final flush is the last drain's, bounded by it (lifecycle.c);
		 * a cycle's must not stop the drain of everything else. */
		if (final && plugin__calling(p, "flush"))
			rc = PLUGIN_CALL(p->ops.flush(p->state, final));
		else
			rc = plugin__call_bounded(p, "flush", call_flush, 0, &drain_bound,
						  true);
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
			p->destroy_due = p->ops.destroy != NULL;
		}
	}
	pthread_mutex_unlock(&calls_lock);
}

static int call_destroy(struct plugin *p, int arg)
{
	(void)arg;
	return PLUGIN_CALL((p->ops.destroy(p->state), 0));
}

/* After the final flush, once the trace is written (backend.h, release): a
 * destroy that never returns used to hold the last drain, and the trace
 * lost its end. Bounded all the same: the exit waits for it. */
static void plugins_release(void)
{
	bool due = false;

	/* none due: the final flush did not get the calls lock (a call stuck
	 * or crashed holds it), nor will we */
	for (unsigned i = 0; i < nplugins; i++)
		due |= plugins[i].destroy_due;
	if (!due || !plugins__lock_calls(PLUGIN_LOCK_MS))
		return;
	for (unsigned i = 0; i < nplugins; i++) {
		struct plugin *p = &plugins[i];

		if (!p->destroy_due)
			continue;
		p->destroy_due = false;
		plugin__call_bounded(p, "destroy", call_destroy, 0, &destroy_bound, true);
	}
	pthread_mutex_unlock(&calls_lock);
}

/* The parent's plug-in threads do not exist in the child, and their state
 * may be mid-update: the child records nothing from plug-ins. */
GT_FORK_CODE static void plugins_atfork_child(void)
{
	pthread_mutex_init(&calls_lock, NULL);
	caller = NULL; /* its thread is the parent's */
	if (!nplugins)
		return; /* none was loaded: nothing of theirs to forget, no page to touch */
	kineto__atfork_child();
	for (unsigned i = 0; i < nplugins; i++) {
		atomic_store_explicit(&plugins[i].builder.open, false, memory_order_release);
		pthread_mutex_init(&plugins[i].builder.rows_lock, NULL);
		plugins[i].live = false;
		plugins[i].destroy_due = false;
	}
}

static const struct gt_backend plugins_backend = {
	.name = "plugins",
	.enabled_by = GT_BACKEND_PLUGINS,
	.init = plugins_init,
	.flush = plugins_flush,
	.stop = plugins_stop,
	.atfork_child = plugins_atfork_child,
	.window = plugins_window,
	.exec = plugins_exec,
	.release = plugins_release,
};
GT_BACKEND_REGISTER(plugins_backend);
