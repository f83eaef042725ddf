/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <unistd.h>

#include "gzip.h"
#include "output.h"
#include "inject/tables.h"

/*
 * Our fd is moved up, away from the small numbers programs dup2 onto, but
 * only within the 64 slots every descriptor table starts with: growing the
 * table in a process with threads waits for an RCU grace period (10-27 ms
 * measured). So it moves only if the top slot is free (then the lowest free
 * one from OUT_FD_MIN is below it); else it stays where open() put it.
 * Either way check_fd() finds a descriptor the program closed or reused.
 */
#define OUT_FD_MIN 48
#define OUT_FD_TOP 63

static int move_up(int fd)
{
	int high;

	if (fd >= OUT_FD_MIN || fcntl(OUT_FD_TOP, F_GETFD) >= 0 || errno != EBADF)
		return fd;
	high = fcntl(fd, F_DUPFD_CLOEXEC, OUT_FD_MIN);
	if (high < 0)
		return fd;
	close(fd);
	return high;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

/* Our descriptors by path: /proc/self/fd is the thread-group leader's, gone
 * (ENOENT) once main has called pthread_exit while other threads run on;
 * /proc/thread-self (Linux 3.17) is always the caller's. */
static const char *proc_fd_dir(void)
{
	return access("/proc/thread-self/fd", X_OK) ? "/proc/self/fd" : "/proc/thread-self/fd";
}

static int open_exclusive(struct out *o, const char *path)
{
	struct stat st;
	int fd = -1;

	/* A device or fifo (/dev/null, /dev/full, a pipe) is written as a
	 * stream: no O_EXCL, no rewriting. */
	if (!stat(path, &st) && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
		fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
		if (fd < 0)
			return -errno;
		snprintf(o->path, sizeof(o->path), "%s", path);
		o->fd = fd;
		return 0;
	}
	/* A regular file is born without a name (O_TMPFILE), or under a
	 * hidden one where the file system has no unnamed files, and is
	 * linked to its own once it holds a valid skeleton (out__publish): a
	 * kill in between leaves no trace file rather than an empty one, and
	 * with O_TMPFILE no hidden file either. */
	snprintf(o->want, sizeof(o->want), "%s", path);
	const char *slash = strrchr(path, '/');
	int dirlen = slash ? (int)(slash - path) : 1;
	if (snprintf(o->path, sizeof(o->path), "%.*s", slash == path ? 1 : dirlen,
		     slash ? path : ".") >= (int)sizeof(o->path))
		return -ENAMETOOLONG;
	/* linking it later goes through /proc/thread-self/fd */
	if (!access(proc_fd_dir(), X_OK))
		fd = open(o->path, O_TMPFILE | O_RDWR | O_CLOEXEC, 0644);
	if (fd >= 0) {
		o->path[0] = '\0';
		o->tmpfile = true;
		goto made;
	}
	if (snprintf(o->path, sizeof(o->path), "%.*s/.gputrace-%d-XXXXXX", dirlen,
		     slash ? path : ".", (int)getpid()) >= (int)sizeof(o->path))
		return -ENAMETOOLONG;
	fd = mkostemp(o->path, O_CLOEXEC);
	if (fd < 0)
		return -errno;
made:
	(void)!fchmod(fd, 0644);
	o->fd = fd;
	o->seekable = true;
	o->unpublished = true;
	return 0;
}

/* Candidate i for the wanted name: trace.json, trace.1.json, ... */
static int candidate(const char *path, int i, char *out, size_t len)
{
	if (!i)
		return snprintf(out, len, "%s", path) >= (int)len ? -ENAMETOOLONG : 0;
	if (ends_with(path, ".json.gz") || ends_with(path, ".json") || ends_with(path, ".gz")) {
		/* keep the extension: trace.json -> trace.1.json, trace.gz ->
		 * trace.1.gz (trace.gz.1 was no .gz name: gunzip refused it) */
		size_t base = strlen(path) - (ends_with(path, ".json.gz") ? 8
					      : ends_with(path, ".json")  ? 5
									  : 3);
		return snprintf(out, len, "%.*s.%d%s", (int)base, path, i, path + base) >= (int)len
			       ? -ENAMETOOLONG
			       : 0;
	}
	return snprintf(out, len, "%s.%d", path, i) >= (int)len ? -ENAMETOOLONG : 0;
}

/* Candidate i for a capture window's file: the ".N" its process's first file
 * took goes before the "-wN" (trace.1.json -> trace.1-w2.json), then ".i" as
 * for any name (trace.1-w2.1.json); with no first file yet, ".i" goes there
 * (trace-w2.json, trace.1-w2.json, ...) and becomes the process's. */
static int window_candidate(const struct out *o, int i, char *out, size_t len)
{
	char fam[PATH_MAX];
	int n = o->suffix ? o->suffix - 1 : i;

	if (!n)
		snprintf(fam, sizeof(fam), "%s", o->want);
	else if (snprintf(fam, sizeof(fam), "%.*s.%d%s", (int)o->split, o->want, n,
			  o->want + o->split) >= (int)sizeof(fam))
		return -ENAMETOOLONG;
	return candidate(fam, o->suffix ? i : 0, out, len);
}

int out__publish(struct out *o)
{
	char name[PATH_MAX], fdpath[48];
	int err, i;

	if (!o->unpublished)
		return 0;
	/* link() never replaces: an earlier trace of this run (the image an
	 * exec replaced has our pid) keeps its name, we take the next; a
	 * window's file is named after its process's first (a window of the
	 * image an exec started is not taken for one of the image before) */
	if (o->tmpfile)
		snprintf(fdpath, sizeof(fdpath), "%s/%d", proc_fd_dir(), o->fd);
	for (i = 0; i < 10000; i++) {
		if ((err = o->capture_window > 1 ? window_candidate(o, i, name, sizeof(name))
					 : candidate(o->want, i, name, sizeof(name))))
			return err;
		if (o->tmpfile) {
			if (!linkat(AT_FDCWD, fdpath, AT_FDCWD, name, AT_SYMLINK_FOLLOW))
				goto named;
			if (errno == EEXIST)
				continue;
			return -errno;
		}
		if (!link(o->path, name)) {
			unlink(o->path);
			goto named;
		}
		if (errno == EEXIST)
			continue;
		/* no hard links here (vfat, some FUSE): rename where free */
		if (access(name, F_OK) && !rename(o->path, name))
			goto named;
		if (errno != EEXIST && errno != 0 && access(name, F_OK))
			return -errno;
	}
	return -EEXIST;
named:
	snprintf(o->path, sizeof(o->path), "%s", name);
	o->unpublished = false;
	if (!o->suffix)
		o->suffix = i + 1;
	return 0;
}

int out__open(struct out *o, const char *path)
{
	struct stat st;
	int err;

	memset(o, 0, sizeof(*o));
	o->fd = -1;
	err = open_exclusive(o, path);
	if (err)
		return err;
	o->fd = move_up(o->fd);
	if (!fstat(o->fd, &st)) {
		o->dev = st.st_dev;
		o->ino = st.st_ino;
	}
	o->gz = ends_with(path, ".gz");
	return 0;
}

/* Flags a program that sets them on every descriptor (reaching ours) may have
 * set: O_APPEND sends each pwrite to the file's end, behind the footer, where
 * the last cycle's compaction cut the events off (none counted lost);
 * O_NONBLOCK fails a write into a full pipe with EAGAIN (tracing stopped).
 * The open file is ours alone (a dup of the program's for a stream is a
 * reopen, a new open file), so we take them off, and close-on-exec back. */
static bool fix_flags(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	bool fixed = false;

	if (fl >= 0 && (fl & (O_APPEND | O_NONBLOCK)))
		fixed = !fcntl(fd, F_SETFL, fl & ~(O_APPEND | O_NONBLOCK));
	fl = fcntl(fd, F_GETFD);
	if (fl >= 0 && !(fl & FD_CLOEXEC))
		(void)fcntl(fd, F_SETFD, fl | FD_CLOEXEC);
	return fixed; /* true: a flag was taken off */
}

static bool same_file(const struct stat *a, dev_t dev, ino_t ino)
{
	return a->st_dev == dev && a->st_ino == ino;
}

static bool is_ours(const struct out *o, const struct stat *st)
{
	return same_file(st, o->dev, o->ino);
}

/* Reopens that the program took from under us before giving up: each is its
 * dup2() loop reaching the descriptor open() just gave us. */
#define REOPEN_TRIES 8

/* The program may have closed our fd or dup2()ed another file onto it:
 * never write into its file; reopen ours by path. A program dup2()ing over
 * every descriptor may take the reopened one too, between our open() and
 * fstat(): it is the program's then, left open, and we open again (until
 * 2026-12-07 that stopped the trace, "Stale file handle", and closed the
 * program's descriptor: a CI run of test_program_dup2s_over_our_descriptor). */
static int check_fd(struct out *o)
{
	struct stat st, at_path;

	if (!fstat(o->fd, &st) && is_ours(o, &st)) {
		(void)fix_flags(o->fd);
		return 0;
	}
	for (int tries = 0; tries < REOPEN_TRIES; tries++) {
		int fd = open(o->path, (o->seekable ? O_RDWR : O_WRONLY) | O_CLOEXEC | O_NOCTTY);
		int high;

		if (fd < 0)
			return -errno;
		if (fstat(fd, &st))
			return -errno;
		if (!is_ours(o, &st)) {
			bool named = !stat(o->path, &at_path);

			if (named && is_ours(o, &at_path))
				continue; /* the program's descriptor now */
			/* another file has our name: ours to close, unless the
			 * program took the descriptor meanwhile */
			if (named && same_file(&at_path, st.st_dev, st.st_ino))
				close(fd);
			return -ESTALE;
		}
		high = move_up(fd);
		if (high != fd && (fstat(high, &st) || !is_ours(o, &st))) {
			close(high); /* a copy of what the program put there */
			continue;
		}
		o->fd = high;
		return 0;
	}
	return -ESTALE;
}

/*
 * The file's system calls in flight and done, for a final drain's waiter
 * (writer__sync): a write the kernel holds (dirty-page throttling on a busy
 * disk holds one for seconds) is a slow disk, not a stuck drain.
 */
static _Atomic uint32_t calls_in_flight;
static _Atomic uint64_t calls_done;

static void call_begin(void)
{
	atomic_fetch_add_explicit(&calls_in_flight, 1, memory_order_relaxed);
}

static void call_end(void)
{
	atomic_fetch_add_explicit(&calls_done, 1, memory_order_relaxed);
	atomic_fetch_sub_explicit(&calls_in_flight, 1, memory_order_relaxed);
}

uint64_t out__activity(bool *in_flight)
{
	*in_flight = atomic_load_explicit(&calls_in_flight, memory_order_relaxed) != 0;
	return atomic_load_explicit(&calls_done, memory_order_relaxed);
}

void out__forget_calls(void)
{
	atomic_store_explicit(&calls_in_flight, 0, memory_order_relaxed);
}

static int truncate_to(int fd, uint64_t len)
{
	int ret;

	call_begin();
	ret = ftruncate(fd, (off_t)len) < 0 ? -errno : 0;
	call_end();
	return ret;
}

/* A stream (pipe, device): written front to back, once. */
static int write_all(struct out *o, const char *p, size_t n)
{
	while (n) {
		call_begin();
		ssize_t w = write(o->fd, p, n);
		call_end();
		if (w < 0) {
			if (errno == EINTR)
				continue;
			/* O_NONBLOCK the program set in the middle of our writes:
			 * taken off, the write blocks as ours do */
			if (errno == EAGAIN && fix_flags(o->fd))
				continue;
			return -errno;
		}
		if (w == 0)
			return -ENOSPC;
		p += w;
		n -= (size_t)w;
		o->events_end += (uint64_t)w;
	}
	o->size = o->events_end;
	return 0;
}

/* ---- the paged layout ---- */

/* whitespace reserved ahead of the events: from 64 KiB, doubling to 1 MiB */
#define OUT_GROW_MIN (64u << 10)
#define OUT_GROW_MAX (1u << 20)

/* What one pwritev wrote (> 0, maybe short), or -errno (-ENOSPC when it wrote
 * nothing); an interrupted one is tried again. */
static ssize_t pwritev_some(int fd, const struct iovec *iov, int n, uint64_t at)
{
	ssize_t w;

	do {
		call_begin();
		w = pwritev(fd, iov, n, (off_t)at);
		call_end();
	} while (w < 0 && errno == EINTR);
	return w > 0 ? w : w < 0 ? -errno : -ENOSPC;
}

static int pwrite_all(int fd, const char *p, size_t n, uint64_t at)
{
	while (n) {
		struct iovec iov = { .iov_base = (void *)p, .iov_len = n };
		ssize_t w = pwritev_some(fd, &iov, 1, at);

		if (w < 0)
			return (int)w;
		p += w;
		n -= (size_t)w;
		at += (uint64_t)w;
	}
	return 0;
}

/* Spaces over [from, to): one pwritev per 4 MiB (64 KiB of spaces, repeated),
 * not a pwrite per 64 KiB: a move writes up to 1 MiB of them. */
static int write_spaces(int fd, uint64_t from, uint64_t to)
{
	enum { SPACES = OUT_PAGE * 16 };
	GT_TABLE(char, spaces, SPACES);
	struct iovec iov[64];

	if (spaces[0] != ' ')
		memset(spaces, ' ', SPACES);
	while (from < to) {
		size_t n = 0;
		int k = 0;

		for (; k < 64 && from + n < to; k++) {
			size_t part = to - from - n < SPACES ? (size_t)(to - from - n) : SPACES;
			iov[k] = (struct iovec){ .iov_base = spaces, .iov_len = part };
			n += part;
		}
		ssize_t w = pwritev_some(fd, iov, k, from);
		if (w < 0)
			return (int)w;
		from += (uint64_t)w; /* a short write: the rest in the next round */
	}
	return 0;
}

static uint64_t page_up(uint64_t x)
{
	return (x + OUT_PAGE - 1) / OUT_PAGE * OUT_PAGE;
}

/* A copy of n bytes in *buf (*len of them, room for *cap). */
static int keep_copy(char **buf, size_t *len, size_t *cap, const char *p, size_t n)
{
	if (n > *cap) {
		char *b = realloc(*buf, n);

		if (!b)
			return -ENOMEM;
		*buf = b;
		*cap = n;
	}
	memcpy(*buf, p, n);
	*len = n;
	return 0;
}

/* A copy of the footer on disk, for the next move. */
static int remember_footer(struct out *o, const char *footer, size_t fn)
{
	return keep_copy(&o->last_footer, &o->last_footer_len, &o->last_footer_cap, footer, fn);
}

/* The footer in place, padded over a longer predecessor: trailing
 * whitespace after the closing brace is still valid JSON. One page. */
static int footer_rewrite(struct out *o, const char *footer, size_t fn)
{
	static char buf[OUT_PAGE];
	size_t len = fn > o->footer_len ? fn : o->footer_len;
	int err;

	if (len <= sizeof(buf)) {
		memcpy(buf, footer, fn);
		memset(buf + fn, ' ', len - fn);
		err = pwrite_all(o->fd, buf, len, o->footer_pos);
	} else {
		/* too big for one page: not kill-proof, still correct */
		err = pwrite_all(o->fd, footer, fn, o->footer_pos);
		if (!err && fn < o->footer_len)
			err = write_spaces(o->fd, o->footer_pos + fn, o->footer_pos + o->footer_len);
	}
	if (!err)
		o->footer_len = len;
	return err;
}

/* footer_swap for a file system without shared mappings: two calls, with a
 * system call between them. */
static int footer_swap_by_writes(struct out *o, uint64_t new_pos, const char *footer, size_t fn)
{
	uint64_t old = o->footer_pos, old_end = old + o->footer_len, new_end = new_pos + fn;
	int err = pwrite_all(o->fd, footer, fn, new_pos);

	if (err) {
		/* a failing disk: the old footer stands, what was written of the new
		 * blanked (short of the old one, which the compaction's may reach) */
		(void)write_spaces(o->fd, new_pos, new_pos < old && new_end > old ? old : new_end);
		return err;
	}
	/* the old footer's bytes the new one did not cover */
	if (old < new_pos)
		err = write_spaces(o->fd, old, old_end < new_pos ? old_end : new_pos);
	if (!err && old_end > new_end)
		err = write_spaces(o->fd, old > new_end ? old : new_end, old_end);
	o->footer_pos = new_pos;
	o->footer_len = fn;
	return err;
}

/*
 * A shared mapping of the file kept across the footer's moves (one per MiB
 * of events or so), mapped again only when a footer leaves it: an munmap per
 * move cost ~150 us here, most of it the TLB shootdown sent to the CPUs that
 * run the program's threads (~160 of them per 10^6 events). 64 MiB of
 * address space, of which only the footers' pages are ever touched. A fork
 * child does not inherit it: it forgets our file.
 */
#define OUT_WINDOW (64u << 20)

void out__unmap(struct out *o)
{
	if (o->window) {
		call_begin();
		munmap(o->window, o->window_len);
		call_end();
	}
	o->window = NULL;
}

/* The window's address of file offset lo, [lo, hi) inside it; NULL where
 * the file cannot be mapped. Where 64 MiB cannot be (an mlockall() under
 * RLIMIT_MEMLOCK, a tight RLIMIT_AS), the move's own pages are, each move:
 * the two stores still beat two writes. */
static char *window_over(struct out *o, uint64_t lo, uint64_t hi)
{
	size_t len = hi - lo > OUT_WINDOW || o->window_small ? hi - lo : OUT_WINDOW;
	char *map;

	if (o->window && lo >= o->window_at && hi <= o->window_at + o->window_len)
		return o->window + (lo - o->window_at);
	out__unmap(o);
	call_begin();
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, o->fd, (off_t)lo);
	if (map == MAP_FAILED && len > hi - lo && (errno == ENOMEM || errno == EAGAIN)) {
		len = hi - lo;
		map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, o->fd, (off_t)lo);
		o->window_small = map != MAP_FAILED;
	}
	call_end();
	if (map == MAP_FAILED)
		return NULL;
	(void)madvise(map, len, MADV_DONTFORK);
	o->window = map;
	o->window_at = lo;
	o->window_len = len;
	return map;
}

