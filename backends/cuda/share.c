// SPDX-License-Identifier: MIT
/*
 * The program's own CUPTI user comes first. CUPTI takes one subscriber per
 * process, and one pair of activity buffer callbacks: a program that starts
 * its own profiler (torch.profiler, ONNX Runtime's CUDA profiling, a
 * monitoring agent, another tool's injection) while gputrace holds CUPTI
 * would get error 39, or gputrace's buffers. So the CUPTI calls that start
 * a session are wrapped here: when the program subscribes, registers buffer
 * callbacks or enables a kind while gputrace holds CUPTI, gputrace steps
 * aside first (its kinds off, its records flushed to itself, unsubscribed;
 * backend.c), says so once, marks the gap (an instant on each device row,
 * "gaps" in the trailer), and the program's call goes on as if gputrace
 * were not there. Host API spans go on through the libcudart wrappers,
 * which then make no CUDA call of their own. When the program lets go
 * (cuptiUnsubscribe and every kind it enabled disabled, or cuptiFinalize),
 * gputrace takes CUPTI back; a program that never does leaves the gap open.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <cupti.h>

#include "backends/backend.h"
#include "backends/cuda/internal.h"
#include "inject/clock.h"
#include "inject/cstr.h"
#include "inject/shim.h"

/* What the program holds of CUPTI (cupti_share_lock). */
static struct {
	CUpti_SubscriberHandle sub;
	uint64_t kinds; /* enabled by the program (kinds >= 63 in the top bit) */
	int gap;        /* gt_gap_begin's handle, -1 when none is open */
} program = { .gap = -1 };

/* Instants for the drain thread to put on the device rows. */
#define MARKS_MAX 16
static struct mark {
	uint64_t at;
	uint32_t name, reason;
} marks[MARKS_MAX];
static unsigned nmarks;
static pthread_mutex_t marks_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t gap_reason;

static void mark(uint64_t at, const char *name)
{
	pthread_mutex_lock(&marks_lock);
	if (nmarks < MARKS_MAX)
		marks[nmarks++] = (struct mark){ at, gt_str_intern(name), gap_reason };
	pthread_mutex_unlock(&marks_lock);
}

void cupti__share_marks(void)
{
	struct mark todo[MARKS_MAX];
	unsigned n;

	pthread_mutex_lock(&marks_lock);
	n = nmarks;
	memcpy(todo, marks, n * sizeof(todo[0]));
	nmarks = 0;
	pthread_mutex_unlock(&marks_lock);
	for (unsigned i = 0; i < n; i++)
		cupti__mark_devices(todo[i].at, todo[i].name, todo[i].reason);
}

/* The wrapped functions, and what a program's dlsym() found for each. */
#define SHARE_FUNCS(X)                                                                      \
	X(cuptiSubscribe) X(cuptiSubscribe_v2) X(cuptiUnsubscribe)                          \
	X(cuptiActivityRegisterCallbacks) X(cuptiActivityEnable) X(cuptiActivityDisable)    \
	X(cuptiFinalize)

enum {
#define SHARE_INDEX(fn) I_##fn,
	SHARE_FUNCS(SHARE_INDEX)
#undef SHARE_INDEX
	NSHARE
};
static _Atomic(void *) looked_up[NSHARE];

/* The program's libcupti: the one after us, the one its dlsym() found, the
 * one we loaded, or one a library loaded for itself (an injected tool's). */
static void *real_fn(const char *name, unsigned i, void *ours)
{
	void *p = gt_real(name);

	if (!p)
		p = atomic_load(&looked_up[i]);
	if (!p)
		p = ours;
	return p ? p : cupti__loaded_sym("libcupti.so", name);
}

#define REAL(fn) ((__typeof__(fn) *)real_fn(#fn, I_##fn, (void *)cupti_fn.fn))
#define CALL_REAL(r, fn, ...)                                                               \
	do {                                                                                \
		__typeof__(fn) *real_ = REAL(fn);                                           \
		r = real_ ? real_(__VA_ARGS__) : CUPTI_ERROR_NOT_INITIALIZED;               \
	} while (0)

/* With cupti_share_lock: the program starts a session while we hold CUPTI. */
static void step_aside(const char *how)
{
	char reason[160];
	uint64_t now;

	if (cupti_self || atomic_load(&cupti_state) != CUPTI_ON || !cupti__yield())
		return;
	now = gt_clock_ns();
	snprintf(reason, sizeof(reason), "the program started its own CUPTI session (%s)", how);
	gap_reason = gt_str_intern(reason);
	program.gap = gt_gap_begin(gap_reason, now);
	mark(now, "CUPTI handed to the program");
	pr_warn("%s: gputrace steps aside and traces no CUDA device activity until it ends",
		reason);
}

/* With cupti_share_lock: the program let go of everything it held. */
static void maybe_take_back(void)
{
	uint64_t now;

	if (cupti_self || program.sub || program.kinds ||
	    atomic_load(&cupti_state) != CUPTI_YIELDED || !cupti__take_back())
		return;
	now = gt_clock_ns();
	gt_gap_end(program.gap, now);
	program.gap = -1;
	mark(now, "CUPTI taken back");
	pr_info("the program's CUPTI session ended: CUDA device activity is traced again");
}

static uint64_t kind_bit(CUpti_ActivityKind kind)
{
	return kind < 63 ? 1ull << kind : 1ull << 63;
}

