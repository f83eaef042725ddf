// SPDX-License-Identifier: MIT
/*
 * Modules, functions and kernel launches. A module is loaded from the
 * fatbinary nvcc embedded in the program (its header is checked, its code
 * is not read: kernels do not compute); a function exists for any name the
 * module is asked for. A launch of grid (gx,gy,gz) and block (bx,by,bz)
 * takes gx*gy*gz*bx*by*bz ns of device time.
 *
 * Kernel names belong to their module: when it is unloaded, their storage
 * is overwritten and later reused for the names of modules loaded after
 * (CUPTI before 13.4 Update 1 hands out such stale names in activity
 * records: a tool must copy a name when the record reaches it). Tools hear
 * of a module's load and, before it goes, of its unload.
 *
 * A module's __device__ variables are what the runtime declares from nvcc's
 * __cudaRegisterVar (a real driver reads the cubin's symbol table): each is
 * zeroed device memory of the module's context, found by cuModuleGetGlobal
 * and freed with the module (not by cuMemFree).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drv.h"

#define FATBIN_MAGIC 0xBA55ED50u
#define UNLOADED_NAME "cuda_sim_unloaded_module_kernel"

/* ---- name storage, reused after unloads ---- */

struct name_block {
	struct name_block *next;
	size_t cap;
	char text[];
};
static struct name_block *free_names;
static uint32_t next_module_id = 1;
static struct drv_module *modules; /* every loaded module, of every context */

static const char *name_store(const char *name)
{
	size_t len = strlen(name) + 1;
	struct name_block **p, *b;

	for (p = &free_names; *p; p = &(*p)->next) {
		if ((*p)->cap >= len) {
			b = *p;
			*p = b->next;
			memcpy(b->text, name, len);
			return b->text;
		}
	}
	size_t cap = (len + 63) / 64 * 64;
	b = malloc(sizeof(*b) + cap);
	if (!b)
		return NULL;
	b->cap = cap;
	memcpy(b->text, name, len);
	return b->text;
}

static void name_release(const char *text)
{
	struct name_block *b = (struct name_block *)((char *)text - offsetof(struct name_block, text));

	snprintf(b->text, b->cap, "%s", UNLOADED_NAME);
	b->next = free_names;
	free_names = b;
}

/* ---- modules ---- */

CUresult drv_module_load_fatbin(CUmodule *out, const void *image)
{
	struct drv_module *m;
	uint32_t magic;
	struct drv_ctx *ctx = drv_ctx_current();
	CUresult r = drv_initialized();

	if (r)
		return r;
	if (!out || !image)
		return CUDA_ERROR_INVALID_VALUE;
	if (!ctx)
		return drv_no_context();
	memcpy(&magic, image, sizeof(magic));
	if (magic != FATBIN_MAGIC)
		return CUDA_ERROR_INVALID_IMAGE;
	m = calloc(1, sizeof(*m));
	if (!m)
		return CUDA_ERROR_OUT_OF_MEMORY;
	m->magic = MAGIC_MODULE;
	m->ctx = ctx;
	pthread_mutex_lock(&drv_lock);
	m->id = next_module_id++;
	m->next = modules;
	modules = m;
	drv_handle_add(m);
	pthread_mutex_unlock(&drv_lock);
	drv_tool_module(ctx, m->id, 1);
	*out = (CUmodule)m;
	return CUDA_SUCCESS;
}

CUresult drv_module_unload(CUmodule h)
{
	struct drv_module *m = (struct drv_module *)h;
	struct drv_func *f, *next;
	uint32_t id;

	pthread_mutex_lock(&drv_lock);
	if (!drv_handle_ok(m, MAGIC_MODULE)) {
		pthread_mutex_unlock(&drv_lock);
		return CUDA_ERROR_INVALID_HANDLE;
	}
	id = m->id;
	pthread_mutex_unlock(&drv_lock);
	/* the last moment a tool can read what points into the module */
	drv_tool_module(m->ctx, id, 0);
	pthread_mutex_lock(&drv_lock);
	if (!drv_handle_ok(m, MAGIC_MODULE)) {
		pthread_mutex_unlock(&drv_lock);
		return CUDA_ERROR_INVALID_HANDLE;
	}
	for (f = m->funcs; f; f = next) {
		next = f->next;
		drv_handle_del(f);
		name_release(f->name);
		f->magic = 0;
		free(f);
	}
	while (m->globals) {
		struct drv_global *g = m->globals;

		m->globals = g->next;
		drv_storage_free(g->storage);
		free(g->name);
		free(g);
	}
	for (struct drv_module **p = &modules; *p; p = &(*p)->next) {
		if (*p == m) {
			*p = m->next;
			break;
		}
	}
	drv_handle_del(m);
	m->magic = 0;
	pthread_mutex_unlock(&drv_lock);
	free(m);
	return CUDA_SUCCESS;
}

