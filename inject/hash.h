/* SPDX-License-Identifier: MIT */
/*
 * FNV-1a: the one string hash of the library and its tool (hash tables of
 * names, the run's said-once markers). Small, no state, good enough for
 * tables whose keys a program chooses (no adversary).
 */
#ifndef GPUTRACE_HASH_H
#define GPUTRACE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define GT_FNV64_BASIS 0xcbf29ce484222325ull
#define GT_FNV64_PRIME 0x100000001b3ull
#define GT_FNV32_BASIS 2166136261u
#define GT_FNV32_PRIME 16777619u

static inline uint64_t gt_fnv1a64(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint64_t h = GT_FNV64_BASIS;

	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * GT_FNV64_PRIME;
	return h;
}

static inline uint64_t gt_fnv1a64_str(const char *s)
{
	uint64_t h = GT_FNV64_BASIS;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * GT_FNV64_PRIME;
	return h;
}

static inline uint32_t gt_fnv1a32(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint32_t h = GT_FNV32_BASIS;

	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * GT_FNV32_PRIME;
	return h;
}

#endif
