/* SPDX-License-Identifier: MIT */
/* The trace file's birth: it has no name, hidden or not, until it holds a
 * valid skeleton; then it takes the wanted name, or the next free one. Its
 * paged layout: valid JSON after every call and every system call it makes,
 * a full file system included. */
#define _GNU_SOURCE /* O_TMPFILE, for the open() stand-in */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <json-c/json.h>
#include <zlib.h>

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
	/* a kill now would leave nothing behind: no file, not even a hidden one */
	ck_assert_int_eq(entries(names, 4), 0);
	ck_assert_int_eq(out__begin(&o, "{\"traceEvents\":[", 16, "]}", 2), 0);
	ck_assert_int_eq(entries(names, 4), 1);
	ck_assert_int_eq(out__finish(&o, "", 0, "]}", 2), 0);
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
	ck_assert_int_eq(out__begin(&a, "", 0, "{\"a\":1}", 7), 0);
	ck_assert_int_eq(out__finish(&a, "", 0, "{\"a\":1}", 7), 0);
	ck_assert_int_eq(out__begin(&b, "", 0, "{\"b\":2}", 7), 0);
	ck_assert_int_eq(out__finish(&b, "", 0, "{\"b\":2}", 7), 0);
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

/* The whole file inflated as ONE gzip member (windowBits 31, no multi-member
 * continuation): its text, and whether the member ended exactly at the
 * file's end. */
static bool inflate_one_member(const char *name, char *text, size_t len)
{
	static unsigned char raw[1 << 20];
	char path[128];
	z_stream z = { 0 };
	ssize_t n;
	int fd, ret;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	n = read(fd, raw, sizeof(raw));
	close(fd);
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(inflateInit2(&z, 31), Z_OK);
	z.next_in = raw;
	z.avail_in = (uInt)n;
	z.next_out = (Bytef *)text;
	z.avail_out = (uInt)len - 1;
	ret = inflate(&z, Z_FINISH);
	text[len - 1 - z.avail_out] = 0;
	inflateEnd(&z);
	return ret == Z_STREAM_END && z.avail_in == 0;
}

/* In a child of its own with files limited to lim (SIGXFSZ ignored: a write past
 * it fails), the test dir made: true there; false in the parent, once the child
 * exited 0 (Check's messages go through a file the limit would cut too: the child
 * says what failed on stderr and exits 1). */
static bool in_limited_child(const struct rlimit *lim)
{
	int status;

	make_dir();
	pid_t child = fork();

	ck_assert_int_ge(child, 0);
	if (!child) {
		signal(SIGXFSZ, SIG_IGN);
		ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, lim), 0);
		return true;
	}
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status), "the limited child failed");
	remove_dir();
	return false;
}

/* The .gz file name in the test dir is one member: want's have bytes, then trailer. */
static void check_gz(const char *name, const char *want, size_t have, const char *trailer)
{
	static char text[1 << 20];

	ck_assert(inflate_one_member(name, text, sizeof(text)));
	ck_assert_int_eq(strncmp(text, want, have), 0);
	ck_assert_str_eq(text + have, trailer);
}

/* _i: 0 ISA-L (where libisal.so.2 is), 1 zlib */
START_TEST(test_gzip_is_one_member_at_every_checkpoint)
{
	static char text[1 << 16], want[1 << 16], ev[256];
	struct out o;
	size_t have = 0;

	make_dir();
	open_in_dir(&o, "t.json.gz");
	o.gz_member.zlib_only = _i == 1;
	ck_assert_int_eq(out__begin(&o, "{\"traceEvents\":[", 16, "]}", 2), 0);
	ck_assert(inflate_one_member("t.json.gz", text, sizeof(text)));
	ck_assert_str_eq(text, "{\"traceEvents\":[]}");
	have = (size_t)snprintf(want, sizeof(want), "{\"traceEvents\":[");
	for (int i = 0; i < 200; i++) {
		/* trailers of changing length: a shorter end must not leave bytes behind */
		const char *trailer = i % 3 ? "],\"n\":1}" : "],\"n\":1000000}";
		int n = snprintf(ev, sizeof(ev), "%s{\"ph\":\"X\",\"ts\":%d.%03d,\"dur\":1}",
				 i ? "," : "", i, i % 1000);

		ck_assert_int_eq(out__commit(&o, ev, (size_t)n, trailer, strlen(trailer)), 0);
		have += (size_t)snprintf(want + have, sizeof(want) - have, "%s", ev);
		check_gz("t.json.gz", want, have, trailer);
	}
	ck_assert_int_eq(out__finish(&o, "", 0, "]}", 2), 0);
	out__close(&o);
	check_gz("t.json.gz", want, have, "]}");
	remove_dir();
}
END_TEST

