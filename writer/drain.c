/* SPDX-License-Identifier: MIT */
/*
 * The drain thread: every cycle it moves ring records into Chrome Trace
 * JSON, links device work to the host calls that caused it (ac2g flows) and
 * checkpoints the file. All writer state belongs to this thread (or to the
 * caller of writer__cycle when no drain thread runs), so none of it is
 * locked; producers only ever touch their rings.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "inject/clock.h"
#include "inject/config.h"
#include "inject/hooks.h"
#include "inject/registry.h"
#include "inject/ring.h"
#include "inject/shim.h"
#include "inject/stacks.h"
#include "inject/state.h"
#include "json.h"
#include "output.h"
#include "summary.h"
#include "writer.h"

#ifndef GPUTRACE_VERSION
#define GPUTRACE_VERSION "0.0.0"
#endif

#define POLL_MS          10   /* how often rings are looked at */
#define HIGH_WATER_DIV   4    /* a ring a quarter full is drained now */
#define FLUSH_BYTES      (1 << 20)
#define CORR_TABLE_BITS  17
#define PENDING_MAX_AGE  3    /* cycles a device event waits for its host span */
#define DLOPEN_POLL_NS   100000000ull
#define TRAILER_THREADS  16   /* threads listed in a checkpoint's footer */

struct corr_entry {
	uint64_t corr;
	uint64_t start_ns;
	uint32_t tid;
};

struct pending {
	struct gt_event ev;
	struct gt_arg args[GT_ARGS_MAX];
	unsigned age;
};

struct thread_stat {
	uint32_t tid;
	uint32_t serial;
	uint64_t events;
	uint64_t lost;
};

static struct writer {
	struct out out;
	bool opened, failed;
	bool any_event; /* the JSON array has an element */
	size_t ev_start; /* where the event being formatted starts in buf */
	struct jbuf buf, trailer;
	uint64_t recorded;

	struct corr_entry *corr;
	uint64_t next_flow_id;
	struct pending *pend;
	size_t npend, pend_cap;

	uint32_t devices_named, tracks_named;
	uint32_t *tids; /* host tids given a thread_name, open addressing */
	size_t tids_mask, ntids;
	struct thread_stat *dead;
	size_t ndead, dead_cap;

	struct summary *sum;
	uint64_t last_checkpoint_ns, last_dlopen_poll_ns;

	pthread_t thread;
	_Atomic bool thread_running;
	_Atomic int drain_tid;
	_Atomic uint32_t kick;
	_Atomic uint64_t req_seq, done_seq;
	_Atomic bool req_final;
	pthread_mutex_t cycle_lock;
} W = { .cycle_lock = PTHREAD_MUTEX_INITIALIZER };

static uint32_t device_pid(uint32_t device)
{
	/* unique per process and device, clear of real pids (< 2^22) */
	return 0x40000000u | ((uint32_t)gt_st.pid << 6) | (device & 63);
}

/* ---- small JSON helpers ---- */

/* Keys and names repeat in every event: the quoted, escaped form of each
 * string id is kept (direct-mapped by id; the drain thread's own), so an
 * event copies bytes instead of escaping them again. */
#define SID_CACHE     512
#define SID_CACHE_MAX 64

static struct sid_json {
	char text[SID_CACHE_MAX];
	uint32_t id;
	uint8_t len;
} sid_cache[SID_CACHE];

/* Out of a cache: whole 32-byte blocks, fixed-size copies the compiler turns
 * into vector moves (a variable-length copy becomes "rep movs", slower to
 * start than these strings take); the slack past len is in the buffer's
 * spare capacity and overwritten next. */
static inline void put_cached(struct jbuf *b, const char *text, size_t len)
{
	size_t blocks = (len + 31) & ~(size_t)31;
	char *d;

	if (gt_unlikely(b->len + blocks > b->cap) && jbuf__reserve(b, blocks))
		return;
	d = b->p + b->len;
	for (size_t i = 0; i < blocks; i += 32)
		memcpy(d + i, text + i, 32);
	b->len += len;
}

static __attribute__((noinline)) void put_sid_slow(struct jbuf *b, uint32_t id)
{
	struct sid_json *c = &sid_cache[id & (SID_CACHE - 1)];
	size_t n, start = b->len;
	const char *s = gt_str_get(id, &n);

	json__str(b, s, n);
	if (!b->oom && b->len - start <= SID_CACHE_MAX) {
		c->id = id;
		c->len = (uint8_t)(b->len - start);
		memcpy(c->text, b->p + start, c->len);
	}
}

static inline void put_sid(struct jbuf *b, uint32_t id)
{
	const struct sid_json *c = &sid_cache[id & (SID_CACHE - 1)];

	if (gt_likely(c->id == id && c->len))
		put_cached(b, c->text, c->len);
	else
		put_sid_slow(b, id);
}

/*
 * In the paged file layout no event may straddle a page boundary of the
 * file (see writer/output.h): the one just formatted is moved to the next
 * page, spaces before it, if it would. Events longer than a page stay.
 */
static void fit_event(void)
{
	size_t s = W.ev_start, e = W.buf.len, pad;
	uint64_t fs, fe;

	if (!W.out.paged || e <= s || e - s > OUT_PAGE)
		return;
	fs = W.out.events_end + s;
	fe = W.out.events_end + e - 1;
	if (fs / OUT_PAGE == fe / OUT_PAGE)
		return;
	pad = OUT_PAGE - fs % OUT_PAGE;
	if (jbuf__reserve(&W.buf, pad))
		return;
	memmove(W.buf.p + s + pad, W.buf.p + s, e - s);
	memset(W.buf.p + s, ' ', pad);
	W.buf.len += pad;
}

