/* SPDX-License-Identifier: MIT */
/* Every GPUTRACE_* variable, good and bad: bad values keep the default and
 * give exactly one stderr line naming the variable. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "inject/config.h"
#include "unit.h"

static char stderr_text[8192];

struct parse_args {
	struct gt_config *cfg;
	char *const *env;
};

static void parse_fn(void *arg)
{
	struct parse_args *a = arg;

	gt_cfg.log_level = GT_LOG_WARN;
	config__parse(a->cfg, a->env);
}

/* Parse env, capturing what goes to stderr. Returns the number of lines. */
static int parse(struct gt_config *cfg, char *const *env)
{
	struct parse_args a = { cfg, env };

	/* the path fields are C strings: config__parse sets their text, not
	 * the bytes after it, so the whole-struct comparisons start from zero */
	memset(cfg, 0, sizeof(*cfg));
	return unit_stderr(parse_fn, &a, stderr_text, sizeof(stderr_text));
}

START_TEST(test_defaults)
{
	struct gt_config cfg;
	char *env[] = { "PATH=/bin", "GPUTRACEX=1", NULL };

	ck_assert_int_eq(parse(&cfg, env), 0);
	ck_assert_str_eq(cfg.output, "gputrace-%e-%p.json");
	ck_assert_uint_eq(cfg.buffer_kb, GT_BUFFER_KB_DEFAULT);
	ck_assert_uint_eq(cfg.backends, GT_BACKEND_ALL);
	ck_assert(!cfg.disable_cupti);
	ck_assert(cfg.summary);
	ck_assert_uint_eq(cfg.stacks, 0);
	ck_assert_uint_eq(cfg.kinds, GT_KIND_ALL);
	ck_assert_uint_eq(cfg.flush_ms, 200);
	ck_assert_uint_eq(cfg.errors, 0);
}
END_TEST

START_TEST(test_good_values)
{
	struct gt_config cfg;
	char *env[] = { "GPUTRACE_OUTPUT=/tmp/t-%p-%e-%%.json.gz",
			"GPUTRACE_BUFFER_KB=64",
			"GPUTRACE_BACKENDS=ze, plugins",
			"GPUTRACE_DISABLE_CUPTI=yes",
			"GPUTRACE_PLUGIN_PATH=/a:/b",
			"GPUTRACE_STACKS=8",
			"GPUTRACE_STACKS_ALL=on",
			"GPUTRACE_SUMMARY=0",
			"GPUTRACE_SUMMARY_JSON=/tmp/s.json",
			"GPUTRACE_LOG=debug",
			"GPUTRACE_ACTIVITIES=kernel,cuda_runtime,privateuse1_driver,gpu_memcpy",
			"GPUTRACE_GRAPH_TRACE=true",
			"GPUTRACE_FLUSH_MS=50",
			NULL };

	ck_assert_int_eq(parse(&cfg, env), 0);
	ck_assert_str_eq(cfg.output, "/tmp/t-%p-%e-%%.json.gz");
	ck_assert_uint_eq(cfg.buffer_kb, 64);
	ck_assert_uint_eq(cfg.backends, GT_BACKEND_ZE | GT_BACKEND_PLUGINS);
	ck_assert(cfg.disable_cupti);
	ck_assert_str_eq(cfg.plugin_path, "/a:/b");
	ck_assert_uint_eq(cfg.stacks, 8);
	ck_assert(cfg.stacks_all);
	ck_assert(!cfg.summary);
	ck_assert_str_eq(cfg.summary_json, "/tmp/s.json");
	ck_assert_int_eq(cfg.log_level, GT_LOG_DEBUG);
	ck_assert_uint_eq(cfg.kinds, GT_KIND(KERNEL) | GT_KIND(RUNTIME) | GT_KIND(DRIVER) |
					     GT_KIND(MEMCPY));
	ck_assert(cfg.graph_trace);
	ck_assert_uint_eq(cfg.flush_ms, 50);
}
END_TEST