/* A page of the window made present and writable without reading it (x86's
 * LOCK OR; where an atomic is a load and a store, it reads first): a read
 * first would fault in the 16 pages around it, which stay mapped. */
static void window_touch(char *p)
{
	__atomic_fetch_or(p, 0, __ATOMIC_RELAXED);
}

/*
 * Put the footer at new_pos and blank the old one. Between the two the file
 * holds two closing braces, which no JSON parser takes (README "SIGKILL"), and
 * no order of writes avoids that: the old brace has to stop being the last one
 * in the same instant the new one appears, pages apart. So the two are stores
 * into a shared mapping of the file, back to back (~100 ns). Two pwrites left a
 * system call between them (longer when the thread was preempted there), which
 * CI's kill tests hit three times, twice with a kill timed by the file's growth
 * (just after a move); the mapping costs a few percent of the writing (README
 * "SIGKILL / OOM").
 * [new_pos, new_pos + fn) must lie inside the file.
 */
static int footer_swap(struct out *o, uint64_t new_pos, const char *footer, size_t fn)
{
	uint64_t old = o->footer_pos, old_end = old + o->footer_len, new_end = new_pos + fn;
	uint64_t lo = (old < new_pos ? old : new_pos) / OUT_PAGE * OUT_PAGE;
	uint64_t hi = page_up(old_end > new_end ? old_end : new_end);
	char *map = window_over(o, lo, hi);

	if (!map)
		return footer_swap_by_writes(o, new_pos, footer, fn);
	/* both ends' pages present before the first store, so no page fault
	 * comes between the two stores */
	for (uint64_t at = new_pos; at < new_end; at = (at / OUT_PAGE + 1) * OUT_PAGE)
		window_touch(map + (at - lo));
	for (uint64_t at = old; at < old_end; at = (at / OUT_PAGE + 1) * OUT_PAGE)
		window_touch(map + (at - lo));
	memcpy(map + (new_pos - lo), footer, fn);
	/* the old footer's bytes the new one did not cover */
	if (old < new_pos)
		memset(map + (old - lo), ' ', (old_end < new_pos ? old_end : new_pos) - old);
	if (old_end > new_end)
		memset(map + ((old > new_end ? old : new_end) - lo), ' ',
		       old_end - (old > new_end ? old : new_end));
	o->footer_pos = new_pos;
	o->footer_len = fn;
	return 0;
}