void drv_modules_unload_context(struct drv_ctx *ctx)
{
	for (;;) {
		struct drv_module *m;

		pthread_mutex_lock(&drv_lock);
		for (m = modules; m && m->ctx != ctx; m = m->next)
			;
		pthread_mutex_unlock(&drv_lock);
		if (!m || drv_module_unload((CUmodule)m))
			return;
	}
}

CUresult drv_module_get_function(CUfunction *out, CUmodule h, const char *name)
{
	struct drv_module *m = (struct drv_module *)h;
	struct drv_func *f;
	CUresult r = CUDA_SUCCESS;

	if (!out || !name)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&drv_lock);
	if (!drv_handle_ok(m, MAGIC_MODULE)) {
		r = CUDA_ERROR_INVALID_HANDLE;
		goto out;
	}
	for (f = m->funcs; f; f = f->next)
		if (!strcmp(f->name, name))
			break;
	if (!f) {
		f = calloc(1, sizeof(*f));
		if (!f || !(f->name = name_store(name))) {
			free(f);
			r = CUDA_ERROR_OUT_OF_MEMORY;
			goto out;
		}
		f->magic = MAGIC_FUNC;
		f->module = m;
		f->next = m->funcs;
		m->funcs = f;
		drv_handle_add(f);
	}
	*out = (CUfunction)f;
out:
	pthread_mutex_unlock(&drv_lock);
	return r;
}

/* drv_lock held */
static struct drv_global *global_of(const struct drv_module *m, const char *name)
{
	struct drv_global *g;

	for (g = m->globals; g && strcmp(g->name, name); g = g->next)
		;
	return g;
}

int drv_module_declare_global(CUmodule h, const char *name, size_t size)
{
	struct drv_module *m = (struct drv_module *)h;
	struct drv_global *g;
	CUresult r = CUDA_SUCCESS;

	if (!name)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&drv_lock);
	if (!drv_handle_ok(m, MAGIC_MODULE))
		r = CUDA_ERROR_INVALID_HANDLE;
	else if (global_of(m, name))
		; /* declared once per module */
	else if (!(g = calloc(1, sizeof(*g))) || !(g->name = strdup(name)) ||
		 !(g->storage = drv_storage_new(m->ctx, size))) {
		if (g)
			free(g->name);
		free(g);
		r = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		g->size = size;
		g->next = m->globals;
		m->globals = g;
	}
	pthread_mutex_unlock(&drv_lock);
	return r;
}

/* "One of the parameters dptr or bytes (not both) can be NULL" */
CUresult drv_module_get_global(CUdeviceptr *dptr, size_t *bytes, CUmodule h, const char *name)
{
	struct drv_module *m = (struct drv_module *)h;
	struct drv_global *g = NULL;
	CUresult r = drv_initialized();

	if (r)
		return r;
	if ((!dptr && !bytes) || !name)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&drv_lock);
	if (!drv_handle_ok(m, MAGIC_MODULE))
		r = CUDA_ERROR_INVALID_HANDLE;
	else if (!(g = global_of(m, name)))
		r = CUDA_ERROR_NOT_FOUND;
	else {
		if (dptr)
			*dptr = (CUdeviceptr)g->storage;
		if (bytes)
			*bytes = g->size;
	}
	pthread_mutex_unlock(&drv_lock);
	return r;
}

CUresult drv_func_get_name(const char **name, CUfunction h)
{
	struct drv_func *f = (struct drv_func *)h;
	CUresult r = CUDA_SUCCESS;

	if (!name)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&drv_lock);
	if (drv_handle_ok(f, MAGIC_FUNC))
		*name = f->name;
	else
		r = CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_unlock(&drv_lock);
	return r;
}

/* The kernel's name for the launch callbacks (CUpti_CallbackData.symbolName). */
const char *drv_func_symbol(CUfunction h)
{
	const char *name = NULL;

	drv_func_get_name(&name, h);
	return name;
}

/* ---- launches ---- */

CUresult drv_launch(CUfunction h, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
		    unsigned bz, unsigned shared, CUstream stream, void **params, void **extra)
{
	struct drv_func *f = (struct drv_func *)h;
	struct drv_node n = { .kind = NODE_KERNEL, .grid = { gx, gy, gz }, .block = { bx, by, bz },
			      .shared = shared };
	bool ok;
	CUresult r = drv_initialized();

	if (r)
		return r;
	pthread_mutex_lock(&drv_lock);
	ok = drv_handle_ok(f, MAGIC_FUNC);
	pthread_mutex_unlock(&drv_lock);
	if (!ok)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!gx || !gy || !gz || !bx || !by || !bz || gy > 65535 || gz > 65535 || bz > 64 ||
	    (uint64_t)bx * by * bz > 1024 || shared > 49152 || (params && extra))
		return CUDA_ERROR_INVALID_VALUE;
	n.func = f;
	return drv_submit(&n, stream, false, false);
}
