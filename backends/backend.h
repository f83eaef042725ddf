/* SPDX-License-Identifier: MIT */
/*
 * The one internal interface every backend sits behind (CUPTI, Level Zero,
 * plug-ins). A backend turns vendor activity into events through
 * inject/event.h; the drain thread and writer have one path for all.
 *
 * Backends register themselves with GT_BACKEND_REGISTER: the shim finds them
 * in a linker section, so a backend that is not built is simply absent.
 */
#ifndef GPUTRACE_BACKEND_H
#define GPUTRACE_BACKEND_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "../inject/event.h"

struct gt_pending_work; /* inject/watchdog.h */

struct gt_backend {
	const char *name; /* for messages: "cupti", "ze", "plugins", "itt", "nvml", ... */
	/* What turns it on: the GT_BACKEND_* bit of its GPUTRACE_BACKENDS word,
	 * or GT_BACKEND_ITT. A bit, not the name: every process asks at start,
	 * and a string compare reads pages of .rodata it would not touch. */
	unsigned enabled_by;
	/* Constructor time, when enabled by configuration. Cheap: must not
	 * initialize vendor runtimes (no CUPTI calls). 0 or -errno. */
	int (*init)(void);
	/* The program dlopen()ed a library (path as given, may be NULL). */
	void (*on_dlopen)(const char *path, void *handle);
	/* Drain thread, every cycle: move completed vendor records into
	 * events. final: the process is ending, take everything there is. */
	void (*flush)(bool final);
	/* Process exit, before the final drain: finish reading, stop. */
	void (*stop)(void);
	/* In the child after fork(): forget what belongs to the parent. */
	void (*atfork_child)(void);
	/* dlsym(handle, symbol) by the program for a symbol this backend wraps
	 * (a late-loaded vendor library): return the wrapper, or NULL. */
	void *(*wrapper_for)(const char *symbol);
	/* Drain thread, between cycles (never while the program forks), only
	 * when telemetry or time-based metrics are asked for: read the device
	 * counters due by now_ns. Returns when it wants to be called next (host
	 * ns), 0 for no more. */
	uint64_t (*sample)(uint64_t now_ns);
	/* Capture windows (inject/capture.h): a recorder with a start and stop
	 * of its own (the plug-ins) starts when one opened (open: only if
	 * recording now), or stops and hands over what it recorded when one
	 * is closing, which then lands in that window's file. Called on the
	 * thread that marks a range, or the drain thread (a window opened by a
	 * signal or a deadline; a closed one, before its file is ended); never
	 * from a signal handler. May come more than once for one change. */
	void (*window)(bool open);
	/* Drain thread only, once per closed window, just before its file is
	 * ended (after the grace that lets late calls in): hand over every
	 * vendor record that may belong to it now, for the cycle that follows
	 * writes that file (a record handed over later is outside it). Also
	 * for a window closed by a range marker inside a vendor callback: the
	 * vendor's flush runs here, never on that callback's thread. */
	void (*window_end)(void);
	/* The hang watchdog's thread (inject/watchdog.h), with --watchdog only:
	 * call fn for each piece of device work submitted and not finished yet
	 * (ask the device, not only what was collected), oldest first. Bounded
	 * in time: a backend lock held too long means none listed. */
	void (*pending)(void (*fn)(void *arg, const struct gt_pending_work *w), void *arg);
	/* The program's thread, as it calls exec (failed: after an exec that
	 * returned): a recorder with a start and stop of its own hands over
	 * what it recorded before the replaced image's last drain cycles, and
	 * starts again if the program goes on. Never from a signal handler. */
	void (*exec)(bool failed);
	/* Drain thread, once, after the final cycle has ended the file: let
	 * go of the vendor's code (the plug-ins' destroy). The exit waits for
	 * it, but the trace is written: a call stuck here costs no event. */
	void (*release)(void);
};

#define GT_BACKEND_REGISTER(b)                                                     \
	static const struct gt_backend *const gt_backend_ptr_##b                   \
		__attribute__((used, section("gt_backends"), aligned(sizeof(void *)))) = &(b)

/* Devices whose telemetry a backend samples (--telemetry), counted as each starts: a
 * missing source (no NVML) is worth a warning only when no backend samples any. */
extern GT_HIDDEN _Atomic unsigned gt_telemetry_devices;
/* Level Zero devices whose metrics were chosen (--metrics), counted as each starts: a
 * name without CUPTI's "__" is theirs to judge (each says the names it lacks); with none,
 * the CUDA backend says it. */
extern GT_HIDDEN _Atomic unsigned gt_ze_metric_devices;

/*
 * A backend's lock, taken on the drain thread. A signal that ends the process
 * (SIGTERM, SIGINT, ...) is handled on a program thread that may hold that
 * lock, interrupted inside it (ThreadSanitizer hands a signal over as its lock
 * interceptor returns), and the handler waits for the drain's last cycle. So
 * once the process ends on a signal, the drain waits for the lock a bounded
 * time (GT_DRAIN_LOCK_GIVE_UP_MS) and then does without it. false: not taken.
 */
#define GT_DRAIN_LOCK_GIVE_UP_MS 100
GT_HIDDEN bool gt_drain_lock(pthread_mutex_t *lock);

/* Whether configuration enables the backends of this GT_BACKEND_* bit. */
GT_HIDDEN bool gt_backend_enabled(unsigned enabled_by);

/* dlsym() past our own dlsym wrapper (inject/dlsym.c); RTLD_NEXT through it
 * means "after libgputrace". */
GT_HIDDEN void *gt_dlsym_real(void *handle, const char *symbol);
/* While inject/dlsym.c asks the backends' wrapper_for(): what the real dlsym
 * found for the program (a wrapper_for that sees another library's function
 * there, not the vendor's, returns NULL). Thread-local; NULL otherwise. */
extern GT_HIDDEN GT_TLS void *gt_dlsym_found;

#endif
