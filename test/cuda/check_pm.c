/* SPDX-License-Identifier: MIT */
/*
 * CUDA metrics (backends/cuda/pm_sampling.c) without a GPU, against the real
 * CUPTI: its headers' structs (compiled in, sizes checked) and its library's
 * host profiler, which builds a PM sampling config image from a chip's name
 * alone, so the basic metric set is checked to exist, and to fit one pass,
 * on real chips. Then the sampler on this machine: no device, one line.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <cupti.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backends/cuda/internal.h"
#include "backends/cuda/pm_sampling.h"
#include "inject/config.h"
#include "inject/state.h"
#include "test/unit/unit.h"

void gt_test_start(char *const *envp);

static char err_text[4096];

/* Run fn with stderr captured into err_text; the number of lines. */
static int captured(void (*fn)(void *), void *arg)
{
	return unit_stderr(fn, arg, err_text, sizeof(err_text));
}

static void load(void)
{
	char lib[4096];

	ck_assert_msg(cupti__load(lib, sizeof(lib)) == 0, "libcupti not found");
}

START_TEST(test_struct_sizes_of_this_cupti)
{
	/* the sizes passed as structSize are the headers' own: each struct ends at its
	 * last field, so CUPTI can tell which fields a caller knows */
	ck_assert_uint_eq(CUpti_PmSampling_SetConfig_Params_STRUCT_SIZE,
			  sizeof(CUpti_PmSampling_SetConfig_Params));
	ck_assert_uint_le(CUpti_PmSampling_DecodeData_Params_STRUCT_SIZE,
			  sizeof(CUpti_PmSampling_DecodeData_Params));
	ck_assert_uint_eq(CUpti_PmSampling_CounterData_GetSampleInfo_Params_STRUCT_SIZE,
			  sizeof(CUpti_PmSampling_CounterData_GetSampleInfo_Params));
	ck_assert_uint_eq(CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE,
			  sizeof(CUpti_Profiler_Host_EvaluateToGpuValues_Params));
	ck_assert_uint_eq(offsetof(CUpti_PmSampling_CounterData_GetSampleInfo_Params,
				   startTimestamp),
			  6 * sizeof(size_t));
}
END_TEST

START_TEST(test_basic_set_on_real_chips)
{
	/* chip, how many of the basic set it has (GB100's PM sampling has no PCIe counters) */
	static const struct {
		const char *chip;
		size_t has;
	} chips[] = { { "GA100", 6 }, { "GA102", 6 }, { "GH100", 6 }, { "AD102", 6 },
		      { "GB100", 4 } };
	size_t n;
	const struct cupti_pm_metric *basic = cupti__pm_basic(&n);

	load();
	ck_assert_uint_eq(n, 6);
	for (size_t i = 0; i < sizeof(chips) / sizeof(chips[0]); i++) {
		struct cupti_pm_metric m[6];
		void *host;
		uint8_t *image;
		size_t size = 0, passes = 0, kept = n;

		memcpy(m, basic, sizeof(m));
		ck_assert_msg(cupti__pm_config(CUPTI_PROFILER_TYPE_PM_SAMPLING, chips[i].chip, NULL, m, &kept, true, &host, &image,
					       &size, &passes) == 0,
			      "%s: the basic set has no config image", chips[i].chip);
		ck_assert_uint_eq(kept, chips[i].has);
		ck_assert_uint_gt(size, 64);
		/* PM sampling takes one pass: the set must fit it */
		ck_assert_msg(passes == 1, "%s: %zu passes", chips[i].chip, passes);
		ck_assert_ptr_nonnull(host);
		cupti__pm_host_free(host, image);
	}
}
END_TEST

START_TEST(test_kernel_set_on_real_chips)
{
	/* the range profiler's config image (--metrics-mode kernel) for real chips, by the
	 * real host profiler: every metric of the per-kernel set exists, in one pass
	 * (kernel replay would run each kernel again for every further pass) */
	static const char *const chips[] = { "GA100", "GA102", "GH100", "AD102", "GB100" };
	size_t n;
	const struct cupti_pm_metric *basic = cupti__range_basic(&n);

	load();
	ck_assert_uint_eq(n, 5);
	ck_assert_str_eq(basic[0].name, "gpu__time_duration.sum");
	for (size_t i = 0; i < sizeof(chips) / sizeof(chips[0]); i++) {
		struct cupti_pm_metric m[5];
		void *host;
		uint8_t *image;
		size_t size = 0, passes = 0, kept = n;

		memcpy(m, basic, sizeof(m));
		ck_assert_msg(cupti__pm_config(CUPTI_PROFILER_TYPE_RANGE_PROFILER, chips[i], NULL,
					       m, &kept, false, &host, &image, &size,
					       &passes) == 0,
			      "%s: the per-kernel set has no range profiler config image",
			      chips[i]);
		ck_assert_uint_eq(kept, n);
		ck_assert_uint_gt(size, 64);
		ck_assert_msg(passes == 1, "%s: %zu passes", chips[i], passes);
		cupti__pm_host_free(host, image);
	}
}
END_TEST

