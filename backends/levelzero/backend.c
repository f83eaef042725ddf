// SPDX-License-Identifier: MIT
/*
 * The Level Zero backend: a host span for every Level Zero call the program
 * makes, and the device times of the work it submits (track.c).
 *
 * Every function of backends/levelzero/api.h gets a wrapper generated here:
 * the exported symbol (the program links the loader) is an alias of a hidden
 * ze_wrap_<name>, which inject/dlsym.c also hands to programs that dlopen the
 * loader and look functions up themselves (SYCL does). The real function is
 * the loader's, resolved on first use and cached (real.c).
 *
 * A newer loader's function (kind NEW_*, declared in ze_newer.h) is exported
 * under a non-default symbol version, GPUTRACE_LINK_ONLY: the dynamic linker
 * binds a program's unversioned reference to it (glibc accepts a hidden
 * version of index 2 for those), but dlsym() never returns it, so a program
 * that probes with dlsym sees its loader's function or none.
 *
 * A driver's extension function (kind EXT_*, ze_intel_ext.h), and a newer
 * loader's function a program gets from zeDriverGetExtensionFunctionAddress
 * (as SYCL gets the mutable command list functions), is wrapped a second way,
 * ze_xwrap_<name>, around the pointer the driver gave (real.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include "backends/backend.h"
#include "backends/levelzero/internal.h"
#include "inject/watchdog.h"
#include "inject/clock.h"
#include "inject/config.h"
#include "inject/cstr.h"
#include "inject/emit.h"
#include "inject/shim.h"
#include "inject/stacks.h"

pthread_mutex_t ze_lock GT_STARTUP_STATE = PTHREAD_MUTEX_INITIALIZER;
atomic_bool ze_closed GT_STARTUP_STATE;
struct ze_strings ze_str;

/* Set by init (constructor time, before the program's threads). */
static bool ze_enabled GT_STARTUP_STATE;
static _Atomic uint32_t ze_name_ids[ZE_ID__COUNT];

static inline bool ze__active(void)
{
	return gt_tracing() && ze_enabled;
}

/* Between capture windows, calls with a body (kind HOOK) still keep the
 * books a later window needs: lists, queues, kernels, events and the
 * timestamp events of work appended to regular lists (it may run inside
 * a window). Nothing is recorded; plain calls pay only gt_tracing(). So
 * after a trace that could not be written, while the hang watchdog watches
 * on: its wait marks and the pending work it lists are these books. */
static inline bool ze__keeping(void)
{
	int p = atomic_load_explicit(&gt_phase, memory_order_relaxed);

	return ze_enabled &&
	       (p == GT_PHASE_PAUSED ||
		(p == GT_PHASE_OFF && atomic_load_explicit(&gt_watchdog_alone, memory_order_relaxed)));
}

/* ---- strings ---- */

static void ze__strings_intern(void)
{
	static const char letter[ZE_MK__COUNT] = { [ZE_MK_HOST] = 'H', [ZE_MK_DEVICE] = 'D',
						   [ZE_MK_SHARED] = 'S' };
	char buf[32];

	ze_str.kind = GT_S_ARG_KIND;
	ze_str.groups[0] = gt_str_intern("gx");
	ze_str.groups[1] = gt_str_intern("gy");
	ze_str.groups[2] = gt_str_intern("gz");
	ze_str.size[0] = gt_str_intern("lx");
	ze_str.size[1] = gt_str_intern("ly");
	ze_str.size[2] = gt_str_intern("lz");
	ze_str.lists = gt_str_intern("lists");
	ze_str.bytes_in_use = gt_str_intern("bytes_in_use");
	ze_str.device_memory = gt_str_intern("device memory");
	ze_str.host_usm = gt_str_intern("host USM");
	ze_str.memset = gt_str_intern("Memset");
	ze_str.image = gt_str_intern("image");
	ze_str.unknown_kernel = gt_str_intern("<unknown kernel>");
	ze_str.memcpy_image = gt_str_intern("Memcpy image");
	for (int s = 0; s < ZE_MK__COUNT; s++) {
		for (int d = 0; d < ZE_MK__COUNT; d++) {
			snprintf(buf, sizeof(buf), "%cto%c", letter[s], letter[d]);
			ze_str.copy_kind[s][d] = gt_str_intern(buf);
			snprintf(buf, sizeof(buf), "Memcpy %cto%c", letter[s], letter[d]);
			ze_str.memcpy[s][d] = gt_str_intern(buf);
		}
	}
	ze_str.lost_unread = gt_str_intern("ze_unread");
	ze_str.lost_no_event = gt_str_intern("ze_no_event");
	ze_str.lost_overwritten = gt_str_intern("ze_overwritten");
	ze_str.lost_untracked = gt_str_intern("ze_untracked_list");
	ze_str.gpu_sync = GT_S_CAT_ZE_SYNC; /* the writer gives it args.device, .stream */
	ze_str.barrier = gt_str_intern("Barrier");
	ze_str.fence = gt_str_intern("Fence signaled");
	ze_str.waits = gt_str_intern("waits");
	ze_str.event = gt_str_intern("event");
	ze_str.wait_memory = gt_str_intern("Wait on memory");
	ze_str.write_memory = gt_str_intern("Write to memory");
}