START_TEST(test_flight_recorder_values)
{
	static const struct {
		const char *env;
		uint64_t ns;
		size_t mb;
	} good[] = {
		{ "GPUTRACE_FLIGHT_RECORDER=30", 30000000000ull, GT_FLIGHT_MB_DEFAULT },
		{ "GPUTRACE_FLIGHT_RECORDER=30s", 30000000000ull, GT_FLIGHT_MB_DEFAULT },
		{ "GPUTRACE_FLIGHT_RECORDER=0.25s", 250000000ull, GT_FLIGHT_MB_DEFAULT },
		{ "GPUTRACE_FLIGHT_RECORDER=1.5", 1500000000ull, GT_FLIGHT_MB_DEFAULT },
		{ "GPUTRACE_FLIGHT_RECORDER=200ms", 200000000ull, GT_FLIGHT_MB_DEFAULT },
		{ "GPUTRACE_FLIGHT_RECORDER=86400s", 86400000000000ull, GT_FLIGHT_MB_DEFAULT },
		{ "GPUTRACE_FLIGHT_RECORDER=64MB", 0, 64 },
		{ "GPUTRACE_FLIGHT_RECORDER=1M", 0, 1 },
		{ "GPUTRACE_FLIGHT_RECORDER=512MiB", 0, 512 },
	};
	struct gt_config cfg;
	char *none[] = { NULL };

	ck_assert_int_eq(parse(&cfg, none), 0);
	ck_assert_uint_eq(cfg.flight_bytes, 0); /* off by default */
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		char *env[] = { (char *)good[i].env, NULL };

		ck_assert_int_eq(parse(&cfg, env), 0);
		ck_assert_uint_eq(cfg.flight_ns, good[i].ns);
		ck_assert_uint_eq(cfg.flight_bytes, good[i].mb << 20);
	}
}
END_TEST

/* --lossless: on/off, or the longest wait for a full ring in seconds. */
START_TEST(test_lossless_values)
{
	static const struct {
		const char *env;
		unsigned ms;
	} good[] = {
		{ "GPUTRACE_LOSSLESS=1", GT_LOSSLESS_MS_DEFAULT },
		{ "GPUTRACE_LOSSLESS=on", GT_LOSSLESS_MS_DEFAULT },
		{ "GPUTRACE_LOSSLESS=off", 0 },
		{ "GPUTRACE_LOSSLESS=0", 0 },
		{ "GPUTRACE_LOSSLESS=2.5", 2500 },
		{ "GPUTRACE_LOSSLESS=0.001", 1 },
		{ "GPUTRACE_LOSSLESS=60", 60000 },
	};
	struct gt_config cfg;

	ck_assert_int_eq(parse(&cfg, (char *[]){ NULL }), 0);
	ck_assert_uint_eq(cfg.lossless_ms, 0); /* off by default */
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		char *env[] = { (char *)good[i].env, NULL };

		ck_assert_int_eq(parse(&cfg, env), 0);
		ck_assert_uint_eq(cfg.lossless_ms, good[i].ms);
	}
}
END_TEST

START_TEST(test_backends_none_and_stacks_on)
{
	struct gt_config cfg;
	char *env[] = { "GPUTRACE_BACKENDS=none", "GPUTRACE_STACKS=on", NULL };

	ck_assert_int_eq(parse(&cfg, env), 0);
	ck_assert_uint_eq(cfg.backends, 0);
	ck_assert_uint_eq(cfg.stacks, 16);
}
END_TEST