/* Move the footer forward to new_pos: whitespace after the file's end up
 * to the new footer's (trailing, so harmless if cut), then the swap. */
static int footer_move(struct out *o, uint64_t new_pos, const char *footer, size_t fn)
{
	int err = write_spaces(o->fd, o->footer_pos + o->footer_len, new_pos + fn);

	return err ? err : footer_swap(o, new_pos, footer, fn);
}

static int paged_open(struct out *o, const char *head, size_t hn, const char *footer, size_t fn)
{
	int err;

	if ((err = pwrite_all(o->fd, head, hn, 0)))
		return err;
	o->events_end = hn;
	o->footer_pos = hn; /* an empty footer right after the head, to be moved */
	o->footer_len = 0;
	if ((err = remember_footer(o, footer, fn)) ||
	    (err = footer_move(o, page_up(hn + 1), footer, fn)))
		return err;
	o->size = o->footer_pos + o->footer_len;
	return out__publish(o);
}

static int paged_commit(struct out *o, const char *ev, size_t n, const char *footer, size_t fn)
{
	int err;

	if (o->events_end + n > o->footer_pos) {
		/* the footer on disk moves as it is: it counts none of these events */
		const char *old = o->last_footer;
		size_t on = o->last_footer_len;

		o->grow = o->grow ? (o->grow < OUT_GROW_MAX ? o->grow * 2 : OUT_GROW_MAX)
				  : OUT_GROW_MIN;
		err = footer_move(o, page_up(o->events_end + n + o->grow), old, on);
		if (err == -ENOSPC || err == -EFBIG || err == -EDQUOT) {
			/* short of room: ask for no more than these events need */
			o->grow = 0;
			err = footer_move(o, page_up(o->events_end + n), old, on);
		}
		if (err)
			return err;
	}
	if ((err = pwrite_all(o->fd, ev, n, o->events_end)))
		return err;
	o->events_end += n;
	if ((err = footer_rewrite(o, footer, fn)) || (err = remember_footer(o, footer, fn)))
		return err;
	o->size = o->footer_pos + o->footer_len;
	return 0;
}

