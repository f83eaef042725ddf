// SPDX-License-Identifier: MIT
/*
 * The tools hub: every runtime and driver entry point announces itself
 * here, and whoever attached (libcupti) hears of it on the calling thread.
 * Correlation ids are given out here: one per outermost call, shared by
 * the driver calls a runtime call makes (so a kernel's record, the
 * runtime call and the driver call that launched it carry one id).
 *
 * Contract checks (abort with one line): a driver call that needs the
 * device made from inside a CUPTI callback (CUPTI documents
 * cuptiGetDeviceId/cuptiGetContextId as the callback-safe way), and any
 * driver call made from inside InitializeInjection (the driver holds its
 * initialization lock there), and any CUDA call from inside a host function
 * (cuLaunchHostFunc: it "must not make any CUDA API calls"; a real driver may
 * deadlock).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "drv.h"

static _Atomic(const struct sim_tool_ops *) tool;
static _Atomic uint32_t next_corr = 1;
static __thread struct sim_call *calls;
static __thread int in_tool;
__thread int drv_in_injection;
__thread bool drv_in_host_fn;

/* Driver calls that never touch a device: allowed anywhere. */
static bool harmless(const char *name)
{
	static const char *const ok[] = { "cuGetErrorName", "cuGetErrorString", "cuDriverGetVersion",
					   "cuGetProcAddress", "cuGetExportTable" };

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (!strncmp(name, ok[i], strlen(ok[i])))
			return true;
	return false;
}

static SIM_NOINLINE void notify(struct sim_call *c, int site)
{
	const struct sim_tool_ops *ops = atomic_load_explicit(&tool, memory_order_acquire);

	if (!ops || !ops->api)
		return;
	in_tool++;
	ops->api(c, site);
	in_tool--;
}

SIM_NOINLINE void drv_enter(struct sim_call *c)
{
	struct sim_call *rt = NULL;

	if (drv_in_host_fn)
		drv_die("%s called from inside a host function (cuLaunchHostFunc, "
			"cuStreamAddCallback), which \"must not make any CUDA API calls\"", c->name);
	if (c->domain == SIM_DOMAIN_DRIVER && !harmless(c->name)) {
		if (drv_in_injection)
			drv_die("%s called from inside InitializeInjection: the driver holds its "
				"initialization lock there (a real driver deadlocks)", c->name);
		if (in_tool)
			drv_die("%s called from inside a CUPTI callback: CUPTI offers "
				"cuptiGetDeviceId/cuptiGetContextId for use in callbacks", c->name);
	}
	for (struct sim_call *o = calls; o; o = o->outer)
		if (o->domain == SIM_DOMAIN_RUNTIME)
			rt = o;
	c->outer = calls;
	c->corr = c->domain == SIM_DOMAIN_DRIVER && rt
			  ? rt->corr
			  : atomic_fetch_add_explicit(&next_corr, 1, memory_order_relaxed);
	calls = c;
	notify(c, SIM_SITE_ENTER);
}

SIM_NOINLINE void drv_exit(struct sim_call *c)
{
	notify(c, SIM_SITE_EXIT);
	calls = c->outer;
}

struct sim_call *drv_current_call(void)
{
	return calls;
}

uint32_t drv_current_corr(void)
{
	return calls ? calls->corr : 0;
}

/* The correlation id of the runtime call around the current one, or 0. */
uint32_t drv_runtime_corr(void)
{
	for (struct sim_call *o = calls; o; o = o->outer)
		if (o->domain == SIM_DOMAIN_RUNTIME)
			return o->corr;
	return 0;
}

static int attach(const struct sim_tool_ops *ops)
{
	const struct sim_tool_ops *none = NULL;

	return atomic_compare_exchange_strong(&tool, &none, ops) || none == ops ? 0 : -16;
}

static void detach(const struct sim_tool_ops *ops)
{
	const struct sim_tool_ops *cur = ops;

	atomic_compare_exchange_strong(&tool, &cur, NULL);
}

void drv_tool_work(const struct sim_work *w)
{
	const struct sim_tool_ops *ops = atomic_load_explicit(&tool, memory_order_acquire);

	if (ops && ops->work)
		ops->work(w);
}

void drv_tool_graph(const struct sim_graph_run *g)
{
	const struct sim_tool_ops *ops = atomic_load_explicit(&tool, memory_order_acquire);

	if (ops && ops->graph)
		ops->graph(g);
}

void drv_tool_sync(struct sim_sync *s, int site)
{
	const struct sim_tool_ops *ops = atomic_load_explicit(&tool, memory_order_acquire);

	if (ops && ops->sync)
		ops->sync(s, site);
}

void drv_tool_context(struct drv_ctx *ctx, int created)
{
	const struct sim_tool_ops *ops = atomic_load_explicit(&tool, memory_order_acquire);

	if (ops && ops->context) {
		in_tool++;
		ops->context((CUcontext)ctx, created);
		in_tool--;
	}
}

uint64_t drv_tool_busy_until(const struct drv_ctx *ctx)
{
	const struct sim_tool_ops *ops = atomic_load_explicit(&tool, memory_order_acquire);

	return ops && ops->busy_until ? ops->busy_until(ctx->id) : 0;
}

void drv_tool_module(struct drv_ctx *ctx, uint32_t module_id, int loaded)
{
	const struct sim_tool_ops *ops = atomic_load_explicit(&tool, memory_order_acquire);

	if (ops && ops->module) {
		in_tool++;
		ops->module((CUcontext)ctx, module_id, loaded);
		in_tool--;
	}
}

static CUcontext current_context(void)
{
	return (CUcontext)drv_ctx_current();
}

const struct sim_tools *drv_tools(void)
{
	static const struct sim_tools t = {
		.size = sizeof(struct sim_tools),
		.enter = drv_enter,
		.exit = drv_exit,
		.attach = attach,
		.detach = detach,
		.host_ns = drv_host_ns,
		.device_ns = drv_device_ns,
		.realtime_ns = drv_realtime_ns,
		.context_ids = drv_context_ids,
		.stream_id = drv_stream_cupti_id,
		.current_context = current_context,
		.current_call = drv_current_call,
		.module_global = drv_module_declare_global,
		.report = drv_report,
		.profile_breaks_captures = drv_profile_breaks_captures,
	};
	return &t;
}
