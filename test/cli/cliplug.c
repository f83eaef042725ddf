// SPDX-License-Identifier: MIT
/*
 * Test plug-in of the gputrace command tests: at start, each process it is
 * loaded into records a fixed, known set of spans, so the tests can check
 * summaries and merges number by number:
 *   N host calls "cliLaunch" (dur 2 us) each causing one "cli_kernel" on
 *   "CliDev 0"/"queue 0" (dur (i+1) us, flows by correlation), one "cliCopy"
 *   call and a "cli_copy" HtoD copy of 4096*(i+1) bytes (dur 1 us), and
 *   one "cli_fill" (memset, 512 bytes, 500 ns).
 * N is GPUTRACE_PLUGIN_CONFIG "clitest:N" (default 3); "clitest:N,exe=NAME"
 * records only in processes whose program is NAME (the others record
 * nothing, as the shells and tools around a GPU program do).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gputrace/gputrace_plugin.h>

struct state {
	const struct gputrace_builder_api *api;
	gputrace_builder *b;
	unsigned n;
	int skip; /* not the program named by exe= */
};

/* The program's name is not NAME (config "exe=NAME"). */
static int other_program(const char *config)
{
	const char *want = strstr(config, "exe="), *base;
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (!want || n <= 0)
		return 0;
	self[n] = 0;
	base = strrchr(self, '/') ? strrchr(self, '/') + 1 : self;
	want += 4;
	return strncmp(base, want, strcspn(want, ",")) || base[strcspn(want, ",")];
}

static int q(struct gputrace_plugin_info *info)
{
	info->name = "clitest";
	info->version = "1";
	info->kinds = GPUTRACE_KIND_ALL;
	return 0;
}

static int create(const struct gputrace_plugin_setup *setup, void **out)
{
	struct state *s = calloc(1, sizeof(*s));

	if (!s)
		return -12;
	s->api = setup->api;
	s->b = setup->builder;
	s->n = setup->config && *setup->config ? (unsigned)atoi(setup->config) : 3;
	s->skip = setup->config && other_program(setup->config);
	*out = s;
	return 0;
}

static void span(struct state *s, uint32_t kind, int32_t row, const char *name, uint64_t start,
		 uint64_t dur, uint64_t corr, const struct gputrace_arg *args, uint32_t nargs)
{
	struct gputrace_event ev;

	GPUTRACE_INIT(ev);
	ev.kind = kind;
	ev.row = row;
	ev.name = name;
	ev.start_ns = start;
	ev.end_ns = start + dur;
	ev.correlation = corr;
	ev.args = args;
	ev.nargs = nargs;
	s->api->span(s->b, &ev);
}

static int start(void *p)
{
	struct state *s = p;

	if (s->skip)
		return 0;
	int32_t dev = s->api->device(s->b, "CliDev 0");
	int32_t queue = s->api->queue(s->b, dev, "queue 0", 0);
	uint64_t t = s->api->now_ns();

	for (unsigned i = 0; i < s->n; i++) {
		uint64_t base = t + i * 20000ull;
		struct gputrace_arg copy[2];

		copy[0] = gputrace_arg_str("kind", "HtoD");
		copy[1] = gputrace_arg_u64("bytes", 4096ull * (i + 1));
		span(s, GPUTRACE_KIND_RUNTIME, GPUTRACE_ROW_HOST, "cliLaunch", base, 2000,
		     2 * i + 1, NULL, 0);
		span(s, GPUTRACE_KIND_KERNEL, queue, "cli_kernel", base + 3000, 1000ull * (i + 1),
		     2 * i + 1, NULL, 0);
		span(s, GPUTRACE_KIND_RUNTIME, GPUTRACE_ROW_HOST, "cliCopy", base + 2500, 400,
		     2 * i + 2, NULL, 0);
		span(s, GPUTRACE_KIND_MEMCPY, queue, "cli_copy", base + 9000, 1000, 2 * i + 2,
		     copy, 2);
	}
	struct gputrace_arg fill = gputrace_arg_u64("bytes", 512);
	span(s, GPUTRACE_KIND_MEMSET, queue, "cli_fill", t + s->n * 20000ull, 500, 0, &fill, 1);
	return 0;
}

static void destroy(void *p)
{
	free(p);
}

static const struct gputrace_plugin me = { GPUTRACE_PLUGIN_TABLE_HEAD, q, create, start,
					   NULL, NULL, destroy };
GPUTRACE_PLUGIN_EXPORT(me)