/* A complete file made compact: the footer on disk (the last commit's) right
 * after the events (the swap), then the whitespace behind it cut off. A
 * commit after it moves the footer ahead again, by the least reserve (an
 * exec's second cycle, or a failed exec's program going on, adds little). */
static int paged_compact(struct out *o)
{
	size_t fn = o->last_footer_len;
	int err;

	if (o->footer_pos > o->events_end &&
	    ((err = footer_swap(o, o->events_end, o->last_footer, fn)) ||
	     (err = truncate_to(o->fd, o->events_end + fn))))
		return err;
	o->size = o->events_end + fn;
	o->grow = 0;
	return 0;
}

static int paged_finish(struct out *o, const char *ev, size_t n, const char *footer, size_t fn)
{
	int err = paged_commit(o, ev, n, footer, fn);

	return err ? err : paged_compact(o);
}

/* Where the value of the footer's "end" lies in f (our own JSON: null or a
 * string), or false. */
static bool footer_end_value(const char *f, size_t n, size_t *from, size_t *to)
{
	static const char key[] = ",\"end\":";
	const char *k = memmem(f, n, key, sizeof(key) - 1);
	size_t i;

	if (!k)
		return false;
	i = (size_t)(k - f) + sizeof(key) - 1;
	*from = i;
	if (n - i >= 4 && !memcmp(f + i, "null", 4)) {
		*to = i + 4;
		return true;
	}
	if (i >= n || f[i] != '"')
		return false;
	for (i++; i < n && f[i] != '"'; i++)
		if (f[i] == '\\')
			i++;
	if (i >= n)
		return false;
	*to = i + 1;
	return true;
}

