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
#include <sys/single_threaded.h>
#include <sys/stat.h>

#include "cstr.h"
#include "injection.h"
#include "state.h"

extern char **environ;

/* with the start-up code (GT_STARTUP_CONST): every process claims them */
#define GT_INJ_NAME(id, var) static const char var_name_##id[] GT_STARTUP_CONST = var;
GT_INJECTION_VARS(GT_INJ_NAME)
#undef GT_INJ_NAME
static const char *const var_names[GT_INJ__COUNT] = {
#define GT_INJ_NAME(id, var) var_name_##id,
	GT_INJECTION_VARS(GT_INJ_NAME)
#undef GT_INJ_NAME
};
GT_STARTUP_CONST const char gt_injected_var[] = "GPUTRACE_INJECTED";
GT_STARTUP_CONST const char gt_injected_value[] = "1";
GT_STARTUP_CONST const char gt_preload_var[] = "LD_PRELOAD";

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

/*
 * Our variables go into a copy of environ in pages of our own, not through
 * setenv: setenv's first call in a process is malloc's first use there
 * (getrandom, two brk, a fresh heap page, malloc's text), ~120 us on a VM
 * whose page faults cost ~20 us, paid by every process a shell that exported
 * LD_PRELOAD starts (children of a traced process inherit the variables and
 * set none). The program may assign environ itself (POSIX), and glibc's
 * setenv, putenv and unsetenv work on an array they did not allocate (a
 * later setenv copies it). An environment or a value that does not fit goes
 * to setenv, and so does everything once the process has had a second thread
 * (loaded by dlopen, as a CUDA injection is at cuInit): another thread may be
 * inside setenv, under glibc's lock, while the array is copied.
 */
#define ENV_TEXT 1024 /* our "NAME=value" strings */
#define ENV_VARS ((16384 - ENV_TEXT - sizeof(size_t)) / sizeof(char *))

/* in .lbss, after all of .bss: its page alignment moves no other variable */
static struct {
	size_t text_used;
	char text[ENV_TEXT];
	char *vars[ENV_VARS];
} env_copy __attribute__((aligned(4096), section(".lbss")));

GT_STARTUP_SELDOM static void env_put(const char *name, const char *value)
{
	size_t name_len = gt_cstr_len(name), value_len = gt_cstr_len(value), n;
	size_t size = name_len + value_len + 2; /* "NAME=value\0" */
	char *entry = env_copy.text + env_copy.text_used;

	if (!__libc_single_threaded || env_copy.text_used + size > ENV_TEXT)
		goto libc;
	if (environ != env_copy.vars) {
		n = injection__env_len(environ) - 1; /* none: NULL after clearenv() */
		if (n + GT_INJ__COUNT + 2 > ENV_VARS)
			goto libc;
		for (size_t i = 0; i < n; i++)
			env_copy.vars[i] = environ[i];
		env_copy.vars[n] = NULL;
		environ = env_copy.vars;
	}
	for (size_t i = 0; i < name_len; i++)
		entry[i] = name[i];
	entry[name_len] = '=';
	for (size_t i = 0; i <= value_len; i++)
		entry[name_len + 1 + i] = value[i];
	env_copy.text_used += size;
	for (n = 0; environ[n]; n++)
		if (gt_cstr_env_entry_is(environ[n], name, name_len)) {
			environ[n] = entry;
			return;
		}
	if (n + 2 > ENV_VARS)
		goto libc;
	/* the new end first: a reader in another thread sees the old end or both */
	environ[n + 1] = NULL;
	atomic_signal_fence(memory_order_release);
	environ[n] = entry;
	return;
libc:
	setenv(name, value, 1);
}

/* The variable names this library by another path (a symlink, "..", a link of
 * the installed one): the same file, which the runtime's dlopen finds already
 * loaded. Asked only of a value that is not our path, never in a child that
 * inherited ours. */
static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return strchr(a, '/') && stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

GT_STARTUP_CODE int injection__claim(enum gt_injection which, const char **other)
{
	const char *path = injection__self_path(), *cur;

	*other = NULL;
	if (!path)
		return -ENOENT;
	/* only if unset (a child that inherited ours allocates nothing here,
	 * and calls nothing in libc: cstr.h) */
	cur = gt_cstr_env(environ, var_names[which]);
	if (!cur) {
		env_put(var_names[which], path);
		cur = gt_cstr_env(environ, var_names[which]);
	}
	if (cur && (gt_cstr_eq(cur, path) || same_file(cur, path))) {
		/* children that lose LD_PRELOAD but keep this variable know
		 * from the mark that it was ours, and stay untraced (shim.c) */
		const char *mark = gt_cstr_env(environ, gt_injected_var);

		if (!mark || !gt_cstr_eq(mark, gt_injected_value))
			env_put(gt_injected_var, gt_injected_value);
		return 1;
	}
	*other = cur ? cur : "";
	return 0;
}

/* "NAME=value" of envp names this library: the value is our path, lib.
 * These run in every fork child that execs (cstr.h: no libc calls). */
static bool names_us(const char *entry, const char *var, const char *lib)
{
	size_t n = gt_cstr_len(var);

	return gt_cstr_env_entry_is(entry, var, n) && gt_cstr_eq(entry + n + 1, lib);
}

/* LD_PRELOAD of envp lists this library (by path or by its file name, as
 * the loader would find it). */
static bool preloads_us(char *const *envp, const char *lib)
{
	const char *base = lib;
	size_t lib_len = gt_cstr_len(lib), base_len;

	for (const char *c = lib; *c; c++)
		if (*c == '/')
			base = c + 1;
	base_len = gt_cstr_len(base);
	for (char *const *e = envp; *e; e++) {
		if (!gt_cstr_env_entry_is(*e, gt_preload_var, sizeof("LD_PRELOAD") - 1))
			continue;
		for (const char *p = *e + sizeof("LD_PRELOAD"); *p;) {
			size_t n = gt_cstr_preload_entry_len(p);
			const char *file = p;

			for (size_t i = 0; i < n; i++)
				if (p[i] == '/')
					file = p + i + 1;
			if (n && ((n == lib_len && gt_cstr_eq_n(p, lib, n)) ||
				  ((size_t)(p + n - file) == base_len &&
				   gt_cstr_eq_n(file, base, base_len))))
				return true;
			p += n;
			while (*p == ' ' || *p == ':')
				p++;
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