/* Each bad value: one line naming the variable, and the default kept. */
static const struct {
	const char *env;
	const char *var;
} bad_values[] = {
	{ "GPUTRACE_OUTPUT=", "GPUTRACE_OUTPUT" },
	{ "GPUTRACE_OUTPUT=trace-%q.json", "GPUTRACE_OUTPUT" },
	{ "GPUTRACE_BUFFER_KB=", "GPUTRACE_BUFFER_KB" },
	{ "GPUTRACE_BUFFER_KB=-5", "GPUTRACE_BUFFER_KB" },
	{ "GPUTRACE_BUFFER_KB=abc", "GPUTRACE_BUFFER_KB" },
	{ "GPUTRACE_BUFFER_KB=99999999999999999999999", "GPUTRACE_BUFFER_KB" },
	{ "GPUTRACE_BUFFER_KB=2", "GPUTRACE_BUFFER_KB" },
	{ "GPUTRACE_BUFFER_KB=12k", "GPUTRACE_BUFFER_KB" },
	{ "GPUTRACE_BACKENDS=opencl", "GPUTRACE_BACKENDS" },
	{ "GPUTRACE_BACKENDS=", "GPUTRACE_BACKENDS" },
	{ "GPUTRACE_DISABLE_CUPTI=maybe", "GPUTRACE_DISABLE_CUPTI" },
	{ "GPUTRACE_STACKS=-1", "GPUTRACE_STACKS" },
	{ "GPUTRACE_STACKS=65", "GPUTRACE_STACKS" },
	{ "GPUTRACE_SUMMARY=2", "GPUTRACE_SUMMARY" },
	{ "GPUTRACE_SUMMARY_JSON=", "GPUTRACE_SUMMARY_JSON" },
	{ "GPUTRACE_PLUGIN_PATH=", "GPUTRACE_PLUGIN_PATH" },
	{ "GPUTRACE_ACTIVITIES=kernel,bogus", "GPUTRACE_ACTIVITIES" },
	{ "GPUTRACE_ACTIVITIES=", "GPUTRACE_ACTIVITIES" },
	{ "GPUTRACE_GRAPH_TRACE=x", "GPUTRACE_GRAPH_TRACE" },
	{ "GPUTRACE_FLUSH_MS=0", "GPUTRACE_FLUSH_MS" },
	{ "GPUTRACE_FLUSH_MS=1e3", "GPUTRACE_FLUSH_MS" },
	{ "GPUTRACE_LOG=loud", "GPUTRACE_LOG" },
	{ "GPUTRACE_METRICS=", "GPUTRACE_METRICS" },
	{ "GPUTRACE_METRICS=GpuBusy;rm", "GPUTRACE_METRICS" },
	{ "GPUTRACE_METRICS_MODE=sometimes", "GPUTRACE_METRICS_MODE" },
	{ "GPUTRACE_METRICS_HZ=0", "GPUTRACE_METRICS_HZ" },
	{ "GPUTRACE_METRICS_HZ=1000001", "GPUTRACE_METRICS_HZ" },
	{ "GPUTRACE_TELEMETRY=2", "GPUTRACE_TELEMETRY" },
	{ "GPUTRACE_TELEMETRY_HZ=1001", "GPUTRACE_TELEMETRY_HZ" },
	{ "GPUTRACE_START=later", "GPUTRACE_START" },
	{ "GPUTRACE_DELAY=-1", "GPUTRACE_DELAY" },
	{ "GPUTRACE_DELAY=1.5s", "GPUTRACE_DELAY" },
	{ "GPUTRACE_DURATION=nan", "GPUTRACE_DURATION" },
	{ "GPUTRACE_DURATION=9e9", "GPUTRACE_DURATION" },
	{ "GPUTRACE_DURATION=1e-12", "GPUTRACE_DURATION" }, /* not 0: "to the end" */
	{ "GPUTRACE_METRICS=,", "GPUTRACE_METRICS" }, /* no name: nothing asked for */
	{ "GPUTRACE_METRICS= , ", "GPUTRACE_METRICS" },
	{ "GPUTRACE_DELAY=4e-10", "GPUTRACE_DELAY" },
	{ "GPUTRACE_CAPTURE_RANGE=nvtx:", "GPUTRACE_CAPTURE_RANGE" },
	{ "GPUTRACE_LOSSLESS=", "GPUTRACE_LOSSLESS" },
	{ "GPUTRACE_LOSSLESS=maybe", "GPUTRACE_LOSSLESS" },
	{ "GPUTRACE_LOSSLESS=61", "GPUTRACE_LOSSLESS" },
	{ "GPUTRACE_LOSSLESS=0.0005", "GPUTRACE_LOSSLESS" },
	{ "GPUTRACE_LOSSLESS=2s", "GPUTRACE_LOSSLESS" },
	{ "GPUTRACE_CAPTURE_RANGE=nvtx:a@", "GPUTRACE_CAPTURE_RANGE" },
	{ "GPUTRACE_CAPTURE_RANGE=cudaprofilerapi", "GPUTRACE_CAPTURE_RANGE" },
	{ "GPUTRACE_CAPTURE_COUNT=-1", "GPUTRACE_CAPTURE_COUNT" },
	{ "GPUTRACE_CAPTURE_SIGNAL=SEGV", "GPUTRACE_CAPTURE_SIGNAL" },
	{ "GPUTRACE_CAPTURE_SIGNAL=RTMIN+99", "GPUTRACE_CAPTURE_SIGNAL" },
	{ "GPUTRACE_FLIGHT_RECORDER=", "GPUTRACE_FLIGHT_RECORDER" },
	{ "GPUTRACE_FLIGHT_RECORDER=0", "GPUTRACE_FLIGHT_RECORDER" },
	{ "GPUTRACE_FLIGHT_RECORDER=5ms", "GPUTRACE_FLIGHT_RECORDER" },
	{ "GPUTRACE_FLIGHT_RECORDER=86401s", "GPUTRACE_FLIGHT_RECORDER" },
	{ "GPUTRACE_FLIGHT_RECORDER=1.5MB", "GPUTRACE_FLIGHT_RECORDER" },
	{ "GPUTRACE_FLIGHT_RECORDER=65537MB", "GPUTRACE_FLIGHT_RECORDER" },
	{ "GPUTRACE_FLIGHT_RECORDER=30 s", "GPUTRACE_FLIGHT_RECORDER" },
	{ "GPUTRACE_FLIGHT_RECORDER=.s", "GPUTRACE_FLIGHT_RECORDER" },
	{ "GPUTRACE_FLIGHT_RECORDER=99999999999999999999999", "GPUTRACE_FLIGHT_RECORDER" },
	{ "GPUTRACE_BOGUS=1", "GPUTRACE_BOGUS" },
	{ "GPUTRACE_=1", "GPUTRACE_" },
};