static void begin_event(struct jbuf *b)
{
	if (b == &W.buf) {
		fit_event();
		W.ev_start = W.buf.len;
	}
	if (W.any_event)
		jbuf__lit(b, ",\n");
	W.any_event = true;
}

static void meta(struct jbuf *b, const char *what, uint32_t pid, uint32_t tid, const char *key,
		 const char *sval, size_t slen, long long ival)
{
	begin_event(b);
	jbuf__lit(b, "{\"ph\":\"M\",\"name\":\"");
	jbuf__put(b, what, strlen(what));
	jbuf__lit(b, "\",\"pid\":");
	json__u64(b, pid);
	jbuf__lit(b, ",\"tid\":");
	json__u64(b, tid);
	jbuf__lit(b, ",\"args\":{\"");
	jbuf__put(b, key, strlen(key));
	jbuf__lit(b, "\":");
	if (sval)
		json__str(b, sval, slen);
	else
		json__i64(b, ival);
	jbuf__lit(b, "}}");
}

/* ---- host thread names ---- */

static bool tid_seen(uint32_t tid)
{
	if (W.ntids * 2 >= W.tids_mask) {
		size_t cap = W.tids ? (W.tids_mask + 1) * 2 : 256;
		uint32_t *t = calloc(cap, sizeof(*t));
		if (!t)
			return true;
		for (size_t i = 0; W.tids && i <= W.tids_mask; i++) {
			if (!W.tids[i])
				continue;
			size_t h = (W.tids[i] * 2654435761u) & (cap - 1);
			while (t[h])
				h = (h + 1) & (cap - 1);
			t[h] = W.tids[i];
		}
		free(W.tids);
		W.tids = t;
		W.tids_mask = cap - 1;
	}
	size_t h = (tid * 2654435761u) & W.tids_mask;
	while (W.tids[h]) {
		if (W.tids[h] == tid)
			return true;
		h = (h + 1) & W.tids_mask;
	}
	W.tids[h] = tid;
	W.ntids++;
	return false;
}

static void name_thread(uint32_t tid)
{
	char path[64], name[64];
	ssize_t n = -1;
	int fd;

	if (tid_seen(tid))
		return;
	snprintf(path, sizeof(path), "/proc/self/task/%u/comm", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, name, sizeof(name) - 1);
		close(fd);
	}
	while (n > 0 && (name[n - 1] == '\n' || name[n - 1] == 0))
		n--;
	if (n <= 0)
		n = snprintf(name, sizeof(name), "thread %u", tid);
	meta(&W.buf, "thread_name", (uint32_t)gt_st.pid, tid, "name", name, (size_t)n, 0);
	meta(&W.buf, "thread_sort_index", (uint32_t)gt_st.pid, tid, "sort_index", NULL, 0,
	     tid == (uint32_t)gt_st.pid ? 0 : (long long)tid);
}

static void name_new_rows(void)
{
	uint32_t nd = registry__devices(), nt = registry__tracks();

	for (uint32_t d = W.devices_named + 1; d <= nd; d++) {
		size_t n;
		const char *s = gt_str_get(registry__device_name(d), &n);

		meta(&W.buf, "process_name", device_pid(d), 0, "name", s, n, 0);
		meta(&W.buf, "process_sort_index", device_pid(d), 0, "sort_index", NULL, 0,
		     1000 + d);
	}
	W.devices_named = nd;
	for (uint32_t t = W.tracks_named + 1; t <= nt; t++) {
		const struct gt_row *row = registry__track(t);
		size_t n;
		const char *s;

		if (!row || row->tid == 1)
			continue; /* the device's own row is the process */
		s = gt_str_get(row->name, &n);
		meta(&W.buf, "thread_name", device_pid(row->device), row->tid, "name", s, n, 0);
		meta(&W.buf, "thread_sort_index", device_pid(row->device), row->tid, "sort_index",
		     NULL, 0, row->sort);
	}
	W.tracks_named = nt;
}

/* ---- events ---- */

static void put_args(struct jbuf *b, const struct gt_arg *args, unsigned nargs, uint64_t corr)
{
	char stack[4096];
	bool first = true;

	if (!nargs && !corr)
		return;
	jbuf__lit(b, ",\"args\":{");
	for (unsigned i = 0; i < nargs; i++) {
		const struct gt_arg *a = &args[i];

		if (!first)
			jbuf__ch(b, ',');
		first = false;
		put_sid(b, a->key);
		jbuf__ch(b, ':');
		if (a->key == GT_S_ARG_STACK && stacks__format(a->v.u, stack, sizeof(stack)) >= 0) {
			json__str(b, stack, strlen(stack));
			continue;
		}
		switch (a->type) {
		case GT_ARG_I64:
			json__i64(b, a->v.i);
			break;
		case GT_ARG_U64:
			json__u64(b, a->v.u);
			break;
		case GT_ARG_F64:
			json__f64(b, a->v.f);
			break;
		case GT_ARG_STR:
			put_sid(b, (uint32_t)a->v.u);
			break;
		case GT_ARG_HEX:
			json__hex(b, a->v.u);
			break;
		case GT_ARG_DIM3:
			jbuf__ch(b, '[');
			json__u64(b, (uint32_t)a->v.u);
			jbuf__ch(b, ',');
			json__u64(b, (a->v.u >> 32) & 0xffff);
			jbuf__ch(b, ',');
			json__u64(b, a->v.u >> 48);
			jbuf__ch(b, ']');
			break;
		default:
			jbuf__lit(b, "null");
		}
	}
	if (corr) {
		if (!first)
			jbuf__ch(b, ',');
		jbuf__lit(b, "\"correlation\":");
		json__u64(b, corr);
	}
	jbuf__ch(b, '}');
}

