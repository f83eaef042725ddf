// SPDX-License-Identifier: MIT
/*
 * cuInit's span. The driver starts CUPTI inside the first cuInit (it calls
 * InitializeInjection there), after the call's entry, so CUPTI's driver
 * callbacks never report that call: a program of the driver API lost it,
 * often its longest call. The program's cuInit comes here instead, and
 * whenever CUPTI's callbacks did not see its entry the span is taken here,
 * host times around the real call (as runtime.c takes a runtime call's),
 * with or without CUPTI.
 *
 * Exported under GPUTRACE_LINK_ONLY (inject/exports.map): a program linked
 * to libcuda binds to it, and dlsym() of a libcuda handle hands it out
 * (cupti__drv_wrapper_for), but dlsym(RTLD_DEFAULT) never finds it, so a
 * process that probes for the driver sees the driver or nothing. libcudart
 * (shared or static) gets its cuInit from cuGetProcAddress, not here; a
 * cuInit inside a traced runtime call is that call's, as its other driver
 * calls are.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdbool.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/cuda/internal.h"
#include "inject/clock.h"
#include "inject/config.h"
#include "inject/shim.h"
#include "inject/stacks.h"

#define CU_ERROR_NO_DEVICE 100 /* CUDA_ERROR_NO_DEVICE: what a machine without a GPU says */

typedef int (*cu_init_fn)(unsigned flags);

/* libcuda's cuInit, as a program's dlsym() found it (a libcuda loaded RTLD_LOCAL) */
static _Atomic(void *) cu_init_looked_up;

static cu_init_fn real_cu_init(void)
{
	static _Atomic(void *) cached;
	void *p = atomic_load_explicit(&cached, memory_order_relaxed);

	if (gt_likely(p))
		return (cu_init_fn)p;
	p = gt_real("cuInit");
	if (!p)
		p = atomic_load(&cu_init_looked_up);
	if (p)
		atomic_store_explicit(&cached, p, memory_order_relaxed);
	return (cu_init_fn)p;
}

/* The span is ours when CUPTI's driver callbacks cannot see this call's entry. */
static bool cu_init_traced(void)
{
	gt_ensure_init();
	return cupti_backend_on && !cupti_self && !gt_in_tracer && !cupti_rt_wrapper_owns &&
	       atomic_load(&cupti_state) != CUPTI_ON && gt_tracing() &&
	       (gt_cfg.kinds & GT_KIND(DRIVER));
}

static void cu_init_emit(uint64_t start, uint64_t corr, int r)
{
	static _Atomic uint32_t name;
	uint64_t end = gt_clock_ns();

	if (!atomic_load_explicit(&name, memory_order_relaxed))
		atomic_store_explicit(&name, gt_str_intern("cuInit"), memory_order_relaxed);
	cupti__emit_api_span(start, end, corr, atomic_load_explicit(&name, memory_order_relaxed),
			     false, false, r,
			     gt_cfg.stacks && gt_cfg.stacks_all ? gt_stack_capture() : 0);
}

static int cu_init_wrap(unsigned flags)
{
	cu_init_fn real = real_cu_init();
	uint64_t start, corr;
	int r;

	if (!real)
		return CU_ERROR_NO_DEVICE;
	if (!cu_init_traced())
		return real(flags);
	corr = gt_corr_next();
	start = gt_clock_ns();
	r = real(flags);
	cu_init_emit(start, corr, r);
	return r;
}

/* The exported name: a program linked to libcuda binds to it, dlsym() never finds it. */
GT_EXPORT int gt_cu_link_only_cuInit(unsigned flags) __attribute__((alias("cu_init_wrap")));
__asm__(".symver gt_cu_link_only_cuInit, cuInit@GPUTRACE_LINK_ONLY");

/* Whether fn is in a libcuda (another library's cuInit is not the driver's): by its
 * file's name, else by its soname (one opened by a link of another name). */
static bool in_libcuda(void *fn)
{
	Dl_info info;
	struct link_map *l = NULL;
	const char *base, *soname;

	if (!fn || !dladdr1(fn, &info, (void **)&l, RTLD_DL_LINKMAP) || !info.dli_fname)
		return false;
	base = strrchr(info.dli_fname, '/');
	if (!strncmp(base ? base + 1 : info.dli_fname, "libcuda.so", 10))
		return true;
	soname = l ? gt_soname(l->l_ld, l->l_addr) : NULL;
	return soname && !strncmp(soname, "libcuda.so", 10);
}

/* dlsym(libcuda handle, "cuInit") by the program: the same wrapper. */
void *cupti__drv_wrapper_for(const char *symbol)
{
	if (strcmp(symbol, "cuInit") || !in_libcuda(gt_dlsym_found))
		return NULL;
	atomic_store(&cu_init_looked_up, gt_dlsym_found);
	return (void *)cu_init_wrap;
}
