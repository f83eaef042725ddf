// SPDX-License-Identifier: MIT
/*
 * What nvcc's generated code calls: at start-up, __cudaRegisterFatBinary
 * with the embedded fatbinary wrapper, __cudaRegisterFunction for each
 * kernel (its host stub and its mangled device name), then
 * __cudaRegisterFatBinaryEnd; __cudaUnregisterFatBinary at exit. A
 * <<<grid, block, shared, stream>>> pushes a call configuration that the
 * stub pops before launching (cudaLaunchKernel in CUDA 12;
 * __cudaGetKernel and __cudaLaunchKernel in CUDA 13).
 *
 * As in the real runtime, modules are loaded into the driver lazily, at
 * the first launch of one of their kernels, in the launching thread's
 * context: once per device, and again after its cudaDeviceReset. A
 * __device__ variable (__cudaRegisterVar: its host shadow, device name and
 * size) is declared to the driver when its module is loaded, and found by
 * cuModuleGetGlobal, as the real runtime finds it.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

#define FATBIN_WRAPPER_MAGIC 0x466243b1

struct fatbin_wrapper { /* __fatBinC_Wrapper_t, as nvcc emits it */
	int magic;
	int version;
	const unsigned long long *data;
	void *filename_or_fatbins;
};

struct rt_module {
	const struct fatbin_wrapper *wrapper;
	CUmodule module[RT_DEVICES]; /* loaded lazily, per device */
	bool ended;      /* __cudaRegisterFatBinaryEnd seen */
	struct rt_function *functions;
	struct rt_var *vars;
};

struct rt_var {
	const void *host_var; /* the host shadow: the symbol the program names */
	char *name;           /* the device variable's (mangled) name */
	size_t size;
	struct rt_module *module;
	struct rt_var *next;     /* of the module */
	struct rt_var *next_all;
};

struct rt_function {
	const void *host_fun;
	char *name;
	struct rt_module *module;
	CUfunction function[RT_DEVICES];
	struct rt_function *next;      /* of the module */
	struct rt_function *next_all;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct rt_function *all_functions;
static struct rt_var *all_vars;

struct call_config {
	dim3 grid, block;
	size_t shared;
	cudaStream_t stream;
};
#define CONFIG_DEPTH 16
static __thread struct call_config configs[CONFIG_DEPTH];
static __thread unsigned nconfigs;

void **rt_register_fatbin(void *fatbin)
{
	const struct fatbin_wrapper *w = fatbin;
	struct rt_module *m;

	if (!w || w->magic != FATBIN_WRAPPER_MAGIC)
		sim_die_rt("__cudaRegisterFatBinary: not an nvcc fatbinary wrapper (magic %#x)",
			   w ? (unsigned)w->magic : 0u);
	m = calloc(1, sizeof(*m));
	if (!m)
		sim_die_rt("out of memory registering a fatbinary");
	m->wrapper = w;
	return (void **)m;
}

void rt_register_fatbin_end(void **handle)
{
	((struct rt_module *)handle)->ended = true;
}

void rt_register_function(void **handle, const char *host_fun, char *device_fun,
			  const char *device_name)
{
	struct rt_module *m = (struct rt_module *)handle;
	struct rt_function *f = calloc(1, sizeof(*f));

	if (!f || !(f->name = strdup(device_fun ? device_fun : device_name)))
		sim_die_rt("out of memory registering a kernel");
	f->host_fun = host_fun;
	f->module = m;
	pthread_mutex_lock(&lock);
	f->next = m->functions;
	m->functions = f;
	f->next_all = all_functions;
	all_functions = f;
	pthread_mutex_unlock(&lock);
}

void rt_register_var(void **handle, char *host_var, char *device_address, const char *device_name,
		     size_t size)
{
	struct rt_module *m = (struct rt_module *)handle;
	struct rt_var *v = calloc(1, sizeof(*v));

	if (!v || !(v->name = strdup(device_address ? device_address : device_name)))
		sim_die_rt("out of memory registering a variable");
	v->host_var = host_var;
	v->size = size;
	v->module = m;
	pthread_mutex_lock(&lock);
	v->next = m->vars;
	m->vars = v;
	v->next_all = all_vars;
	all_vars = v;
	pthread_mutex_unlock(&lock);
}

void rt_unregister_fatbin(void **handle)
{
	struct rt_module *m = (struct rt_module *)handle;
	struct rt_function *f, *next;
	struct rt_var *v, *next_var;

	pthread_mutex_lock(&lock);
	for (struct rt_function **p = &all_functions; *p;) {
		if ((*p)->module == m)
			*p = (*p)->next_all;
		else
			p = &(*p)->next_all;
	}
	for (struct rt_var **p = &all_vars; *p;) {
		if ((*p)->module == m)
			*p = (*p)->next_all;
		else
			p = &(*p)->next_all;
	}
	pthread_mutex_unlock(&lock);
	/* the driver unloads its modules (and its kernels' names) */
	for (int d = 0; d < RT_DEVICES; d++)
		if (m->module[d] && !rt_context())
			rt_drv.cuModuleUnload(m->module[d]);
	for (f = m->functions; f; f = next) {
		next = f->next;
		free(f->name);
		free(f);
	}
	for (v = m->vars; v; v = next_var) {
		next_var = v->next;
		free(v->name);
		free(v);
	}
	free(m);
}

struct rt_function *rt_function_of(const void *host_fun)
{
	struct rt_function *f;