/* An event's head up to "ts" depends on (ph, cat, name, pid, tid) only, and
 * a program repeats few of them: kept formatted, direct-mapped. Stale
 * entries cannot match after a fork (the pid differs). */
#define HEAD_CACHE_BITS 8
#define HEAD_CACHE     (1 << HEAD_CACHE_BITS)
#define HEAD_CACHE_MAX 224

static struct head_json {
	char text[HEAD_CACHE_MAX];
	uint32_t cat, name, pid, tid;
	char ph;
	uint8_t len;
} head_cache[HEAD_CACHE];

static struct head_json *head_slot(char ph, const struct gt_event *ev, uint32_t pid, uint32_t tid)
{
	uint64_t k = (((uint64_t)tid << 32) | ev->name) * 0x9e3779b97f4a7c15ull +
		     (((uint64_t)pid << 32) | ev->cat) * 0xc2b2ae3d27d4eb4full + (uint8_t)ph;

	return &head_cache[k >> (64 - HEAD_CACHE_BITS)]; /* the top bits mix every input */
}

static __attribute__((noinline)) void put_head_slow(struct jbuf *b, const char *ph,
						    const struct gt_event *ev, uint32_t pid,
						    uint32_t tid)
{
	struct head_json *c = head_slot(ph[0], ev, pid, tid);
	size_t start = b->len;

	jbuf__lit(b, "{\"ph\":\"");
	jbuf__put(b, ph, strlen(ph));
	jbuf__lit(b, "\",\"cat\":");
	put_sid(b, ev->cat);
	jbuf__lit(b, ",\"name\":");
	put_sid(b, ev->name);
	jbuf__lit(b, ",\"pid\":");
	json__u64(b, pid);
	jbuf__lit(b, ",\"tid\":");
	json__u64(b, tid);
	jbuf__lit(b, ",\"ts\":");
	if (!b->oom && b->len - start <= HEAD_CACHE_MAX && ph[0] && !ph[1]) {
		*c = (struct head_json){ .cat = ev->cat, .name = ev->name, .pid = pid, .tid = tid,
					 .ph = ph[0], .len = (uint8_t)(b->len - start) };
		memcpy(c->text, b->p + start, c->len);
	}
}

static void put_head(struct jbuf *b, const char *ph, const struct gt_event *ev, uint32_t pid,
		     uint32_t tid)
{
	const struct head_json *c = head_slot(ph[0], ev, pid, tid);

	begin_event(b);
	if (gt_likely(c->len && c->name == ev->name && c->tid == tid && c->cat == ev->cat &&
		      c->pid == pid && c->ph == ph[0]))
		put_cached(b, c->text, c->len);
	else
		put_head_slow(b, ph, ev, pid, tid);
	json__us(b, ev->start_ns);
}

static uint64_t arg_u64(const struct gt_arg *args, unsigned nargs, uint32_t key)
{
	for (unsigned i = 0; i < nargs; i++)
		if (args[i].key == key && (args[i].type == GT_ARG_U64 || args[i].type == GT_ARG_I64))
			return args[i].v.u;
	return 0;
}

static const char *arg_str(const struct gt_arg *args, unsigned nargs, uint32_t key)
{
	for (unsigned i = 0; i < nargs; i++)
		if (args[i].type == GT_ARG_STR && args[i].key == key)
			return gt_str_get((uint32_t)args[i].v.u, NULL);
	return NULL;
}

static void summarize(const struct gt_event *ev, const struct gt_arg *args, unsigned nargs,
		      uint32_t device)
{
	/* nobody reads the summary: skip its per-event lookups */
	if (!gt_cfg.summary && !gt_cfg.summary_json[0])
		return;
	struct summary_span s = {
		.cat = gt_str_get(ev->cat, NULL),
		.name = gt_str_get(ev->name, NULL),
		.start_ns = ev->start_ns,
		.dur_ns = ev->end_ns > ev->start_ns ? ev->end_ns - ev->start_ns : 0,
		.bytes = arg_u64(args, nargs, GT_S_ARG_BYTES),
		.copy_kind = arg_str(args, nargs, GT_S_ARG_KIND),
		.device = device ? gt_str_get(registry__device_name(device), NULL) : NULL,
	};

	if (W.sum)
		summary__add(W.sum, &s);
}

static struct corr_entry *corr_slot(uint64_t corr)
{
	uint64_t h = corr * 0x9e3779b97f4a7c15ull;

	return &W.corr[h >> (64 - CORR_TABLE_BITS)];
}

