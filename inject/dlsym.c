// SPDX-License-Identifier: MIT
/*
 * dlsym() for programs that load a vendor library late (dlopen) and look its
 * functions up themselves, as SYCL does with the Level Zero loader: for a
 * library handle, a registered backend may answer with its wrapper instead
 * of the real function (backend.h, wrapper_for).
 *
 * RTLD_NEXT and RTLD_DEFAULT depend on who calls: glibc finds the caller from
 * its return address. On x86-64 our dlsym therefore jumps to the real one
 * (a tail jump, the caller's return address still on the stack) for those
 * two, and only library handles come through C. Elsewhere, or when the real
 * dlsym cannot be found, RTLD_NEXT is answered by walking the link map after
 * the caller's object.
 *
 * RTLD_DEFAULT of a Level Zero name ("ze...") first asks gt_dlsym_default:
 * a newer loader's function is exported by us under a version dlsym never
 * returns (backends/levelzero/backend.c), so the plain lookup finds the
 * loader's own; when the loader has it, the program gets our wrapper.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include "backends/backend.h"
#include "inject/event.h"
#include "inject/shim.h"

typedef void *(*dlsym_fn)(void *, const char *);

/* A sanitizer runtime looks its interceptors up through us before it has set
 * itself up: the code on that path must not be instrumented. */
#define DLSYM_EARLY __attribute__((no_sanitize_address, no_sanitize_thread, no_sanitize_undefined))

/* The real dlsym; read by the assembly below. */
GT_HIDDEN _Atomic(dlsym_fn) gt_dlsym_next GT_STARTUP_BSS;
/* What the real dlsym found, while backends are asked for a wrapper. */
GT_HIDDEN GT_TLS void *gt_dlsym_found;

extern const struct gt_backend *const __start_gt_backends[]
	__attribute__((weak, visibility("hidden")));
extern const struct gt_backend *const __stop_gt_backends[]
	__attribute__((weak, visibility("hidden")));

/* The names beside the start-up code (GT_STARTUP_CONST): a shell's first
 * fork looks up the exec functions through here. */
static const char dlsym_name[] GT_STARTUP_CONST = "dlsym";
/* newest first, each ended by a NUL, the list by an empty one */
static const char dlsym_versions[] GT_STARTUP_CONST = "GLIBC_2.34\0GLIBC_2.2.5\0GLIBC_2.17\0";

DLSYM_EARLY static dlsym_fn dlsym__real(void)
{
	dlsym_fn f = atomic_load_explicit(&gt_dlsym_next, memory_order_acquire);

	for (const char *v = dlsym_versions; !f && *v;) {
		f = (dlsym_fn)dlvsym(RTLD_NEXT, dlsym_name, v);
		if (f)
			atomic_store_explicit(&gt_dlsym_next, f, memory_order_release);
		while (*v++) /* a loop of its own: no instrumented call here */
			;
	}
	return f;
}

/* Found on first use (the first dlsym through us), not at load: a process
 * that never calls dlsym does not pay for the lookup. */

void *gt_dlsym_real(void *handle, const char *symbol)
{
	dlsym_fn real = dlsym__real();

	return real ? real(handle, symbol) : NULL;
}

/* A backend's wrapper for what the real dlsym found, or found itself. */
static void *dlsym__wrap(void *found, const char *symbol)
{
	const struct gt_backend *const *b;

	/* A symbol the library lacks stays missing: programs probe with dlsym. */
	if (!found || !symbol || !__start_gt_backends)
		return found;
	gt_dlsym_found = found;
	for (b = __start_gt_backends; b < __stop_gt_backends; b++) {
		void *w;

		if (!*b || !(*b)->wrapper_for || !gt_backend_enabled((*b)->enabled_by))
			continue;
		w = (*b)->wrapper_for(symbol);
		if (w) {
			found = w;
			break;
		}
	}
	gt_dlsym_found = NULL;
	return found;
}

/* dlsym(library handle, symbol): the real function, or a backend's wrapper of it. */
GT_HIDDEN __attribute__((used)) void *gt_dlsym_handle(void *handle, const char *symbol)
{
	return dlsym__wrap(gt_dlsym_real(handle, symbol), symbol);
}

