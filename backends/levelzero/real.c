// SPDX-License-Identifier: MIT
/*
 * Which function is the loader's and which is ours. The real function behind
 * each wrapper is resolved on first use and cached in ze_real_tab (ZE_REAL);
 * a program that looks a Level Zero function up with dlsym (a loader it
 * dlopen()ed itself, as SYCL does) is handed our wrapper instead
 * (ze__wrapper_for, through inject/dlsym.c).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "backends/levelzero/internal.h"
#include "inject/shim.h"

_Atomic(void *) ze_real_tab[ZE_ID__COUNT];
_Atomic(void *) ze_xreal_tab[ZE_ID__COUNT];

static _Atomic(void *) ze_loader_handle;
atomic_bool ze_reached GT_STARTUP_STATE;

/* The names one after the other, found by offset (internal.h: no pointers
 * to relocate): a struct of one char array per name. */
static const struct ze_names {
#define ZE_NAME_FIELD(kind, ret, name, params, args) char name[sizeof(#name)];
	ZE_API(ZE_NAME_FIELD)
#undef ZE_NAME_FIELD
} ze_names = {
#define ZE_NAME_TEXT(kind, ret, name, params, args) #name,
	ZE_API(ZE_NAME_TEXT)
#undef ZE_NAME_TEXT
};

static const uint16_t ze_name_at[ZE_ID__COUNT] = {
#define ZE_NAME_AT(kind, ret, name, params, args) offsetof(struct ze_names, name),
	ZE_API(ZE_NAME_AT)
#undef ZE_NAME_AT
};

_Static_assert(sizeof(struct ze_names) <= UINT16_MAX, "ze_name_at holds 16-bit offsets");

const char *ze__fn_name(enum ze_fn_id id)
{
	return (const char *)&ze_names + ze_name_at[id];
}

enum ze_fn_id ze__fn_id(const char *name)
{
	unsigned lo = 0, hi = ZE_ID__COUNT;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		int c = strcmp(name, ze__fn_name((enum ze_fn_id)mid));

		if (!c)
			return (enum ze_fn_id)mid;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return ZE_ID__COUNT;
}

/* The loader, when the program dlopen()ed it privately (RTLD_LOCAL): RTLD_NEXT misses it. */
static void *ze__loader(void)
{
	void *h = atomic_load_explicit(&ze_loader_handle, memory_order_acquire);
	void *expected = NULL;

	if (h)
		return h;
	/* Kept open for good: our cached pointers must not outlive the loader's mapping. */
	h = dlopen("libze_loader.so.1", RTLD_NOLOAD | RTLD_LAZY);
	if (h && !atomic_compare_exchange_strong(&ze_loader_handle, &expected, h)) {
		dlclose(h);
		h = expected;
	}
	return h;
}

void *ze__resolve(enum ze_fn_id id)
{
	const char *name = ze__fn_name(id);
	void *self = ze__wrapper(id);
	void *p = gt_real(name);
	void *h;

	if (p == self)
		p = NULL;
	if (!p && (h = ze__loader()) != NULL) {
		p = gt_dlsym_real(h, name);
		if (p == self)
			p = NULL;
	}
	if (p) {
		atomic_store(&ze_reached, true);
		atomic_store_explicit(&ze_real_tab[id], p, memory_order_release);
	}
	return p;
}

/*
 * Without us the dynamic linker would have failed this call's lazy binding:
 * "PROG: symbol lookup error: OBJECT: undefined symbol: NAME", status 127.
 * The same, after one line of ours saying why.
 */
void ze__lacks(enum ze_fn_id id, void *caller)
{
	Dl_info info;
	const char *obj = NULL;

	if (caller && dladdr(caller, &info) && info.dli_fname && *info.dli_fname)
		obj = info.dli_fname;
	if (!obj)
		obj = program_invocation_name;
	pr_err("ze: %s is a newer Level Zero loader's function and this process's loader "
	       "lacks it: the program stops as it would without gputrace", ze__fn_name(id));
	fprintf(stderr, "%s: symbol lookup error: %s: undefined symbol: %s\n",
		program_invocation_name, obj, ze__fn_name(id));
	_exit(127);
}

/* Does the name (a path or a soname) say the Level Zero loader? */
static bool ze__loader_name(const char *name)
{
	const char *base = name ? strrchr(name, '/') : NULL;

	base = base ? base + 1 : name;
	return base && strncmp(base, "libze_loader", 12) == 0;
}

/*
 * A second loader, in another namespace than the one traced (dlmopen): its functions
 * are handed back untraced (ours would call the first loader's with its handles).
 */