static void write_host(const struct gt_event *ev, const struct gt_arg *args, unsigned nargs,
		       uint32_t ring_tid)
{
	uint32_t tid = ev->track ? ev->track : ring_tid;

	name_thread(tid);
	if (ev->type == GT_EV_INSTANT) {
		put_head(&W.buf, "i", ev, (uint32_t)gt_st.pid, tid);
		jbuf__lit(&W.buf, ",\"s\":\"t\"");
	} else {
		put_head(&W.buf, "X", ev, (uint32_t)gt_st.pid, tid);
		jbuf__lit(&W.buf, ",\"dur\":");
		json__us(&W.buf, ev->end_ns > ev->start_ns ? ev->end_ns - ev->start_ns : 0);
		summarize(ev, args, nargs, 0);
	}
	put_args(&W.buf, args, nargs, ev->corr);
	jbuf__ch(&W.buf, '}');
	if ((ev->flags & GT_EVF_LAUNCH) && ev->corr) {
		if (!W.corr)
			W.corr = calloc(1u << CORR_TABLE_BITS, sizeof(*W.corr));
		if (W.corr)
			*corr_slot(ev->corr) =
				(struct corr_entry){ ev->corr, ev->start_ns, tid };
	}
}

static const struct corr_entry *corr_find(uint64_t corr)
{
	const struct corr_entry *e;

	if (!corr || !W.corr)
		return NULL;
	e = corr_slot(corr);
	return e->corr == corr ? e : NULL;
}

