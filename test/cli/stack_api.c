// SPDX-License-Identifier: MIT
/*
 * libstackapi.so for check_cli_stacks: inject/stacks.c built into a shared
 * object of its own, as in libgputrace.so, behind one exported "API call"
 * (fake_api_call) whose frame must be the last of every stack; the
 * library's other frames must be skipped. Stands in for the config and
 * logging of the real library.
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>

#include "inject/config.h"
#include "inject/stacks.h"

struct gt_config gt_cfg;
GT_TLS int gt_in_tracer;

void gt_log(int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("gputrace: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* The string table (API names in stacks taken inside a vendor's callback). */
const char *gt_str_get(uint32_t id, size_t *len)
{
	return NULL;
}

GT_EXPORT void fake_set_depth(unsigned depth)
{
	gt_cfg.stacks = depth;
}

/* An internal frame between the API entry and the capture, as in a wrapper. */
__attribute__((noinline)) static uint64_t inner_helper(void)
{
	uint64_t id = gt_stack_capture();

	__asm__ __volatile__("" ::: "memory");
	return id;
}

GT_EXPORT __attribute__((noinline)) uint64_t fake_api_call(void)
{
	uint64_t id = inner_helper();

	__asm__ __volatile__("" ::: "memory");
	return id;
}

GT_EXPORT int fake_format(uint64_t id, char *buf, size_t len)
{
	return stacks__format(id, buf, len);
}

GT_EXPORT uint64_t fake_dropped(void)
{
	return stacks__dropped();
}

/* Stacks of made-up PCs, how many the table holds (GT_STACK_KEPT), and how
 * many slots their look-ups have looked at. */
GT_EXPORT uint64_t fake_intern(const uintptr_t *pcs, unsigned n)
{
	return stacks__intern_pcs(pcs, n);
}

GT_EXPORT unsigned fake_slots(void)
{
	return GT_STACK_KEPT;
}

extern uint64_t stacks_probes;

GT_EXPORT uint64_t fake_probes(void)
{
	return stacks_probes;
}

/* How many PCs the pool holds (GT_STACK_POOL). */
GT_EXPORT unsigned fake_pool(void)
{
	return GT_STACK_POOL;
}

/* A dlclose as inject/dlclose.c's wrapper makes it. */
GT_EXPORT int fake_dlclose(void *h)
{
	struct stacks_dlclose c;
	int r;

	stacks__dlclose_begin(&c);
	r = dlclose(h);
	stacks__dlclose_end(&c);
	return r;
}