START_TEST(test_bad_value)
{
	struct gt_config cfg, def;
	char *env[] = { (char *)bad_values[_i].env, NULL }, *none[] = { NULL };

	parse(&def, none);
	ck_assert_int_eq(parse(&cfg, env), 1);
	ck_assert_msg(strstr(stderr_text, bad_values[_i].var), "line does not name %s: %s",
		      bad_values[_i].var, stderr_text);
	ck_assert(!strncmp(stderr_text, "gputrace: ", 10));
	ck_assert_uint_eq(cfg.errors, 1);
	/* the default stays */
	cfg.errors = def.errors;
	ck_assert(!memcmp(&cfg, &def, sizeof(cfg)));
}
END_TEST

START_TEST(test_huge_value)
{
	static char big[70000];
	struct gt_config cfg;
	char *env[] = { big, NULL };

	memcpy(big, "GPUTRACE_OUTPUT=", 16);
	memset(big + 16, 'a', sizeof(big) - 17);
	ck_assert_int_eq(parse(&cfg, env), 1);
	ck_assert_str_eq(cfg.output, "gputrace-%e-%p.json");
	/* the message is one bounded line */
	ck_assert_uint_lt(strlen(stderr_text), 1100);
}
END_TEST

/* The four paths share one pool: each may be as long as a path can be, all
 * at once; one byte more is refused with one line, and the default stays. */
