/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the check language (scripts/tool/expr.c): whatever
 * the text, parsing ends with a check or with an error whose position lies
 * inside the text; a check evaluates over a fixed summary to PASS, FAIL or
 * ERROR, and PASS/FAIL always carry the measured value.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scripts/tool/expr.h"
#include "test/fuzz/balloon.h"

#define CHECK(c)                                                                           \
	do {                                                                               \
		if (!(c)) {                                                                \
			fprintf(stderr, "fuzz_expr: check failed: %s\n", #c);              \
			abort();                                                           \
		}                                                                          \
	} while (0)

static const char summary[] =
	"{\"schema\":\"gputrace-summary\",\"version\":1,\"trace\":{\"path\":null,\"bytes\":10},"
	"\"window\":{\"start_ns\":5,\"end_ns\":1005,\"duration_ns\":1000},\"spans\":7,"
	"\"kernels\":[{\"name\":\"gemm\",\"count\":3,\"total_ns\":600,\"mean_ns\":200,"
	"\"min_ns\":100,\"max_ns\":300,\"share\":0.75},{\"name\":\"k[1]*\",\"count\":0,"
	"\"total_ns\":0,\"mean_ns\":0,\"min_ns\":0,\"max_ns\":0,\"share\":0}],"
	"\"api_calls\":[{\"name\":\"zeInit\",\"cat\":\"ze_api\",\"count\":1,\"total_ns\":50,"
	"\"mean_ns\":50,\"min_ns\":50,\"max_ns\":50,\"share\":1}],\"annotations\":[],"
	"\"copies\":[{\"kind\":\"HtoD\",\"count\":2,\"total_ns\":100,\"mean_ns\":50,\"min_ns\":40,"
	"\"max_ns\":60,\"bytes\":4096,\"bandwidth_bytes_per_s\":4.096e10}],"
	"\"devices\":[{\"name\":\"GPU 0\",\"spans\":5,\"busy_ns\":700,\"span_total_ns\":700,"
	"\"first_ns\":5,\"last_ns\":1005,\"utilization\":0.7}],"
	"\"totals\":{\"kernels\":{\"distinct\":2,\"count\":3,\"total_ns\":600},"
	"\"api_calls\":{\"distinct\":1,\"count\":1,\"total_ns\":50},"
	"\"annotations\":{\"distinct\":0,\"count\":0,\"total_ns\":0},"
	"\"copies\":{\"count\":2,\"bytes\":4096,\"total_ns\":100},"
	"\"overhead\":{\"count\":0,\"total_ns\":0}},"
	"\"lost\":{\"total\":4,\"by_reason\":{\"ring_full\":4}},\"partial\":false}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	struct expr_err err;
	struct expr *x;

	fuzz_balloon_once();
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	x = expr__parse(text, &err);
	if (!x) {
		size_t len = strlen(text);

		CHECK(err.msg[0]);
		CHECK(err.pos >= 0 && (size_t)err.pos <= len);
		CHECK(err.len >= 1);
	} else {
		struct sumdoc d = { .path = "fuzz" };
		struct expr_result res;

		buf__adds(&d.json, summary);
		expr__eval(x, &d, &res);
		CHECK(res.status == EXPR_PASS || res.status == EXPR_FAIL || res.status == EXPR_ERROR);
		if (res.status == EXPR_ERROR)
			CHECK(res.err.msg[0] && res.err.pos >= 0 && (size_t)res.err.pos <= strlen(text));
		else
			CHECK(res.measured[0]);
		sumdoc__free(&d);
		expr__free(x);
	}
	free(text);
	return 0;
}