START_TEST(test_kernel_set_too_big_needs_passes)
{
	/* many unrelated counters need more than one pass: the count the backend refuses */
	struct cupti_pm_metric m[] = {
		{ "gpu__time_duration.sum", "" },
		{ "sm__inst_executed.sum", "" },
		{ "l1tex__t_bytes.sum", "" },
		{ "lts__t_bytes.sum", "" },
		{ "dram__bytes_read.sum", "" },
		{ "dram__bytes_write.sum", "" },
		{ "sm__sass_thread_inst_executed_op_fadd_pred_on.sum", "" },
		{ "sm__sass_thread_inst_executed_op_ffma_pred_on.sum", "" },
		{ "sm__sass_thread_inst_executed_op_fmul_pred_on.sum", "" },
		{ "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", "" },
		{ "smsp__warp_issue_stalled_barrier_per_warp_active.pct", "" },
		{ "smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct", "" },
	};
	size_t n = sizeof(m) / sizeof(m[0]), size = 0, passes = 0;
	void *host;
	uint8_t *image;

	load();
	ck_assert_int_eq(cupti__pm_config(CUPTI_PROFILER_TYPE_RANGE_PROFILER, "GH100", NULL, m,
					  &n, false, &host, &image, &size, &passes),
			 0);
	ck_assert_uint_gt(passes, 1);
	cupti__pm_host_free(host, image);
}
END_TEST

struct config_args {
	struct cupti_pm_metric *m;
	size_t n;
	int rc;
};

static void config_gh100(void *arg)
{
	struct config_args *a = arg;
	void *host;
	uint8_t *image;
	size_t size, passes;

	a->rc = cupti__pm_config(CUPTI_PROFILER_TYPE_PM_SAMPLING, "GH100", NULL, a->m, &a->n,
				 false, &host, &image, &size, &passes);
	cupti__pm_host_free(host, image);
}

START_TEST(test_unknown_metric_is_one_line)
{
	struct cupti_pm_metric m[2] = {
		{ "sm__cycles_active.avg.pct_of_peak_sustained_elapsed", "sm active %" },
		{ "sm__no_such_counter.sum", "x" },
	};
	struct config_args a = { m, 2, 0 };

	load();
	gt_cfg.log_level = GT_LOG_WARN;
	ck_assert_int_eq(captured(config_gh100, &a), 1);
	ck_assert_int_eq(a.rc, -EINVAL);
	ck_assert_msg(strstr(err_text, "'sm__no_such_counter.sum' is not a metric of GH100"),
		      "%s", err_text);
}
END_TEST

START_TEST(test_choosing_metrics)
{
	struct cupti_pm_metric m[8];
	char labels[8][128];
	size_t n;

	n = cupti__pm_choose("ComputeBasic, sm__throughput.avg.pct_of_peak_sustained_elapsed ,"
			     "dram__bytes_read.sum.per_second,GpuBusy",
			     false, m, labels, 8);
	ck_assert_uint_eq(n, 2); /* the Level Zero names are not CUPTI's */
	ck_assert_str_eq(m[0].name, "sm__throughput.avg.pct_of_peak_sustained_elapsed");
	ck_assert_str_eq(m[0].label, "sm__throughput.avg.pct_of_peak_sustained_elapsed %");
	ck_assert_str_eq(m[1].label, "dram__bytes_read.sum.per_second B/s");
	n = cupti__pm_choose("", false, m, labels, 8);
	ck_assert_uint_eq(n, 6);
	ck_assert_str_eq(m[0].label, "gpu busy %");
	/* --metrics-mode kernel without CUPTI names: the per-kernel set */
	n = cupti__pm_choose("GpuBusy", true, m, labels, 8);
	ck_assert_uint_eq(n, 5);
	ck_assert_str_eq(m[0].label, "gpu time ns");
}
END_TEST

static void start_sampling(void *arg)
{
	char *env[] = { "GPUTRACE_METRICS_MODE=time", "GPUTRACE_OUTPUT=/dev/null",
			"GPUTRACE_SUMMARY=0", NULL };

	load();
	/* as if CUPTI had started for a program (there is no driver here) */
	atomic_store(&cupti_state, CUPTI_ON);
	gt_test_start(env);
	usleep(300000); /* the drain thread samples at once, then every 100 ms */
}

static void wait_more(void *arg)
{
	usleep(300000);
}

START_TEST(test_no_device_is_one_line)
{
	ck_assert_int_eq(captured(start_sampling, NULL), 1);
	ck_assert_msg(strstr(err_text, "gputrace: CUDA metrics: "), "%s", err_text);
	/* and never again */
	ck_assert_int_eq(captured(wait_more, NULL), 0);
	atomic_store(&cupti_state, CUPTI_UNAVAILABLE);
}
END_TEST

static Suite *pm_suite(void)
{
	Suite *s = suite_create("cupti_pm");
	TCase *tc = tcase_create("pm_sampling");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_struct_sizes_of_this_cupti);
	tcase_add_test(tc, test_choosing_metrics);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	/* libcupti's host profiler dlopens libnvperf_host.so with RTLD_DEEPBIND, which the
	 * sanitizer runtimes refuse (they end the process): the plain build runs these. */
	fprintf(stderr, "check_pm: host profiler tests left to the build without ASan/TSan\n");
	(void)test_basic_set_on_real_chips;
	(void)test_kernel_set_on_real_chips;
	(void)test_kernel_set_too_big_needs_passes;
	(void)test_unknown_metric_is_one_line;
	(void)test_no_device_is_one_line;
#else
	tcase_add_test(tc, test_basic_set_on_real_chips);
	tcase_add_test(tc, test_kernel_set_on_real_chips);
	tcase_add_test(tc, test_kernel_set_too_big_needs_passes);
	tcase_add_test(tc, test_unknown_metric_is_one_line);
	tcase_add_test(tc, test_no_device_is_one_line);
#endif
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(pm_suite)