/* A write that ends at end needs no new block, which a full disk has none
 * of: it ends inside the file as it is (st) or as the last checkpoint left
 * it, or inside that size's last page; and no byte of it is past a size
 * limit (a partial write there). */
static bool fits_in_place(const struct out *o, const struct stat *st, uint64_t end)
{
	struct rlimit rl;
	bool has = end <= o->size || end <= (uint64_t)st->st_size;
	bool in_page = page_up(end) <= page_up(o->size) &&
		       (getrlimit(RLIMIT_FSIZE, &rl) || rl.rlim_cur == RLIM_INFINITY ||
			end <= rl.rlim_cur);

	return has || in_page;
}

static int gz_stopped(struct out *o, const struct stat *st, const struct jbuf *trailer);

int out__stopped(struct out *o, const char *why)
{
	size_t from, to, wn = strlen(why);
	struct jbuf b = { 0 };
	struct stat st;
	int err = -ENOSPC;

	/* a finished trace keeps its end (a compaction's truncate failed after it) */
	if (!(o->paged || (o->gz && o->seekable)) || !o->last_footer_len ||
	    (o->paged && o->footer_pos < o->events_end) ||
	    !memmem(o->last_footer, o->last_footer_len, "\"complete\":false", 16) ||
	    !footer_end_value(o->last_footer, o->last_footer_len, &from, &to))
		return -EINVAL;
	/* never into a file of the program's on our descriptor (check_fd) */
	if (fstat(o->fd, &st) || !is_ours(o, &st))
		return -ESTALE;
	jbuf__put(&b, o->last_footer, from);
	json__str(&b, why, wn);
	jbuf__put(&b, o->last_footer + to, o->last_footer_len - to);
	if (o->gz) {
		err = b.oom ? -ENOMEM : gz_stopped(o, &st, &b);
		jbuf__free(&b);
		return err;
	}
	uint64_t end = o->footer_pos + b.len;
	/* over bytes the file has (what the failed write left, or the footer's
	 * own), or into the rest of its last page: no new block, which a full
	 * disk has none of; never past a size limit (a partial write there);
	 * one page, so a kill leaves the old footer or the new one */
	if (!b.oom && b.len <= OUT_PAGE - o->footer_pos % OUT_PAGE &&
	    fits_in_place(o, &st, end))
		err = footer_rewrite(o, b.p, b.len);
	if (!err) {
		err = remember_footer(o, b.p, b.len);
		o->size = o->footer_pos + o->footer_len;
	}
	jbuf__free(&b);
	return err;
}

