/* SPDX-License-Identifier: MIT */
/*
 * The inline hot path (inject/emit.h) records what gt_corr_next() and
 * gt_emit() would: same spans, args, order and correlation ids, the
 * thread's first event and a full ring included; read back with json-c.
 */
#include <check.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inject/config.h"
#include "inject/clock.h"
#include "inject/emit.h"
#include "inject/shim.h"
#include "../check_run.h"

int gt_unit_test = 1;
void gt_test_start(char *const *envp);

static char trace[256];

static void start(const char *buffer_kb)
{
	static char out[300], buf[64];
	char *env[] = { out, "GPUTRACE_SUMMARY=0", buf, "GPUTRACE_FLUSH_MS=60000", NULL };

	snprintf(trace, sizeof(trace), "/tmp/gputrace-check-emit-%d.json", getpid());
	unlink(trace);
	snprintf(out, sizeof(out), "GPUTRACE_OUTPUT=%s", trace);
	snprintf(buf, sizeof(buf), "GPUTRACE_BUFFER_KB=%s", buffer_kb);
	gt_test_start(env);
}

static struct json_object *finish(void)
{
	struct json_object *root;

	gt_finish("exit", 10000);
	root = json_object_from_file(trace);
	ck_assert_msg(root != NULL, "%s does not parse", trace);
	unlink(trace);
	return root;
}

static struct json_object *get(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	ck_assert_msg(json_object_object_get_ex(o, key, &v), "no key %s", key);
	return v;
}

START_TEST(test_same_spans_as_gt_emit)
{
	uint32_t name, cat;
	uint64_t last_corr = 0;
	int spans = 0;

	start("4096");
	name = gt_str_intern("zeFast");
	cat = gt_str_intern("ze_api");
	/* the thread's first event makes its ring: the inline path falls back */
	for (int i = 0; i < 1000; i++) {
		struct gt_arg res = { .key = GT_S_ARG_RESULT, .type = GT_ARG_I64, .v.i = -i };
		uint64_t corr = gt_corr_next_fast();

		ck_assert_uint_gt(corr, last_corr);
		last_corr = corr;
		ck_assert_int_eq(gt_emit_span(1000 + i, 1500 + i, corr, name, cat,
					      i % 2 ? GT_EVF_LAUNCH : 0, i % 3 ? &res : NULL),
				 0);
	}
	struct json_object *root = finish(), *evs = get(root, "traceEvents");
	for (size_t k = 0; k < json_object_array_length(evs); k++) {
		struct json_object *e = json_object_array_get_idx(evs, k), *args;

		if (strcmp(json_object_get_string(get(e, "ph")), "X"))
			continue;
		ck_assert_str_eq(json_object_get_string(get(e, "name")), "zeFast");
		ck_assert_str_eq(json_object_get_string(get(e, "cat")), "ze_api");
		ck_assert_int_eq(json_object_get_int(get(e, "tid")), gt_gettid());
		/* ts in us: 1000 + i ns */
		ck_assert_int_eq((int)(json_object_get_double(get(e, "ts")) * 1000 + 0.5),
				 1000 + spans);
		ck_assert_int_eq((int)(json_object_get_double(get(e, "dur")) * 1000 + 0.5), 500);
		args = get(e, "args");
		ck_assert_int_gt(json_object_get_int64(get(args, "correlation")), 0);
		if (spans % 3)
			ck_assert_int_eq(json_object_get_int(get(args, "result")), -spans);
		else
			ck_assert(!json_object_object_get_ex(args, "result", NULL));
		spans++;
	}
	ck_assert_int_eq(spans, 1000);
	ck_assert_int_eq(json_object_get_int64(get(get(root, "gputrace"), "events_lost")), 0);
	json_object_put(root);
}
END_TEST

START_TEST(test_full_ring_counts_lost)
{
	uint32_t name;
	int refused = 0;

	start("4"); /* 64 slots; the drain is not asked to run */
	gt_cfg.overflow_mb = 0; /* a full ring drops: what this counts */
	name = gt_str_intern("zeFull");
	for (int i = 0; i < 500; i++)
		refused += gt_emit_span(i, i + 1, gt_corr_next_fast(), name, GT_S_CAT_ZE_API, 0,
					NULL) == -ENOSPC;
	struct json_object *root = finish(), *meta = get(root, "gputrace");
	int64_t lost = json_object_get_int64(get(meta, "events_lost"));
	int64_t recorded = json_object_get_int64(get(meta, "events_recorded"));

	ck_assert_int_gt(refused, 0);
	ck_assert_int_eq(lost, refused);
	ck_assert_int_eq(recorded + lost, 500);
	json_object_put(root);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("emit");
	TCase *tc = tcase_create("emit");

	tcase_add_test(tc, test_same_spans_as_gt_emit);
	tcase_add_test(tc, test_full_ring_counts_lost);
	suite_add_tcase(s, tc);
	return check_run(s);
}
