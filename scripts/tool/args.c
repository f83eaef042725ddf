// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <string.h>

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
