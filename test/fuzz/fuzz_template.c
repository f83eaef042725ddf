/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for config__expand_output (inject/config.c).
 * Input: [outlen byte][pid 4 bytes][exe length byte][exe][template...].
 * The output buffer is exactly outlen bytes of its own allocation, so a
 * write past it is caught. On success the result is a NUL-terminated,
 * non-empty string that fits, and it has exactly the template's own '/'
 * (a '/' in the program name must not make a directory).
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inject/config.h"
#include "test/fuzz/balloon.h"

void gt_log(int level, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
}

#define CHECK(c)                                                                           \
	do {                                                                               \
		if (!(c)) {                                                                \
			fprintf(stderr, "fuzz_template: check failed: %s\n", #c);          \
			abort();                                                           \
		}                                                                          \
	} while (0)

static size_t slashes(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += *s == '/';
	return n;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	size_t outlen, exelen;
	int32_t pid;
	char *exe, *tmpl, *out;
	int err;

	fuzz_balloon_once();

	if (size < 6)
		return 0;
	/* mostly small buffers (edges), sometimes PATH_MAX */
	outlen = data[0] == 255 ? PATH_MAX : data[0];
	memcpy(&pid, data + 1, 4);
	exelen = data[5];
	data += 6;
	size -= 6;
	if (exelen > size)
		exelen = size;
	exe = strndup((const char *)data, exelen);
	tmpl = strndup((const char *)data + exelen, size - exelen);
	out = malloc(outlen ? outlen : 1);
	err = config__expand_output(tmpl, out, outlen, pid, exe, (uint64_t)pid * 1000000007ull);
	if (!err) {
		CHECK(outlen > 0);
		CHECK(memchr(out, 0, outlen));
		CHECK(out[0]);
		CHECK(slashes(out) == slashes(tmpl));
	} else {
		CHECK(err < 0);
	}
	free(out);
	free(tmpl);
	free(exe);
	return 0;
}