START_TEST(test_longest_paths)
{
	static char vals[4][PATH_MAX + 64];
	static const char *const names[4] = { "GPUTRACE_OUTPUT=", "GPUTRACE_PLUGIN_PATH=",
					       "GPUTRACE_SUMMARY_JSON=", "GPUTRACE_RUN_STATE=" };
	struct gt_config cfg;
	char *env[5] = { NULL };
	const char *got[4];

	for (int i = 0; i < 4; i++) {
		size_t n = strlen(names[i]);

		memcpy(vals[i], names[i], n);
		memset(vals[i] + n, 'a' + i, PATH_MAX - 1);
		vals[i][n + PATH_MAX - 1] = 0;
		env[i] = vals[i];
	}
	ck_assert_int_eq(parse(&cfg, env), 0);
	got[0] = cfg.output;
	got[1] = cfg.plugin_path;
	got[2] = cfg.summary_json;
	got[3] = cfg.run_state;
	for (int i = 0; i < 4; i++)
		ck_assert_str_eq(got[i], vals[i] + strlen(names[i]));
	/* one more byte is not a path */
	memset(vals[3] + strlen(names[3]), 'x', PATH_MAX);
	vals[3][strlen(names[3]) + PATH_MAX] = 0;
	ck_assert_int_eq(parse(&cfg, env), 1);
	ck_assert_ptr_nonnull(strstr(stderr_text, "GPUTRACE_RUN_STATE="));
	ck_assert_str_eq(cfg.run_state, "");
	ck_assert_str_eq(cfg.output, vals[0] + strlen(names[0]));
}
END_TEST

/* Metrics and telemetry: off by default; a part of a feature asks for it. */
START_TEST(test_metrics_and_telemetry)
{
	struct gt_config cfg;
	char *none[] = { NULL };
	char *names[] = { "GPUTRACE_METRICS=ComputeBasic, sm__throughput.avg", NULL };
	char *rate[] = { "GPUTRACE_METRICS_HZ=250", "GPUTRACE_TELEMETRY_HZ=20", NULL };
	char *kernel[] = { "GPUTRACE_METRICS_MODE=kernel", "GPUTRACE_METRICS_HZ=5", NULL };
	char *nvtx[] = { "GPUTRACE_METRICS_MODE=NVTX", "GPUTRACE_METRICS=gpu__time_duration.sum",
			 NULL };
	char *off[] = { "GPUTRACE_METRICS=X", "GPUTRACE_METRICS_MODE=off", "GPUTRACE_TELEMETRY=0",
			"GPUTRACE_TELEMETRY_HZ=5", NULL };
	char *badrate[] = { "GPUTRACE_TELEMETRY_HZ=fast", "GPUTRACE_METRICS_HZ=-1", NULL };

	ck_assert_int_eq(parse(&cfg, none), 0);
	ck_assert_uint_eq(cfg.metrics_mode, GT_METRICS_OFF);
	ck_assert(!cfg.telemetry);
	ck_assert_uint_eq(cfg.metrics_hz, GT_METRICS_HZ_DEFAULT);
	ck_assert_uint_eq(cfg.telemetry_hz, GT_TELEMETRY_HZ_DEFAULT);
	ck_assert_int_eq(parse(&cfg, names), 0);
	ck_assert_uint_eq(cfg.metrics_mode, GT_METRICS_TIME);
	ck_assert_str_eq(cfg.metrics, "ComputeBasic, sm__throughput.avg");
	ck_assert_int_eq(parse(&cfg, rate), 0);
	ck_assert_uint_eq(cfg.metrics_mode, GT_METRICS_TIME);
	ck_assert_uint_eq(cfg.metrics_hz, 250);
	ck_assert(cfg.telemetry);
	ck_assert_uint_eq(cfg.telemetry_hz, 20);
	ck_assert_int_eq(parse(&cfg, kernel), 0);
	ck_assert_uint_eq(cfg.metrics_mode, GT_METRICS_KERNEL);
	/* names with a mode keep the mode */
	ck_assert_int_eq(parse(&cfg, nvtx), 0);
	ck_assert_uint_eq(cfg.metrics_mode, GT_METRICS_NVTX);
	ck_assert_int_eq(parse(&cfg, off), 0);
	ck_assert_uint_eq(cfg.metrics_mode, GT_METRICS_OFF);
	ck_assert(!cfg.telemetry);
	/* a bad rate is one line each and asks for nothing */
	ck_assert_int_eq(parse(&cfg, badrate), 2);
	ck_assert_uint_eq(cfg.metrics_mode, GT_METRICS_OFF);
	ck_assert(!cfg.telemetry);
}
END_TEST

