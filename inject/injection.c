/* SPDX-License-Identifier: MIT */
/* Our injection variables (injection.h). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "injection.h"
#include "state.h"

static const char *const var_names[GT_INJ__COUNT] = {
#define GT_INJ_NAME(id, var) var,
	GT_INJECTION_VARS(GT_INJ_NAME)
#undef GT_INJ_NAME
};

/* This library's absolute path: the loader's own string when it is one
 * (the library is never unloaded), else resolved once; NULL until known.
 * A pointer, not a copy: a process that records nothing touches no page of
 * .bss for it. */
static const char *_Atomic self GT_STARTUP_STATE;

GT_STARTUP_CODE const char *injection__self_path(void)
{
	const char *path = atomic_load(&self), *name, *expect = NULL;

	if (path)
		return path;
	name = shim__self_name();
	if (!name)
		return NULL;
	/* absolute: children may run elsewhere (LD_PRELOAD from gputrace run
	 * already is; resolving it would cost every process four readlinks) */
	path = name[0] == '/' ? name : realpath(name, NULL);
	if (path && !atomic_compare_exchange_strong(&self, &expect, path)) {
		if (path != name)
			free((char *)path); /* another thread resolved it first */
		path = expect;
	}
	return path;
}

GT_STARTUP_CODE int injection__claim(enum gt_injection which, const char **other)
{
	const char *path = injection__self_path(), *cur;

	*other = NULL;
	if (!path)
		return -ENOENT;
	/* only if unset (a child that inherited ours allocates nothing here) */
	cur = getenv(var_names[which]);
	if (!cur) {
		setenv(var_names[which], path, 0);
		cur = getenv(var_names[which]);
	}
	if (cur && !strcmp(cur, path)) {
		/* children that lose LD_PRELOAD but keep this variable know
		 * from the mark that it was ours, and stay untraced (shim.c) */
		const char *mark = getenv("GPUTRACE_INJECTED");

		if (!mark || strcmp(mark, "1"))
			setenv("GPUTRACE_INJECTED", "1", 1);
		return 1;
	}
	*other = cur ? cur : "";
	return 0;
}

/* "NAME=value" of envp names this library: the value is our path, lib. */
static bool names_us(const char *entry, const char *var, const char *lib)
{
	size_t n = strlen(var);

	return !strncmp(entry, var, n) && entry[n] == '=' && !strcmp(entry + n + 1, lib);
}

/* LD_PRELOAD of envp lists this library (by path or by its file name, as
 * the loader would find it). */
static bool preloads_us(char *const *envp, const char *lib)
{
	const char *base = strrchr(lib, '/');

	base = base ? base + 1 : lib;
	for (char *const *e = envp; *e; e++) {
		if (strncmp(*e, "LD_PRELOAD=", 11))
			continue;
		for (const char *p = *e + 11; *p;) {
			size_t n = strcspn(p, " :");
			const char *slash = memrchr(p, '/', n);
			const char *file = slash ? slash + 1 : p;

			if (n && ((n == strlen(lib) && !memcmp(p, lib, n)) ||
				  ((size_t)(p + n - file) == strlen(base) &&
				   !memcmp(file, base, strlen(base)))))
				return true;
			p += n;
			p += strspn(p, " :");
		}
	}
	return false;
}

size_t injection__env_len(char *const *envp)
{
	size_t n = 0;

	while (envp && envp[n])
		n++;
	return n + 1;
}

char *const *injection__child_env(char *const *envp, char **buf, size_t cap)
{
	const char *path = atomic_load(&self);
	size_t n = 0;
	bool drop = false;

	if (!envp || !path || preloads_us(envp, path))
		return envp;
	for (char *const *e = envp; *e && !drop; e++)
		for (int v = 0; v < GT_INJ__COUNT; v++)
			drop |= names_us(*e, var_names[v], path);
	if (!drop || injection__env_len(envp) > cap)
		return envp;
	for (char *const *e = envp; *e; e++) {
		bool ours = false;

		for (int v = 0; v < GT_INJ__COUNT; v++)
			ours |= names_us(*e, var_names[v], path);
		if (!ours)
			buf[n++] = *e;
	}
	buf[n] = NULL;
	return buf;
}