/* Bytes malloc holds from the system in its heaps (every arena), in use or free. */
static size_t heap_bytes(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.arena;
}

/* A flight recorder writes a .gz file a dump: its compressor's two blocks of ~360 KiB
 * (ISA-L's stream and the checkpoint's copy) were malloc's. glibc mapped them for the
 * first file, and freeing those mappings raised its mmap threshold: from the second
 * file on they came from the drain thread's heap, which kept them under what it
 * allocated meanwhile (the process grew by 650 to 980 KiB over two gzip dumps). They
 * are mappings of their own: the heap does not grow while a file is written, first
 * or later. _i: 0 ISA-L (where libisal.so.2 is), 1 zlib */
START_TEST(test_gzip_files_one_after_another_take_no_heap)
{
	size_t before = 0, most = 0;
	bool isal = false;
	char name[32];
	struct out o;

	make_dir();
	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "t%d.json.gz", i);
		open_in_dir(&o, name);
		o.gz_member.zlib_only = _i == 1;
		ck_assert_int_eq(out__begin(&o, "{\"traceEvents\":[", 16, "]}", 2), 0);
		ck_assert_int_eq(out__commit(&o, "{\"ph\":\"i\",\"ts\":1}", 17, "]}", 2), 0);
		isal = o.gz_member.isal != NULL;
		if (i)
			most = heap_bytes() > most ? heap_bytes() : most;
		ck_assert_int_eq(out__finish(&o, "", 0, "]}", 2), 0);
		out__close(&o);
		check_gz(name, "{\"traceEvents\":[{\"ph\":\"i\",\"ts\":1}", 33, "]}");
		if (!i)
			before = heap_bytes();
	}
	/* the file's compressed bytes (a buffer of 128 KiB) are the heap's, as zlib's blocks
	 * are (each under glibc's threshold): reused file to file */
	if (isal)
		ck_assert_uint_lt(most, before + (256 << 10));
	remove_dir();
}
END_TEST

/*
 * The paged file as a reader finds it: want (the head and every event
 * committed, byte for byte), then whitespace, the trailer, whitespace to
 * its end (no NUL: a hole is no JSON whitespace). What a kill leaves.
 */
static void check_paged(const char *name, const char *want, size_t have, const char *trailer)
{
	static char text[8 << 20];
	size_t n, i, tn = strlen(trailer);
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	n = fread(text, 1, sizeof(text), f);
	fclose(f);
	ck_assert_uint_lt(n, sizeof(text));
	ck_assert_uint_ge(n, have + tn);
	ck_assert_int_eq(memcmp(text, want, have), 0);
	for (i = have; i < n && strchr(" \n", text[i]) && text[i]; i++)
		;
	ck_assert_uint_le(i + tn, n);
	ck_assert_int_eq(memcmp(text + i, trailer, tn), 0);
	/* one assertion (each writes Check a message) */
	for (i += tn; i < n && (text[i] == ' ' || text[i] == '\n'); i++)
		;
	ck_assert_msg(i == n, "byte %d at %zu after the trailer", i < n ? text[i] : 0, i);
}

/*
 * The writer's descriptor swapped for one opened write-only on the same file:
 * a shared mapping through it fails (EACCES), as on a file system without
 * them, and the footer moves by pwrites. (Not an mmap() of the test's own:
 * sanitizer runtimes call mmap() before they are ready for instrumented code.)
 */
static void make_unmappable(struct out *o, const char *name)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(dup2(fd, o->fd), o->fd);
	close(fd);
	ck_assert_ptr_eq(mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, o->fd, 0), MAP_FAILED);
	out__unmap(o); /* the one out__begin made */
}

