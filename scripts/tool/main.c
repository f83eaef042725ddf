// SPDX-License-Identifier: MIT
/*
 * gputrace-tool: the compiled half of the gputrace command (merge and
 * summary stream traces bigger than memory; the shell script can't).
 * scripts/gputrace finds it next to itself and execs it.
 */
#include <stdio.h>
#include <string.h>

#include "tool.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: gputrace-tool merge -o OUT FILE...\n"
		   "       gputrace-tool summary [--json OUT] FILE\n"
		   "       gputrace-tool check [options] SUMMARY|TRACE CHECK...\n"
		   "       gputrace-tool diff [options] BASE... -- NEW...\n"
		   "       gputrace-tool report [-o OUT] TRACE\n"
		   "       gputrace-tool --version\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "merge"))
		return cmd_merge(argc - 1, argv + 1);
	if (!strcmp(argv[1], "summary"))
		return cmd_summary(argc - 1, argv + 1);
	if (!strcmp(argv[1], "check"))
		return cmd_check(argc - 1, argv + 1);
	if (!strcmp(argv[1], "diff"))
		return cmd_diff(argc - 1, argv + 1);
	if (!strcmp(argv[1], "report"))
		return cmd_report(argc - 1, argv + 1);
	if (!strcmp(argv[1], "--version")) {
		printf("gputrace-tool %s\n", GPUTRACE_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "gputrace-tool: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
