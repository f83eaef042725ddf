// SPDX-License-Identifier: MIT
/* The per-user run directory (rundir.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rundir.h"

int rundir__path(char *out, size_t len)
{
	const char *dir = getenv("GPUTRACE_RUN_DIR"), *xdg = getenv("XDG_RUNTIME_DIR");
	int n;

	if (dir && *dir)
		n = snprintf(out, len, "%s", dir);
	else if (xdg && *xdg == '/')
		n = snprintf(out, len, "%s/gputrace", xdg);
	else
		n = snprintf(out, len, "/tmp/gputrace-%u", (unsigned)geteuid());
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int rundir__check(const char *dir, bool create)
{
	struct stat st;

	if (lstat(dir, &st)) {
		if (errno != ENOENT || !create)
			return -errno;
		if (mkdir(dir, 0700) && errno != EEXIST)
			return -errno;
		if (lstat(dir, &st))
			return -errno;
	}
	/* A link the user made (another user cannot make one of theirs), to a
	 * folder that passes the checks below: another user can neither plant
	 * it nor pick where it leads */
	if (S_ISLNK(st.st_mode)) {
		if (st.st_uid != geteuid())
			return -EPERM;
		if (stat(dir, &st))
			return -errno;
	}
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	/* /tmp is shared: a directory another user made there is not ours to trust */
	if (st.st_uid != geteuid() || (st.st_mode & 077))
		return -EPERM;
	return 0;
}

char *rundir__proc_stat(int pid, char *buf, size_t len)
{
	char path[64], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = 0;
	/* the name (field 2) may hold spaces and parentheses: count from the last ')' */
	p = strrchr(buf, ')');
	return p ? p + 1 : NULL;
}

unsigned long long rundir__start_time(int pid)
{
	char buf[1024], *p = rundir__proc_stat(pid, buf, sizeof(buf));

	for (int field = 3; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	return p ? strtoull(p + 1, NULL, 10) : 0;
}