static void write_flow(const struct corr_entry *host, uint32_t pid, uint32_t tid, uint64_t ts)
{
	uint64_t id = ++W.next_flow_id;

	begin_event(&W.buf);
	jbuf__lit(&W.buf, "{\"ph\":\"s\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":");
	json__u64(&W.buf, id);
	jbuf__lit(&W.buf, ",\"pid\":");
	json__u64(&W.buf, (uint32_t)gt_st.pid);
	jbuf__lit(&W.buf, ",\"tid\":");
	json__u64(&W.buf, host->tid);
	jbuf__lit(&W.buf, ",\"ts\":");
	json__us(&W.buf, host->start_ns);
	jbuf__lit(&W.buf, "}");
	begin_event(&W.buf);
	jbuf__lit(&W.buf, "{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":");
	json__u64(&W.buf, id);
	jbuf__lit(&W.buf, ",\"pid\":");
	json__u64(&W.buf, pid);
	jbuf__lit(&W.buf, ",\"tid\":");
	json__u64(&W.buf, tid);
	jbuf__lit(&W.buf, ",\"ts\":");
	json__us(&W.buf, ts);
	jbuf__lit(&W.buf, "}");
}

static void write_device(const struct gt_event *ev, const struct gt_arg *args, unsigned nargs)
{
	const struct gt_row *row = registry__track(ev->track);
	uint32_t pid, tid;

	if (!row)
		row = registry__track(gt_device_track(1));
	pid = row ? device_pid(row->device) : device_pid(0);
	tid = row ? row->tid : 0;
	if (ev->type == GT_EV_COUNTER) {
		begin_event(&W.buf);
		jbuf__lit(&W.buf, "{\"ph\":\"C\",\"name\":");
		put_sid(&W.buf, ev->name);
		jbuf__lit(&W.buf, ",\"pid\":");
		json__u64(&W.buf, pid);
		jbuf__lit(&W.buf, ",\"ts\":");
		json__us(&W.buf, ev->start_ns);
		put_args(&W.buf, args, nargs, 0);
		jbuf__ch(&W.buf, '}');
		return;
	}
	if (ev->type == GT_EV_INSTANT) {
		put_head(&W.buf, "i", ev, pid, tid);
		jbuf__lit(&W.buf, ",\"s\":\"t\"");
		put_args(&W.buf, args, nargs, ev->corr);
		jbuf__ch(&W.buf, '}');
		return;
	}
	put_head(&W.buf, "X", ev, pid, tid);
	jbuf__lit(&W.buf, ",\"dur\":");
	json__us(&W.buf, ev->end_ns > ev->start_ns ? ev->end_ns - ev->start_ns : 0);
	put_args(&W.buf, args, nargs, ev->corr);
	jbuf__ch(&W.buf, '}');
	summarize(ev, args, nargs, row ? row->device : 0);
	/* after both slices exist, so viewers bind the arrow */
	const struct corr_entry *h1 = corr_find(ev->corr), *h2 = corr_find(ev->corr2);
	if (h1)
		write_flow(h1, pid, tid, ev->start_ns);
	if (h2 && h2 != h1)
		write_flow(h2, pid, tid, ev->start_ns);
}

static bool device_ready(const struct pending *p, bool final)
{
	if (final || p->age >= PENDING_MAX_AGE)
		return true;
	return (!p->ev.corr || corr_find(p->ev.corr)) && (!p->ev.corr2 || corr_find(p->ev.corr2));
}

static void defer_device(const struct gt_event *ev, const struct gt_arg *args, unsigned nargs)
{
	if (W.npend == W.pend_cap) {
		size_t cap = W.pend_cap ? W.pend_cap * 2 : 1024;
		struct pending *p = realloc(W.pend, cap * sizeof(*p));
		if (!p) {
			write_device(ev, args, nargs); /* no memory: no arrows, no loss */
			return;
		}
		W.pend = p;
		W.pend_cap = cap;
	}
	struct pending *p = &W.pend[W.npend++];
	p->ev = *ev;
	p->ev.nargs = (uint8_t)nargs;
	memcpy(p->args, args, nargs * sizeof(*args));
	p->age = 0;
}

static void process_pending(bool final)
{
	size_t keep = 0;

	for (size_t i = 0; i < W.npend; i++) {
		struct pending *p = &W.pend[i];

		if (device_ready(p, final)) {
			write_device(&p->ev, p->args, p->ev.nargs);
		} else {
			p->age++;
			W.pend[keep++] = *p;
		}
	}
	W.npend = keep;
}

/* ---- rings ---- */

static void checkpoint(bool final);

/* set while a fork() waits for the drain cycle to end */
static _Atomic bool fork_pending;

static void drain_ring(struct ring *r)
{
	struct gt_arg args[GT_ARGS_MAX];
	uint64_t tail, n = ring__readable(r, &tail), end = tail + n;

	while (tail < end) {
		const struct gt_event *ev = ring__slot(r, tail);
		unsigned nargs = ev->nargs, nslots = 1;

		if (nargs > GT_ARGS_MAX)
			nargs = GT_ARGS_MAX;
		if (nargs)
			args[0] = ev->args[0];
		for (unsigned a = GT_ARGS_INLINE; a < nargs; a++) {
			unsigned k = a - GT_ARGS_INLINE;
			const struct gt_event *ext = ring__slot(r, tail + 1 + k / GT_ARGS_PER_EXT);
			args[a] = ((const struct gt_arg *)ext)[k % GT_ARGS_PER_EXT];
		}
		if (nargs > GT_ARGS_INLINE)
			nslots += (nargs - GT_ARGS_INLINE + GT_ARGS_PER_EXT - 1) / GT_ARGS_PER_EXT;
		switch (ev->type) {
		case GT_EV_HOST_SPAN:
			write_host(ev, args, nargs, (uint32_t)r->tid);
			break;
		case GT_EV_INSTANT:
			if (ev->flags & GT_EVF_DEVICE)
				write_device(ev, args, nargs); /* device instant */
			else
				write_host(ev, args, nargs, (uint32_t)r->tid);
			break;
		case GT_EV_COUNTER:
			write_device(ev, args, nargs);
			break;
		case GT_EV_DEVICE_SPAN:
			defer_device(ev, args, nargs);
			break;
		default:
			break;
		}
		r->recorded++;
		W.recorded++;
		tail += nslots;
		/* a fork() is waiting for this cycle: the rest is for the next one */
		if (gt_unlikely(atomic_load_explicit(&fork_pending, memory_order_relaxed)))
			break;
		/* with its trailer: a file cut here (SIGKILL) is still complete JSON */
		if (W.buf.len > FLUSH_BYTES && W.opened && !W.failed)
			checkpoint(false);
	}
	ring__consume(r, tail);
}

static void remember_dead(struct ring *r)
{
	if (W.ndead == W.dead_cap) {
		size_t cap = W.dead_cap ? W.dead_cap * 2 : 64;
		struct thread_stat *d = realloc(W.dead, cap * sizeof(*d));
		if (!d)
			return;
		W.dead = d;
		W.dead_cap = cap;
	}
	W.dead[W.ndead++] = (struct thread_stat){
		.tid = (uint32_t)r->tid,
		.serial = r->serial,
		.events = r->recorded,
		.lost = atomic_load(&r->lost),
	};
}

static void drain_rings(void)
{
	struct ring *prev = NULL, *r = atomic_load_explicit(&gt_st.rings, memory_order_acquire);

	while (r) {
		struct ring *next = r->next;
		uint64_t tail;

		/* dead is read before the last drain: nothing can follow it */
		bool dead = atomic_load_explicit(&r->dead, memory_order_acquire);
		drain_ring(r);
		if (dead && !ring__readable(r, &tail)) {
			struct ring *expect = r;

			remember_dead(r);
			if (prev) {
				prev->next = next;
			} else if (!atomic_compare_exchange_strong(&gt_st.rings, &expect, next)) {
				/* new rings were pushed in front: find our predecessor */
				struct ring *p = atomic_load(&gt_st.rings);
				while (p && p->next != r)
					p = p->next;
				if (p)
					p->next = next;
			}
			ring__free(r);
		} else {
			prev = r;
		}
		r = next;
	}
}

/* ---- file ---- */

static void output_failed(int err)
{
	/* a file we created that never held a checkpoint is no trace: leave none */
	if (W.opened && W.out.seekable && !W.out.size && W.out.path[0])
		unlink(W.out.path);
	W.failed = true;
	atomic_store(&gt_phase, GT_PHASE_OFF);
	pr_err("cannot write the trace to '%s': %s; tracing stops, the program goes on",
	       W.opened && W.out.path[0] ? W.out.path : gt_cfg.output, strerror(-err));
}

static void build_trailer(bool final);

static bool ensure_open(void)
{
	char path[PATH_MAX];
	int err;

	if (W.opened || W.failed)
		return W.opened;
	err = config__expand_output(gt_cfg.output, path, sizeof(path), gt_st.pid, gt_st.exe,
				    gt_st.anchor_realtime_ns);
	if (err) {
		/* checked at start-up, but the real program name or pid can make
		 * it too long; the default is always valid */
		config__expand_output("gputrace-%e-%p.json", path, sizeof(path), gt_st.pid,
				      gt_st.exe, gt_st.anchor_realtime_ns);
		pr_err("GPUTRACE_OUTPUT='%.100s' expands to a path longer than %d bytes; "
		       "writing %s instead", gt_cfg.output, PATH_MAX - 1, path);
	}
	err = out__open(&W.out, path);
	if (err) {
		output_failed(err);
		return false;
	}
	W.opened = true;
	static const char head[] = "{\"traceEvents\":[\n";
	struct jbuf pending = W.buf;
	bool any = W.any_event;
	W.buf = (struct jbuf){ 0 };
	W.any_event = false;
	W.ev_start = 0;
	build_trailer(false);
	err = out__paged_open(&W.out, head, sizeof(head) - 1, W.trailer.p, W.trailer.len);
	if (err) {
		jbuf__free(&pending);
		output_failed(err);
		return false;
	}
	/* The host process first, above its devices; then whatever the cycle
	 * formatted before the file existed. */
	meta(&W.buf, "process_name", (uint32_t)gt_st.pid, 0, "name", gt_st.exe, strlen(gt_st.exe), 0);
	meta(&W.buf, "process_sort_index", (uint32_t)gt_st.pid, 0, "sort_index", NULL, 0, 0);
	if (pending.len) {
		if (any)
			jbuf__lit(&W.buf, ",\n");
		jbuf__put(&W.buf, pending.p, pending.len);
	}
	jbuf__free(&pending);
	return true;
}

static void trailer_thread(struct jbuf *b, bool *first, uint32_t tid, uint64_t events,
			   uint64_t lost)
{
	if (!*first)
		jbuf__ch(b, ',');
	*first = false;
	jbuf__lit(b, "{\"tid\":");
	json__u64(b, tid);
	jbuf__lit(b, ",\"events\":");
	json__u64(b, events);
	jbuf__lit(b, ",\"lost\":");
	json__u64(b, lost);
	jbuf__ch(b, '}');
}

/* Events dropped because their thread's ring was full: live and gone threads. */
static uint64_t ring_lost(void)
{
	uint64_t n = 0;

	for (struct ring *r = atomic_load(&gt_st.rings); r; r = r->next)
		n += atomic_load(&r->lost);
	for (size_t i = 0; i < W.ndead; i++)
		n += W.dead[i].lost;
	return n;
}

static uint64_t lost_total(bool per_reason_json, struct jbuf *b)
{
	uint64_t full = ring_lost(), total = full;
	bool first = true;

	if (per_reason_json) {
		jbuf__lit(b, "{\"ring_full\":");
		json__u64(b, full);
		first = false;
	}
	for (int i = 0; i < GT_LOST_REASONS; i++) {
		uint32_t reason = atomic_load(&gt_st.lost_reason[i]);
		uint64_t n = atomic_load(&gt_st.lost_count[i]);

		if (!reason)
			break;
		total += n;
		if (per_reason_json) {
			jbuf__ch(b, first ? '{' : ',');
			first = false;
			put_sid(b, reason);
			jbuf__ch(b, ':');
			json__u64(b, n);
		}
	}
	if (per_reason_json)
		jbuf__ch(b, '}');
	return total;
}

static void build_trailer(bool final)
{
	struct jbuf *b = &W.trailer;
	const char *rank = NULL, *reason = atomic_load(&gt_end_reason);
	static const char *const rank_vars[] = { "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
						 "SLURM_PROCID" };
	char host[256];
	bool first = true;

	for (size_t i = 0; i < 4 && !rank; i++)
		if (getenv(rank_vars[i]) && *getenv(rank_vars[i]))
			rank = getenv(rank_vars[i]);
	if (gethostname(host, sizeof(host) - 1))
		strcpy(host, "localhost");
	host[sizeof(host) - 1] = 0;
	b->len = 0;
	jbuf__lit(b, "\n],\n\"displayTimeUnit\":\"ns\",\n\"gputrace\":{\"version\":\"" GPUTRACE_VERSION
		     "\",\"pid\":");
	json__u64(b, (uint32_t)gt_st.pid);
	jbuf__lit(b, ",\"exe\":");
	json__str(b, gt_st.exe, strlen(gt_st.exe));
	jbuf__lit(b, ",\"hostname\":");
	json__str(b, host, strlen(host));
	jbuf__lit(b, ",\"rank\":");
	if (rank)
		json__str(b, rank, strlen(rank));
	else
		jbuf__lit(b, "null");
	jbuf__lit(b, ",\"clock\":\"" GT_CLOCK_NAME "\",\"anchor\":{\"realtime_ns\":");
	json__u64(b, gt_st.anchor_realtime_ns);
	jbuf__lit(b, ",\"clock_ns\":");
	json__u64(b, gt_st.anchor_clock_ns);
	jbuf__lit(b, "},\"complete\":");
	if (final)
		jbuf__lit(b, "true");
	else
		jbuf__lit(b, "false");
	jbuf__lit(b, ",\"end\":");
	if (reason)
		json__str(b, reason, strlen(reason));
	else
		jbuf__lit(b, "null");
	jbuf__lit(b, ",\"events_recorded\":");
	json__u64(b, W.recorded);
	jbuf__lit(b, ",\"events_lost\":");
	struct jbuf reasons = { 0 };
	json__u64(b, lost_total(true, &reasons));
	jbuf__lit(b, ",\"lost_by_reason\":");
	jbuf__put(b, reasons.p, reasons.len);
	jbuf__free(&reasons);
	jbuf__lit(b, ",\"devices\":[");
	for (uint32_t d = 1; d <= W.devices_named; d++) {
		if (d > 1)
			jbuf__ch(b, ',');
		jbuf__lit(b, "{\"pid\":");
		json__u64(b, device_pid(d));
		jbuf__lit(b, ",\"name\":");
		put_sid(b, registry__device_name(d));
		jbuf__ch(b, '}');
	}
	jbuf__lit(b, "],\"stacks\":{\"unique\":");
	json__u64(b, stacks__count());
	jbuf__lit(b, ",\"dropped\":");
	json__u64(b, stacks__dropped());
	/* checkpoints list the first threads only: their footer must fit in
	 * one page to be rewritten in one uncut write; the last lists all */
	size_t listed = 0, total = W.ndead, limit = final ? SIZE_MAX : TRAILER_THREADS;
	jbuf__lit(b, "},\"threads\":[");
	for (struct ring *r = atomic_load(&gt_st.rings); r; r = r->next, total++)
		if (listed++ < limit)
			trailer_thread(b, &first, (uint32_t)r->tid, r->recorded,
				       atomic_load(&r->lost));
	for (size_t i = 0; i < W.ndead; i++)
		if (listed++ < limit)
			trailer_thread(b, &first, W.dead[i].tid, W.dead[i].events, W.dead[i].lost);
	jbuf__lit(b, "],\"threads_total\":");
	json__u64(b, total);
	jbuf__lit(b, "}}\n");
}

static void checkpoint(bool final)
{
	int err;

	if (W.failed)
		return;
	if (!W.opened && !final && !W.recorded && !W.npend)
		return; /* nothing yet: no file for a fork child that only execs */
	if (!ensure_open())
		return;
	if (W.out.paged) {
		/* whatever the kernel cuts of these writes, the file stays valid */
		fit_event();
		build_trailer(final);
		err = (final ? out__paged_finish : out__paged_commit)(&W.out, W.buf.p, W.buf.len,
								       W.trailer.p, W.trailer.len);
		W.buf.len = 0;
		W.ev_start = 0;
		if (err)
			output_failed(err);
		return;
	}
	err = out__append(&W.out, W.buf.p, W.buf.len);
	W.buf.len = 0;
	if (!err) {
		build_trailer(final);
		if (final && !W.out.seekable)
			err = out__append(&W.out, W.trailer.p, W.trailer.len);
		if (!err)
			err = out__checkpoint(&W.out, W.trailer.p, W.trailer.len);
		if (!err && final && W.out.gz && !W.out.seekable)
			err = out__checkpoint(&W.out, "", 0);
	}
	if (err)
		output_failed(err);
}

static void print_summary(void)
{
	uint64_t lost, full;

	if (!W.sum)
		return;
	lost = lost_total(false, NULL);
	full = ring_lost();
	if (full)
		summary__lost(W.sum, "ring_full", full);
	for (int i = 0; i < GT_LOST_REASONS && atomic_load(&gt_st.lost_reason[i]); i++)
		if (atomic_load(&gt_st.lost_count[i]))
			summary__lost(W.sum, gt_str_get(atomic_load(&gt_st.lost_reason[i]), NULL),
				      atomic_load(&gt_st.lost_count[i]));
	if (gt_cfg.summary_json[0] &&
	    summary__write_json(W.sum, gt_cfg.summary_json, W.out.path, W.out.size) < 0)
		pr_err("cannot write the summary to '%s'", gt_cfg.summary_json);
	if (gt_cfg.summary && (W.recorded || lost) && W.opened)
		summary__print(W.sum, stderr, W.out.path, W.out.size);
}

static bool rings_have_data(void)
{
	uint64_t tail;

	for (struct ring *r = atomic_load_explicit(&gt_st.rings, memory_order_acquire); r;
	     r = r->next)
		if (ring__readable(r, &tail))
			return true;
	return false;
}

void writer__cycle(bool final)
{
	uint64_t now = gt_clock_ns();

	gt_in_tracer++;
	if (now - W.last_dlopen_poll_ns > DLOPEN_POLL_NS) {
		W.last_dlopen_poll_ns = now;
		lifecycle__poll_dlopen();
	}
	/* After a crash, vendor libraries may hold locks the dead thread took. */
	if (!atomic_load(&gt_st.crashing))
		shim__backends_call(final ? GT_HOOK_FLUSH_FINAL : GT_HOOK_FLUSH, NULL, NULL);
	if (final)
		atomic_store(&gt_phase, GT_PHASE_FINISHING);
	if (atomic_load(&gt_phase) == GT_PHASE_OFF) {
		gt_in_tracer--;
		return;
	}
	/* the file exists before anything is formatted: events are placed for
	 * their offsets in it */
	if (!W.opened && !W.failed && (final || W.npend || rings_have_data()))
		ensure_open();
	if (W.opened)
		name_new_rows();
	drain_rings();
	process_pending(final);
	if (W.opened)
		name_new_rows();
	checkpoint(final);
	W.last_checkpoint_ns = now;
	if (final) {
		print_summary();
		out__close(&W.out);
		atomic_store(&gt_phase, GT_PHASE_DONE);
	}
	gt_in_tracer--;
}

/* ---- the thread ---- */

static long futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, addr, op, val, ts, NULL, 0);
}

