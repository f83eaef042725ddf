// SPDX-License-Identifier: MIT
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "inject/utf8.h"
#include "json.h"

#define JR_CHUNK (256u << 10)

int jr_open(struct jr *r, const char *path)
{
	struct stat st;

	memset(r, 0, sizeof(*r));
	r->path = path;
	/* every command reads its input more than once (a peek, then the
	 * document; a trace in two passes): a pipe would be empty the second
	 * time, and read as an empty file; a folder is no file to read */
	if (stat(path, &st))
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (!S_ISREG(st.st_mode))
		return -ESPIPE;
	/* gzopen reads plain files as they are, so .json and .json.gz alike. */
	r->gz = gzopen(path, "rb");
	if (!r->gz)
		return -(errno ? errno : ENOMEM);
	gzbuffer(r->gz, JR_CHUNK);
	r->buf = malloc(JR_CHUNK);
	if (!r->buf) {
		gzclose(r->gz);
		return -ENOMEM;
	}
	return 0;
}

const char *jr_strerror(int err)
{
	if (err == -ESPIPE)
		return "not a regular file (a pipe?): it is read more than once; save it to a "
		       "file first";
	return strerror(-err);
}

void jr_close(struct jr *r)
{
	if (r->gz)
		gzclose(r->gz);
	free(r->buf);
	r->gz = NULL;
	r->buf = NULL;
}

uint64_t jr_offset(const struct jr *r)
{
	return r->base + r->pos;
}

int jr_fail(struct jr *r, const char *what)
{
	if (!r->err[0])
		snprintf(r->err, sizeof(r->err), "%s at byte %" PRIu64, what, jr_offset(r));
	return -1;
}

/* Refill when empty; false at end of input or on a read error. */
static bool jr_fill(struct jr *r)
{
	int n;

	if (r->pos < r->len)
		return true;
	if (r->eof)
		return false;
	r->base += r->len;
	r->pos = r->len = 0;
	n = gzread(r->gz, r->buf, JR_CHUNK);
	if (n < 0) {
		int errnum;
		const char *msg = gzerror(r->gz, &errnum);

		r->eof = true;
		jr_fail(r, errnum == Z_ERRNO ? strerror(errno) : msg);
		return false;
	}
	if (n == 0) {
		int errnum;

		r->eof = true;
		/* a .gz cut short ends early without a read error: zlib says so
		 * here (Z_BUF_ERROR), where the byte count alone read as an empty file */
		gzerror(r->gz, &errnum);
		if (errnum == Z_BUF_ERROR)
			jr_fail(r, "unexpected end of input (the gzip stream is cut short)");
		return false;
	}
	r->len = (size_t)n;
	return true;
}

int jr_peek(struct jr *r)
{
	for (;;) {
		if (!jr_fill(r))
			return -1;
		unsigned char c = r->buf[r->pos];
		if (c != ' ' && c != '\n' && c != '\r' && c != '\t')
			return c;
		r->pos++;
	}
}

void jr_take(struct jr *r)
{
	if (jr_fill(r))
		r->pos++;
}

static bool is_delim(unsigned char c)
{
	return c == ',' || c == ']' || c == '}' || c == ' ' || c == '\n' || c == '\r' ||
	       c == '\t' || c == ':';
}

int jr_value(struct jr *r, struct buf *out)
{
	int c = jr_peek(r);
	unsigned depth = 0;
	bool in_str = false, esc = false, scalar;
	uint64_t start = jr_offset(r);

	if (c < 0)
		return jr_fail(r, "unexpected end of input");
	if (c == ',' || c == ']' || c == '}' || c == ':')
		return jr_fail(r, "value expected");
	scalar = c != '{' && c != '[' && c != '"';

	for (;;) {
		size_t i = r->pos;
		bool done = false;

		for (; i < r->len; i++) {
			unsigned char ch = r->buf[i];

			if (in_str) {
				if (esc)
					esc = false;
				else if (ch == '\\')
					esc = true;
				else if (ch == '"') {
					in_str = false;
					if (depth == 0) {
						i++;
						done = true;
						break;
					}
				}
				continue;
			}
			if (scalar) {
				if (is_delim(ch)) {
					done = true;
					break;
				}
				continue;
			}
			if (ch == '"')
				in_str = true;
			else if (ch == '{' || ch == '[')
				depth++;
			else if ((ch == '}' || ch == ']') && --depth == 0) {
				i++;
				done = true;
				break;
			}
		}
		if (out)
			buf__add(out, r->buf + r->pos, i - r->pos);
		r->pos = i;
		if (done)
			return 0;
		if (jr_offset(r) - start > JR_MAX_VALUE)
			return jr_fail(r, "value too large");
		if (!jr_fill(r)) {
			if (scalar && !r->err[0])
				return 0; /* a number at the very end of the input */
			return jr_fail(r, "unexpected end of input (truncated file?)");
		}
	}
}