atomic_bool ze_str_ready GT_STARTUP_STATE; /* read at every exit (ze_track__final) */

static void ze__strings_once(void)
{
	ze__strings_intern();
	atomic_store_explicit(&ze_str_ready, true, memory_order_release);
}

void ze__strings_init_slow(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, ze__strings_once);
}

/* ---- the host span ---- */

uint32_t ze__name(enum ze_fn_id id)
{
	uint32_t n = atomic_load_explicit(&ze_name_ids[id], memory_order_relaxed);

	if (gt_unlikely(!n)) {
		/* Once per function: interning takes the string lock. */
		n = gt_str_intern(ze__fn_name(id));
		atomic_store_explicit(&ze_name_ids[id], n, memory_order_relaxed);
	}
	return n;
}

/* A call's result other than success or "not ready" by its name (the headers'
 * ze_result_t, interned once per code; "ZE_RESULT_0x..." for a code they do not name).
 * The names as one list (inject/cstr.h). */
static const int64_t ze_result_codes[] = {
#define ZE_RESULT_CODE(name) name,
	ZE_RESULTS(ZE_RESULT_CODE)
#undef ZE_RESULT_CODE
};
static const char ze_result_names[] =
#define ZE_RESULT_NAME(name) #name "\0"
	ZE_RESULTS(ZE_RESULT_NAME)
#undef ZE_RESULT_NAME
	;
#define ZE_NRESULTS (sizeof(ze_result_codes) / sizeof(ze_result_codes[0]))
static _Atomic uint32_t ze_result_ids[ZE_NRESULTS];

static uint32_t ze__result_name(int64_t result)
{
	for (size_t i = 0; i < ZE_NRESULTS; i++) {
		if (ze_result_codes[i] != result)
			continue;
		uint32_t id = atomic_load_explicit(&ze_result_ids[i], memory_order_relaxed);
		if (!id) {
			id = gt_str_intern(gt_cstr_list_at(ze_result_names, i));
			atomic_store_explicit(&ze_result_ids[i], id, memory_order_relaxed);
		}
		return id;
	}
	char hex[32];

	snprintf(hex, sizeof(hex), "ZE_RESULT_0x%llx", (unsigned long long)(uint32_t)result);
	return gt_str_intern(hex);
}

/* A failure, not a poll's "not ready" (kept off the fast path's budget: polls are
 * frequent) nor a warning (ZE_RESULT_WARNING_*: the call did its work). */
static bool ze__failed(int64_t result)
{
	return result != ZE_RESULT_SUCCESS && result != ZE_RESULT_NOT_READY &&
	       result != ZE_RESULT_WARNING_DROPPED_DATA &&
	       result != ZE_RESULT_WARNING_ACTION_REQUIRED;
}