/* _i 1: the file cannot be mapped */
START_TEST(test_paged_is_valid_after_every_call)
{
	static char want[4 << 20], ev[8192];
	struct out o;
	size_t have;
	struct stat st;
	char path[128];

	make_dir();
	open_in_dir(&o, "t.json");
	ck_assert_int_eq(out__begin(&o, "{\"traceEvents\":[", 16, "]}", 2), 0);
	if (_i)
		make_unmappable(&o, "t.json");
	have = (size_t)snprintf(want, sizeof(want), "{\"traceEvents\":[");
	check_paged("t.json", want, have, "]}");
	for (int i = 0; i < 300; i++) {
		/* events of 1 to 7 KiB: footer moves at every size of step */
		const char *trailer = i % 3 ? "],\"n\":1}" : "],\"n\":1000000}";
		size_t n = (size_t)snprintf(ev, sizeof(ev), "%s{\"ph\":\"X\",\"ts\":%d,\"pad\":\"",
					    i ? "," : "", i);
		size_t len = 1000 + (size_t)(i * 997) % 6000;

		memset(ev + n, 'a' + i % 26, len);
		n += len;
		n += (size_t)snprintf(ev + n, sizeof(ev) - n, "\"}");
		ck_assert_int_eq(out__commit(&o, ev, n, trailer, strlen(trailer)), 0);
		memcpy(want + have, ev, n);
		have += n;
		check_paged("t.json", want, have, trailer);
	}
	ck_assert_int_eq(out__finish(&o, "", 0, "]}", 2), 0);
	snprintf(path, sizeof(path), "%s/t.json", dir);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, (off_t)(have + 2)); /* compact: no whitespace left */
	check_paged("t.json", want, have, "]}");
	out__close(&o);
	remove_dir();
}
END_TEST

/*
 * What a kill can leave is the file between two system calls. This static
 * link binds output.c's pwritev and ftruncate to the two below, which read
 * the watched file back after each call: one JSON value (json-c, strict),
 * then whitespace only.
 */
static int watched_fd = -1;
static int calls_seen, first_invalid_call = -1;

static bool one_json_value(const char *p, size_t n)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *v;
	size_t end;
	bool ok;

	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	v = json_tokener_parse_ex(tok, p, (int)n);
	ok = v && json_tokener_get_error(tok) == json_tokener_success;
	for (end = json_tokener_get_parse_end(tok); ok && end < n; end++)
		ok = p[end] == ' ' || p[end] == '\n';
	json_object_put(v);
	json_tokener_free(tok);
	return ok;
}

static void after_call(int fd)
{
	static char text[4 << 20];
	struct stat st;

	if (fd != watched_fd || fstat(fd, &st) || (size_t)st.st_size > sizeof(text))
		return;
	if ((size_t)pread(fd, text, (size_t)st.st_size, 0) != (size_t)st.st_size ||
	    !one_json_value(text, (size_t)st.st_size)) {
		if (first_invalid_call < 0)
			first_invalid_call = calls_seen;
	}
	calls_seen++;
}

/* Set by a test: the write of a footer to a new place (a move) writes half,
 * then the disk fails (EIO). */
static const struct out *failing_moves_of;
static int disk_failed_fd = -1;

ssize_t pwritev(int fd, const struct iovec *iov, int n, off_t at)
{
	static ssize_t (*real)(int, const struct iovec *, int, off_t);
	ssize_t w;

	if (!real)
		real = (ssize_t(*)(int, const struct iovec *, int, off_t))dlsym(RTLD_NEXT, "pwritev");
	if (fd == disk_failed_fd) {
		disk_failed_fd = -1;
		errno = EIO;
		return -1;
	}
	if (failing_moves_of && fd == failing_moves_of->fd && n == 1 &&
	    (uint64_t)at > failing_moves_of->footer_pos && iov[0].iov_len > 1 &&
	    *(const char *)iov[0].iov_base == ']') {
		failing_moves_of = NULL;
		disk_failed_fd = fd;
		return real(fd, &(struct iovec){ iov[0].iov_base, iov[0].iov_len / 2 }, 1, at);
	}
	w = real(fd, iov, n, at);
	after_call(fd);
	return w;
}

