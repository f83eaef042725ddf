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

/* "\\xNN" of byte c into out (5 bytes); its length, 4. */
static inline size_t gt_hex_escape(unsigned char c, char out[5])
{
	static const char hex[] = "0123456789abcdef";

	out[0] = '\\';
	out[1] = 'x';
	out[2] = hex[c >> 4];
	out[3] = hex[c & 15];
	out[4] = 0;
	return 4;
}

/* Byte c shown in a line of text: its escape into out (\n, \t, \r, else
 * \xNN, NUL-terminated) and the escape's length, or 0 when it is shown as it
 * is. Every control character is escaped: a newline would break the line,
 * an escape sequence would colour the terminal. (The summary's lines and a
 * bad setting's line both: summary__ctl_escape, config.c's bad().) */
static inline size_t gt_ctl_escape(unsigned char c, char out[5])
{
	if (c >= 0x20 && c != 0x7f)
		return 0;
	if (c != '\n' && c != '\t' && c != '\r')
		return gt_hex_escape(c, out);
	out[0] = '\\';
	out[1] = c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
	out[2] = 0;
	return 2;
}

/* The first max bytes of s (fewer rather than half a character) as one clean
 * line: control characters escaped as gt_ctl_escape does, and each byte that
 * is not part of valid UTF-8 as \xNN, so the line is valid UTF-8 whatever s
 * holds. out holds 4 * max + 1 bytes; returns out. */
static inline char *gt_text_line(char *out, const char *s, size_t max)
{
	const unsigned char *u = (const unsigned char *)s;
	char *o = out;
	size_t i = 0;

	while (i < max && u[i]) {
		size_t avail = 1, len;

		while (avail < 4 && u[i + avail]) /* up to the NUL */
			avail++;
		len = gt_utf8_len(u + i, avail);
		if (len > 1 && i + len > max)
			break; /* never half a character */
		if (len > 1) {
			for (size_t k = 0; k < len; k++)
				*o++ = (char)u[i + k];
			i += len;
			continue;
		}
		if (!len) /* not UTF-8: shown as its byte */
			o += gt_hex_escape(u[i], o);
		else if (!(len = gt_ctl_escape(u[i], o)))
			*o++ = (char)u[i];
		else
			o += len;
		i++;
	}
	*o = 0;
	return out;
}

#endif