/* A refused value of a feature's own variable is as if not set: its part still
 * asks for the feature (as under gputrace run, which leaves the refused variable
 * out of the processes' environment). It was looked up by name, and a bad
 * GPUTRACE_STACKS with GPUTRACE_STACKS_ALL=1 recorded no stacks at all. */
START_TEST(test_refused_variable_does_not_turn_off_what_a_part_implies)
{
	struct gt_config cfg;
	char *bad[] = { "GPUTRACE_STACKS=deep", "GPUTRACE_STACKS_ALL=1",
			"GPUTRACE_METRICS_MODE=sometimes", "GPUTRACE_METRICS=X",
			"GPUTRACE_TELEMETRY=maybe", "GPUTRACE_TELEMETRY_HZ=5", NULL };
	char *off[] = { "GPUTRACE_STACKS=off", "GPUTRACE_STACKS_ALL=1",
			"GPUTRACE_METRICS_MODE=off", "GPUTRACE_METRICS=X",
			"GPUTRACE_TELEMETRY=0", "GPUTRACE_TELEMETRY_HZ=5", NULL };

	ck_assert_int_eq(parse(&cfg, bad), 3);
	ck_assert_ptr_nonnull(strstr(stderr_text, "GPUTRACE_STACKS='deep'"));
	ck_assert_ptr_nonnull(strstr(stderr_text, "GPUTRACE_METRICS_MODE='sometimes'"));
	ck_assert_ptr_nonnull(strstr(stderr_text, "GPUTRACE_TELEMETRY='maybe'"));
	ck_assert_uint_eq(cfg.stacks, GT_STACKS_DEFAULT_DEPTH);
	ck_assert_uint_eq(cfg.metrics_mode, GT_METRICS_TIME);
	ck_assert(cfg.telemetry);
	/* turned off by name, they stay off; stacks of every call asked for all
	 * the same are said to be none in one line (they were not said) */
	ck_assert_int_eq(parse(&cfg, off), 1);
	ck_assert_uint_eq(cfg.stacks, 0);
	ck_assert(!cfg.stacks_all);
	ck_assert_str_eq(stderr_text, "gputrace: GPUTRACE_STACKS_ALL (--stacks-all) records no "
				      "stacks: GPUTRACE_STACKS (--stacks) is off; set it on or to "
				      "a depth\n");
	ck_assert_uint_eq(cfg.metrics_mode, GT_METRICS_OFF);
	ck_assert(!cfg.telemetry);
}
END_TEST

START_TEST(test_kind_aliases)
{
	char badw[64];

	ck_assert_int_eq(config__parse_kinds("all", badw, sizeof(badw)), GT_KIND_ALL);
	ck_assert_int_eq(config__parse_kinds("xpu_runtime", badw, sizeof(badw)), GT_KIND(RUNTIME));
	ck_assert_int_eq(config__parse_kinds("mtia_driver,nvtx", badw, sizeof(badw)),
			 GT_KIND(DRIVER) | GT_KIND(ANNOTATION));
	ck_assert_int_eq(config__parse_kinds("CONCURRENT_KERNEL,memset", badw, sizeof(badw)),
			 GT_KIND(KERNEL) | GT_KIND(MEMSET));
	ck_assert_int_eq(config__parse_kinds("kernel,nope", badw, sizeof(badw)), -1);
	ck_assert_str_eq(badw, "nope");
}
END_TEST

