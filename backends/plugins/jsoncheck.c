// SPDX-License-Identifier: MIT
/*
 * Is a Kineto plug-in's metadata value one valid JSON value? It is copied
 * into the trace as it is when it is, so it must be exactly: RFC 8259's
 * grammar, strings of valid UTF-8 without control characters and without
 * lone surrogates in \u escapes, nesting bounded (the check recurses). No
 * allocation: it runs in the program.
 */
#include <stddef.h>
#include <string.h>

#include "backends/plugins/kineto_internal.h"
#include "inject/utf8.h"

#define DEPTH_MAX 64

static const char *blanks(const char *p, const char *e)
{
	while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

static int hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* The code unit of "\uXXXX" at p, or -1. */
static long unit(const char *p, const char *e)
{
	long v = 0;

	if (e - p < 6 || p[0] != '\\' || p[1] != 'u')
		return -1;
	for (int i = 2; i < 6; i++) {
		if (!hex(p[i]))
			return -1;
		v = v * 16 + (p[i] <= '9' ? p[i] - '0' : (p[i] | 0x20) - 'a' + 10);
	}
	return v;
}

/* p at '"': past the closing quote, or NULL. */
static const char *string(const char *p, const char *e, bool *escaped)
{
	for (p++; p < e;) {
		unsigned char c = (unsigned char)*p;
		size_t l;

		if (c == '"')
			return p + 1;
		if (c < 0x20)
			return NULL;
		if (c == '\\') {
			*escaped = true;
			if (++p == e)
				return NULL;
			if (*p == 'u') {
				long u = unit(p - 1, e);

				/* a surrogate only as half of a pair: many readers
				 * refuse a lone one, which has no UTF-8 */
				if (u >= 0xdc00 && u <= 0xdfff)
					return NULL;
				if (u >= 0xd800 && u <= 0xdbff) {
					long low = unit(p + 5, e);

					if (low < 0xdc00 || low > 0xdfff)
						return NULL;
					p += 6;
				}
				if (u < 0)
					return NULL;
				p += 5;
			} else if (*p && strchr("\"\\/bfnrt", *p)) {
				p++;
			} else {
				return NULL;
			}
			continue;
		}
		if (c < 0x80) {
			p++;
			continue;
		}
		l = gt_utf8_len((const unsigned char *)p, (size_t)(e - p));
		if (!l)
			return NULL;
		p += l;
	}
	return NULL;
}

static const char *digits(const char *p, const char *e)
{
	const char *s = p;

	while (p < e && *p >= '0' && *p <= '9')
		p++;
	return p > s ? p : NULL;
}

static const char *number(const char *p, const char *e, bool *integer)
{
	if (p < e && *p == '-')
		p++;
	if (p < e && *p == '0')
		p++;
	else if (!(p = digits(p, e)))
		return NULL;
	*integer = true;
	if (p < e && *p == '.') {
		*integer = false;
		if (!(p = digits(p + 1, e)))
			return NULL;
	}
	if (p < e && (*p == 'e' || *p == 'E')) {
		*integer = false;
		p++;
		if (p < e && (*p == '+' || *p == '-'))
			p++;
		if (!(p = digits(p, e)))
			return NULL;
	}
	return p;
}

static const char *value(const char *p, const char *e, unsigned depth, enum json_kind *kind);

/* p at '[' or '{': past the closing bracket, or NULL. */
static const char *container(const char *p, const char *e, unsigned depth, bool object)
{
	enum json_kind k;
	bool escaped;
	char close = object ? '}' : ']';

	if (depth >= DEPTH_MAX)
		return NULL;
	p = blanks(p + 1, e);
	if (p < e && *p == close)
		return p + 1;
	for (;;) {
		if (object) {
			if (p == e || *p != '"' || !(p = string(p, e, &escaped)))
				return NULL;
			p = blanks(p, e);
			if (p == e || *p != ':')
				return NULL;
			p++;
		}
		if (!(p = value(p, e, depth + 1, &k)))
			return NULL;
		p = blanks(p, e);
		if (p == e)
			return NULL;
		if (*p == close)
			return p + 1;
		if (*p != ',')
			return NULL;
		p = blanks(p + 1, e);
	}
}

static const char *literal(const char *p, const char *e, const char *word)
{
	size_t n = strlen(word);

	return (size_t)(e - p) >= n && !memcmp(p, word, n) ? p + n : NULL;
}

static const char *value(const char *p, const char *e, unsigned depth, enum json_kind *kind)
{
	bool flag = false;

	p = blanks(p, e);
	if (p == e)
		return NULL;
	switch (*p) {
	case '"':
		p = string(p, e, &flag);
		*kind = flag ? JSON_STRING_ESCAPED : JSON_STRING;
		return p;
	case '[':
		*kind = JSON_ARRAY;
		return container(p, e, depth, false);
	case '{':
		*kind = JSON_OBJECT;
		return container(p, e, depth, true);
	case 't':
		*kind = JSON_LITERAL;
		return literal(p, e, "true");
	case 'f':
		*kind = JSON_LITERAL;
		return literal(p, e, "false");
	case 'n':
		*kind = JSON_LITERAL;
		return literal(p, e, "null");
	default:
		p = number(p, e, &flag);
		*kind = flag ? JSON_INTEGER : JSON_NUMBER;
		return p;
	}
}

enum json_kind json__check(const char *text, size_t n, size_t *start, size_t *len)
{
	const char *e = text + n, *s = blanks(text, e), *end;
	enum json_kind kind = JSON_INVALID;

	end = value(s, e, 0, &kind);
	if (!end || blanks(end, e) != e)
		return JSON_INVALID;
	*start = (size_t)(s - text);
	*len = (size_t)(end - s);
	return kind;
}
