// SPDX-License-Identifier: MIT
/*
 * Finding libcupti. It has to match the CUDA runtime the program uses, so
 * the first place to look is next to the process's own libcudart (PyTorch
 * wheels bring theirs, e.g. nvidia/cuda_runtime/lib + nvidia/cuda_cupti/lib
 * or one nvidia/cu13/lib), then CUDA_HOME, then the toolkit this library
 * was built against, then the loader's default search path.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <link.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti.h>

#include "backends/backend.h"
#include "backends/cuda/internal.h"
#include "inject/shim.h"

#ifndef GT_CUDA_HOME
#define GT_CUDA_HOME "/usr/local/cuda"
#endif

GT_HIDDEN struct cupti_funcs cupti_fn;

void *cupti__dlsym(void *handle, const char *symbol)
{
	return gt_dlsym_real(handle, symbol);
}

typedef char *(*cupti_demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

/*
 * The C++ runtime's __cxa_demangle, for kernel names. Also where libstdc++ is not in the
 * global scope: Python loads its extension modules RTLD_LOCAL, and with them libstdc++,
 * so a PyTorch process's RTLD_DEFAULT lookup finds none (scripts/gpu-check on an H200:
 * every aten kernel mangled, torch.profiler's demangled). Never loaded for us: a process
 * without a C++ runtime keeps its kernels' names as they are. Looked for again until
 * found (a cold path: a kernel's first name).
 */
static cupti_demangle_fn demangler(void)
{
	static _Atomic(cupti_demangle_fn) found;
	cupti_demangle_fn fn = atomic_load_explicit(&found, memory_order_acquire);
	void *h;

	if (fn)
		return fn;
	fn = (cupti_demangle_fn)cupti__dlsym(RTLD_DEFAULT, "__cxa_demangle");
	/* kept open: the names it makes are freed with free(), its code must stay */
	if (!fn && (h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_NOLOAD)))
		fn = (cupti_demangle_fn)cupti__dlsym(h, "__cxa_demangle");
	if (fn)
		atomic_store_explicit(&found, fn, memory_order_release);
	return fn;
}

char *cupti__demangle(const char *name)
{
	cupti_demangle_fn cxa_demangle;
	int status = -1;
	char *out;

	if (strncmp(name, "_Z", 2) || !(cxa_demangle = demangler()))
		return NULL;
	out = cxa_demangle(name, NULL, NULL, &status);
	if (status) {
		free(out);
		return NULL;
	}
	return out;
}

struct cudart_find {
	char *dir, *name;
	size_t dir_len, name_len;
	bool found;
};

static int find_cudart(struct dl_phdr_info *info, size_t size, void *data)
{
	struct cudart_find *f = data;
	const char *path = info->dlpi_name, *base;

	if (!path || !*path)
		return 0;
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (strncmp(base, "libcudart.so", 12))
		return 0;
	snprintf(f->name, f->name_len, "%s", base);
	snprintf(f->dir, f->dir_len, "%.*s", (int)(base - path), path);
	f->found = true;
	return 1;
}

bool cupti__cudart_dir(char *dir, size_t len, char *name, size_t name_len)
{
	struct cudart_find f = { dir, name, len, name_len, false };

	dir[0] = name[0] = 0;
	dl_iterate_phdr(find_cudart, &f);
	return f.found;
}

void *cupti__rt_real(const char *symbol)
{
	char dir[PATH_MAX], name[128], path[PATH_MAX + 128];
	void *p = gt_real(symbol), *h;

	if (p)
		return p;
	/* A libcudart loaded RTLD_LOCAL (by a dlopen()ed library, as in
	 * `import torch`) binds to our wrapper but is not "next" to us. */
	if (!cupti__cudart_dir(dir, sizeof(dir), name, sizeof(name)))
		return NULL;
	snprintf(path, sizeof(path), "%s%s", dir, name);
	h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
	return h ? cupti__dlsym(h, symbol) : NULL;
}

struct soname_find {
	const char *soname;
	char *path;
	size_t len;
	bool prefix; /* soname is a prefix of the file's name */
};

static bool soname_is(const struct dl_phdr_info *info, const char *name)
{
	const char *soname = gt_phdr_soname(info);

	return soname && !strcmp(soname, name);
}

static int find_soname(struct dl_phdr_info *info, size_t size, void *data)
{
	struct soname_find *f = data;
	const char *path = info->dlpi_name, *base;

	if (!path || !*path)
		return 0;
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	/* (a file of another name, libcudart.so: its soname) */
	if (f->prefix ? strncmp(base, f->soname, strlen(f->soname))
		      : strcmp(base, f->soname) && !soname_is(info, f->soname))
		return 0;
	snprintf(f->path, f->len, "%s", path);
	return 1;
}