int ftruncate(int fd, off_t len)
{
	static int (*real)(int, off_t);
	int ret;

	if (!real)
		real = (int (*)(int, off_t))dlsym(RTLD_NEXT, "ftruncate");
	ret = real(fd, len);
	after_call(fd);
	return ret;
}

/* Footer moves at 64, 192 and 448 KiB, then the last cycle's compaction:
 * no call leaves two footers, or none, behind. */
START_TEST(test_paged_is_valid_after_every_system_call)
{
	static char ev[4096];
	struct out o;
	int i;

	make_dir();
	open_in_dir(&o, "t.json");
	ck_assert_int_eq(out__begin(&o, "{\"traceEvents\":[", 16, "]}", 2), 0);
	/* named from here on: before, a kill leaves no file */
	watched_fd = o.fd;
	for (i = 0; i < 200; i++) {
		const char *trailer = i % 3 ? "],\"n\":1}" : "],\"n\":1000000}";
		size_t n = (size_t)snprintf(ev, sizeof(ev), "%s{\"ts\":%d,\"pad\":\"", i ? "," : "", i);
		size_t len = 1000 + (size_t)(i * 997) % 2000;

		memset(ev + n, 'a' + i % 26, len);
		n += len;
		n += (size_t)snprintf(ev + n, sizeof(ev) - n, "\"}");
		ck_assert_int_eq(out__commit(&o, ev, n, trailer, strlen(trailer)), 0);
	}
	ck_assert_int_eq(out__finish(&o, "", 0, "],\"n\":2}", 8), 0);
	watched_fd = -1;
	out__close(&o);
	remove_dir();
	ck_assert_int_gt(calls_seen, 400);
	ck_assert_msg(first_invalid_call < 0, "system call %d of %d left no valid JSON",
		      first_invalid_call, calls_seen);
}
END_TEST

/* Event i of a list, 3000 bytes of padding in it: its length. */
static size_t event_of_3k(char *ev, size_t cap, int i)
{
	size_t n = (size_t)snprintf(ev, cap, "%s{\"ts\":%d,\"pad\":\"", i ? "," : "", i);

	memset(ev + n, 'x', 3000);
	n += 3000;
	return n + (size_t)snprintf(ev + n, cap - n, "\"}");
}

/*
 * A full file system (RLIMIT_FSIZE: writes past it fail with EFBIG once
 * SIGXFSZ is ignored): the commit that does not fit fails, and the file
 * stays the last checkpoint.
 */
START_TEST(test_paged_full_disk_keeps_last_checkpoint)
{
	static char want[1 << 20], ev[4096];
	struct rlimit lim = { .rlim_cur = 256 << 10, .rlim_max = RLIM_INFINITY };
	const char *trailer = "],\"n\":1}";
	struct out o;
	size_t have;
	int err = 0, i;

	if (!in_limited_child(&lim))
		return;
	open_in_dir(&o, "t.json");
	ck_assert_int_eq(out__begin(&o, "{\"traceEvents\":[", 16, "]}", 2), 0);
	have = (size_t)snprintf(want, sizeof(want), "{\"traceEvents\":[");
	for (i = 0; i < 200 && !err; i++) {
		size_t n = event_of_3k(ev, sizeof(ev), i);

		err = out__commit(&o, ev, n, trailer, strlen(trailer));
		if (!err) {
			memcpy(want + have, ev, n);
			have += n;
		}
		check_paged("t.json", want, have, i || !err ? trailer : "]}");
	}
	out__close(&o);
	/* most of the 256 KiB held events */
	_exit(err == -EFBIG && i > 40 ? 0 : (fprintf(stderr, "err %d after %d\n", err, i), 1));
}
END_TEST

/*
 * A trace whose writing failed says why in its footer's "end", in place, the
 * events as they were: never past a size limit (the file as before), and never
 * in a finished trace (it keeps its own end).
 */