START_TEST(test_expand_output)
{
	char out[64];

	setenv("RANK", "3", 1);
	ck_assert_int_eq(config__expand_output("t-%e-%p-r%r-%%.json", out, sizeof(out), 42, "app",
					       0),
			 0);
	ck_assert_str_eq(out, "t-app-42-r3-%.json");
	ck_assert_int_eq(config__expand_output("%t", out, sizeof(out), 1, "a", 0), 0);
	ck_assert_str_eq(out, "19700101T000000Z");
	/* a program name never adds a directory */
	ck_assert_int_eq(config__expand_output("%e.json", out, sizeof(out), 1, "a/b", 0), 0);
	ck_assert_str_eq(out, "a_b.json");
	ck_assert_int_eq(config__expand_output("%x", out, sizeof(out), 1, "a", 0), -EINVAL);
	ck_assert_int_eq(config__expand_output("abc%", out, sizeof(out), 1, "a", 0), -EINVAL);
	ck_assert_int_eq(config__expand_output("%e%e%e%e", out, 8, 1, "abcdef", 0),
			 -ENAMETOOLONG);
	unsetenv("RANK");
	setenv("SLURM_PROCID", "7", 1);
	ck_assert_int_eq(config__expand_output("%r", out, sizeof(out), 1, "a", 0), 0);
	ck_assert_str_eq(out, "7");
}
END_TEST

/* The metric names and the NVTX range's name and domain share the paths' pool:
 * all at their longest (1023 and 255 bytes each) fit beside four paths at theirs; a
 * byte more of any is refused, and leaves the default. */
START_TEST(test_longest_names)
{
	static char paths[4][PATH_MAX + 64], metrics[1100], range[600];
	static const char *const names[4] = { "GPUTRACE_OUTPUT=", "GPUTRACE_PLUGIN_PATH=",
					       "GPUTRACE_SUMMARY_JSON=", "GPUTRACE_RUN_STATE=" };
	char *env[7] = { NULL };
	struct gt_config cfg;
	size_t n;

	for (int i = 0; i < 4; i++) {
		n = strlen(names[i]);
		memcpy(paths[i], names[i], n);
		memset(paths[i] + n, 'a' + i, PATH_MAX - 1);
		env[i] = paths[i];
	}
	n = (size_t)sprintf(metrics, "GPUTRACE_METRICS=");
	memset(metrics + n, 'm', GT_CFG_METRICS_MAX);
	n = (size_t)sprintf(range, "GPUTRACE_CAPTURE_RANGE=nvtx:");
	memset(range + n, 'n', GT_CFG_NAME_MAX);
	range[n + GT_CFG_NAME_MAX] = '@';
	memset(range + n + GT_CFG_NAME_MAX + 1, 'd', GT_CFG_NAME_MAX);
	env[4] = metrics;
	env[5] = range;
	ck_assert_int_eq(parse(&cfg, env), 0);
	ck_assert_str_eq(cfg.run_state, paths[3] + strlen(names[3]));
	ck_assert_uint_eq(strlen(cfg.metrics), GT_CFG_METRICS_MAX);
	ck_assert_uint_eq(strlen(cfg.capture_nvtx), GT_CFG_NAME_MAX);
	ck_assert_uint_eq(strlen(cfg.capture_nvtx_domain), GT_CFG_NAME_MAX);
	ck_assert(cfg.capture_nvtx[0] == 'n' && cfg.capture_nvtx_domain[0] == 'd');
	ck_assert_int_eq(cfg.capture_range, GT_RANGE_NVTX);
	/* a byte more: the metrics, the domain, then the name */
	metrics[strlen(metrics)] = 'm';
	ck_assert_int_eq(parse(&cfg, env), 1);
	ck_assert_str_eq(cfg.metrics, "");
	range[strlen(range)] = 'd';
	ck_assert_int_eq(parse(&cfg, env), 2);
	ck_assert_int_eq(cfg.capture_range, 0);
	ck_assert_str_eq(cfg.capture_nvtx_domain, "");
	n = strlen("GPUTRACE_CAPTURE_RANGE=nvtx:");
	memset(range + n, 'n', GT_CFG_NAME_MAX + 1);
	range[n + GT_CFG_NAME_MAX + 1] = 0;
	ck_assert_int_eq(parse(&cfg, env), 2);
	ck_assert_int_eq(cfg.capture_range, 0);
	ck_assert_str_eq(cfg.capture_nvtx, "");
}
END_TEST

