/* SPDX-License-Identifier: MIT */
/*
 * Plain loops over short strings, for the code every process runs at start
 * and exit and every fork child runs before its exec (a shell forks for each
 * command), most of which never record anything. Each libc function the
 * library calls there for the first time is bound by the loader at that
 * call (~1 us on a VM, for a string of twenty bytes); these need no binding.
 * Elsewhere libc's own are used.
 */
#ifndef GPUTRACE_CSTR_H
#define GPUTRACE_CSTR_H

#include <stdbool.h>
#include <stddef.h>

/* An empty asm on a loop's counter: GCC would otherwise see strlen or memcpy
 * in the loop and call it (no instruction is emitted) */
#define GT_CSTR_OPAQUE(v) __asm__("" : "+r"(v))

static inline size_t gt_cstr_len(const char *s)
{
	size_t n = 0;

	while (s[n]) {
		n++;
		GT_CSTR_OPAQUE(n);
	}
	return n;
}

/* s begins with prefix */
static inline bool gt_cstr_starts(const char *s, const char *prefix)
{
	for (; *prefix; s++, prefix++)
		if (*s != *prefix)
			return false;
	return true;
}

static inline bool gt_cstr_eq(const char *a, const char *b)
{
	for (; *a && *a == *b; a++, b++)
		;
	return *a == *b;
}

/* the first n bytes of a and b are the same */
static inline bool gt_cstr_eq_n(const char *a, const char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i] != b[i])
			return false;
	return true;
}

/* The environment entry ("NAME=value") is the variable name (n bytes). */
static inline bool gt_cstr_env_entry_is(const char *entry, const char *name, size_t n)
{
	return gt_cstr_eq_n(entry, name, n) && entry[n] == '=';
}

/* The value of name in envp ("NAME=value"), or NULL: getenv over a given
 * environment. */
static inline const char *gt_cstr_env(char *const *envp, const char *name)
{
	size_t n = gt_cstr_len(name);

	for (char *const *e = envp; e && *e; e++)
		if (gt_cstr_env_entry_is(*e, name, n))
			return *e + n + 1;
	return NULL;
}

/*
 * Lists of names in one string, each name ended by NUL and the list by an
 * empty name ("a\0" "b\0" as a literal, whose own NUL ends it): tables with
 * no pointers for the loader to relocate in every process (the variables'
 * names here, and the backends' tables of names, looked up cold).
 */

/* The list's name that is the n bytes at name, or NULL; *index: its place in
 * the list (the number of names when none is). */
static inline const char *gt_cstr_list_find(const char *list, const char *name, size_t n,
					    size_t *index)
{
	size_t i = 0, len;

	for (; *list; list += len + 1, i++) {
		len = gt_cstr_len(list);
		if (len == n && gt_cstr_eq_n(list, name, n))
			break;
	}
	*index = i;
	return *list ? list : NULL;
}

/* The list's name at index i (the list has more than i). */
static inline const char *gt_cstr_list_at(const char *list, size_t i)
{
	for (; i; i--)
		list += gt_cstr_len(list) + 1;
	return list;
}

/* The length of an LD_PRELOAD entry (they are split by spaces or colons). */
static inline size_t gt_cstr_preload_entry_len(const char *p)
{
	size_t n = 0;

	while (p[n] && p[n] != ' ' && p[n] != ':')
		n++;
	return n;
}

#endif