START_TEST(test_paged_stopped_says_why_in_its_footer)
{
	static char want[1 << 20], ev[4096];
	const char *open_trailer = "],\"gputrace\":{\"complete\":false,\"end\":null,\"n\":2}}";
	const char *why = "write failed: No space left on device";
	const char *said = "],\"gputrace\":{\"complete\":false,\"end\":\"write failed: No space "
			   "left on device\",\"n\":2}}";
	const char *closed = "],\"gputrace\":{\"complete\":true,\"end\":\"exit\",\"n\":3}}";
	struct rlimit lim, was;
	struct out o;
	struct stat st;
	size_t have;
	int i;

	make_dir();
	open_in_dir(&o, "t.json");
	ck_assert_int_eq(out__begin(&o, "{\"traceEvents\":[", 16, "]}", 2), 0);
	have = (size_t)snprintf(want, sizeof(want), "{\"traceEvents\":[");
	for (i = 0; i < 30; i++) {
		size_t n = event_of_3k(ev, sizeof(ev), i);

		ck_assert_int_eq(out__commit(&o, ev, n, open_trailer, strlen(open_trailer)), 0);
		memcpy(want + have, ev, n);
		have += n;
	}
	/* no byte past a size limit at the file's end: refused, the file as it was */
	ck_assert_int_eq(fstat(o.fd, &st), 0);
	ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &was), 0);
	lim = (struct rlimit){ .rlim_cur = (rlim_t)st.st_size, .rlim_max = was.rlim_max };
	if ((uint64_t)st.st_size < o.footer_pos + strlen(said) && !setrlimit(RLIMIT_FSIZE, &lim)) {
		ck_assert_int_eq(out__stopped(&o, why), -ENOSPC);
		ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &was), 0);
		check_paged("t.json", want, have, open_trailer);
	}
	ck_assert_int_eq(out__stopped(&o, why), 0);
	check_paged("t.json", want, have, said);
	/* said once: the footer on disk is now the one that says it */
	ck_assert_int_eq(out__stopped(&o, why), 0);
	check_paged("t.json", want, have, said);
	out__close(&o);
	remove_dir();

	make_dir();
	open_in_dir(&o, "t.json");
	ck_assert_int_eq(out__begin(&o, "{\"traceEvents\":[", 16, "]}", 2), 0);
	have = (size_t)snprintf(want, sizeof(want), "{\"traceEvents\":[");
	size_t n = event_of_3k(ev, sizeof(ev), 0);
	ck_assert_int_eq(out__finish(&o, ev, n, closed, strlen(closed)), 0);
	memcpy(want + have, ev, n);
	have += n;
	ck_assert_int_eq(out__stopped(&o, why), -EINVAL);
	check_paged("t.json", want, have, closed);
	out__close(&o);
	remove_dir();
}
END_TEST

/* An event of ~3000 characters that compress little (hex of a random walk):
 * a few of them fill a small file limit. */
static size_t event_of_noise(char *ev, size_t cap, int i, uint32_t *seed)
{
	size_t n = (size_t)snprintf(ev, cap, "%s{\"ts\":%d,\"pad\":\"", i ? "," : "", i);

	for (int k = 0; k < 3000; k++) {
		*seed = *seed * 1103515245u + 12345u;
		ev[n++] = "0123456789abcdef"[*seed >> 27 & 15];
	}
	return n + (size_t)snprintf(ev + n, cap - n, "\"}");
}

/*
 * A .gz file under a size limit (RLIMIT_FSIZE, SIGXFSZ ignored): the commit
 * whose write does not fit fails, and the file is the last checkpoint's
 * member, whole (the failed write cut it there until 2026-12-07: no reader
 * took it); then its end says why the trace stops, where that fits.
 * _i: 0 ISA-L (where libisal.so.2 is), 1 zlib.
 */
