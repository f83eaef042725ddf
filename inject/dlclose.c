// SPDX-License-Identifier: MIT
/*
 * dlclose(), for call stacks: a stack is symbolized when the trace is
 * written, after its library may be gone and another loaded at its
 * address. What was loaded is kept before the library goes (stacks.c).
 * Unlike dlopen (see lifecycle.c), dlclose resolves nothing from its
 * caller's address, so wrapping it changes nothing for the program.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>

#include "inject/config.h"
#include "inject/event.h"
#include "inject/stacks.h"

typedef int dlclose_fn(void *handle);

static dlclose_fn *_Atomic real_dlclose;

GT_EXPORT int dlclose(void *handle)
{
	dlclose_fn *real = atomic_load_explicit(&real_dlclose, memory_order_acquire);
	struct stacks_dlclose c;
	int ret;

	if (!real) {
		real = (dlclose_fn *)dlsym(RTLD_NEXT, "dlclose");
		if (!real)
			return -1;
		atomic_store_explicit(&real_dlclose, real, memory_order_release);
	}
	if (!gt_cfg.stacks)
		return real(handle);
	stacks__dlclose_begin(&c);
	ret = real(handle);
	stacks__dlclose_end(&c);
	return ret;
}