static void ze__span_at(enum ze_fn_id id, uint64_t t0, uint64_t t1, uint64_t corr,
			int64_t result, const struct ze_call *c)
{
	struct gt_arg args[GT_ARGS_MAX];
	uint32_t error = result && result != ZE_RESULT_NOT_READY ? ze__result_name(result) : 0;
	unsigned n = 1;

	if (!ze__want(GT_KIND(RUNTIME)))
		return;
	args[0] = (struct gt_arg){ .key = GT_S_ARG_RESULT, .type = GT_ARG_I64, .v.i = result };
	if (error)
		args[n++] = (struct gt_arg){ .key = GT_S_ARG_ERROR, .type = GT_ARG_STR, .v.u = error };
	if (!c && !error && gt_likely(!gt_cfg.stacks)) {
		/* a plain wrapper whose inline write failed (a full ring, no ring
		 * yet) tries the slot again here: going to gt_emit directly cost
		 * every traced call 3 instructions (callgrind, 157 -> 160) */
		gt_emit_span(t0, t1, corr, ze__name(id), GT_S_CAT_ZE_API, 0, &args[0]);
		return;
	}
	if (c) {
		/* (room for a stack left: at most GT_ARGS_MAX - 1 - n of them) */
		unsigned m = c->nargs < GT_ARGS_MAX - 1 - n ? c->nargs : GT_ARGS_MAX - 1 - n;

		for (unsigned i = 0; i < m; i++)
			args[n + i] = c->args[i];
		n += m;
	}
	/* Where the program made the call: launches, or every call when asked. */
	if (gt_unlikely(gt_cfg.stacks) &&
	    (gt_cfg.stacks_all || (c && (c->flags & GT_EVF_LAUNCH)))) {
		/* (taken before the body's lock: ze_call__span_ready) */
		uint64_t stack = c && c->stack_taken ? c->stack : gt_stack_capture();

		if (stack) {
			args[n].key = GT_S_ARG_STACK;
			args[n].type = GT_ARG_U64;
			args[n++].v.u = stack;
		}
	}
	struct gt_event ev = {
		.start_ns = t0,
		.end_ns = t1,
		.corr = corr,
		.name = ze__name(id),
		.cat = GT_S_CAT_ZE_API,
		.type = GT_EV_HOST_SPAN,
		.flags = (uint16_t)((c ? c->flags : 0) | (ze__failed(result) ? GT_EVF_FAILED : 0)),
	};
	gt_emit(&ev, args, n);
}

static inline void ze__span(enum ze_fn_id id, uint64_t t0, uint64_t corr, int64_t result,
			    const struct ze_call *c)
{
	ze__span_at(id, t0, gt_clock_ns(), corr, result, c);
}

/* A plain wrapper's span: the common call (no stacks) written inline into the
 * wrapper, which has its registers saved already; a call to ze__span_at saved them
 * again (callgrind: 20 of the ~190 instructions of a traced call). */
static inline __attribute__((always_inline)) void ze__span_plain(enum ze_fn_id id, uint64_t t0,
								 uint64_t corr, int64_t result)
{
	uint64_t t1 = gt_clock_ns();

	if (gt_likely(!gt_cfg.stacks && (!result || result == ZE_RESULT_NOT_READY)) &&
	    ze__want(GT_KIND(RUNTIME))) {
		struct gt_arg res = { .key = GT_S_ARG_RESULT, .type = GT_ARG_I64, .v.i = result };

		if (gt_likely(gt_emit_span_fast(t0, t1, corr, ze__name(id), GT_S_CAT_ZE_API, 0,
						&res)))
			return;
	}
	/* the rest (stacks, a full ring, not tracing any more) out of line */
	ze__span_at(id, t0, t1, corr, result, NULL);
}

/* A hook's span that its body added nothing to (a synchronize, a reset): the plain
 * wrappers' way into its ring slot (callgrind: ~90 instructions less than the general
 * one), one copy for all the hooks: inlined into each, it was 35 KiB more code. */
static __attribute__((noinline)) void ze__span_bare(enum ze_fn_id id, uint64_t t0, uint64_t corr,
						     int64_t result)
{
	ze__span_plain(id, t0, corr, result);
}