	pthread_mutex_lock(&lock);
	for (f = all_functions; f && f->host_fun != host_fun; f = f->next_all)
		;
	pthread_mutex_unlock(&lock);
	return f;
}

const char *rt_function_name(const struct rt_function *f)
{
	return f ? f->name : NULL;
}

const void *rt_function_host(const struct rt_function *f)
{
	return f->host_fun;
}

/* The module in the device's context, its variables declared; lock held. */
static CUresult load_module(struct rt_module *m, int d)
{
	CUresult r;

	if (m->module[d])
		return CUDA_SUCCESS;
	if ((r = rt_drv.cuModuleLoadFatBinary(&m->module[d], m->wrapper->data)))
		return r;
	for (struct rt_var *v = m->vars; v && !r; v = v->next)
		r = rt_drv.tools ? (CUresult)rt_drv.tools->module_global(m->module[d], v->name, v->size)
				 : CUDA_ERROR_NOT_SUPPORTED;
	return r;
}

/* The module in the device's context, and the kernel in it; the context is current. */
static cudaError_t load(struct rt_function *f, int d)
{
	struct rt_module *m = f->module;
	CUresult r;

	if (d < 0 || d >= RT_DEVICES)
		return rt_error(cudaErrorInvalidDevice);
	pthread_mutex_lock(&lock);
	r = load_module(m, d);
	if (!r && !f->function[d])
		r = rt_drv.cuModuleGetFunction(&f->function[d], m->module[d], f->name);
	pthread_mutex_unlock(&lock);
	return r == CUDA_ERROR_INVALID_IMAGE ? rt_error(cudaErrorInvalidKernelImage) : rt_result(r);
}

void rt_forget_modules(int d)
{
	if (d < 0 || d >= RT_DEVICES)
		return;
	pthread_mutex_lock(&lock);
	for (struct rt_function *f = all_functions; f; f = f->next_all) {
		f->function[d] = NULL;
		f->module->module[d] = NULL;
	}
	for (struct rt_var *v = all_vars; v; v = v->next_all)
		v->module->module[d] = NULL;
	pthread_mutex_unlock(&lock);
}

cudaError_t rt_symbol(const void *symbol, CUdeviceptr *dptr, size_t *size)
{
	int d = rt_current_device();
	struct rt_var *v;
	cudaError_t e = rt_context();
	CUresult r;

	if (e)
		return e;
	if (d < 0 || d >= RT_DEVICES)
		return rt_error(cudaErrorInvalidDevice);
	pthread_mutex_lock(&lock);
	for (v = all_vars; v && v->host_var != symbol; v = v->next_all)
		;
	r = v ? load_module(v->module, d) : CUDA_SUCCESS;
	if (v && !r)
		r = rt_drv.cuModuleGetGlobal(dptr, size, v->module->module[d], v->name);
	pthread_mutex_unlock(&lock);
	if (!v || r == CUDA_ERROR_NOT_FOUND)
		return rt_error(cudaErrorInvalidSymbol);
	return r == CUDA_ERROR_INVALID_IMAGE ? rt_error(cudaErrorInvalidKernelImage) : rt_result(r);
}

cudaError_t rt_launch(struct rt_function *f, dim3 grid, dim3 block, void **args, size_t shared,
		      cudaStream_t stream, bool per_thread)
{
	cudaError_t e = rt_context();

	if (e)
		return e;
	if (!f)
		return rt_error(cudaErrorInvalidDeviceFunction);
	if ((e = load(f, rt_current_device())))
		return e;
	if (!stream && per_thread)
		stream = cudaStreamPerThread;
	CUresult r = rt_drv.cuLaunchKernel(f->function[rt_current_device()], grid.x, grid.y, grid.z, block.x, block.y,
					   block.z, (unsigned)shared, (CUstream)stream, args, NULL);
	return r == CUDA_ERROR_INVALID_VALUE ? rt_error(cudaErrorInvalidConfiguration) : rt_result(r);
}

unsigned rt_push_config(dim3 grid, dim3 block, size_t shared, void *stream)
{
	if (nconfigs == CONFIG_DEPTH)
		return 1;
	configs[nconfigs++] = (struct call_config){ grid, block, shared, stream };
	return 0;
}

cudaError_t rt_pop_config(dim3 *grid, dim3 *block, size_t *shared, void *stream)
{
	if (!nconfigs)
		sim_die_rt("__cudaPopCallConfiguration without a configuration pushed "
			   "(a kernel stub called without <<<>>>)");
	struct call_config *c = &configs[--nconfigs];
	*grid = c->grid;
	*block = c->block;
	*shared = c->shared;
	*(cudaStream_t *)stream = c->stream;
	return cudaSuccess;
}

cudaError_t rt_func_get_name(const char **name, const void *func)
{
	struct rt_function *f;

	if (!name || !func)
		return rt_error(cudaErrorInvalidValue);
	f = rt_function_of(func);
	if (!f)
		return rt_error(cudaErrorInvalidDeviceFunction);
	*name = f->name;
	return cudaSuccess;
}

/* No static shared memory or locals: the simulated kernels' code is not read */
cudaError_t rt_func_get_attributes(struct cudaFuncAttributes *attr, const void *func)
{
	if (!attr || !func)
		return rt_error(cudaErrorInvalidValue);
	if (!rt_function_of(func))
		return rt_error(cudaErrorInvalidDeviceFunction);
	*attr = (struct cudaFuncAttributes){
		.maxThreadsPerBlock = 1024,
		.numRegs = SIM_KERNEL_REGISTERS,
		.ptxVersion = 90,
		.binaryVersion = 90,
		.maxDynamicSharedSizeBytes = 48 * 1024,
	};
	return cudaSuccess;
}

#if SIM_RT_MAJOR >= 13
cudaError_t rt_get_kernel(cudaKernel_t *k, const void *host_fun)
{
	struct rt_function *f = rt_function_of(host_fun);

	if (!k)
		return rt_error(cudaErrorInvalidValue);
	if (!f)
		return rt_error(cudaErrorInvalidDeviceFunction);
	*k = (cudaKernel_t)f;
	return cudaSuccess;
}
#endif
