// SPDX-License-Identifier: MIT
/*
 * Graphs from stream capture: each captured kernel, copy or fill is a node,
 * in capture order (one stream, a chain). Instantiation copies the nodes;
 * a launch queues them one after another on the launch stream, each with
 * the graph's id and its node id, under the launch's correlation id.
 * Launching a graph into a capturing stream (a child graph) is not
 * simulated: CUDA_ERROR_NOT_SUPPORTED. A graph and its instances belong to
 * the context captured: after its reset, instantiating or launching them
 * fails with CUDA_ERROR_CONTEXT_IS_DESTROYED (their nodes' memory is gone).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "drv.h"

static uint32_t next_graph_id = 1;
static uint64_t next_node_id = 1;

struct drv_graph *drv_graph_new(struct drv_ctx *ctx)
{
	struct drv_graph *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->magic = MAGIC_GRAPH;
	g->ctx = ctx;
	g->ctx_id = ctx->id;
	g->id = next_graph_id++;
	drv_handle_add(g);
	return g;
}

struct drv_node *drv_graph_add(struct drv_graph *g)
{
	if (g->n == g->cap) {
		unsigned cap = g->cap ? g->cap * 2 : 8;
		struct drv_node *nodes = realloc(g->nodes, cap * sizeof(*nodes));
		if (!nodes)
			return NULL;
		g->nodes = nodes;
		g->cap = cap;
	}
	memset(&g->nodes[g->n], 0, sizeof(g->nodes[0]));
	g->nodes[g->n].id = next_node_id++;
	return &g->nodes[g->n++];
}

CUresult drv_graph_instantiate(CUgraphExec *out, CUgraph h, unsigned long long flags)
{
	struct drv_graph *g = (struct drv_graph *)h;
	struct drv_exec *x;
	CUresult r = CUDA_SUCCESS;

	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	x = calloc(1, sizeof(*x));
	if (!x)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&drv_lock);
	if (!drv_handle_ok(g, MAGIC_GRAPH)) {
		r = CUDA_ERROR_INVALID_HANDLE;
	} else if (g->ctx->destroyed || g->ctx->id != g->ctx_id) {
		r = CUDA_ERROR_CONTEXT_IS_DESTROYED;
	} else if (g->n && !(x->nodes = malloc(g->n * sizeof(*x->nodes)))) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		if (g->n)
			memcpy(x->nodes, g->nodes, g->n * sizeof(*x->nodes));
		x->n = g->n;
		x->magic = MAGIC_EXEC;
		x->id = next_graph_id++;
		x->graph_id = g->id;
		x->ctx = g->ctx;
		x->ctx_id = g->ctx_id;
		drv_handle_add(x);
	}
	pthread_mutex_unlock(&drv_lock);
	if (r) {
		free(x);
		return r;
	}
	*out = (CUgraphExec)x;
	return CUDA_SUCCESS;
}

CUresult drv_graph_launch(CUgraphExec h, CUstream sh)
{
	struct drv_exec *x = (struct drv_exec *)h;
	struct drv_ctx *ctx = drv_ctx_current();
	struct drv_stream *s;
	struct sim_work *works = NULL;
	struct sim_graph_run run = { 0 };
	unsigned n = 0;
	CUresult r = drv_initialized();

	if (r)
		return r;
	if (!ctx)
		return drv_no_context();
	pthread_mutex_lock(&drv_lock);
	s = drv_stream_of(ctx, sh, false);
	if (!s || !drv_handle_ok(x, MAGIC_EXEC))
		r = CUDA_ERROR_INVALID_HANDLE;
	else if (x->ctx->destroyed || x->ctx->id != x->ctx_id)
		r = CUDA_ERROR_CONTEXT_IS_DESTROYED;
	else if (drv_capturing(s))
		r = CUDA_ERROR_NOT_SUPPORTED;
	else if (!(r = drv_capture_check(OP_USE_STREAM, s)) && x->n &&
		 !(works = calloc(x->n, sizeof(*works))))
		r = CUDA_ERROR_OUT_OF_MEMORY;
	if (!r) {
		uint64_t now = drv_host_ns();

		n = x->n;
		for (unsigned i = 0; i < n; i++)
			drv_queue_node(s, &x->nodes[i], x->graph_id, now, &works[i]);
		run = (struct sim_graph_run){
			.graph_id = x->graph_id, .device = (uint32_t)ctx->device,
			.context = ctx->id, .stream = s->id, .corr = drv_current_corr(),
			.start = n ? works[0].start : drv_schedule(s, 0, now),
			.end = n ? works[n - 1].end : s->busy_until,
		};
	}
	pthread_mutex_unlock(&drv_lock);
	if (r)
		return r;
	for (unsigned i = 0; i < n; i++)
		drv_tool_work(&works[i]);
	drv_tool_graph(&run);
	free(works);
	return CUDA_SUCCESS;
}

CUresult drv_graph_destroy(CUgraph h)
{
	struct drv_graph *g = (struct drv_graph *)h;
	bool ok;

	pthread_mutex_lock(&drv_lock);
	ok = drv_handle_ok(g, MAGIC_GRAPH);
	if (ok) {
		drv_handle_del(g);
		g->magic = 0;
	}
	pthread_mutex_unlock(&drv_lock);
	if (!ok)
		return CUDA_ERROR_INVALID_HANDLE;
	free(g->nodes);
	free(g);
	return CUDA_SUCCESS;
}

CUresult drv_graph_exec_destroy(CUgraphExec h)
{
	struct drv_exec *x = (struct drv_exec *)h;
	bool ok;

	pthread_mutex_lock(&drv_lock);
	ok = drv_handle_ok(x, MAGIC_EXEC);
	if (ok) {
		drv_handle_del(x);
		x->magic = 0;
	}
	pthread_mutex_unlock(&drv_lock);
	if (!ok)
		return CUDA_ERROR_INVALID_HANDLE;
	free(x->nodes);
	free(x);
	return CUDA_SUCCESS;
}

CUresult drv_graph_get_nodes(CUgraph h, CUgraphNode *nodes, size_t *count)
{
	struct drv_graph *g = (struct drv_graph *)h;
	CUresult r = CUDA_SUCCESS;

	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&drv_lock);
	if (!drv_handle_ok(g, MAGIC_GRAPH)) {
		r = CUDA_ERROR_INVALID_HANDLE;
	} else if (!nodes) {
		*count = g->n;
	} else {
		for (size_t i = 0; i < *count && i < g->n; i++)
			nodes[i] = (CUgraphNode)(uintptr_t)g->nodes[i].id;
		*count = *count < g->n ? *count : g->n;
	}
	pthread_mutex_unlock(&drv_lock);
	return r;
}