START_TEST(test_capture_values)
{
	struct gt_config cfg;
	char *env[] = { "GPUTRACE_START=paused", "GPUTRACE_DELAY=1.25", "GPUTRACE_DURATION=30",
			"GPUTRACE_CAPTURE_RANGE=nvtx:step 1@my@dom", "GPUTRACE_CAPTURE_COUNT=0",
			"GPUTRACE_CAPTURE_SIGNAL=SIGRTMAX-2", "GPUTRACE_RUN_DIR=/x", NULL };
	char *env2[] = { "GPUTRACE_CAPTURE_RANGE=cudaProfilerApi",
			 "GPUTRACE_CAPTURE_SIGNAL=off", NULL };

	ck_assert_int_eq(parse(&cfg, env), 0);
	ck_assert(cfg.start_paused);
	ck_assert_uint_eq(cfg.delay_ns, 1250000000ull);
	ck_assert_uint_eq(cfg.duration_ns, 30000000000ull);
	ck_assert_int_eq(cfg.capture_range, GT_RANGE_NVTX);
	/* the last '@' splits: a name may hold one */
	ck_assert_str_eq(cfg.capture_nvtx, "step 1@my");
	ck_assert_str_eq(cfg.capture_nvtx_domain, "dom");
	ck_assert_uint_eq(cfg.capture_count, 0);
	ck_assert_int_eq(cfg.capture_signal, SIGRTMAX - 2);
	ck_assert_int_eq(parse(&cfg, env2), 0);
	ck_assert_int_eq(cfg.capture_range, GT_RANGE_PROFILER);
	ck_assert_int_eq(cfg.capture_signal, 0);
	ck_assert_uint_eq(cfg.capture_count, 1);
	ck_assert(!cfg.start_paused);
}
END_TEST

/* Words in any case, as ON, YES and KERNEL always were: OFF, PAUSED and RUNNING
 * were refused. */
START_TEST(test_words_in_any_case)
{
	struct gt_config cfg;
	char *env[] = { "GPUTRACE_START=PAUSED", "GPUTRACE_WATCHDOG=OFF",
			"GPUTRACE_KINETO_CYCLE_MS=Off", "GPUTRACE_CAPTURE_SIGNAL=OFF", NULL };
	char *env2[] = { "GPUTRACE_START=Running", NULL };

	ck_assert_int_eq(parse(&cfg, env), 0);
	ck_assert(cfg.start_paused);
	ck_assert_uint_eq(cfg.watchdog_ms, 0);
	ck_assert_uint_eq(cfg.kineto_cycle_ms, 0);
	ck_assert_int_eq(cfg.capture_signal, 0);
	ck_assert_int_eq(parse(&cfg, env2), 0);
	ck_assert(!cfg.start_paused);
}
END_TEST

static Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("config");

	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_good_values);
	tcase_add_test(tc, test_words_in_any_case);
	tcase_add_test(tc, test_backends_none_and_stacks_on);
	tcase_add_test(tc, test_lossless_values);
	tcase_add_test(tc, test_flight_recorder_values);
	tcase_add_loop_test(tc, test_bad_value, 0, sizeof(bad_values) / sizeof(bad_values[0]));
	tcase_add_test(tc, test_huge_value);
	tcase_add_test(tc, test_longest_paths);
	tcase_add_test(tc, test_metrics_and_telemetry);
	tcase_add_test(tc, test_refused_variable_does_not_turn_off_what_a_part_implies);
	tcase_add_test(tc, test_kind_aliases);
	tcase_add_test(tc, test_expand_output);
	tcase_add_test(tc, test_longest_names);
	tcase_add_test(tc, test_capture_values);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(config_suite)
