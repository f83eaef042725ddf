// SPDX-License-Identifier: MIT
/*
 * Can LD_PRELOAD reach a program? `gputrace run` asks before it runs one, so a
 * program that cannot be traced says so instead of leaving no trace behind:
 *  - a statically linked program (static-pie too) has no dynamic linker to
 *    load a preloaded library;
 *  - a setuid or setgid program whose ids the exec would change, or one with
 *    file capabilities, runs in secure-execution mode: the dynamic linker
 *    ignores preloaded libraries named by a path.
 * A script ("#!") is judged by its interpreter, one level deep. Anything this
 * cannot read is taken as reachable: the exec then fails (or not) as it would.
 *
 *     gputrace-tool reach PATH   prints why PATH cannot be reached and exits 1;
 *                                exits 0, silent, when it can (or cannot tell)
 */
#define _GNU_SOURCE
#include <elf.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "tool.h"

/* Has an ELF file of this class (Elf32_/Elf64_ types) a program interpreter? */
#define REACH_HAS_INTERP(fd, Ehdr, Phdr)                                                   \
	({                                                                                 \
		Ehdr eh_;                                                                  \
		Phdr ph_;                                                                  \
		int r_ = -EIO;                                                             \
                                                                                           \
		if (pread(fd, &eh_, sizeof(eh_), 0) == (ssize_t)sizeof(eh_)) {             \
			r_ = eh_.e_type == ET_EXEC || eh_.e_type == ET_DYN ? 0 : 1;        \
			for (unsigned i_ = 0; r_ == 0 && i_ < eh_.e_phnum; i_++) {         \
				if (pread(fd, &ph_, sizeof(ph_),                            \
					  eh_.e_phoff + (off_t)i_ * eh_.e_phentsize) !=     \
				    (ssize_t)sizeof(ph_))                                   \
					r_ = -EIO;                                          \
				else if (ph_.p_type == PT_INTERP)                           \
					r_ = 1;                                             \
			}                                                                  \
		}                                                                          \
		r_;                                                                        \
	})

/* An ELF program without a program interpreter: 1; with one, or not an ELF program: 0;
 * -errno. (A shared library has no interpreter either, but nobody execs one.) */
static int reach__static_elf(int fd)
{
	unsigned char ident[EI_NIDENT];
	int interp;

	if (pread(fd, ident, sizeof(ident), 0) != (ssize_t)sizeof(ident))
		return 0;
	if (memcmp(ident, ELFMAG, SELFMAG) != 0)
		return 0;
	interp = ident[EI_CLASS] == ELFCLASS64 ? REACH_HAS_INTERP(fd, Elf64_Ehdr, Elf64_Phdr)
					       : REACH_HAS_INTERP(fd, Elf32_Ehdr, Elf32_Phdr);
	return interp < 0 ? interp : !interp;
}

/* The interpreter of a "#!" script, into buf; 0, or -ENOENT when it is not one. */
static int reach__shebang(int fd, char *buf, size_t len)
{
	char line[256];
	ssize_t n = pread(fd, line, sizeof(line) - 1, 0);
	char *p, *end;

	if (n < 3 || line[0] != '#' || line[1] != '!')
		return -ENOENT;
	line[n] = 0;
	for (p = line + 2; *p == ' ' || *p == '\t'; p++)
		;
	for (end = p; *end && *end != ' ' && *end != '\t' && *end != '\n'; end++)
		;
	if (end == p || (size_t)(end - p) >= len)
		return -ENOENT;
	memcpy(buf, p, (size_t)(end - p));
	buf[end - p] = 0;
	return 0;
}

int reach__check(const char *path, char *why, size_t len, int depth)
{
	char interp[256];
	struct statvfs fs;
	struct stat st;
	bool nosuid;
	int fd, r;

	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return 0;
	/* On a nosuid mount the kernel ignores set-id bits and capabilities. */
	nosuid = !statvfs(path, &fs) && (fs.f_flag & ST_NOSUID);
	if (nosuid)
		goto elf;
	if ((st.st_mode & S_ISUID) && st.st_uid != getuid()) {
		snprintf(why, len, "%s is setuid: the dynamic linker ignores LD_PRELOAD for it",
			 path);
		return 1;
	}
	if ((st.st_mode & S_ISGID) && st.st_gid != getgid()) {
		snprintf(why, len, "%s is setgid: the dynamic linker ignores LD_PRELOAD for it",
			 path);
		return 1;
	}
	if (getxattr(path, "security.capability", NULL, 0) > 0) {
		snprintf(why, len, "%s has file capabilities: the dynamic linker ignores "
			 "LD_PRELOAD for it", path);
		return 1;
	}
elf:
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	r = reach__static_elf(fd);
	if (r == 1) {
		close(fd);
		snprintf(why, len, "%s is statically linked: LD_PRELOAD cannot reach it", path);
		return 1;
	}
	r = depth < 1 ? reach__shebang(fd, interp, sizeof(interp)) : -ENOENT;
	close(fd);
	if (r == 0 && reach__check(interp, why, len, depth + 1)) {
		/* Say which program: the script, through its interpreter. */
		char inner[512];

		snprintf(inner, sizeof(inner), "%s", why);
		snprintf(why, len, "%s runs %s, and %s", path, interp, inner);
		return 1;
	}
	return 0;
}

/* The file a command name runs, as execvp finds it: itself with a '/', else the first
 * executable regular file on PATH. 0 and the path in out, or -ENOENT. */
static int reach__resolve(const char *cmd, char *out, size_t len)
{
	const char *path = getenv("PATH");
	struct stat st;

	if (strchr(cmd, '/')) {
		snprintf(out, len, "%s", cmd);
		return 0;
	}
	for (const char *p = path ? path : "/bin:/usr/bin"; ; ) {
		const char *end = strchrnul(p, ':');
		int n = (int)(end - p);

		/* an empty entry is the current folder */
		snprintf(out, len, "%.*s%s%s", n, p, n ? "/" : "", cmd);
		if (!stat(out, &st) && S_ISREG(st.st_mode) && !access(out, X_OK))
			return 0;
		if (!*end)
			return -ENOENT;
		p = end + 1;
	}
}

bool reach__warn(const char *cmd)
{
	char path[4096], why[1024];

	if (reach__resolve(cmd, path, sizeof(path)) || !reach__check(path, why, sizeof(why), 0))
		return false;
	fprintf(stderr, "gputrace: %s; nothing of it will be traced (running it unchanged)\n",
		why);
	return true;
}

int cmd_reach(int argc, char **argv)
{
	char why[1024];

	if (argc != 2) {
		fprintf(stderr, "usage: gputrace-tool reach PATH\n");
		return 2;
	}
	if (!reach__check(argv[1], why, sizeof(why), 0))
		return 0;
	printf("%s\n", why);
	return 1;
}