static bool rings_high(void)
{
	for (struct ring *r = atomic_load_explicit(&gt_st.rings, memory_order_acquire); r;
	     r = r->next)
		if (ring__used(r) > (r->mask + 1) / HIGH_WATER_DIV)
			return true;
	return false;
}

static void *drain_main(void *arg)
{
	sigset_t all;

	/* Signals meant for the program go to its threads, not ours. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	atomic_store(&W.drain_tid, gt_gettid());
	gt_in_tracer = 1;
	for (;;) {
		struct timespec ts = { 0, POLL_MS * 1000000l };
		uint64_t req = atomic_load(&W.req_seq);
		bool final;

		/* no sleep while a ring is still past its high-water mark */
		if (req == atomic_load(&W.done_seq) && !rings_high())
			futex(&W.kick, FUTEX_WAIT_PRIVATE, 0, &ts);
		atomic_store(&W.kick, 0);
		req = atomic_load(&W.req_seq);
		final = atomic_load(&W.req_final);
		if (req == atomic_load(&W.done_seq) && !rings_high() &&
		    gt_clock_ns() - W.last_checkpoint_ns < gt_cfg.flush_ms * 1000000ull)
			continue;
		/* a fork() waits for the cycle lock: let it have it */
		for (unsigned spins = 0; atomic_load(&fork_pending) && spins < 1000; spins++)
			sched_yield();
		pthread_mutex_lock(&W.cycle_lock);
		gt_in_tracer = 0;
		writer__cycle(final);
		gt_in_tracer = 1;
		pthread_mutex_unlock(&W.cycle_lock);
		atomic_store(&W.done_seq, req);
		if (final || atomic_load(&gt_phase) == GT_PHASE_DONE)
			break;
	}
	atomic_store(&W.thread_running, false);
	return NULL;
}

