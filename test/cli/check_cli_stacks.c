// SPDX-License-Identifier: MIT
/*
 * Call stacks (inject/stacks.c) through libstackapi.so: the calling
 * functions' names, outermost first, the API call last, our own frames
 * skipped; depth limit; one id per distinct stack, across threads; a full
 * table drops (and counts) instead of blocking or allocating.
 * Built with -rdynamic: outer_fn/middle_fn are found by dladdr, the static
 * ones through the ELF symbol table.
 */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <malloc.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "../check_run.h"

#define KEEP_FRAME() __asm__ __volatile__("" ::: "memory")

uint64_t fake_api_call(void);
void fake_set_depth(unsigned depth);
int fake_format(uint64_t id, char *buf, size_t len);
uint64_t fake_dropped(void);
uint64_t fake_intern(const uintptr_t *pcs, unsigned n);
unsigned fake_slots(void);
uint64_t fake_probes(void);
unsigned fake_pool(void);
int fake_dlclose(void *h);

__attribute__((noinline)) uint64_t middle_fn(void)
{
	uint64_t id = fake_api_call();

	KEEP_FRAME();
	return id;
}

__attribute__((noinline)) uint64_t outer_fn(void)
{
	uint64_t id = middle_fn();

	KEEP_FRAME();
	return id;
}