START_TEST(test_gzip_full_disk_keeps_last_checkpoint)
{
	static char text[1 << 20], want[1 << 20], ev[4096];
	const char *open_trailer = "],\"gputrace\":{\"complete\":false,\"end\":null,\"n\":2}}";
	const char *said = "],\"gputrace\":{\"complete\":false,\"end\":\"write failed: File too "
			   "large\",\"n\":2}}";
	struct rlimit lim = { .rlim_cur = 64 << 10, .rlim_max = RLIM_INFINITY };
	uint32_t seed = 1;
	struct out o;
	size_t have;
	int err = 0, i;

	if (!in_limited_child(&lim))
		return;
	open_in_dir(&o, "t.json.gz");
	o.gz_member.zlib_only = _i == 1;
	ck_assert_int_eq(out__begin(&o, "{\"traceEvents\":[", 16, open_trailer,
				    strlen(open_trailer)), 0);
	have = (size_t)snprintf(want, sizeof(want), "{\"traceEvents\":[");
	for (i = 0; i < 200 && !err; i++) {
		size_t n = event_of_noise(ev, sizeof(ev), i, &seed);

		err = out__commit(&o, ev, n, open_trailer, strlen(open_trailer));
		if (!err) {
			memcpy(want + have, ev, n);
			have += n;
		}
		if (!inflate_one_member("t.json.gz", text, sizeof(text)) ||
		    strncmp(text, want, have) || strcmp(text + have, open_trailer))
			_exit((fprintf(stderr, "commit %d (%d): not the last checkpoint\n", i, err), 1));
	}
	if (err != -EFBIG || i < 10)
		_exit((fprintf(stderr, "err %d after %d\n", err, i), 1));
	/* the reason in the end, or (no room for it) the end as it was */
	err = out__stopped(&o, "write failed: File too large");
	if (err && err != -ENOSPC)
		_exit((fprintf(stderr, "stopped: %d\n", err), 1));
	if (!inflate_one_member("t.json.gz", text, sizeof(text)) || strncmp(text, want, have) ||
	    strcmp(text + have, err ? open_trailer : said))
		_exit((fprintf(stderr, "stopped (%d): not the last checkpoint\n", err), 1));
	out__close(&o);
	_exit(0);
}
END_TEST

/* A .gz trace whose writing failed says why in its end, after the events as
 * they were; never past a size limit, never in a finished trace. */
START_TEST(test_gzip_stopped_says_why_in_its_end)
{
	static char want[1 << 20], ev[4096];
	const char *open_trailer = "],\"gputrace\":{\"complete\":false,\"end\":null,\"n\":2}}";
	const char *why = "write failed: No space left on device";
	const char *said = "],\"gputrace\":{\"complete\":false,\"end\":\"write failed: No space "
			   "left on device\",\"n\":2}}";
	const char *closed = "],\"gputrace\":{\"complete\":true,\"end\":\"exit\",\"n\":3}}";
	uint32_t seed = 7;
	struct rlimit lim, was;
	struct out o;
	struct stat st;
	size_t have;

	make_dir();
	open_in_dir(&o, "t.json.gz");
	o.gz_member.zlib_only = _i == 1;
	ck_assert_int_eq(out__begin(&o, "{\"traceEvents\":[", 16, open_trailer,
				    strlen(open_trailer)), 0);
	have = (size_t)snprintf(want, sizeof(want), "{\"traceEvents\":[");
	for (int i = 0; i < 30; i++) {
		size_t n = i % 2 ? event_of_noise(ev, sizeof(ev), i, &seed)
				 : event_of_3k(ev, sizeof(ev), i);

		ck_assert_int_eq(out__commit(&o, ev, n, open_trailer, strlen(open_trailer)), 0);
		memcpy(want + have, ev, n);
		have += n;
	}
	/* no byte past a size limit at the file's end: refused, the file as it was */
	ck_assert_int_eq(fstat(o.fd, &st), 0);
	ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &was), 0);
	lim = (struct rlimit){ .rlim_cur = (rlim_t)st.st_size, .rlim_max = was.rlim_max };
	signal(SIGXFSZ, SIG_IGN);
	if (!setrlimit(RLIMIT_FSIZE, &lim)) {
		ck_assert_int_eq(out__stopped(&o, why), -ENOSPC);
		ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &was), 0);
		check_gz("t.json.gz", want, have, open_trailer);
	}
	signal(SIGXFSZ, SIG_DFL);
	ck_assert_int_eq(out__stopped(&o, why), 0);
	check_gz("t.json.gz", want, have, said);
	/* said once: the end on disk is now the one that says it */
	ck_assert_int_eq(out__stopped(&o, why), 0);
	check_gz("t.json.gz", want, have, said);
	out__close(&o);
	remove_dir();

	make_dir();
	open_in_dir(&o, "t.json.gz");
	o.gz_member.zlib_only = _i == 1;
	ck_assert_int_eq(out__begin(&o, "{\"traceEvents\":[", 16, open_trailer,
				    strlen(open_trailer)), 0);
	have = (size_t)snprintf(want, sizeof(want), "{\"traceEvents\":[");
	size_t n = event_of_3k(ev, sizeof(ev), 0);
	ck_assert_int_eq(out__finish(&o, ev, n, closed, strlen(closed)), 0);
	memcpy(want + have, ev, n);
	have += n;
	ck_assert_int_eq(out__stopped(&o, why), -EINVAL);
	check_gz("t.json.gz", want, have, closed);
	out__close(&o);
	remove_dir();
}
END_TEST