void ze_call__span_ready(struct ze_call *c)
{
	/* the unwinder may take the dynamic loader's lock: not under ours */
	if (gt_unlikely(gt_cfg.stacks) && c->rec && !c->stack_taken &&
	    (gt_cfg.stacks_all || (c->flags & GT_EVF_LAUNCH))) {
		c->stack = gt_stack_capture();
		c->stack_taken = true;
	}
}

void ze_call__span_now(struct ze_call *c, int64_t result)
{
	if (c->written)
		return;
	c->written = true;
	if (!c->t1)
		c->t1 = gt_clock_ns();
	if (!c->rec)
		return;
	/* ze_lock held, which the drain's reads need: a full ring does not wait for
	 * the drain (--lossless), it overflows or drops, as a nested call's (ring_wait.c) */
	gt_in_tracer++;
	ze__span_at(c->id, c->t0, c->t1, c->corr, result, c);
	gt_in_tracer--;
}

bool ze_call__in_trace(uint64_t t1, int tid)
{
	/* acquire: the ending threads' tids, stored before, are seen with it */
	uint64_t end = atomic_load_explicit(&gt_st.host_end_ns, memory_order_acquire);

	return !end || t1 <= end || tid == atomic_load(&gt_st.host_end_tid) ||
	       tid == atomic_load(&gt_st.host_end_helper_tid);
}

/* ---- a call that never returns ---- */

/*
 * A call ended by a forced unwind (pthread_cancel() while the driver waits,
 * or pthread_exit() in a callback) never reaches the end of its wrapper.
 * The wrapper's frame runs this as it goes (a cleanup attribute; the
 * library is built with -fexceptions for it): the call is recorded, marked
 * cancelled, and the thread's guard is released, so the calls its cleanup
 * handlers make are traced. On every other way out, armed is false.
 */
struct ze_unwind {
	uint64_t t0, corr;
	enum ze_fn_id id;
	bool armed;
};

static void ze__unwound(struct ze_unwind *u)
{
	if (gt_likely(!u->armed))
		return;
	gt_unwound_stack();
	gt_wait_unwound(); /* cancelled inside a device wait: in it no more */
	if (ze__want(GT_KIND(RUNTIME)))
		gt_emit_cancelled(u->t0, u->corr, ze__name(u->id), GT_S_CAT_ZE_API, false);
	gt_guard_leave();
}

#define ZE_UNWIND struct ze_unwind u __attribute__((cleanup(ze__unwound))) = { .armed = false }

/* ---- the wrappers ---- */

/* gate: whether the wrapper does more than call the real function */
#define ZE_WRAP_START(name, args, gate)                                                    \
	__typeof__(&name) real;                                                            \
	gt_ensure_init();                                                                  \
	real = ZE_REAL(name);                                                              \
	if (gt_unlikely(!real))                                                            \
		return ZE_RESULT_ERROR_UNINITIALIZED;                                      \
	if (!(gate) || !gt_guard_enter())                                                  \
		return real args;

/* The unwind guard lives in the traced block only: a call that is not traced
 * (paused, outside a window) is a tail call, with no cleanup to run after it. */