__attribute__((noinline)) static uint64_t static_caller(void)
{
	uint64_t id = fake_api_call();

	KEEP_FRAME();
	return id;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

START_TEST(test_names_outermost_first)
{
	char buf[4096];
	uint64_t id;

	fake_set_depth(64);
	id = outer_fn();
	ck_assert_uint_ne(id, 0);
	ck_assert_int_gt(fake_format(id, buf, sizeof(buf)), 0);
	ck_assert_msg(ends_with(buf, ";outer_fn;middle_fn;fake_api_call"), "stack: %s", buf);
	ck_assert_msg(strstr(buf, "main;") != NULL, "main missing: %s", buf);
	ck_assert_msg(!strstr(buf, "inner_helper") && !strstr(buf, "gt_stack_capture") &&
			      !strstr(buf, "stacks__"),
		      "our own frames leaked: %s", buf);
}
END_TEST

START_TEST(test_static_function_named)
{
	char buf[4096];
	uint64_t id;

	fake_set_depth(64);
	id = static_caller();
	ck_assert_int_gt(fake_format(id, buf, sizeof(buf)), 0);
	ck_assert_msg(ends_with(buf, ";static_caller;fake_api_call"), "stack: %s", buf);
}
END_TEST

START_TEST(test_depth_limit)
{
	char buf[256];

	fake_set_depth(2);
	ck_assert_int_gt(fake_format(outer_fn(), buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "middle_fn;fake_api_call");
	fake_set_depth(1);
	ck_assert_int_gt(fake_format(outer_fn(), buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "fake_api_call");
	fake_set_depth(0);
	ck_assert_uint_eq(outer_fn(), 0);
}
END_TEST

START_TEST(test_interned_once)
{
	uint64_t a, b, c;

	/* depth 3 stops at outer_fn: the two call sites below do not count */
	fake_set_depth(3);
	a = outer_fn();
	b = outer_fn();
	c = static_caller();
	ck_assert_uint_ne(a, 0);
	ck_assert_uint_eq(a, b);
	ck_assert_uint_ne(a, c);
}
END_TEST

#ifndef __SANITIZE_THREAD__ /* see the suite below */
static void *thread_body(void *arg)
{
	uint64_t *ids = arg;

	for (int i = 0; i < 2000; i++) {
		uint64_t id = outer_fn();

		if (!ids[0])
			ids[0] = id;
		else if (id != ids[0])
			ids[1]++;
	}
	return NULL;
}

/* Four threads take the same stack 2000 times each: one id for all of
 * them, every time, nothing dropped. */
static void four_threads_agree(void)
{
	pthread_t t[4];
	uint64_t ids[4][2] = { { 0 } };

	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, thread_body, ids[i]);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < 4; i++) {
		ck_assert_uint_ne(ids[i][0], 0);
		ck_assert_uint_eq(ids[i][0], ids[0][0]);
		ck_assert_uint_eq(ids[i][1], 0);
	}
	ck_assert_uint_eq(fake_dropped(), 0);
}

START_TEST(test_threads_agree)
{
	fake_set_depth(3); /* frames above outer_fn differ per thread: cut them */
	four_threads_agree();
}
END_TEST

static atomic_int loader_held;

static int hold_loader(struct dl_phdr_info *info, size_t size, void *data)
{
	atomic_store(&loader_held, 1);
	usleep(2500 * 1000);
	return 1;
}

static void *loader_holder(void *arg)
{
	dl_iterate_phdr(hold_loader, NULL);
	return NULL;
}

/* A thread inside dl_iterate_phdr holds the loader's list lock, which the
 * unwinder's dlopen at the first capture needs: set-up takes as long as it
 * holds it (here 2.5 s; a loaded machine can be as slow). The threads whose
 * first stacks come meanwhile get them all, under one id. */
START_TEST(test_slow_setup_drops_nothing)
{
	pthread_t holder;

	fake_set_depth(3);
	pthread_create(&holder, NULL, loader_holder, NULL);
	while (!atomic_load(&loader_held))
		sched_yield();
	four_threads_agree();
	pthread_join(holder, NULL);
}
END_TEST
#endif

/* Distinct stacks: recursion depth times call site. */
__attribute__((noinline)) static uint64_t recurse(int n, int site)
{
	uint64_t id;

	if (n > 0)
		id = recurse(n - 1, site);
	else if (site == 0)
		id = fake_api_call();
	else if (site == 1)
		id = middle_fn();
	else
		id = static_caller();
	KEEP_FRAME();
	return id;
}

/* Stacks of made-up PCs, distinct for distinct i, filling the table up. */
static uint64_t intern_made_up(unsigned i)
{
	uintptr_t pcs[3] = { 0x1000 + i * 16u, 0x2000, 0x3000 + (i % 7) * 16u };

	return fake_intern(pcs, 3);
}

START_TEST(test_table_full_only_when_every_slot_is_taken)
{
	/* every slot gets a stack: none dropped before the table is full (the
	 * 64 slots after a stack's home slot were all it could take: a few
	 * hundred of 1024 went missing, counted only in the trailer) */
	unsigned slots = fake_slots();
	static uint64_t ids[1 << 14];

	ck_assert_uint_le(slots, sizeof(ids) / sizeof(ids[0]));
	for (unsigned i = 0; i < slots; i++) {
		ids[i] = intern_made_up(i);
		ck_assert_msg(ids[i] != 0, "stack %u of %u dropped", i, slots);
	}
	ck_assert_uint_eq(fake_dropped(), 0);
	/* the same stacks again: the same ids, nothing new stored */
	for (unsigned i = 0; i < slots; i++)
		ck_assert_uint_eq(intern_made_up(i), ids[i]);
	ck_assert_uint_eq(fake_dropped(), 0);
	/* full: one more distinct stack is dropped and counted */
	ck_assert_uint_eq(intern_made_up(slots), 0);
	ck_assert_uint_eq(fake_dropped(), 1);
}
END_TEST

START_TEST(test_full_table_finds_a_new_stack_absent_at_once)
{
	/* With every stack it keeps stored, a stack not among them is dropped
	 * after a look at a few slots: the table looked at each of its slots,
	 * at every call from a new site (16384 slots in the library) */
	unsigned slots = fake_slots(), n = 1000;
	uint64_t before;

	for (unsigned i = 0; i < slots; i++)
		ck_assert_uint_ne(intern_made_up(i), 0);
	before = fake_probes();
	for (unsigned i = 0; i < n; i++)
		ck_assert_uint_eq(intern_made_up(slots + i), 0);
	ck_assert_uint_eq(fake_dropped(), n);
	ck_assert_msg(fake_probes() - before <= 8ull * n, "%llu slots looked at for %u new stacks",
		      (unsigned long long)(fake_probes() - before), n);
	/* and each stored one is still found */
	for (unsigned i = 0; i < slots; i++)
		ck_assert_uint_ne(intern_made_up(i), 0);
	ck_assert_uint_eq(fake_dropped(), n);
}
END_TEST

START_TEST(test_full_table_drops)
{
	/* the table filled with made-up stacks after the first real one */
	char buf[8192];
	uint64_t first, zeros = 0;
	unsigned stored = 1;

	fake_set_depth(64);
	first = outer_fn();
	for (unsigned i = 0; stored < fake_slots() && i < 100 * fake_slots(); i++)
		stored += intern_made_up(i) != 0;
	for (int site = 0; site < 3; site++)
		for (int n = 0; n < 20; n++)
			zeros += recurse(n, site) == 0;
	ck_assert_uint_eq(zeros, 60);
	ck_assert_uint_eq(fake_dropped(), 60);
	/* what was recorded before stays readable */
	ck_assert_int_gt(fake_format(first, buf, sizeof(buf)), 0);
	ck_assert_msg(ends_with(buf, ";outer_fn;middle_fn;fake_api_call"), "stack: %s", buf);
}
END_TEST

START_TEST(test_full_pool_takes_no_slot)
{
	/* Stacks of 63 PCs fill the pool to a few PCs short of full. A stack
	 * of 64 then finds no room, at every call from its site: it is dropped
	 * each time and counted, taking neither a slot nor frames (each call
	 * took a slot, left claimed and never matching, until the table was
	 * full and every call from such a site probed all of it; the frames it
	 * reserved stayed taken, so a stack that still fitted was dropped). */
	uintptr_t pcs[64];
	unsigned pool = fake_pool(), slots = fake_slots(), stored = 0, i;

	ck_assert_uint_lt(pool / 63, slots);
	for (i = 0; i < 64; i++)
		pcs[i] = 0x500000 + i * 16u;
	for (; (stored + 1) * 63 <= pool; stored++) {
		pcs[0] = 0x100000 + stored * 16u;
		ck_assert_msg(fake_intern(pcs, 63) != 0, "stack %u dropped", stored);
	}
	ck_assert_uint_eq(fake_dropped(), 0);
	pcs[0] = 0x900000;
	for (i = 0; i < 2 * slots; i++)
		ck_assert_uint_eq(fake_intern(pcs, 64), 0);
	ck_assert_uint_eq(fake_dropped(), 2 * slots);
	/* what is left of the pool still takes a stack that fits it */
	pcs[0] = 0xa00000;
	ck_assert_uint_ne(fake_intern(pcs, pool - stored * 63), 0);
	ck_assert_uint_eq(fake_dropped(), 2 * slots);
}
END_TEST

START_TEST(test_format_truncates_outer_end)
{
	char buf[40];
	int n;

	fake_set_depth(64);
	n = fake_format(outer_fn(), buf, sizeof(buf));
	ck_assert_int_gt(n, 0);
	ck_assert_int_lt(n, (int)sizeof(buf));
	ck_assert_uint_eq(strlen(buf), (size_t)n);
	ck_assert_msg(!strncmp(buf, "...;", 4), "no marker: %s", buf);
	ck_assert_msg(ends_with(buf, "middle_fn;fake_api_call"), "stack: %s", buf);
	ck_assert_int_eq(fake_format(0, buf, sizeof(buf)), -1);
	ck_assert_int_eq(fake_format(99999, buf, sizeof(buf)), -1);
}
END_TEST

/* One call site, called twice. */
__attribute__((noinline)) static uint64_t one_site(void)
{
	uint64_t id = static_caller();

	KEEP_FRAME();
	return id;
}

/* Bytes malloc holds more after n opens and closes of a library (keep_open:
 * it is kept open meanwhile, so nothing is unloaded) than after the first. */
static long closes_grow(int n, bool keep_open)
{
	void *kept = keep_open ? dlopen(CLOSED_LIB, RTLD_NOW | RTLD_LOCAL) : NULL;
	long base = 0;

	ck_assert(!keep_open || kept);
	for (int i = 0; i <= n; i++) {
		void *h = dlopen(CLOSED_LIB, RTLD_NOW | RTLD_LOCAL);

		ck_assert_msg(h, "dlopen: %s", dlerror());
		ck_assert_int_eq(fake_dlclose(h), 0);
		if (i == 0)
			base = (long)mallinfo2().uordblks;
	}
	if (kept)
		dlclose(kept);
	return (long)mallinfo2().uordblks - base;
}

static long kept_grown;

static void closes_of_an_open_library(void)
{
	kept_grown = closes_grow(4000, true);
}

static void nothing(void)
{
}

static void (*const between[2])(void) = { closes_of_an_open_library, nothing };

/* A dlclose notes what was loaded for the stacks of the epoch it ends: with
 * no new stack since the last one there are none, and nothing is kept. A
 * program that opened and closed a library in a loop, stacks on, grew by
 * 2.8 KB a close without bound (110 MB for 40000), and by a record of ~56
 * bytes for each close of a library open elsewhere. */
START_TEST(test_dlclose_loop_keeps_no_memory)
{
	char buf[512];
	volatile int rounds = 2;
	uint64_t id, id2, got[2];
	long unloaded, kept;

	fake_set_depth(64);
	id = outer_fn(); /* a stack, of the first epoch */
	ck_assert_uint_ne(id, 0);
	unloaded = closes_grow(4000, false);
	/* one call site, in a loop neither unrolled nor peeled: a new stack,
	 * whose epoch each close that unloads nothing takes back, so that
	 * the site's second call finds it again */
	for (int round = 0; round < rounds; round++) {
		got[round] = one_site();
		between[round]();
	}
	ck_assert_uint_eq(got[1], got[0]);
	id2 = got[0];
	kept = kept_grown;
	ck_assert_msg(unloaded < 64 * 1024, "grew %ld bytes over 4000 closes", unloaded);
	ck_assert_msg(kept < 64 * 1024, "grew %ld bytes over 4000 closes of an open library",
		      kept);
	/* both keep their names */
	ck_assert_int_gt(fake_format(id, buf, sizeof(buf)), 0);
	ck_assert_msg(ends_with(buf, ";outer_fn;middle_fn;fake_api_call"), "stack: %s", buf);
	ck_assert_int_gt(fake_format(id2, buf, sizeof(buf)), 0);
	ck_assert_msg(ends_with(buf, ";one_site;static_caller;fake_api_call"), "stack: %s", buf);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("stacks");
	TCase *tc = tcase_create("stacks");

	tcase_add_test(tc, test_names_outermost_first);
	tcase_add_test(tc, test_static_function_named);
	tcase_add_test(tc, test_depth_limit);
	tcase_add_test(tc, test_interned_once);
#ifndef __SANITIZE_THREAD__
	/* libunwind's per-thread trace cache is freed by a TSD destructor that
	 * locks a mutex after ThreadSanitizer has let go of the exiting
	 * thread: TSan crashes there, whatever the caller does */
	tcase_add_test(tc, test_threads_agree);
	tcase_add_test(tc, test_slow_setup_drops_nothing);
#endif
	tcase_add_test(tc, test_table_full_only_when_every_slot_is_taken);
	tcase_add_test(tc, test_full_table_finds_a_new_stack_absent_at_once);
	tcase_add_test(tc, test_full_table_drops);
	tcase_add_test(tc, test_full_pool_takes_no_slot);
	tcase_add_test(tc, test_format_truncates_outer_end);
	tcase_add_test(tc, test_dlclose_loop_keeps_no_memory);
	suite_add_tcase(s, tc);
	return check_run(s);
}