/*
 * dlsym(RTLD_DEFAULT, "ze..."): a backend's wrapper for the function the global scope
 * has (the loader's), else NULL and the real dlsym answers in the caller's name (it
 * finds our exported wrappers of the functions every loader has, or fails as it
 * would without us), or GT_DLSYM_NONE: fail, as without us (no loader is there).
 */
#define GT_DLSYM_NONE ((void *)-1)
/* Is p one of our own functions (an exported wrapper)? */
static bool dlsym__ours(void *p)
{
	Dl_info def, ours;

	return p && dladdr(p, &def) && dladdr((void *)dlsym__ours, &ours) &&
	       def.dli_fbase == ours.dli_fbase;
}

/* Has the caller's own object, or one it depends on, the function (a library loaded
 * RTLD_LOCAL with the loader as its dependency: RTLD_DEFAULT searches that too)? */
static bool dlsym__caller_has(const void *caller, const char *symbol)
{
	struct link_map *l = NULL;
	Dl_info info;
	void *h, *p;

	if (!caller || !dladdr1(caller, &info, (void **)&l, RTLD_DL_LINKMAP) || !l ||
	    !l->l_name || !*l->l_name)
		return false; /* the program: its scope is the global one */
	h = dlopen(l->l_name, RTLD_LAZY | RTLD_NOLOAD);
	if (!h)
		return false;
	p = gt_dlsym_real(h, symbol);
	dlclose(h);
	return p && !dlsym__ours(p);
}

GT_HIDDEN __attribute__((used)) void *gt_dlsym_default(const char *symbol, const void *caller)
{
	void *found = gt_dlsym_real(RTLD_DEFAULT, symbol);
	void *w = dlsym__wrap(found, symbol);

	if (w != found)
		return w;
	/*
	 * What the global scope has is our own export, and no object after us has the
	 * function, nor does the caller's own scope: no loader is there (none loaded, or
	 * one loaded RTLD_LOCAL by another). Without us the lookup fails, and a program
	 * that probes so before it loads the loader itself must not be handed a function
	 * with no loader behind it (every call ZE_RESULT_ERROR_UNINITIALIZED). The failed
	 * lookups left their dlerror().
	 */
	if (dlsym__ours(found) && !gt_dlsym_real(RTLD_NEXT, symbol) &&
	    !dlsym__caller_has(caller, symbol))
		return GT_DLSYM_NONE;
	return NULL;
}

/*
 * The soname (DT_SONAME) in an object's dynamic section, at base: NULL when it has
 * none. A library opened by another file name (libcudart.so, a symlink to
 * libcudart.so.13; a symlink named otherwise) is known by it: dladdr and the link
 * map name the path it was opened by. ld.so relocates the section's addresses on
 * most targets, not on all: one below the load address is not yet.
 */
GT_HIDDEN const char *gt_soname(const void *dynamic, uintptr_t base)
{
	const ElfW(Dyn) *dyn = dynamic;
	const char *strtab = NULL;
	size_t off = (size_t)-1;

	for (const ElfW(Dyn) *d = dyn; d && d->d_tag != DT_NULL; d++) {
		if (d->d_tag == DT_STRTAB)
			strtab = (const char *)(d->d_un.d_ptr < base ? base + d->d_un.d_ptr
								  : d->d_un.d_ptr);
		else if (d->d_tag == DT_SONAME)
			off = d->d_un.d_val;
	}
	return strtab && off != (size_t)-1 ? strtab + off : NULL;
}

/* The same for the object that dl_iterate_phdr describes. */
GT_HIDDEN const char *gt_phdr_soname(const struct dl_phdr_info *info)
{
	for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			return gt_soname((const void *)(info->dlpi_addr +
							    info->dlpi_phdr[i].p_vaddr),
					 info->dlpi_addr);
	return NULL;
}

/*
 * RTLD_NEXT for a caller in some object, without the real dlsym's help: the
 * first definition in an object loaded after it. A link map is no lookup
 * handle for objects the program did not dlopen, so each is opened again
 * (NOLOAD) and only a definition in that object itself counts (a handle also
 * searches its dependencies).
 */