/*
 * No shared mappings, and the disk fails halfway through a footer's move: the
 * commit fails, the old footer stands, and what was written of the new one is
 * blanked, so the file is the last checkpoint.
 */
START_TEST(test_unmappable_failing_move_keeps_last_checkpoint)
{
	static char want[1 << 20], ev[4096];
	struct out o;
	size_t have;
	int err = 0, i;
	const char *trailer = "],\"n\":1}", *last = "]}";

	make_dir();
	open_in_dir(&o, "t.json");
	ck_assert_int_eq(out__begin(&o, "{\"traceEvents\":[", 16, last, 2), 0);
	make_unmappable(&o, "t.json");
	have = (size_t)snprintf(want, sizeof(want), "{\"traceEvents\":[");
	for (i = 0; i < 100 && !err; i++) {
		size_t n = event_of_3k(ev, sizeof(ev), i);

		/* a move after the first few fails */
		if (i == 40)
			failing_moves_of = &o;
		err = out__commit(&o, ev, n, trailer, strlen(trailer));
		if (!err) {
			memcpy(want + have, ev, n);
			have += n;
			last = trailer;
		}
		check_paged("t.json", want, have, last);
	}
	ck_assert_int_eq(err, -EIO);
	ck_assert_ptr_null(failing_moves_of);
	out__close(&o);
	remove_dir();
}
END_TEST

/*
 * Where 64 MiB of address space cannot be had (a tight RLIMIT_AS here; an
 * mlockall() under RLIMIT_MEMLOCK does the same), the footer's moves still
 * go through a mapping, of their own pages, not through two writes: the
 * window falls back to its small size, and the file is valid after every call.
 */
START_TEST(test_paged_window_small_when_64_mib_cannot_be_mapped)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	return; /* their runtimes reserve terabytes of address space */
#endif
	static char want[1 << 20], ev[4096];
	struct rlimit old, tight;
	unsigned long pages = 0;
	size_t have;
	struct out o;
	FILE *f = fopen("/proc/self/statm", "r");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fscanf(f, "%lu", &pages), 1);
	fclose(f);
	make_dir();
	open_in_dir(&o, "t.json");
	ck_assert_int_eq(getrlimit(RLIMIT_AS, &old), 0);
	tight = old;
	/* what runs now, and 32 MiB */
	tight.rlim_cur = pages * (unsigned long)sysconf(_SC_PAGESIZE) + (32ul << 20);
	ck_assert_int_eq(setrlimit(RLIMIT_AS, &tight), 0);
	ck_assert_int_eq(out__begin(&o, "{\"traceEvents\":[", 16, "]}", 2), 0);
	have = (size_t)snprintf(want, sizeof(want), "{\"traceEvents\":[");
	for (int i = 0; i < 200; i++) {
		size_t n = event_of_3k(ev, sizeof(ev), i);

		ck_assert_int_eq(out__commit(&o, ev, n, "]}", 2), 0);
		memcpy(want + have, ev, n);
		have += n;
		check_paged("t.json", want, have, "]}");
	}
	ck_assert(o.window_small);
	ck_assert_ptr_nonnull(o.window);
	ck_assert_uint_lt(o.window_len, 1u << 20);
	ck_assert_int_eq(out__finish(&o, "", 0, "]}", 2), 0);
	check_paged("t.json", want, have, "]}");
	setrlimit(RLIMIT_AS, &old);
	out__close(&o);
	remove_dir();
}
END_TEST