void *cupti__loaded_sym(const char *file_prefix, const char *symbol)
{
	char path[PATH_MAX];
	struct soname_find f = { file_prefix, path, sizeof(path), true };
	void *h, *p;

	if (!dl_iterate_phdr(find_soname, &f))
		return NULL;
	h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
	if (!h)
		return NULL;
	p = cupti__dlsym(h, symbol);
	dlclose(h);
	return p;
}

void *cupti__rt_real_version(const char *symbol, const char *version)
{
	char path[PATH_MAX];
	struct soname_find f = { version, path, sizeof(path), false };
	void *p = dlvsym(RTLD_NEXT, symbol, version), *h;

	if (p)
		return p;
	/* a libcudart loaded RTLD_LOCAL (by a dlopen()ed library): the version
	 * name is its file's name (libcudart.so.12, libcudart.so.11.0) */
	if (!dl_iterate_phdr(find_soname, &f))
		return NULL;
	h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
	return h ? dlvsym(h, symbol, version) : NULL;
}

static void *try_open(const char *path, char *loaded, size_t len)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (h) {
		snprintf(loaded, len, "%s", path);
		pr_dbg("cupti: loaded %s", path);
	}
	return h;
}

/* libcupti.so.<major>* first (it matches a libcudart.so.<major>), then any. */
static void *try_dir(const char *dir, const char *major, char *loaded, size_t len)
{
	char pat[PATH_MAX];
	glob_t g;
	void *h = NULL;

	if (!dir || !*dir)
		return NULL;
	for (int pass = 0; pass < 2 && !h; pass++) {
		if (pass == 0 && !*major)
			continue;
		snprintf(pat, sizeof(pat), "%s/libcupti.so%s%s*", dir, pass == 0 ? "." : "",
			 pass == 0 ? major : "");
		if (glob(pat, 0, NULL, &g))
			continue;
		for (size_t i = 0; i < g.gl_pathc && !h; i++)
			h = try_open(g.gl_pathv[i], loaded, len);
		globfree(&g);
	}
	return h;
}

static void *try_home(const char *home, const char *major, char *loaded, size_t len)
{
	static const char *const subdirs[] = { "lib64", "lib", "extras/CUPTI/lib64",
					       "targets/x86_64-linux/lib", "targets/sbsa-linux/lib" };
	char dir[PATH_MAX];
	void *h = NULL;

	if (!home || !*home)
		return NULL;
	for (size_t i = 0; i < sizeof(subdirs) / sizeof(subdirs[0]) && !h; i++) {
		snprintf(dir, sizeof(dir), "%s/%s", home, subdirs[i]);
		h = try_dir(dir, major, loaded, len);
	}
	return h;
}

static void *open_cupti(char *loaded, size_t len)
{
	char dir[PATH_MAX], name[128], other[PATH_MAX + 32], major[16] = "";
	void *h = NULL;

	if (cupti__cudart_dir(dir, sizeof(dir), name, sizeof(name))) {
		const char *v = strstr(name, ".so.");
		if (v)
			snprintf(major, sizeof(major), "%.*s", (int)strcspn(v + 4, "."), v + 4);
		h = try_dir(dir, major, loaded, len);
		/* pip wheels: .../nvidia/cuda_runtime/lib next to .../nvidia/cuda_cupti/lib */
		if (!h) {
			snprintf(other, sizeof(other), "%s/../../cuda_cupti/lib", dir);
			h = try_dir(other, major, loaded, len);
		}
	}
	if (!h)
		h = try_home(getenv("CUDA_HOME"), major, loaded, len);
	if (!h)
		h = try_home(getenv("CUDA_PATH"), major, loaded, len);
	if (!h)
		h = try_home(GT_CUDA_HOME, major, loaded, len);
	if (!h && *major) {
		snprintf(other, sizeof(other), "libcupti.so.%s", major);
		h = try_open(other, loaded, len);
	}
	if (!h)
		h = try_open("libcupti.so", loaded, len);
	for (int v = 13; !h && v >= 11; v--) {
		snprintf(other, sizeof(other), "libcupti.so.%d", v);
		h = try_open(other, loaded, len);
	}
	return h;
}

int cupti__load(char *loaded, size_t len)
{
	static void *handle;
	struct cupti_funcs fn = { 0 };

	if (handle)
		return 0;
	loaded[0] = 0;
	void *h = open_cupti(loaded, len);
	if (!h)
		return -ENOENT;
#define CUPTI_FN_LOAD(name, opt)                                                   \
	fn.name = (__typeof__(fn.name))cupti__dlsym(h, #name);                     \
	if (!fn.name && !(opt)) {                                                  \
		pr_warn("%s lacks %s: CUDA device activity is not traced", loaded, #name); \
		return -ENOSYS;                                                    \
	}
	CUPTI_FUNCS(CUPTI_FN_LOAD)
#undef CUPTI_FN_LOAD
	cupti_fn = fn;
	handle = h;
	return 0;
}