void writer__init(void)
{
	W.sum = summary__new();
	W.last_checkpoint_ns = gt_clock_ns();
}

int writer__start_thread(void)
{
	pthread_attr_t attr;
	int err;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	atomic_store(&W.thread_running, true);
	err = pthread_create(&W.thread, &attr, drain_main, NULL);
	pthread_attr_destroy(&attr);
	if (err)
		atomic_store(&W.thread_running, false);
	return -err;
}

bool writer__is_drain_thread(void)
{
	return atomic_load(&W.drain_tid) == gt_gettid();
}

static void sleep_1ms(void)
{
	struct timespec ts = { 0, 1000000 };

	nanosleep(&ts, NULL);
}

int writer__sync(bool final, unsigned timeout_ms)
{
	uint64_t my;

	if (final)
		atomic_store(&W.req_final, true);
	my = atomic_fetch_add(&W.req_seq, 1) + 1;
	if (!atomic_load(&W.thread_running)) {
		/* no drain thread: do it here, if nobody else is */
		for (unsigned waited = 0; waited <= timeout_ms; waited++) {
			if (!pthread_mutex_trylock(&W.cycle_lock)) {
				writer__cycle(final);
				pthread_mutex_unlock(&W.cycle_lock);
				return 0;
			}
			sleep_1ms();
		}
		return -ETIMEDOUT;
	}
	atomic_store(&W.kick, 1);
	futex(&W.kick, FUTEX_WAKE_PRIVATE, 1, NULL);
	for (unsigned waited = 0; waited <= timeout_ms; waited++) {
		if (atomic_load(&W.done_seq) >= my)
			return 0;
		if (!atomic_load(&W.thread_running))
			return atomic_load(&gt_phase) == GT_PHASE_DONE ? 0 : -ETIMEDOUT;
		sleep_1ms();
	}
	return -ETIMEDOUT;
}