/* Set by a test: the next open() of this path has the "program's" file dup2()ed over
 * the descriptor it returns before the caller sees it, as a program dup2()ing over
 * every descriptor does when its loop reaches the one just opened. */
static const char *taken_on_open;
static int program_fd = -1;

int open(const char *path, int flags, ...)
{
	static int (*real)(const char *, int, ...);
	mode_t mode = 0;
	int fd;

	if (!real)
		real = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
	if (flags & (O_CREAT | O_TMPFILE)) {
		va_list ap;

		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	fd = real(path, flags, mode);
	if (fd >= 0 && taken_on_open && !strcmp(path, taken_on_open)) {
		taken_on_open = NULL;
		ck_assert_int_eq(dup2(program_fd, fd), fd);
	}
	return fd;
}

/* The program dup2()s its own file over ours, then over the descriptor our reopen got,
 * before we looked at it: the trace goes on in its own file, the program's file and
 * descriptors are left alone. */
START_TEST(test_reopened_descriptor_taken_by_the_program_is_reopened_again)
{
	static const char line[] = "the program's own line\n";
	char path[128], text[256];
	struct stat st;
	struct out o;
	int taken, ours;

	make_dir();
	open_in_dir(&o, "t.json");
	ck_assert_int_eq(out__begin(&o, "{\"traceEvents\":[", 16, "]}", 2), 0);
	ck_assert_int_eq(out__commit(&o, "{\"a\":1}", 7, "]}", 2), 0);
	snprintf(path, sizeof(path), "%s/program", dir);
	program_fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(program_fd, 0);
	ck_assert_int_eq(write(program_fd, line, sizeof(line) - 1), (ssize_t)sizeof(line) - 1);
	ours = o.fd;
	ck_assert_int_eq(dup2(program_fd, ours), ours);
	snprintf(path, sizeof(path), "%s/t.json", dir);
	taken_on_open = path;
	ck_assert_int_eq(out__commit(&o, ",{\"b\":2}", 8, "]}", 2), 0);
	ck_assert_ptr_null(taken_on_open); /* the race happened */
	ck_assert_int_ne(o.fd, ours);
	ck_assert_int_eq(out__finish(&o, "", 0, "],\"end\":1}", 10), 0);
	out__close(&o);
	slurp("t.json", text, sizeof(text));
	ck_assert_str_eq(text, "{\"traceEvents\":[{\"a\":1},{\"b\":2}],\"end\":1}");
	/* the program's file as it wrote it, through each of its descriptors */
	for (taken = 0; taken < 1024; taken++)
		if (taken != program_fd && taken != ours && !fstat(taken, &st)) {
			struct stat p;

			if (!fstat(program_fd, &p) && p.st_ino == st.st_ino && p.st_dev == st.st_dev)
				break;
		}
	ck_assert_int_lt(taken, 1024); /* the descriptor the race took: still open */
	ck_assert_int_eq(fstat(program_fd, &st), 0);
	ck_assert_int_eq(st.st_size, sizeof(line) - 1);
	close(taken);
	close(ours);
	close(program_fd);
	program_fd = -1;
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
	tcase_add_loop_test(tc, test_gzip_is_one_member_at_every_checkpoint, 0, 2);
	suite_add_tcase(s, tc);
	tc = tcase_create("paged");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_paged_is_valid_after_every_call, 0, 2);
	tcase_add_loop_test(tc, test_gzip_files_one_after_another_take_no_heap, 0, 2);
	tcase_add_test(tc, test_paged_window_small_when_64_mib_cannot_be_mapped);
	tcase_add_test(tc, test_paged_is_valid_after_every_system_call);
	tcase_add_test(tc, test_paged_full_disk_keeps_last_checkpoint);
	tcase_add_test(tc, test_paged_stopped_says_why_in_its_footer);
	tcase_add_test(tc, test_unmappable_failing_move_keeps_last_checkpoint);
	tcase_add_test(tc, test_reopened_descriptor_taken_by_the_program_is_reopened_again);
	suite_add_tcase(s, tc);
	tc = tcase_create("gzip");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_gzip_full_disk_keeps_last_checkpoint, 0, 2);
	tcase_add_loop_test(tc, test_gzip_stopped_says_why_in_its_end, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(output_suite)