GT_EXPORT CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *sub,
					      CUpti_CallbackFunc cb, void *userdata)
{
	CUptiResult r;

	pthread_mutex_lock(&cupti_share_lock);
	step_aside("cuptiSubscribe");
	CALL_REAL(r, cuptiSubscribe, sub, cb, userdata);
	if (r == CUPTI_SUCCESS && !cupti_self && sub)
		program.sub = *sub;
	pthread_mutex_unlock(&cupti_share_lock);
	return r;
}

GT_EXPORT CUptiResult CUPTIAPI cuptiSubscribe_v2(CUpti_SubscriberHandle *sub,
						 CUpti_CallbackFunc cb, void *userdata,
						 CUpti_SubscriberParams *params)
{
	char how[96];
	CUptiResult r;

	if (params && params->subscriberName)
		snprintf(how, sizeof(how), "cuptiSubscribe_v2 as \"%.48s\"", params->subscriberName);
	else
		snprintf(how, sizeof(how), "cuptiSubscribe_v2");
	pthread_mutex_lock(&cupti_share_lock);
	step_aside(how);
	CALL_REAL(r, cuptiSubscribe_v2, sub, cb, userdata, params);
	if (r == CUPTI_SUCCESS && !cupti_self && sub)
		program.sub = *sub;
	pthread_mutex_unlock(&cupti_share_lock);
	return r;
}

GT_EXPORT CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle sub)
{
	CUptiResult r;

	pthread_mutex_lock(&cupti_share_lock);
	CALL_REAL(r, cuptiUnsubscribe, sub);
	if (r == CUPTI_SUCCESS && sub && sub == program.sub) {
		program.sub = NULL;
		maybe_take_back();
	}
	pthread_mutex_unlock(&cupti_share_lock);
	return r;
}

GT_EXPORT CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(
	CUpti_BuffersCallbackRequestFunc requested, CUpti_BuffersCallbackCompleteFunc completed)
{
	CUptiResult r;

	pthread_mutex_lock(&cupti_share_lock);
	step_aside("cuptiActivityRegisterCallbacks");
	CALL_REAL(r, cuptiActivityRegisterCallbacks, requested, completed);
	pthread_mutex_unlock(&cupti_share_lock);
	return r;
}

GT_EXPORT CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind)
{
	CUptiResult r;

	pthread_mutex_lock(&cupti_share_lock);
	step_aside("cuptiActivityEnable");
	CALL_REAL(r, cuptiActivityEnable, kind);
	if (r == CUPTI_SUCCESS && !cupti_self)
		program.kinds |= kind_bit(kind);
	pthread_mutex_unlock(&cupti_share_lock);
	return r;
}

GT_EXPORT CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind)
{
	CUptiResult r;

	pthread_mutex_lock(&cupti_share_lock);
	CALL_REAL(r, cuptiActivityDisable, kind);
	if (r == CUPTI_SUCCESS && !cupti_self) {
		program.kinds &= ~kind_bit(kind);
		maybe_take_back();
	}
	pthread_mutex_unlock(&cupti_share_lock);
	return r;
}

GT_EXPORT CUptiResult CUPTIAPI cuptiFinalize(void)
{
	CUptiResult r;
	bool ours = false;

	pthread_mutex_lock(&cupti_share_lock);
	/* while we hold CUPTI (the program let go, then detaches as CUPTI
	 * recommends), it would end our session under us: end it first and
	 * start again on the fresh CUPTI, with no gap to speak of */
	if (!cupti_self && atomic_load(&cupti_state) == CUPTI_ON)
		ours = cupti__yield();
	CALL_REAL(r, cuptiFinalize);
	if (!cupti_self) {
		program.sub = NULL;
		program.kinds = 0;
		if (ours)
			cupti__take_back();
		else
			maybe_take_back();
	}
	pthread_mutex_unlock(&cupti_share_lock);
	return r;
}

/* Local names of the wrappers: the table below takes their addresses without
 * a symbol lookup each at load (the exported names would cost every process
 * one). */
#define SHARE_SELF(fn) static __typeof__(fn) share_self_##fn __attribute__((alias(#fn)));
SHARE_FUNCS(SHARE_SELF)
#undef SHARE_SELF

/* dlsym(libcupti handle, ...) by the program: the same wrappers. */
void *cupti__share_wrapper_for(const char *symbol)
{
	/* the names as one list (inject/cstr.h): half the pointers to relocate */
	static const char names[] =
#define SHARE_NAME(fn) #fn "\0"
		SHARE_FUNCS(SHARE_NAME)
#undef SHARE_NAME
		;
	static void *const fns[] = {
#define SHARE_ENTRY(fn) (void *)share_self_##fn,
		SHARE_FUNCS(SHARE_ENTRY)
#undef SHARE_ENTRY
	};
	size_t i;

	if (!gt_cstr_list_find(names, symbol, strlen(symbol), &i))
		return NULL;
	atomic_store(&looked_up[i], gt_dlsym_found);
	return fns[i];
}

GT_FORK_CODE void cupti__share_forget(void)
{
	/* a fork child: CUPTI was the parent's */
	pthread_mutex_init(&marks_lock, NULL);
	nmarks = 0;
	program.sub = NULL;
	program.kinds = 0;
	program.gap = -1;
}
