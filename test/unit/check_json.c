/* SPDX-License-Identifier: MIT */
/* The JSON pieces, read back by a real parser (json-c). */
#include <float.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "inject/pages.h"
#include "writer/json.h"
#include "unit.h"

/* Escape bytes, parse the result, return the decoded string (static). */
static const char *roundtrip(const char *s, size_t n, size_t *outlen)
{
	static char decoded[4096];
	struct jbuf b = { 0 };
	struct json_object *o;

	json__str(&b, s, n);
	jbuf__ch(&b, 0);
	o = json_tokener_parse(b.p);
	ck_assert_msg(o != NULL, "not valid JSON: %s", b.p);
	ck_assert(json_object_is_type(o, json_type_string));
	*outlen = (size_t)json_object_get_string_len(o);
	ck_assert_uint_lt(*outlen, sizeof(decoded));
	memcpy(decoded, json_object_get_string(o), *outlen);
	json_object_put(o);
	jbuf__free(&b);
	return decoded;
}

START_TEST(test_every_byte_value)
{
	for (int c = 0; c < 256; c++) {
		char in[3] = { 'a', (char)c, 'z' };
		size_t n;
		const char *out = roundtrip(in, 3, &n);

		if (c < 0x80) {
			/* ASCII, controls and NUL included, comes back as is */
			ck_assert_uint_eq(n, 3);
			ck_assert_int_eq((unsigned char)out[1], c);
		} else {
			/* a lone high byte is not UTF-8: kept as the code point U+00XX */
			ck_assert_uint_eq(n, 4);
			ck_assert_int_eq((unsigned char)out[1], 0xc0 | (c >> 6));
			ck_assert_int_eq((unsigned char)out[2], 0x80 | (c & 0x3f));
		}
		ck_assert_int_eq(out[0], 'a');
		ck_assert_int_eq(out[n - 1], 'z');
	}
}
END_TEST

START_TEST(test_utf8_kept_and_invalid_escaped)
{
	size_t n;
	const char *out;
	static const char good[] = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80 \"q\" \\ \t\n";

	out = roundtrip(good, sizeof(good) - 1, &n);
	ck_assert_uint_eq(n, sizeof(good) - 1);
	ck_assert(!memcmp(out, good, n));
	/* overlong '/', a UTF-16 surrogate, beyond U+10FFFF, a cut sequence */
	static const char *const bad[] = { "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
					   "\xe2\x82" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t len = strlen(bad[i]);
		out = roundtrip(bad[i], len, &n);
		/* every byte became one 2-byte code point */
		ck_assert_uint_eq(n, 2 * len);
	}
}
END_TEST

static const char *fmt(void (*fn)(struct jbuf *, uint64_t), uint64_t v)
{
	static char s[64];
	struct jbuf b = { 0 };

	fn(&b, v);
	ck_assert_uint_lt(b.len, sizeof(s));
	memcpy(s, b.p, b.len);
	s[b.len] = 0;
	jbuf__free(&b);
	return s;
}

START_TEST(test_numbers)
{
	ck_assert_str_eq(fmt(json__u64, 0), "0");
	ck_assert_str_eq(fmt(json__u64, 9), "9");
	ck_assert_str_eq(fmt(json__u64, 10), "10");
	ck_assert_str_eq(fmt(json__u64, 1234567890123ull), "1234567890123");
	ck_assert_str_eq(fmt(json__u64, UINT64_MAX), "18446744073709551615");
	ck_assert_str_eq(fmt(json__hex, 0), "\"0x0\"");
	ck_assert_str_eq(fmt(json__hex, 0xabcdef), "\"0xabcdef\"");
	ck_assert_str_eq(fmt(json__hex, UINT64_MAX), "\"0xffffffffffffffff\"");
	ck_assert_str_eq(fmt(json__us, 0), "0.000");
	ck_assert_str_eq(fmt(json__us, 7), "0.007");
	ck_assert_str_eq(fmt(json__us, 1234567), "1234.567");
	ck_assert_str_eq(fmt(json__us, 728041949917ull), "728041949.917");

	struct jbuf b = { 0 };
	json__i64(&b, INT64_MIN);
	jbuf__ch(&b, ' ');
	json__i64(&b, -42);
	jbuf__ch(&b, ' ');
	json__f64(&b, 0.0 / 0.0);
	jbuf__ch(&b, ' ');
	json__f64(&b, 2.5);
	jbuf__ch(&b, ' ');
	/* %.15g rounded these past DBL_MAX (1.79769313486232e+308: no double) */
	json__f64(&b, DBL_MAX);
	jbuf__ch(&b, ' ');
	json__f64(&b, -DBL_MAX);
	jbuf__ch(&b, ' ');
	json__f64(&b, 1.79769313486231e308);
	jbuf__ch(&b, 0);
	ck_assert_str_eq(b.p, "-9223372036854775808 -42 null 2.5 1.7976931348623157e+308 "
			      "-1.7976931348623157e+308 1.79769313486231e+308");
	jbuf__free(&b);
}
END_TEST

/* json__ts writes what json__us writes, whatever it kept from the last
 * timestamp: across its 10 ms prefix, below it, back and forth, and into a
 * buffer with no room left. */
