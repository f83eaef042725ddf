/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for json__str (writer/json.c): whatever the bytes, the
 * output is one valid JSON string (RFC 8259: escaped controls, well-formed
 * escapes, valid UTF-8), and it decodes back to the input by the rule of
 * writer/json.h: valid UTF-8 kept, every other byte written as \u00XX
 * standing for that byte.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "writer/json.h"
#include "test/fuzz/balloon.h"

#define CHECK(c)                                                                           \
	do {                                                                               \
		if (!(c)) {                                                                \
			fprintf(stderr, "fuzz_json: check failed: %s\n", #c);              \
			abort();                                                           \
		}                                                                          \
	} while (0)

/* Length of a valid UTF-8 sequence at s, 0 if none (independent of json.c's). */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	uint32_t cp;
	size_t len;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0)
		len = 2, cp = s[0] & 0x1f;
	else if ((s[0] & 0xf0) == 0xe0)
		len = 3, cp = s[0] & 0x0f;
	else if ((s[0] & 0xf8) == 0xf0)
		len = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

static int hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Parse one JSON string spanning all of p[0..n); decode into out. */
static size_t parse_decode(const unsigned char *p, size_t n, unsigned char *out)
{
	size_t i = 1, o = 0;

	CHECK(n >= 2 && p[0] == '"' && p[n - 1] == '"');
	while (i < n - 1) {
		unsigned char c = p[i];

		CHECK(c >= 0x20);
		CHECK(c != '"'); /* an unescaped quote would end the string early */
		if (c == '\\') {
			CHECK(i + 1 < n - 1);
			c = p[i + 1];
			i += 2;
			switch (c) {
			case '"': out[o++] = '"'; break;
			case '\\': out[o++] = '\\'; break;
			case '/': out[o++] = '/'; break;
			case 'b': out[o++] = '\b'; break;
			case 'f': out[o++] = '\f'; break;
			case 'n': out[o++] = '\n'; break;
			case 'r': out[o++] = '\r'; break;
			case 't': out[o++] = '\t'; break;
			case 'u': {
				int v = 0;
				CHECK(i + 4 <= n - 1);
				for (int k = 0; k < 4; k++) {
					int h = hexval(p[i + k]);
					CHECK(h >= 0);
					v = v << 4 | h;
				}
				i += 4;
				/* the escaper's rule: \u00XX is the byte XX */
				CHECK(v < 0x100);
				out[o++] = (unsigned char)v;
				break;
			}
			default:
				CHECK(!"an escape JSON does not have");
			}
			continue;
		}
		size_t l = utf8_seq(p + i, n - 1 - i);
		CHECK(l > 0);
		memcpy(out + o, p + i, l);
		o += l;
		i += l;
	}
	return o;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct jbuf b = { 0 };
	unsigned char *dec;
	size_t n;

	fuzz_balloon_once();

	json__str(&b, (const char *)data, size);
	CHECK(!b.oom);
	dec = malloc(b.len + 1);
	n = parse_decode((const unsigned char *)b.p, b.len, dec);
	CHECK(n == size);
	CHECK(!memcmp(dec, data, size));
	free(dec);
	jbuf__free(&b);
	return 0;
}