static bool ze__other_namespace(const char *path)
{
	static atomic_bool said;

	if (!atomic_exchange(&said, true))
		pr_warn("ze: %s is a second Level Zero loader, in another link-map namespace "
			"(dlmopen): its calls are not traced", path);
	return false;
}

/*
 * Is p a function of the Level Zero loader (not of a driver, nor ours)? Known by its
 * file's name or, for a file of another name (a symlink, a copy: dladdr gives the
 * name it was opened by), by its soname. The loader is kept open from its own
 * namespace (one dlmopen gave it): a NOLOAD dlopen looks in ours alone, and without
 * a handle the functions the program did not look up itself could not be found.
 */
static bool ze__from_loader(void *p)
{
	Dl_info info;
	struct link_map *l = NULL;
	Lmid_t lmid = LM_ID_BASE;
	void *expected = NULL, *h;

	if (!dladdr1(p, &info, (void **)&l, RTLD_DL_LINKMAP) || !info.dli_fname || !l)
		return false;
	if (!ze__loader_name(info.dli_fname) && !ze__loader_name(gt_soname(l->l_ld, l->l_addr)))
		return false;
	/* (a link map is the handle glibc's dlopen returns) */
	if (dlinfo(l, RTLD_DI_LMID, &lmid) != 0)
		lmid = LM_ID_BASE;
	h = atomic_load_explicit(&ze_loader_handle, memory_order_acquire);
	if (h) {
		Lmid_t had = LM_ID_BASE;

		return dlinfo(h, RTLD_DI_LMID, &had) == 0 && had != lmid
			       ? ze__other_namespace(info.dli_fname)
			       : true;
	}
	/* the functions found so far are the global scope's loader's */
	if (lmid != LM_ID_BASE && gt_real("zeInit"))
		return ze__other_namespace(info.dli_fname);
	h = dlmopen(lmid, info.dli_fname, RTLD_NOLOAD | RTLD_LAZY);
	if (!h)
		return false;
	if (!atomic_compare_exchange_strong(&ze_loader_handle, &expected, h)) {
		Lmid_t had = LM_ID_BASE;

		dlclose(h);
		/* another thread's loader, just kept: is it this one's? */
		if (dlinfo(expected, RTLD_DI_LMID, &had) == 0 && had != lmid)
			return ze__other_namespace(info.dli_fname);
	}
	return true;
}

/* dlsym(handle, symbol) found gt_dlsym_found: give our wrapper instead. */
void *ze__wrapper_for(const char *symbol)
{
	void *found = gt_dlsym_found, *wrapper;
	void *expected = NULL;
	enum ze_fn_id id;

	if (!symbol || symbol[0] != 'z' || symbol[1] != 'e' || !found)
		return NULL;
	id = ze__fn_id(symbol);
	if (id == ZE_ID__COUNT)
		return NULL;
	wrapper = ze__wrapper(id);
	/* (a driver's own function has no wrapper a dlsym could get) */
	if (!wrapper || found == wrapper || !ze__from_loader(found))
		return NULL;
	/* The program's own lookup is the real function (RTLD_NEXT cannot see a local loader). */
	atomic_store(&ze_reached, true);
	atomic_compare_exchange_strong(&ze_real_tab[id], &expected, found);
	return wrapper;
}

/*
 * A program asked a driver for a function by name (SYCL gets the mutable command list
 * functions and Intel's zex* functions so): for one we trace, our wrapper of the
 * pointer the driver gave. One pointer per name: the first driver's. Another driver's
 * different function of the same name is handed back untouched (untraced).
 */
ze_result_t ze_body_zeDriverGetExtensionFunctionAddress(
	struct ze_call *c, __typeof__(&zeDriverGetExtensionFunctionAddress) real,
	ze_driver_handle_t hDriver, const char *name, void **ppFunctionAddress)
{
	ze_result_t r = real(hDriver, name, ppFunctionAddress);
	void *found, *wrapper, *expected = NULL;
	enum ze_fn_id id;

	if (r != ZE_RESULT_SUCCESS || !name || !ppFunctionAddress || !*ppFunctionAddress)
		return r;
	id = ze__fn_id(name);
	if (id == ZE_ID__COUNT)
		return r;
	found = *ppFunctionAddress;
	wrapper = ze__xwrapper(id);
	if (!wrapper || found == wrapper)
		return r;
	if (atomic_compare_exchange_strong(&ze_xreal_tab[id], &expected, found) ||
	    expected == found)
		*ppFunctionAddress = wrapper;
	return r;
}