START_TEST(test_timestamps_as_us)
{
	static const uint64_t base[] = { 0, 999, 1000, 9999999, 10000000, 10000001,
					 53493915527934ull, 53493919999999ull, 53493920000000ull,
					 728041949917ull, 1ull << 40, UINT64_MAX / 2, UINT64_MAX };
	struct json_ts_prefix prefix = { 0 };
	struct jbuf ts = { 0 }, us = { 0 };

	for (unsigned rep = 0; rep < 2; rep++)
		for (size_t i = 0; i < sizeof(base) / sizeof(base[0]); i++)
			for (uint64_t d = 0; d < 3000; d += 7) {
				uint64_t v = base[i] > UINT64_MAX - d ? base[i] - d : base[i] + d;

				json__ts(&ts, v, &prefix);
				json__us(&us, v);
				jbuf__ch(&ts, ',');
				jbuf__ch(&us, ',');
			}
	ck_assert(!ts.oom && !us.oom);
	ck_assert_uint_eq(ts.len, us.len);
	ck_assert(!memcmp(ts.p, us.p, us.len));
	ck_assert_str_eq(fmt(json__us, 999), "0.999");
	ck_assert_str_eq(fmt(json__us, 1000), "1.000");
	/* no room left: the inline paths grow the buffer as the others do */
	for (uint64_t v = 0; v < 12; v++) {
		struct jbuf b = { 0 };
		char want[64];

		ck_assert_int_eq(jbuf__reserve(&b, 1), 0);
		b.len = b.cap;
		memset(b.p, 'x', b.len);
		json__u64(&b, v);
		jbuf__ch(&b, ' ');
		b.len = b.cap; /* full again */
		json__us(&b, v * 100);
		b.len = b.cap;
		json__ts(&b, 53493915527934ull + v, &prefix);
		jbuf__ch(&b, 0);
		ck_assert(!b.oom);
		snprintf(want, sizeof(want), "53493915527.%03u", (unsigned)(934 + v));
		ck_assert_str_eq(b.p + b.len - 1 - strlen(want), want);
		jbuf__free(&b);
	}
	jbuf__free(&ts);
	jbuf__free(&us);
}
END_TEST

/* A buffer that grows past GT_GROW_BIG moves from malloc to a mapping in 2 MiB pages
 * (inject/pages.c), and on to a bigger one, every byte kept on the way; a small one
 * stays malloc's. */
START_TEST(test_a_big_buffer_keeps_its_bytes_as_it_moves)
{
	struct jbuf b = { 0 }, small = { 0 };
	char piece[1000];
	size_t pieces = (5u << 20) / sizeof(piece), moves = 0, last_map = 0;

	for (size_t i = 0; i < pieces; i++) {
		memset(piece, 'a' + (int)(i % 26), sizeof(piece));
		jbuf__put(&b, piece, sizeof(piece));
		ck_assert_int_eq(b.oom, 0);
		ck_assert_uint_ge(b.cap, b.len);
#if defined(__SANITIZE_ADDRESS__)
		ck_assert_uint_eq(b.map, 0); /* malloc's, where the sanitizer sees overruns */
#else
		if (!b.map)
			ck_assert_uint_lt(b.cap, GT_GROW_BIG);
		if (b.len >= GT_GROW_BIG)
			ck_assert_uint_ne(b.map, 0);
#endif
		if (b.map != last_map) {
			moves++;
			last_map = b.map;
			ck_assert_uint_eq(b.map % GT_HUGE_PAGE, 0);
			ck_assert_uint_eq(b.cap, b.map);
		}
	}
#if !defined(__SANITIZE_ADDRESS__)
	ck_assert_uint_ge(moves, 3); /* malloc's to 2 MiB, to 4, to 8 */
#endif
	ck_assert_uint_eq(b.len, pieces * sizeof(piece));
	for (size_t i = 0; i < pieces; i++)
		for (size_t j = 0; j < sizeof(piece); j += 97)
			ck_assert_int_eq(b.p[i * sizeof(piece) + j], 'a' + (int)(i % 26));
	jbuf__lit(&small, "{}");
	ck_assert_uint_eq(small.map, 0);
	jbuf__free(&small);
	char *was = b.p;
	size_t was_map = b.map;
	jbuf__free(&b);
	if (was_map) {
		/* all of the mapping given back, its length known */
		unsigned char vec[1];

		ck_assert_int_eq(mincore(was, 4096, vec), -1);
		ck_assert_int_eq(mincore(was + was_map - 4096, 4096, vec), -1);
	}
	ck_assert_ptr_null(b.p);
	ck_assert_uint_eq(b.map, 0);
}
END_TEST

static Suite *json_suite(void)
{
	Suite *s = suite_create("json");
	TCase *tc = tcase_create("json");

	tcase_add_test(tc, test_every_byte_value);
	tcase_add_test(tc, test_utf8_kept_and_invalid_escaped);
	tcase_add_test(tc, test_numbers);
	tcase_add_test(tc, test_timestamps_as_us);
	tcase_add_test(tc, test_a_big_buffer_keeps_its_bytes_as_it_moves);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(json_suite)
