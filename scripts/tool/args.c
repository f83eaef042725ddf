// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "args.h"

const char *arg__value(int argc, char **argv, int *i, const char *opt, const char *who,
		       bool *bad)
{
	size_t n = strlen(opt);
	const char *a = argv[*i];

	if (!strncmp(a, opt, n) && a[n] == '=')
		return a + n + 1;
	if (strcmp(a, opt))
		return NULL;
	if (*i + 1 >= argc) {
		fprintf(stderr, "%s: %s needs a value\n", who, opt);
		*bad = true;
		return "";
	}
	return argv[++*i];
}

const char *arg__file(int argc, char **argv, int *i, const char *opt, const char *who,
		      bool *bad)
{
	const char *v = arg__value(argc, argv, i, opt, who, bad);

	if (v && !*bad && !*v) {
		fprintf(stderr, "%s: %s needs a file name\n", who, opt);
		*bad = true;
	}
	return v;
}

bool arg__one_trace(const char *who, const char *a, const char **path)
{
	if (*path) {
		fprintf(stderr, "%s: one trace at a time (merge them first): '%s'\n", who, a);
		return false;
	}
	*path = a;
	return true;
}

bool out__is_input(const char *who, const char *opt, const char *out, char *const *in,
		   size_t n)
{
	struct stat so, si;

	/* a file not there yet is no input; a device or a pipe loses nothing */
	if (!out || !strcmp(out, "-") || stat(out, &so) || !S_ISREG(so.st_mode))
		return false;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(in[i], "-") && !stat(in[i], &si) && si.st_dev == so.st_dev &&
		    si.st_ino == so.st_ino) {
			fprintf(stderr, "%s: %s %s would overwrite its input %s: give another "
				"file\n", who, opt, out, in[i]);
			return true;
		}
	}
	return false;
}

bool out__same(const char *who, const char *opt_a, const char *a, const char *opt_b,
		const char *b)
{
	struct stat sa, sb;

	if (!a || !b || !strcmp(a, "-") || !strcmp(b, "-"))
		return false;
	if (strcmp(a, b) && (stat(a, &sa) || stat(b, &sb) || !S_ISREG(sa.st_mode) ||
			     sa.st_dev != sb.st_dev || sa.st_ino != sb.st_ino))
		return false;
	fprintf(stderr, "%s: %s %s and %s %s name one file (the last written would be all it "
		"held): give two\n", who, opt_a, a, opt_b, b);
	return true;
}

int out__close(FILE *f)
{
	int err = 0;

	/* the write's own reason where it has one (ENOSPC on a full disk) */
	errno = 0;
	if (fflush(f))
		err = -(errno ? errno : EIO);
	else if (ferror(f))
		err = -EIO;
	if (f != stdout && fclose(f) && !err)
		err = -errno;
	return err;
}
