// SPDX-License-Identifier: MIT
/*
 * Preloaded after libgputrace.so, whose constructor the loader then calls after
 * this one's (so start-up is watched from its first instruction): reports each
 * access to the library's pages between two offsets (GT_PROBE_FROM,
 * GT_PROBE_TO: .rodata up to .gcc_except_table; or, with GT_PROBE_WRITABLE
 * set, .bss past the page the loader writes), one line per access on
 * stderr, "probe-read DATA_OFFSET CODE_OFFSET" (offsets into the library:
 * addr2line -f -i -e libgputrace.so CODE_OFFSET names the code). The pages
 * are made inaccessible; an access opens its page for one instruction (the
 * trap flag), the trap closes it again. For test_cli_quiet.py: a process
 * that records nothing should fault in none of those pages.
 */
#define _GNU_SOURCE
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#define PAGE 4096ul
#define TRAP_FLAG 0x100ul

static uintptr_t base, from, to, open_page;
static int open_prot = PROT_READ | PROT_EXEC;

static int find_library(struct dl_phdr_info *info, size_t size, void *arg)
{
	if (!strstr(info->dlpi_name, "libgputrace"))
		return 0;
	base = info->dlpi_addr;
	return 1;
}

static void say(const char *fmt, unsigned long a, unsigned long b)
{
	char line[96];
	int n = snprintf(line, sizeof(line), fmt, a, b);

	if (write(2, line, (size_t)n) < 0)
		_exit(98);
}

static void on_fault(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	uintptr_t at = (uintptr_t)si->si_addr;

	if (at < (from & ~(PAGE - 1)) || at >= to) {
		signal(SIGSEGV, SIG_DFL); /* not ours: the program's own fault */
		return;
	}
	/* an instruction fetch from a page shared with the text: not a read */
	if (at != (uintptr_t)uc->uc_mcontext.gregs[REG_RIP] && at >= from)
		say("probe-read %#lx %#lx\n", at - base, uc->uc_mcontext.gregs[REG_RIP] - base);
	open_page = at & ~(PAGE - 1);
	mprotect((void *)open_page, PAGE, open_prot);
	uc->uc_mcontext.gregs[REG_EFL] |= TRAP_FLAG;
}

static void on_trap(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;

	uc->uc_mcontext.gregs[REG_EFL] &= ~TRAP_FLAG;
	if (open_page)
		mprotect((void *)open_page, PAGE, PROT_NONE);
	open_page = 0;
}

__attribute__((constructor)) static void probe_arm(void)
{
	struct sigaction sa = { .sa_flags = SA_SIGINFO };
	const char *f = getenv("GT_PROBE_FROM"), *t = getenv("GT_PROBE_TO");

	dl_iterate_phdr(find_library, NULL);
	if (!base || !f || !t)
		return;
	from = base + strtoul(f, NULL, 0);
	to = base + strtoul(t, NULL, 0);
	if (getenv("GT_PROBE_WRITABLE"))
		open_prot = PROT_READ | PROT_WRITE;
	sa.sa_sigaction = on_fault;
	sigaction(SIGSEGV, &sa, NULL);
	sa.sa_sigaction = on_trap;
	sigaction(SIGTRAP, &sa, NULL);
	if (mprotect((void *)(from & ~(PAGE - 1)), ((to + PAGE - 1) & ~(PAGE - 1)) - (from & ~(PAGE - 1)),
		     PROT_NONE))
		return;
	say("probe: armed %#lx-%#lx\n", from - base, to - base);
}
