/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for inject/config.c: config__parse over an environment
 * made of the input, and config__parse_kinds over the input itself.
 * Input: lines; a line's first byte picks a GPUTRACE_* name (or none: the
 * line is taken whole, "NAME=value" or garbage), the rest is its value.
 * Checks every field stays in its documented range and the output template
 * kept always expands.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inject/config.h"
#include "test/fuzz/balloon.h"

/* The library's logger, here formatting into a buffer (the format strings
 * and their %.Ns limits are exercised; nothing is printed). */
void gt_log(int level, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
}

static const char *const names[] = {
	"GPUTRACE_OUTPUT",	 "GPUTRACE_BUFFER_KB",	   "GPUTRACE_BACKENDS",
	"GPUTRACE_DISABLE_CUPTI", "GPUTRACE_PLUGIN_PATH",   "GPUTRACE_STACKS",
	"GPUTRACE_STACKS_ALL",	 "GPUTRACE_SUMMARY",	   "GPUTRACE_SUMMARY_JSON",
	"GPUTRACE_LOG",		 "GPUTRACE_ACTIVITIES",	   "GPUTRACE_GRAPH_TRACE",
	"GPUTRACE_FLUSH_MS",	 "GPUTRACE_PLUGIN_CONFIG", "GPUTRACE_LIB",
	"GPUTRACE_TOOL",	 "GPUTRACE_",		   "GPUTRACE_BOGUS",
};
#define NNAMES (sizeof(names) / sizeof(names[0]))

#define CHECK(c)                                                                           \
	do {                                                                               \
		if (!(c)) {                                                                \
			fprintf(stderr, "fuzz_config: check failed: %s\n", #c);            \
			abort();                                                           \
		}                                                                          \
	} while (0)

static void check_config(const struct gt_config *cfg)
{
	char path[PATH_MAX];

	CHECK(memchr(cfg->output, 0, PATH_MAX) && cfg->output[0]);
	CHECK(memchr(cfg->plugin_path, 0, PATH_MAX));
	CHECK(memchr(cfg->summary_json, 0, PATH_MAX));
	CHECK(memchr(cfg->run_state, 0, PATH_MAX));
	CHECK(memchr(cfg->metrics, 0, GT_CFG_METRICS_MAX + 1));
	CHECK(memchr(cfg->capture_nvtx, 0, GT_CFG_NAME_MAX + 1));
	CHECK(memchr(cfg->capture_nvtx_domain, 0, GT_CFG_NAME_MAX + 1));
	CHECK(cfg->paths_used <= sizeof(cfg->paths));
	CHECK(cfg->buffer_kb >= GT_BUFFER_KB_MIN && cfg->buffer_kb <= GT_BUFFER_KB_MAX);
	CHECK(cfg->log_level >= GT_LOG_ERROR && cfg->log_level <= GT_LOG_DEBUG);
	CHECK(cfg->flush_ms >= 10 && cfg->flush_ms <= 60000);
	CHECK(cfg->stacks <= GT_STACKS_MAX_DEPTH);
	CHECK(!(cfg->backends & ~GT_BACKEND_ALL));
	CHECK(!(cfg->kinds & ~GT_KIND_ALL));
	/* what was kept as the template expands, as the writer will need */
	CHECK(config__expand_output(cfg->output, path, sizeof(path), 1, "x", 0) == 0);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	char *copy = malloc(size + 1), *line, *save = NULL;
	char **envp = calloc(size + 2, sizeof(char *));
	size_t n = 0;
	struct gt_config cfg;
	char bad[64];
	long mask;

	fuzz_balloon_once();

	memcpy(copy, data, size);
	copy[size] = 0;
	/* parse_kinds on the raw input (up to its first NUL) */
	memset(bad, 'z', sizeof(bad));
	mask = config__parse_kinds(copy, bad, sizeof(bad));
	if (mask < 0)
		CHECK(memchr(bad, 0, sizeof(bad)));
	else
		CHECK(!(mask & ~(long)GT_KIND_ALL));

	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned char pick = (unsigned char)line[0];
		char *e;

		if (pick % 4 == 0) { /* taken whole */
			envp[n++] = strdup(line + 1);
			continue;
		}
		e = malloc(strlen(names[pick % NNAMES]) + strlen(line) + 2);
		sprintf(e, "%s=%s", names[pick % NNAMES], line + 1);
		envp[n++] = e;
	}
	envp[n] = NULL;
	config__parse(&cfg, envp);
	check_config(&cfg);
	for (size_t i = 0; i < n; i++)
		free(envp[i]);
	free(envp);
	free(copy);
	return 0;
}