#define ZE_WRAP_TIMED(STORAGE, START, fn, ret, name, params, args)                         \
	STORAGE __attribute__((noinline)) ret fn params                                    \
	{                                                                                  \
		START(name, args, ze__active())                                            \
		{                                                                          \
			ZE_UNWIND;                                                         \
			ret r;                                                             \
			u.id = ZE_ID_##name;                                               \
			u.corr = gt_corr_next_fast();                                      \
			u.t0 = gt_clock_ns();                                              \
			u.armed = true;                                                    \
			r = real args;                                                     \
			u.armed = false;                                                   \
			ze__span_plain(ZE_ID_##name, u.t0, u.corr, r);                     \
			gt_guard_leave();                                                  \
			return r;                                                          \
		}                                                                          \
	}

/*
 * The exported wrapper is a front: a call that is neither recorded nor keeps the
 * books (paused, outside a capture window, the backend off) goes straight on to
 * the real function from it, with no frame. The full wrapper behind it (the
 * traced block's unwind cleanup and guard) pushes six registers and sets up a
 * frame before it looks at anything, which cost a paused call ~2 ns of its ~4.5
 * (make bench row 1b, AMD EPYC VM). The full one checks everything again.
 */
#define ZE_FRONT(ret, name, params, args, idle, detour)                                    \
	GT_HIDDEN ret ze_wrap_##name params                                                \
	{                                                                                  \
		if (gt_likely(atomic_load_explicit(&gt_st.init_state, memory_order_acquire) == \
			      2) &&                                                        \
		    (idle)) {                                                              \
			__typeof__(&name) real = (__typeof__(&name))atomic_load_explicit(  \
				&ze_real_tab[ZE_ID_##name], memory_order_acquire);         \
			if (gt_likely(real != NULL)) /* else resolved by the full one */   \
				return real args;                                          \
		}                                                                          \
		detour                                                                     \
		return ze_full_##name args;                                                \
	}
/* The full wrapper's symbol is the API's name with a suffix, as GCC names a clone
 * (f.part.0): stacks and the watchdog show the call by its name (inject/stacks.c). */
#define ZE_FULL_DECL(ret, name, params) GT_HIDDEN ret ze_full_##name params __asm__(#name ".full");
#define ZE_WRAP_PLAIN(ret, name, params, args)                                             \
	ZE_FULL_DECL(ret, name, params)                                                    \
	ZE_WRAP_TIMED(GT_HIDDEN, ZE_WRAP_START, ze_full_##name, ret, name, params, args)   \
	ZE_FRONT(ret, name, params, args, !ze__active(), )
/* A hook's plain twin, for an append whose kind was left out (ze__kind_left_out): the
 * front sends it there, so it costs what a plain traced call costs, not the hook's
 * frame, its description of the work and its span's general way (callgrind: the append
 * of a launch with kernels left out 273 -> 127 instructions, a plain call 115; make
 * bench row 5k). Made for every hook; the compiler keeps only those a front can reach. */
#define ZE_PLAIN_DECL(ret, name, params) static ret ze_plain_##name params __asm__(#name ".plain");
#define ZE_WRAP_HOOK(ret, name, params, args)                                              \
	ZE_FULL_DECL(ret, name, params)                                                    \
	ZE_WRAP_BODY(ZE_WRAP_START, ze_full_##name, ret, name, params, args)               \
	ZE_PLAIN_DECL(ret, name, params)                                                   \
	ZE_WRAP_TIMED(static, ZE_WRAP_START, ze_plain_##name, ret, name, params, args)     \
	ZE_FRONT(ret, name, params, args, !ze__active() && !ze__keeping(),                 \
		 if (gt_unlikely(ze__kind_left_out(ZE_ID_##name))) return ze_plain_##name args;)
#define ZE_WRAP_NEW_PLAIN(ret, name, ...) \
	ZE_WRAP_TIMED(GT_HIDDEN, ZE_WRAP_NEW_START, ze_wrap_##name, ret, name, __VA_ARGS__)
#define ZE_WRAP_NEW_HOOK(ret, name, ...) \
	ZE_WRAP_BODY(ZE_WRAP_NEW_START, ze_wrap_##name, ret, name, __VA_ARGS__)
/* A driver's extension function has only the wrapper a driver's lookup hands out. */
#define ZE_WRAP_EXT_PLAIN(...)
#define ZE_WRAP_EXT_HOOK(...)

/* A newer loader's function the process's loader lacks, called by a program that
 * linked it: where the dynamic linker would have stopped it, stop it the same way. */
#define ZE_WRAP_NEW_START(name, args, gate)                                                \
	__typeof__(&name) real;                                                            \
	gt_ensure_init();                                                                  \
	real = ZE_REAL(name);                                                              \
	if (gt_unlikely(!real))                                                            \
		ze__lacks(ZE_ID_##name, __builtin_return_address(0));                     \
	if (!(gate) || !gt_guard_enter())                                                  \
		return real args;

#define ZE_WRAP_BODY(START, fn, ret, name, params, args)                                   \
	GT_HIDDEN __attribute__((noinline)) ret fn params                                  \
	{                                                                                  \
		bool rec; /* recording; else paused, keeping only the books */           \
		START(name, args, (rec = ze__active()) || ze__keeping())                   \
		{                                                                          \
			ZE_UNWIND;                                                         \
			struct ze_call c;                                                  \
			ret r;                                                             \
			ze__strings_init();                                                \
			c.corr = gt_corr_next_fast();                                      \
			c.flags = 0;                                                       \
			c.nargs = 0;                                                       \
			c.rec = rec;                                                       \
			c.written = false;                                                 \
			c.stack_taken = false;                                             \
			c.t1 = 0;                                                          \
			c.id = ZE_ID_##name;                                               \
			u.id = ZE_ID_##name;                                               \
			u.corr = c.corr;                                                   \
			u.t0 = gt_clock_ns();                                              \
			c.t0 = u.t0;                                                       \
			u.armed = true;                                                    \
			r = ze_body_##name(&c, real, ZE_UNPAREN args);                     \
			u.armed = false;                                                   \
			/* (written: by the body, before its work was readable) */         \
			if (rec && !c.written && gt_likely(c.nargs || c.flags))            \
				ze__span(ZE_ID_##name, u.t0, c.corr, r, &c);               \
			else if (rec && !c.written)                                        \
				ze__span_bare(ZE_ID_##name, u.t0, c.corr, r);              \
			gt_guard_leave();                                                  \
			return r;                                                          \
		}                                                                          \
	}

#define ZE_WRAP(kind, ...) ZE_WRAP_##kind(__VA_ARGS__)
ZE_API(ZE_WRAP)
#undef ZE_WRAP

/*
 * The wrappers zeDriverGetExtensionFunctionAddress hands out (real.c), of the newer
 * loaders' functions and the drivers' own: they call the function the driver gave
 * (ze_xreal_tab), which need not be the loader's.
 */
#define ZE_WRAP_X_START(name, args, gate)                                                  \
	__typeof__(&name) real;                                                            \
	gt_ensure_init();                                                                  \
	real = (__typeof__(&name))atomic_load_explicit(&ze_xreal_tab[ZE_ID_##name],       \
							memory_order_acquire);             \
	if (gt_unlikely(!real))                                                            \
		return ZE_RESULT_ERROR_UNINITIALIZED;                                      \
	if (!(gate) || !gt_guard_enter())                                                  \
		return real args;

#define ZE_XWRAP_PLAIN(...)
#define ZE_XWRAP_HOOK(...)
#define ZE_XWRAP_NEW_PLAIN(ret, name, ...) \
	ZE_WRAP_TIMED(GT_HIDDEN, ZE_WRAP_X_START, ze_xwrap_##name, ret, name, __VA_ARGS__)
#define ZE_XWRAP_NEW_HOOK(ret, name, ...) \
	ZE_WRAP_BODY(ZE_WRAP_X_START, ze_xwrap_##name, ret, name, __VA_ARGS__)
#define ZE_XWRAP_EXT_PLAIN ZE_XWRAP_NEW_PLAIN
#define ZE_XWRAP_EXT_HOOK ZE_XWRAP_NEW_HOOK
#define ZE_XWRAP(kind, ...) ZE_XWRAP_##kind(__VA_ARGS__)
ZE_API(ZE_XWRAP)
#undef ZE_XWRAP

/* The exported names: aliases, so our own address of each wrapper is never the loader's. */
#define ZE_EXPORT_PLAIN(ret, name, params, args)                                           \
	ret name params __attribute__((alias("ze_wrap_" #name), visibility("default")));
#define ZE_EXPORT_HOOK ZE_EXPORT_PLAIN
#define ZE_EXPORT_NEW_PLAIN(ret, name, params, args)                                       \
	ret gt_ze_link_only_##name params                                                  \
		__attribute__((alias("ze_wrap_" #name), visibility("default")));           \
	__asm__(".symver gt_ze_link_only_" #name ", " #name "@GPUTRACE_LINK_ONLY");
#define ZE_EXPORT_NEW_HOOK ZE_EXPORT_NEW_PLAIN
#define ZE_EXPORT_EXT_PLAIN(...)
#define ZE_EXPORT_EXT_HOOK(...)
#define ZE_EXPORT(kind, ...) ZE_EXPORT_##kind(__VA_ARGS__)
ZE_API(ZE_EXPORT)
#undef ZE_EXPORT

/* Switches, not tables of pointers (internal.h): the compiler's jump
 * table holds offsets, which need no relocation. */
#define ZE_ADDR_PLAIN(name) case ZE_ID_##name: return (void *)ze_wrap_##name;
#define ZE_ADDR_HOOK ZE_ADDR_PLAIN
#define ZE_ADDR_NEW_PLAIN ZE_ADDR_PLAIN
#define ZE_ADDR_NEW_HOOK ZE_ADDR_PLAIN
#define ZE_ADDR_EXT_PLAIN(name)
#define ZE_ADDR_EXT_HOOK ZE_ADDR_EXT_PLAIN
#define ZE_ADDR(kind, ret, name, params, args) ZE_ADDR_##kind(name)
void *ze__wrapper(enum ze_fn_id id)
{
	switch (id) {
	ZE_API(ZE_ADDR)
	default:
		return NULL;
	}
}
#undef ZE_ADDR

#define ZE_XADDR_PLAIN(name)
#define ZE_XADDR_HOOK ZE_XADDR_PLAIN
#define ZE_XADDR_NEW_PLAIN(name) case ZE_ID_##name: return (void *)ze_xwrap_##name;
#define ZE_XADDR_NEW_HOOK ZE_XADDR_NEW_PLAIN
#define ZE_XADDR_EXT_PLAIN ZE_XADDR_NEW_PLAIN
#define ZE_XADDR_EXT_HOOK ZE_XADDR_NEW_PLAIN
#define ZE_XADDR(kind, ret, name, params, args) ZE_XADDR_##kind(name)
void *ze__xwrapper(enum ze_fn_id id)
{
	switch (id) {
	ZE_API(ZE_XADDR)
	default:
		return NULL;
	}
}
#undef ZE_XADDR

/* ---- life cycle ---- */

GT_STARTUP_CODE static int ze_init(void)
{
	ze_enabled = true;
	ze_metrics__setenv();
	return 0;
}

static void ze_flush(bool final)
{
	bool g;

	ze_metrics__flush(final);
	g = gt_guard_enter();
	if (final)
		ze_track__collect_drain(true);
	else {
		ze_track__collect_behind();
		ze_track__grow_ahead();
	}
	if (g)
		gt_guard_leave();
}

/*
 * A capture window's file is ended next: its finished work is read now, whatever the
 * program read meanwhile. A cycle's collect_behind leaves the reads to a later cycle
 * when the program read since the last one (to keep its rows in order), and a program
 * that waits all the time read in every cycle: a short window's kernels were all read
 * after its file ended, counted window_late in the next one (or nowhere).
 */
static void ze_window_end(void)
{
	bool g = gt_guard_enter();

	ze_track__collect_drain(false);
	if (g)
		gt_guard_leave();
}

GT_STARTUP_CODE static void ze_stop(void)
{
	bool g = gt_guard_enter();

	ze_metrics__stop();
	ze_telemetry__stop();
	ze_track__final();
	if (g)
		gt_guard_leave();
}

GT_FORK_CODE static void ze_atfork_child(void)
{
	/* The parent's lists, pools and events mean nothing here (the child must zeInit). */
	pthread_mutex_init(&ze_lock, NULL);
	/* none if no call of the parent's reached the loader (a shell's child
	 * wrote 4 pages of our tables for nothing) */
	if (atomic_load(&ze_reached)) {
		ze_track__forget();
		ze_dev__forget();
		ze_mem__forget();
		ze_kernel__forget();
	}
	ze_metrics__forget();
	ze_telemetry__forget();
	atomic_store(&ze_closed, false);
}

static const struct gt_backend ze_backend = {
	.name = "ze",
	.enabled_by = GT_BACKEND_ZE,
	.init = ze_init,
	.flush = ze_flush,
	.stop = ze_stop,
	.atfork_child = ze_atfork_child,
	.wrapper_for = ze__wrapper_for,
	.sample = ze_telemetry__sample,
	.window = ze_telemetry__window,
	.window_end = ze_window_end,
	.pending = ze_track__pending,
};
GT_BACKEND_REGISTER(ze_backend);