/* ---- in memory ---- */

static const char *ws(const char *p, const char *e)
{
	while (p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
		p++;
	return p;
}

const char *jv_end(const char *p, const char *e)
{
	unsigned depth = 0;
	bool in_str = false, esc = false;

	p = ws(p, e);
	if (p >= e)
		return NULL;
	if (*p != '{' && *p != '[' && *p != '"') {
		while (p < e && !is_delim((unsigned char)*p))
			p++;
		return p;
	}
	for (; p < e; p++) {
		char ch = *p;

		if (in_str) {
			if (esc)
				esc = false;
			else if (ch == '\\')
				esc = true;
			else if (ch == '"') {
				in_str = false;
				if (depth == 0)
					return p + 1;
			}
		} else if (ch == '"') {
			in_str = true;
		} else if (ch == '{' || ch == '[') {
			depth++;
		} else if ((ch == '}' || ch == ']') && --depth == 0) {
			return p + 1;
		}
	}
	return NULL;
}

bool jv_iter_init(struct jv_iter *it, const char *v, const char *e)
{
	v = ws(v, e);
	if (v >= e || *v != '{')
		return false;
	it->p = v + 1;
	it->e = e;
	return true;
}

bool jv_iter_next(struct jv_iter *it, struct jv_member *m)
{
	const char *p = ws(it->p, it->e), *k, *ke;

	if (p < it->e && *p == ',')
		p = ws(p + 1, it->e);
	if (p >= it->e || *p != '"')
		return false;
	k = p;
	ke = jv_end(p, it->e);
	if (!ke)
		return false;
	p = ws(ke, it->e);
	if (p >= it->e || *p != ':')
		return false;
	p = ws(p + 1, it->e);
	m->key = k + 1;
	m->klen = (size_t)(ke - k - 2);
	m->v = p;
	m->e = jv_end(p, it->e);
	if (!m->e)
		return false;
	it->p = m->e;
	return true;
}

bool jv_key_is(const struct jv_member *m, const char *key)
{
	return strlen(key) == m->klen && !memcmp(m->key, key, m->klen);
}

bool jv_get(const char *v, const char *e, const char *key, const char **mv, const char **me)
{
	struct jv_iter it;
	struct jv_member m;

	if (!jv_iter_init(&it, v, e))
		return false;
	while (jv_iter_next(&it, &m)) {
		if (jv_key_is(&m, key)) {
			*mv = m.v;
			*me = m.e;
			return true;
		}
	}
	return false;
}

bool jv_array_next(const char **pp, const char *e, const char **ev, const char **ee)
{
	const char *p = ws(*pp, e);

	if (p < e && (*p == '[' || *p == ','))
		p = ws(p + 1, e);
	if (p >= e || *p == ']')
		return false;
	*ev = p;
	*ee = jv_end(p, e);
	if (!*ee)
		return false;
	*pp = *ee;
	return true;
}

bool jv_is_null(const char *v, const char *e)
{
	return e - v == 4 && !memcmp(v, "null", 4);
}

bool jv_is_string(const char *v, const char *e)
{
	return e - v >= 2 && *v == '"';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static void put_utf8(struct buf *out, unsigned cp)
{
	if (cp < 0x80) {
		buf__addc(out, (char)cp);
	} else if (cp < 0x800) {
		buf__addc(out, (char)(0xc0 | (cp >> 6)));
		buf__addc(out, (char)(0x80 | (cp & 0x3f)));
	} else if (cp < 0x10000) {
		buf__addc(out, (char)(0xe0 | (cp >> 12)));
		buf__addc(out, (char)(0x80 | ((cp >> 6) & 0x3f)));
		buf__addc(out, (char)(0x80 | (cp & 0x3f)));
	} else {
		buf__addc(out, (char)(0xf0 | (cp >> 18)));
		buf__addc(out, (char)(0x80 | ((cp >> 12) & 0x3f)));
		buf__addc(out, (char)(0x80 | ((cp >> 6) & 0x3f)));
		buf__addc(out, (char)(0x80 | (cp & 0x3f)));
	}
}

static bool hex4(const char *p, const char *e, unsigned *cp)
{
	*cp = 0;
	if (e - p < 4)
		return false;
	for (int i = 0; i < 4; i++) {
		int h = hexval(p[i]);

		if (h < 0)
			return false;
		*cp = *cp << 4 | (unsigned)h;
	}
	return true;
}

bool jv_str(const char *v, const char *e, struct buf *out)
{
	buf__reset(out);
	buf__reserve(out, 0);
	if (!jv_is_string(v, e))
		return false;
	for (const char *p = v + 1; p < e - 1; p++) {
		const char *run = p;

		while (p < e - 1 && *p != '\\')
			p++;
		if (p > run)
			buf__add(out, run, (size_t)(p - run));
		if (p >= e - 1)
			break;
		p++; /* the escaped character */
		switch (*p) {
		case 'n': buf__addc(out, '\n'); break;
		case 't': buf__addc(out, '\t'); break;
		case 'r': buf__addc(out, '\r'); break;
		case 'b': buf__addc(out, '\b'); break;
		case 'f': buf__addc(out, '\f'); break;
		case 'u': {
			unsigned cp, lo;

			if (!hex4(p + 1, e, &cp))
				return false;
			p += 4;
			if (cp >= 0xd800 && cp < 0xdc00 && p + 2 < e && p[1] == '\\' && p[2] == 'u' &&
			    hex4(p + 3, e, &lo) && lo >= 0xdc00 && lo < 0xe000) {
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				p += 6;
			}
			put_utf8(out, cp);
			break;
		}
		default: buf__addc(out, *p); break; /* \" \\ \/ */
		}
	}
	return true;
}

/* Strip quotes of a quoted number ("123" is seen in some traces). */
static void unquote(const char **v, const char **e)
{
	if (*e - *v >= 2 && **v == '"') {
		(*v)++;
		(*e)--;
	}
}

bool jv_u64(const char *v, const char *e, uint64_t *out)
{
	uint64_t x = 0;

	unquote(&v, &e);
	if (v >= e)
		return false;
	for (const char *p = v; p < e; p++) {
		if (*p < '0' || *p > '9')
			return false;
		if (x > (UINT64_MAX - 9) / 10)
			return false;
		x = x * 10 + (uint64_t)(*p - '0');
	}
	*out = x;
	return true;
}

bool jv_i64(const char *v, const char *e, int64_t *out)
{
	uint64_t x;
	bool neg;

	unquote(&v, &e);
	neg = v < e && *v == '-';
	if (!jv_u64(v + neg, e, &x) || x > (uint64_t)INT64_MAX)
		return false;
	*out = neg ? -(int64_t)x : (int64_t)x;
	return true;
}

bool jv_f64(const char *v, const char *e, double *out)
{
	char num[64], *end;
	size_t n = (size_t)(e - v);

	if (n == 0 || n >= sizeof(num) || !(*v == '-' || (*v >= '0' && *v <= '9')))
		return false;
	memcpy(num, v, n);
	num[n] = 0;
	*out = strtod(num, &end);
	return *end == 0;
}

bool jv_us_to_ns(const char *v, const char *e, int64_t *ns)
{
	const char *p;
	bool neg;
	int64_t ip = 0, frac = 0;
	int fdigits = 0;
	bool round_up = false;

	unquote(&v, &e);
	neg = v < e && *v == '-';
	p = v + neg;
	if (p >= e || *p < '0' || *p > '9')
		return false;
	for (; p < e && *p >= '0' && *p <= '9'; p++) {
		if (ip > INT64_MAX / 10000)
			return false;
		ip = ip * 10 + (*p - '0');
	}
	if (p < e && *p == '.') {
		for (p++; p < e && *p >= '0' && *p <= '9'; p++) {
			if (fdigits < 3) {
				frac = frac * 10 + (*p - '0');
				fdigits++;
			} else if (fdigits == 3) {
				round_up = *p >= '5';
				fdigits++;
			}
		}
	}
	if (p < e && (*p == 'e' || *p == 'E')) {
		/* Rare in traces: exactness matters less than accepting it. */
		char tmp[64];
		size_t n = (size_t)(e - v);

		if (n >= sizeof(tmp))
			return false;
		memcpy(tmp, v, n);
		tmp[n] = 0;
		double d = strtod(tmp, NULL) * 1000.0;
		*ns = (int64_t)(d < 0 ? d - 0.5 : d + 0.5);
		return true;
	}
	if (p != e)
		return false;
	while (fdigits < 3) {
		frac *= 10;
		fdigits++;
	}
	int64_t x = ip * 1000 + frac + round_up;
	*ns = neg ? -x : x;
	return true;
}

void json_escape(struct buf *out, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";

	buf__reserve(out, n + 2);
	buf__addc(out, '"');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		size_t l = c < 0x80 ? 1 : gt_utf8_len((const unsigned char *)s + i, n - i);

		if (c == '"' || c == '\\') {
			buf__addc(out, '\\');
			buf__addc(out, (char)c);
		} else if (c < 0x20 || !l) {
			/* a byte that is not UTF-8 (a file name's, a program's)
			 * as the writer writes it, U+00XX: JSON is UTF-8, and
			 * readers refuse the whole file over one such byte */
			char u[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };

			buf__add(out, u, sizeof(u));
		} else {
			buf__add(out, s + i, l);
			i += l - 1;
		}
	}
	buf__addc(out, '"');
}

void json_ns_as_us(struct buf *out, int64_t ns)
{
	uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;

	buf__printf(out, "%s%" PRIu64 ".%03" PRIu64, ns < 0 ? "-" : "", a / 1000, a % 1000);
}