/* ---- gzip: one member, its end rewritten at each checkpoint ---- */

/*
 * A write over the end that failed (a full disk, a size limit: it may have
 * written part of its bytes first) put the last checkpoint's end back, over
 * bytes the file had, and its size: the file is that checkpoint's member
 * again, not one cut short (it was, until 2026-12-07). Best effort: the
 * caller says why the trace stops.
 */
static void gz_restore(struct out *o)
{
	if (o->size > o->events_end && o->gz_end_len &&
	    !pwrite_all(o->fd, o->gz_end, o->gz_end_len, o->events_end))
		(void)truncate_to(o->fd, o->size);
}

/*
 * The events, compressed and flushed, and a finished copy of the stream
 * with the trailer behind them go out in one pwrite at the end of the
 * events written so far, over the previous end: a SIGKILL that lands
 * inside that one call can leave a cut member (its length and cost are
 * in README "Limits"); outside it the file is one complete member.
 */
static int gz_commit(struct out *o, const char *ev, size_t n, const char *trailer, size_t tn)
{
	uint64_t end;
	size_t kept;
	int err;

	o->zout.len = 0;
	if ((err = gzm__add(&o->gz_member, ev, n, &o->zout)))
		return err;
	kept = o->zout.len;
	if ((err = gzm__end_copy(&o->gz_member, trailer, tn, &o->zout)))
		return err;
	if ((err = pwrite_all(o->fd, o->zout.p, o->zout.len, o->events_end))) {
		gz_restore(o);
		return err;
	}
	end = o->events_end + o->zout.len;
	if (end < o->size && (err = truncate_to(o->fd, end)))
		return err;
	o->events_end += kept;
	o->size = end;
	gzm__sums(&o->gz_member, &o->gz_crc, &o->gz_len);
	if ((err = keep_copy(&o->gz_end, &o->gz_end_len, &o->gz_end_cap, o->zout.p + kept,
			     o->zout.len - kept)) ||
	    (err = remember_footer(o, trailer, tn))) {
		o->gz_end_len = o->last_footer_len = 0; /* neither put back nor rewritten */
		return err;
	}
	return out__publish(o);
}

