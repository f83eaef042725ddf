/* SPDX-License-Identifier: MIT */
/* UTF-8, as JSON output and input checks need it. */
#ifndef GPUTRACE_UTF8_H
#define GPUTRACE_UTF8_H

#include <stddef.h>

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if invalid
 * (overlong, a surrogate, past U+10FFFF, cut short by n). */
static inline size_t gt_utf8_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0], min, cp;
	size_t len;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, min = 0x10000;
	else
		return 0;
	if (n < len)
		return 0;
	cp = c & (0x3f >> (len - 1));
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/* s[0..n) less a character cut short at its end (a copy cut at a byte count):
 * the length up to the last whole character. */
static inline size_t gt_utf8_trim_end(const char *s, size_t n)
{
	for (size_t back = 1; back <= 3 && back <= n; back++) {
		unsigned c = (unsigned char)s[n - back];

		if ((c & 0xc0) != 0x80) /* the last character's first byte */
			return (c >= 0xf0 ? 4u : c >= 0xe0 ? 3u : c >= 0xc0 ? 2u : 1u) > back ?
				       n - back : n;
	}
	return n;
}

#endif
