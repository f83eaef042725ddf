// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "inject/utf8.h"
#include "writer/summary.h"
#include "junit.h"

void xml__text(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	const unsigned char *end = p + strlen((const char *)p);

	for (; *p; p++) {
		switch (*p) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		case '\n': fputs("&#10;", f); break;
		case '\t': fputs("&#9;", f); break;
		case '\r': fputs("&#13;", f); break;
		default: {
			/* the file says UTF-8: a byte that is no part of a character (a check
			 * or a path in Latin-1) made it unreadable to every test reporter */
			size_t l = *p < 0x80 ? 1 : gt_utf8_len(p, (size_t)(end - p));

			if (*p < 0x20)
				fputc('?', f);
			else if (!l)
				fputs("\xef\xbf\xbd", f); /* U+FFFD */
			else
				fwrite(p, 1, l, f), p += l - 1;
			break;
		}
		}
	}
}

int junit__write(const char *path, const char *suite, const char *classname,
		 const char *input, const struct test_case *cases, size_t n)
{
	size_t failures = 0, errors = 0;
	char stamp[32], host[256] = "localhost";
	time_t now = time(NULL);
	struct tm tm;
	FILE *f = summary__fopen_out(path);

	if (!f)
		return -errno;
	for (size_t i = 0; i < n; i++) {
		failures += cases[i].status == CASE_FAIL;
		errors += cases[i].status == CASE_ERROR;
	}
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	if (gethostname(host, sizeof(host) - 1))
		strcpy(host, "localhost");
	host[sizeof(host) - 1] = 0;
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"");
	xml__text(f, suite);
	fprintf(f, "\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" time=\"0\">\n", n, failures,
		errors);
	fputs("  <testsuite name=\"", f);
	xml__text(f, suite);
	fprintf(f, "\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"0\" time=\"0\" "
		   "timestamp=\"%s\" hostname=\"",
		n, failures, errors, stamp);
	xml__text(f, host);
	fputs("\">\n    <properties>\n      <property name=\"input\" value=\"", f);
	xml__text(f, input);
	fputs("\"/>\n    </properties>\n", f);
	for (size_t i = 0; i < n; i++) {
		const struct test_case *c = &cases[i];

		fputs("    <testcase classname=\"", f);
		xml__text(f, classname);
		fputs("\" name=\"", f);
		xml__text(f, c->name);
		fputs("\" time=\"0\">", f);
		if (c->status == CASE_PASS) {
			fputs("\n      <system-out>", f);
			xml__text(f, c->detail ? c->detail : c->message);
			fputs("</system-out>\n    </testcase>\n", f);
			continue;
		}
		fprintf(f, "\n      <%s message=\"", c->status == CASE_FAIL ? "failure" : "error");
		xml__text(f, c->message);
		fprintf(f, "\" type=\"%s\">", c->status == CASE_FAIL ? "FAIL" : "ERROR");
		xml__text(f, c->detail ? c->detail : c->message);
		fprintf(f, "</%s>\n    </testcase>\n", c->status == CASE_FAIL ? "failure" : "error");
	}
	fputs("  </testsuite>\n</testsuites>\n", f);
	return out__close(f);
}
