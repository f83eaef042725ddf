// SPDX-License-Identifier: MIT
/*
 * stack_cost [calls]: what --stacks costs per captured call (capture with
 * libunwind + interning), through libstackapi.so (inject/stacks.c as built
 * into the library), at several depths, from a 3-deep call site.
 * Prints one line per depth: "stacks depth D: N ns/call".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

uint64_t fake_api_call(void);
void fake_set_depth(unsigned depth);

#define KEEP_FRAME() __asm__ __volatile__("" ::: "memory")

__attribute__((noinline)) static uint64_t level3(void)
{
	uint64_t id = fake_api_call();

	KEEP_FRAME();
	return id;
}

__attribute__((noinline)) static uint64_t level2(void)
{
	uint64_t id = level3();

	KEEP_FRAME();
	return id;
}

__attribute__((noinline)) static uint64_t level1(void)
{
	uint64_t id = level2();

	KEEP_FRAME();
	return id;
}

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv)
{
	static const unsigned depths[] = { 0, 4, 16, 64 };
	long calls = argc > 1 ? atol(argv[1]) : 200000;

	for (unsigned k = 0; k < sizeof(depths) / sizeof(depths[0]); k++) {
		double t;

		fake_set_depth(depths[k]);
		level1(); /* first capture loads libunwind */
		t = now_ns();
		for (long i = 0; i < calls; i++)
			level1();
		printf("stacks depth %u: %.0f ns/call\n", depths[k], (now_ns() - t) / calls);
	}
	return 0;
}
