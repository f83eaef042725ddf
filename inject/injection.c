/* SPDX-License-Identifier: MIT */
/* Our injection variables (injection.h). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "injection.h"

static const char *const var_names[GT_INJ__COUNT] = {
#define GT_INJ_NAME(id, var) var,
	GT_INJECTION_VARS(GT_INJ_NAME)
#undef GT_INJ_NAME
};

static char self[PATH_MAX];

/* This library's first byte (the linker's symbol): its link map entry is
 * the one loaded there. */
extern const char __ehdr_start[] GT_HIDDEN;

static int find_self(struct dl_phdr_info *info, size_t size, void *name)
{
	if ((const char *)info->dlpi_addr != __ehdr_start)
		return 0;
	*(const char **)name = info->dlpi_name;
	return 1;
}

int injection__self_path(char *out, size_t len)
{
	if (!self[0]) {
		const char *name = NULL;
		char real[PATH_MAX];

		/* not dladdr(): it scans every symbol of the library for the
		 * nearest one, in every process at start, GPU or not */
		if (!dl_iterate_phdr(find_self, &name) || !name || !*name)
			return -ENOENT;
		/* absolute: children may run elsewhere (LD_PRELOAD from gputrace
		 * run already is; resolving it would cost every process four
		 * readlinks) */
		if (name[0] == '/') {
			if (strlen(name) >= sizeof(self))
				return -ENAMETOOLONG;
			strcpy(self, name);
		} else {
			if (!realpath(name, real))
				return -errno;
			memcpy(self, real, sizeof(self));
		}
	}
	if (snprintf(out, len, "%s", self) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

int injection__claim(enum gt_injection which, const char **other)
{
	char path[PATH_MAX];
	const char *cur;
	int err = injection__self_path(path, sizeof(path));

	*other = NULL;
	if (err)
		return err;
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

/* "NAME=value" of envp names this library: the value is our path. */
static bool names_us(const char *entry, const char *var)
{
	size_t n = strlen(var);

	return !strncmp(entry, var, n) && entry[n] == '=' && self[0] && !strcmp(entry + n + 1, self);
}

/* LD_PRELOAD of envp lists this library (by path or by its file name, as
 * the loader would find it). */
static bool preloads_us(char *const *envp)
{
	const char *base = strrchr(self, '/');

	base = base ? base + 1 : self;
	for (char *const *e = envp; *e; e++) {
		if (strncmp(*e, "LD_PRELOAD=", 11))
			continue;
		for (const char *p = *e + 11; *p;) {
			size_t n = strcspn(p, " :");
			const char *slash = memrchr(p, '/', n);
			const char *file = slash ? slash + 1 : p;

			if (n && ((n == strlen(self) && !memcmp(p, self, n)) ||
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
	size_t n = 0;
	bool drop = false;

	if (!envp || !self[0] || preloads_us(envp))
		return envp;
	for (char *const *e = envp; *e && !drop; e++)
		for (int v = 0; v < GT_INJ__COUNT; v++)
			drop |= names_us(*e, var_names[v]);
	if (!drop || injection__env_len(envp) > cap)
		return envp;
	for (char *const *e = envp; *e; e++) {
		bool ours = false;

		for (int v = 0; v < GT_INJ__COUNT; v++)
			ours |= names_us(*e, var_names[v]);
		if (!ours)
			buf[n++] = *e;
	}
	buf[n] = NULL;
	return buf;
}