/* The member's end after the last checkpoint's events, for trailer: where it
 * fits as out__stopped says, in one write (a kill inside it can cut the
 * member, as a checkpoint's can: README "Limits"). */
static int gz_stopped(struct out *o, const struct stat *st, const struct jbuf *trailer)
{
	struct jbuf z = { 0 };
	uint64_t end;
	int err = gzm__end_at(o->gz_crc, o->gz_len, o->gz_member.zlib_only, trailer->p,
			      trailer->len, &z);

	end = o->events_end + z.len;
	if (!err && !fits_in_place(o, st, end))
		err = -ENOSPC;
	if (!err && ((err = pwrite_all(o->fd, z.p, z.len, o->events_end)) ||
		     (end < o->size && (err = truncate_to(o->fd, end)))))
		gz_restore(o);
	if (!err) {
		o->size = end;
		if ((err = keep_copy(&o->gz_end, &o->gz_end_len, &o->gz_end_cap, z.p, z.len)) ||
		    (err = remember_footer(o, trailer->p, trailer->len)))
			o->gz_end_len = o->last_footer_len = 0;
	}
	jbuf__free(&z);
	return err;
}

/* ---- streams: front to back, the trailer once at the end ---- */

static int stream_add(struct out *o, const char *p, size_t n, const char *last, size_t ln)
{
	int err;

	if (!o->gz)
		return (err = write_all(o, p, n)) ? err : write_all(o, last, ln);
	o->zout.len = 0;
	if ((err = gzm__add(&o->gz_member, p, n, &o->zout)) ||
	    (last && (err = gzm__finish(&o->gz_member, last, ln, &o->zout))))
		return err;
	return write_all(o, o->zout.p, o->zout.len);
}