/* The longest fork() waits for a drain cycle to end. A cycle is normally
 * well under a millisecond; a stalled disk must not stall the program. */
#define FORK_WAIT_MS 200

/* per thread: two threads may fork at once, and the handlers of one fork
 * run on the thread that called it */
static GT_TLS bool fork_holds_cycle;

void writer__fork_prepare(void)
{
	struct timespec until;

	/* the drain thread, busy, would take the lock back at once */
	atomic_store(&fork_pending, true);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += FORK_WAIT_MS * 1000000l;
	until.tv_sec += until.tv_nsec / 1000000000l;
	until.tv_nsec %= 1000000000l;
	fork_holds_cycle = !pthread_mutex_timedlock(&W.cycle_lock, &until);
}

void writer__fork_parent(void)
{
	if (fork_holds_cycle)
		pthread_mutex_unlock(&W.cycle_lock);
	fork_holds_cycle = false;
	atomic_store(&fork_pending, false);
}

void writer__forget(void)
{
	/* The parent's file and thread are not ours: close our copy of the
	 * descriptor and start over. Nothing is freed: the parent's drain
	 * thread may have been inside a realloc of these buffers when fork()
	 * copied them, so their pointers are not to be trusted. */
	if (W.opened && W.out.fd >= 0)
		close(W.out.fd);
	memset(&W, 0, sizeof(W));
	pthread_mutex_init(&W.cycle_lock, NULL);
}

/* What the shim's life cycle calls (inject/hooks.h). */
static const struct gt_lifecycle_hooks writer_hooks = {
	.init = writer__init,
	.start = writer__start_thread,
	.sync = writer__sync,
	.fork_prepare = writer__fork_prepare,
	.fork_parent = writer__fork_parent,
	.forget = writer__forget,
	.is_own_thread = writer__is_drain_thread,
};
GT_LIFECYCLE_HOOKS(writer_hooks);
