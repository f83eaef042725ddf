/* SPDX-License-Identifier: MIT */
/*
 * The two unwinder entry points our -fexceptions code refers to (the Level
 * Zero wrappers' cleanup when pthread_cancel unwinds a thread through
 * them), forwarded to the process's libgcc_s at their first use instead of
 * linking it: loading libgcc_s.so.1 into every traced process costs ~0.1 ms
 * on a VM (its constructor probes the CPU with a few dozen CPUID
 * instructions, each a VM exit), most of what a process that records
 * nothing would otherwise pay. An unwind only ever starts in libgcc_s
 * (glibc loads it to cancel a thread; C++ programs link it), so it is there
 * when these are called, and there is one unwinder in the process (a
 * static copy, -static-libgcc, mixes two and aborts on cancellation).
 * Sanitizer builds leave this file out (Makefile): their runtime loads
 * libgcc_s anyway.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unwind.h>

#include "event.h"

typedef _Unwind_Reason_Code (*personality_fn)(int, _Unwind_Action, _Unwind_Exception_Class,
					      struct _Unwind_Exception *,
					      struct _Unwind_Context *);
typedef void (*resume_fn)(struct _Unwind_Exception *);

static void *libgcc(const char *symbol)
{
	void *h = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_NOLOAD);

	if (!h)
		h = dlopen("libgcc_s.so.1", RTLD_NOW);
	void *f = h ? dlsym(h, symbol) : NULL;

	if (!f)
		abort(); /* what the unwinder itself does without its library */
	return f;
}

/* Kept out of the dynamic symbol table by exports.map: ours, never the
 * process's. (_Unwind_Resume is a compiler builtin, whose visibility an
 * attribute cannot change.) */
_Unwind_Reason_Code __gcc_personality_v0(int version, _Unwind_Action actions,
						   _Unwind_Exception_Class cls,
						   struct _Unwind_Exception *ue,
						   struct _Unwind_Context *ctx)
{
	static _Atomic(personality_fn) real;
	personality_fn f = atomic_load_explicit(&real, memory_order_acquire);

	if (!f) {
		f = (personality_fn)libgcc("__gcc_personality_v0");
		atomic_store_explicit(&real, f, memory_order_release);
	}
	return f(version, actions, cls, ue, ctx);
}

void _Unwind_Resume(struct _Unwind_Exception *ue)
{
	static _Atomic(resume_fn) real;
	resume_fn f = atomic_load_explicit(&real, memory_order_acquire);

	if (!f) {
		f = (resume_fn)libgcc("_Unwind_Resume");
		atomic_store_explicit(&real, f, memory_order_release);
	}
	f(ue);
	abort(); /* _Unwind_Resume does not return */
}