/* ---- what the writer calls ---- */

int out__begin(struct out *o, const char *head, size_t hn, const char *trailer, size_t tn)
{
	o->paged = o->seekable && !o->gz;
	if (o->paged)
		return paged_open(o, head, hn, trailer, tn);
	if (o->seekable)
		return gz_commit(o, head, hn, trailer, tn);
	return stream_add(o, head, hn, NULL, 0);
}

int out__commit(struct out *o, const char *ev, size_t n, const char *trailer, size_t tn)
{
	int err = check_fd(o);

	if (err)
		return err;
	if (o->paged)
		return paged_commit(o, ev, n, trailer, tn);
	if (o->seekable)
		return gz_commit(o, ev, n, trailer, tn);
	return stream_add(o, ev, n, NULL, 0);
}

int out__finish(struct out *o, const char *ev, size_t n, const char *trailer, size_t tn)
{
	int err = check_fd(o);

	if (err)
		return err;
	if (o->paged)
		return paged_finish(o, ev, n, trailer, tn);
	if (o->seekable)
		return gz_commit(o, ev, n, trailer, tn);
	return stream_add(o, ev, n, trailer, tn);
}

int out__compact(struct out *o)
{
	/* right after a commit, which looked at the descriptor */
	return o->paged ? paged_compact(o) : 0;
}

void out__close(struct out *o)
{
	out__unmap(o);
	gzm__free(&o->gz_member);
	jbuf__free(&o->zout);
	free(o->last_footer);
	o->last_footer = NULL;
	o->last_footer_len = o->last_footer_cap = 0;
	free(o->gz_end);
	o->gz_end = NULL;
	o->gz_end_len = o->gz_end_cap = 0;
	if (o->fd >= 0)
		close(o->fd);
	o->fd = -1;
}