static void *dlsym__next(const char *symbol, const void *caller)
{
	struct link_map *self = NULL, *l, *def;
	Dl_info info;
	void *p, *h;

	if (!dladdr1(caller, &info, (void **)&self, RTLD_DL_LINKMAP) || !self)
		return NULL;
	for (l = self->l_next; l; l = l->l_next) {
		if (!l->l_name || !*l->l_name)
			continue;
		h = dlopen(l->l_name, RTLD_LAZY | RTLD_NOLOAD);
		if (!h)
			continue;
		p = gt_dlsym_real(h, symbol);
		dlclose(h);
		def = NULL;
		if (p && dladdr1(p, &info, (void **)&def, RTLD_DL_LINKMAP) && def == l)
			return p;
	}
	return NULL;
}

GT_HIDDEN __attribute__((used)) void *gt_dlsym_slow(void *handle, const char *symbol,
						   const void *caller)
{
	if (handle == RTLD_NEXT)
		return dlsym__next(symbol, caller);
	if (handle == RTLD_DEFAULT)
		return gt_dlsym_real(handle, symbol);
	return gt_dlsym_handle(handle, symbol);
}

DLSYM_EARLY GT_HIDDEN __attribute__((used)) dlsym_fn gt_dlsym_resolve(void)
{
	return dlsym__real();
}

#if defined(__x86_64__)
/*
 * RTLD_NEXT (-1) and RTLD_DEFAULT (0) jump straight to the real dlsym, which
 * then sees our caller's return address as its own caller. Library handles
 * go to gt_dlsym_handle. Before our constructor (a sanitizer runtime looks
 * its interceptors up first) the real dlsym is resolved on the spot, keeping
 * the arguments and the return address; only if that fails does
 * gt_dlsym_slow get the caller's address as a third argument.
 */
__asm__(".text\n"
	".globl dlsym\n"
	".type dlsym, @function\n"
	".p2align 4\n"
	"dlsym:\n"
	"	.cfi_startproc\n"
	"	endbr64\n"
	"	cmpq $-1, %rdi\n"
	"	je 1f\n"
	"	testq %rdi, %rdi\n"
	"	jne gt_dlsym_handle\n"
	"	testq %rsi, %rsi\n"
	"	je 1f\n"
	"	cmpb $0x7a, (%rsi)\n" /* 'z' */
	"	jne 1f\n"
	"	cmpb $0x65, 1(%rsi)\n" /* 'e' */
	"	jne 1f\n"
	"	pushq %rdi\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	pushq %rsi\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	subq $8, %rsp\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	movq %rsi, %rdi\n"
	"	movq 24(%rsp), %rsi\n" /* the caller's return address */
	"	call gt_dlsym_default\n"
	"	addq $8, %rsp\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	popq %rsi\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	popq %rdi\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	testq %rax, %rax\n"
	"	je 1f\n"
	"	cmpq $-1, %rax\n" /* GT_DLSYM_NONE */
	"	jne 4f\n"
	"	xorl %eax, %eax\n"
	"4:	ret\n"
	"1:	movq gt_dlsym_next(%rip), %rax\n"
	"	testq %rax, %rax\n"
	"	je 2f\n"
	"	jmp *%rax\n"
	"2:	pushq %rdi\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	pushq %rsi\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	subq $8, %rsp\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	call gt_dlsym_resolve\n"
	"	addq $8, %rsp\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	popq %rsi\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	popq %rdi\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	testq %rax, %rax\n"
	"	je 3f\n"
	"	jmp *%rax\n"
	"3:	movq (%rsp), %rdx\n"
	"	jmp gt_dlsym_slow\n"
	"	.cfi_endproc\n"
	".size dlsym, .-dlsym\n");
#else
GT_EXPORT __attribute__((noinline)) void *dlsym(void *handle, const char *symbol)
{
	if (handle == RTLD_NEXT || !atomic_load_explicit(&gt_dlsym_next, memory_order_acquire))
		return gt_dlsym_slow(handle, symbol, __builtin_return_address(0));
	if (handle == RTLD_DEFAULT) {
		void *w = symbol && symbol[0] == 'z' && symbol[1] == 'e' ? gt_dlsym_default(symbol,
								      __builtin_return_address(0))
									 : NULL;

		if (w == GT_DLSYM_NONE)
			return NULL;
		return w ? w : gt_dlsym_real(handle, symbol);
	}
	return gt_dlsym_handle(handle, symbol);
}
#endif
