/* SPDX-License-Identifier: MIT */
/* The trace file's birth: it has no name, hidden or not, until it holds a
 * valid skeleton; then it takes the wanted name, or the next free one. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "writer/output.h"
#include "unit.h"

static char dir[64];

static void make_dir(void)
{
	snprintf(dir, sizeof(dir), "/tmp/gt-output-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

/* entries of dir, "." and ".." aside, hidden ones included */
static int entries(char names[][256], int max)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (n < max)
			snprintf(names[n], 256, "%s", e->d_name);
		n++;
	}
	closedir(d);
	return n;
}

static void remove_dir(void)
{
	char names[8][256], path[512];
	int n = entries(names, 8);

	for (int i = 0; i < n && i < 8; i++) {
		snprintf(path, sizeof(path), "%s/%.255s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
}

static void slurp(const char *name, char *buf, size_t len)
{
	char path[128];
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	n = read(fd, buf, len - 1);
	ck_assert_int_ge(n, 0);
	buf[n] = '\0';
	close(fd);
}

static void open_in_dir(struct out *o, const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	ck_assert_int_eq(out__open(o, path), 0);
}

START_TEST(test_unnamed_until_published)
{
	char names[4][256], text[64];
	struct out o;

	make_dir();
	open_in_dir(&o, "trace.json");
	ck_assert_int_eq(out__append(&o, "{\"traceEvents\":[", 16), 0);
	/* a kill now would leave nothing behind: no file, not even a hidden one */
	ck_assert_int_eq(entries(names, 4), 0);
	ck_assert_int_eq(out__checkpoint(&o, "]}", 2), 0);
	ck_assert_int_eq(out__publish(&o), 0);
	ck_assert_int_eq(entries(names, 4), 1);
	ck_assert_str_eq(names[0], "trace.json");
	out__close(&o);
	slurp("trace.json", text, sizeof(text));
	ck_assert_str_eq(text, "{\"traceEvents\":[]}");
	remove_dir();
}
END_TEST

START_TEST(test_closed_before_publishing_leaves_nothing)
{
	char names[4][256];
	struct out o;

	make_dir();
	open_in_dir(&o, "trace.json");
	ck_assert_int_eq(out__append(&o, "{\"traceEvents\":[", 16), 0);
	out__close(&o);
	ck_assert_int_eq(entries(names, 4), 0);
	remove_dir();
}
END_TEST

START_TEST(test_never_replaces_an_earlier_trace)
{
	char names[4][256], text[64];
	struct out a, b;

	make_dir();
	open_in_dir(&a, "trace.json");
	open_in_dir(&b, "trace.json");
	ck_assert_int_eq(out__checkpoint(&a, "{\"a\":1}", 7), 0);
	ck_assert_int_eq(out__publish(&a), 0);
	ck_assert_int_eq(out__checkpoint(&b, "{\"b\":2}", 7), 0);
	ck_assert_int_eq(out__publish(&b), 0);
	out__close(&a);
	out__close(&b);
	ck_assert_int_eq(entries(names, 4), 2);
	slurp("trace.json", text, sizeof(text));
	ck_assert_str_eq(text, "{\"a\":1}");
	slurp("trace.1.json", text, sizeof(text));
	ck_assert_str_eq(text, "{\"b\":2}");
	remove_dir();
}
END_TEST

static Suite *output_suite(void)
{
	Suite *s = suite_create("output");
	TCase *tc = tcase_create("birth");

	tcase_add_test(tc, test_unnamed_until_published);
	tcase_add_test(tc, test_closed_before_publishing_leaves_nothing);
	tcase_add_test(tc, test_never_replaces_an_earlier_trace);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(output_suite)
