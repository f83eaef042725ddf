/* SPDX-License-Identifier: MIT */
/* The per-thread ring: order, wraparound, drops when full, and exact
 * conservation (recorded + lost = produced) with 16 producers. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "inject/config.h"
#include "inject/pages.h"
#include "inject/ring.h"
#include "unit.h"

static struct ring *small_ring(void)
{
	struct ring *r = ring__new(64 * sizeof(struct gt_event), 1, 1);

	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(r->mask + 1, 64);
	return r;
}

static int produce(struct ring *r, uint64_t value, unsigned nslots)
{
	bool wake;
	int64_t seq = ring__reserve(r, nslots, &wake);

	if (seq < 0)
		return -1;
	for (unsigned i = 0; i < nslots; i++) {
		ring__slot(r, (uint64_t)seq + i)->start_ns = value;
		ring__slot(r, (uint64_t)seq + i)->corr = nslots;
	}
	ring__publish(r, (uint64_t)seq + nslots);
	return 0;
}

START_TEST(test_wraparound_keeps_order)
{
	struct ring *r = small_ring();
	uint64_t next = 0, expect = 0, tail;

	/* 5 rounds of 40: the indices wrap the 64-slot ring several times */
	for (int round = 0; round < 5; round++) {
		for (int i = 0; i < 40; i++)
			ck_assert_int_eq(produce(r, next++, 1), 0);
		uint64_t n = ring__readable(r, &tail);
		ck_assert_uint_eq(n, 40);
		for (uint64_t i = 0; i < n; i++)
			ck_assert_uint_eq(ring__slot(r, tail + i)->start_ns, expect++);
		ring__consume(r, tail + n);
	}
	ck_assert_uint_eq(expect, 200);
	ring__free(r);
}
END_TEST

START_TEST(test_full_ring_drops)
{
	struct ring *r = small_ring();
	int stored = 0, dropped = 0;
	uint64_t tail;

	for (int i = 0; i < 100; i++) {
		if (produce(r, (uint64_t)i, 1))
			dropped++;
		else
			stored++;
	}
	ck_assert_int_eq(stored, 64);
	ck_assert_int_eq(dropped, 36);
	/* the first 64 are there, not the last */
	ck_assert_uint_eq(ring__readable(r, &tail), 64);
	ck_assert_uint_eq(ring__slot(r, tail + 63)->start_ns, 63);
	/* a multi-slot record never goes in half: 2 free slots, 3 wanted */
	ring__consume(r, tail + 2);
	ck_assert_int_eq(produce(r, 1000, 3), -1);
	ck_assert_int_eq(produce(r, 1001, 2), 0);
	ring__free(r);
}
END_TEST

/* The producer's seq of its next event, and whether it is to wake the drain. */
static uint64_t produce_one(struct ring *r, bool *wake)
{
	int64_t seq = ring__reserve(r, 1, wake);

	ck_assert_int_ge(seq, 0);
	ring__publish(r, (uint64_t)seq + 1);
	return (uint64_t)seq;
}

/* The drain is woken when a quarter of the ring waits for it: at first, and
 * again after it caught up and went back to sleep (not only once the ring
 * looks full from the tail seen at the last wake, with a quarter left). */
START_TEST(test_wake_when_a_quarter_waits)
{
	struct ring *r = ring__new(1024 * sizeof(struct gt_event), 1, 1);
	uint64_t seq, tail, woke_at = 0;
	bool wake;

	ck_assert_ptr_nonnull(r);
	for (int i = 0; i < 300; i++) {
		seq = produce_one(r, &wake);
		if (wake && !woke_at)
			woke_at = seq + 1;
	}
	ck_assert_uint_eq(woke_at, 257); /* the event past a quarter */
	/* the drain catches up, and sleeps */
	ring__consume(r, tail = 300);
	woke_at = 0;
	for (int i = 0; i < 1000 && !woke_at; i++) {
		seq = produce_one(r, &wake);
		if (wake)
			woke_at = seq + 1;
	}
	ck_assert_uint_eq(woke_at, tail + 256 + 1);
	ring__free(r);
}
END_TEST

#define PRODUCERS 16
#define PER_PRODUCER 1000000

struct producer {
	struct ring *ring;
	uint64_t produced, lost;
	_Atomic int done;
	uint64_t received, last_value, out_of_order;
};

static void *producer_main(void *arg)
{
	struct producer *p = arg;

	for (uint64_t i = 1; i <= PER_PRODUCER; i++) {
		/* every 7th record spans 3 slots, like an event with many args */
		unsigned nslots = i % 7 ? 1 : 3;
		/* a little work between events, as a traced call has */
		for (volatile int spin = 0; spin < 40; spin++)
			;
		p->produced++;
		if (produce(p->ring, i, nslots))
			p->lost++;
	}
	atomic_store(&p->done, 1);
	return NULL;
}

/* Pages of the ring's slots in memory now (mincore). */
static size_t resident_pages(struct ring *r)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t n = (r->mask + 1) * sizeof(struct gt_event) / page, in = 0;
	unsigned char vec[4096];

	ck_assert_uint_le(n, sizeof(vec));
	ck_assert_int_eq(mincore(r->slots, n * page, vec), 0);
	for (size_t i = 0; i < n; i++)
		in += vec[i] & 1;
	return in;
}

/* A busy thread's ring is faulted in by the drain (ring__populate), a quiet one's not:
 * its producer takes no page fault per 64 events on its first lap. */
START_TEST(test_busy_ring_populated_by_the_drain)
{
	struct ring *r = ring__new(4u << 20, 1, 1);
	size_t pages = (r->mask + 1) * sizeof(struct gt_event) / (size_t)sysconf(_SC_PAGESIZE);
	int rc;

	ck_assert_ptr_nonnull(r);
	for (unsigned i = 0; i < RING_POPULATE_AFTER - 1; i++)
		ck_assert_int_eq(produce(r, i, 1), 0);
	/* quiet so far: only what it wrote is in */
	ck_assert_int_eq(ring__populate(r), 0);
	ck_assert_uint_le(resident_pages(r), RING_POPULATE_AFTER * sizeof(struct gt_event) /
						    (size_t)sysconf(_SC_PAGESIZE) + 1);
	ck_assert_int_eq(produce(r, 0, 1), 0);
	rc = ring__populate(r);
	if (rc == -EINVAL) {	/* a kernel before 5.14: nothing to check */
		ring__free(r);
		return;
	}
	ck_assert_int_eq(rc, 1);
	ck_assert_uint_eq(resident_pages(r), pages);
	/* once */
	ck_assert_int_eq(ring__populate(r), 0);
	/* the contents are the producer's still */
	ck_assert_uint_eq(ring__slot(r, 5)->start_ns, 5);
	ring__free(r);
}
END_TEST

/* A transparent huge pages mode ("always", "madvise", "never", "inherit") from one of
 * the kernel's files, "" if there is none. */
static const char *thp_mode_in(const char *path)
{
	static char mode[16];
	char line[128], *open, *close;
	FILE *f = fopen(path, "r");

	mode[0] = 0;
	if (f && fgets(line, sizeof(line), f) && (open = strchr(line, '[')) &&
	    (close = strchr(open, ']')) && close - open - 1 < (long)sizeof(mode)) {
		memcpy(mode, open + 1, (size_t)(close - open - 1));
		mode[close - open - 1] = 0;
	}
	if (f)
		fclose(f);
	return mode;
}

/* "always" or "madvise" when this process may have 2 MiB pages for memory it advises;
 * else why not. */
static const char *thp_mode(void)
{
	const char *size = thp_mode_in("/sys/kernel/mm/transparent_hugepage/hugepages-2048kB/"
				       "enabled");

	if (prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) > 0)
		return "off for this process (PR_SET_THP_DISABLE)";
	/* Linux 6.8 on: each size has its own, which may inherit the top one */
	if (!strcmp(size, "never"))
		return "never for 2 MiB";
	if (!strcmp(size, "always") || !strcmp(size, "madvise"))
		return size;
	return thp_mode_in("/sys/kernel/mm/transparent_hugepage/enabled");
}

/* A line of /proc/self/smaps for the mapping that holds p ("THPeligible:"): its number,
 * -1 when the kernel does not report it. */
static long smaps_field(const void *p, const char *field)
{
	char line[256];
	unsigned long lo, hi;
	bool in = false;
	long v = -1;
	FILE *f = fopen("/proc/self/smaps", "r");

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
			in = lo <= (uintptr_t)p && (uintptr_t)p < hi;
		else if (in && !strncmp(line, field, strlen(field)))
			v = strtol(line + strlen(field), NULL, 10);
	}
	fclose(f);
	return v;
}

static long minor_faults(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

/* A busy thread's ring is in 2 MiB pages where the kernel has transparent huge pages
 * (inject/pages.c): its slots from RING_POPULATE_AFTER on start on a 2 MiB boundary,
 * in a mapping the kernel may give huge pages, and the drain faults in the 4 MiB ring
 * with a handful of faults, not 1008. The quiet part before stays in 4 KiB pages: a
 * thread that records one call does not cost 2 MiB. */
START_TEST(test_busy_part_of_a_ring_in_huge_pages)
{
	struct ring *r = ring__new(4u << 20, 1, 1);
	const char *mode = thp_mode();
	long faults, huge_kb;
	int rc;

	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq((uintptr_t)&r->slots[RING_POPULATE_AFTER] % GT_HUGE_PAGE, 0);
	ck_assert_uint_ge(r->map_bytes, RING_PAGE + (r->mask + 1) * sizeof(struct gt_event));
	if (strcmp(mode, "always") && strcmp(mode, "madvise")) {
		fprintf(stderr, "check_ring: transparent huge pages are \"%s\" here: the ring's "
				"2 MiB pages are not checked\n", mode);
		ring__free(r);
		return;
	}
	if (smaps_field(&r->slots[RING_POPULATE_AFTER], "THPeligible:") < 0) {
		fprintf(stderr, "check_ring: no THPeligible in /proc/self/smaps (a kernel before "
				"5.0?): the ring's 2 MiB pages are not checked\n");
		ring__free(r);
		return;
	}
	ck_assert_int_eq(smaps_field(&r->slots[RING_POPULATE_AFTER], "THPeligible:"), 1);
	if (!strcmp(mode, "madvise"))
		ck_assert_int_eq(smaps_field(r->slots, "THPeligible:"), 0);
	for (unsigned i = 0; i < RING_POPULATE_AFTER; i++)
		ck_assert_int_eq(produce(r, i, 1), 0);
	faults = minor_faults();
	rc = ring__populate(r);
	faults = minor_faults() - faults;
	if (rc == -EINVAL) {	/* a ThreadSanitizer build on a kernel before 5.14 */
		ring__free(r);
		return;
	}
	ck_assert_int_eq(rc, 1);
	huge_kb = smaps_field(&r->slots[RING_POPULATE_AFTER], "AnonHugePages:");
	if (huge_kb < 4096) {
		/* no free 2 MiB of memory to give (fragmented): the kernel's choice */
		fprintf(stderr, "check_ring: the kernel gave the ring %ld KiB of huge pages, "
				"not 4096: its faults (%ld) are not checked\n", huge_kb, faults);
	} else {
		long most = 8;
#if defined(__SANITIZE_ADDRESS__)
		/* and AddressSanitizer's shadow of the slots: an eighth of them, in 4 KiB pages */
		most += (long)((r->mask + 1) * sizeof(struct gt_event) / 8 / RING_PAGE);
#endif
		ck_assert_int_le(faults, most);
	}
	ck_assert_uint_eq(ring__slot(r, 5)->start_ns, 5);
	ring__free(r);
}
END_TEST

/* A big ring is faulted in as it fills, RING_POPULATE_AHEAD slots ahead, not at once. */
START_TEST(test_big_ring_populated_ahead_only)
{
	struct ring *r = ring__new(16u << 20, 1, 1);
	size_t page = (size_t)sysconf(_SC_PAGESIZE), per_page = page / sizeof(struct gt_event);
	size_t ahead = RING_POPULATE_AHEAD / per_page;

	ck_assert_ptr_nonnull(r);
	for (unsigned i = 0; i < RING_POPULATE_AFTER; i++)
		ck_assert_int_eq(produce(r, i, 1), 0);
	if (ring__populate(r) == -EINVAL) {
		ring__free(r);
		return;
	}
	ck_assert_uint_eq(resident_pages(r), RING_POPULATE_AFTER / per_page + ahead);
	for (unsigned i = 0; i < 2 * RING_POPULATE_AHEAD; i++)
		ck_assert_int_eq(produce(r, i, 1), 0);
	ck_assert_int_eq(ring__populate(r), 1);
	ck_assert_uint_eq(resident_pages(r), (RING_POPULATE_AFTER + 3 * RING_POPULATE_AHEAD) /
						     per_page);
	ring__free(r);
}
END_TEST

/* A last cycle gives the pages it read back to the kernel before the slots go back to
 * the producer (ring__release): whole pages only, across the ring's end, and the slots
 * still to read keep their contents. */
START_TEST(test_release_gives_read_pages_back)
{
	struct ring *r = ring__new(64 * 4096, 1, 1); /* 4096 slots, 64 pages */
	size_t per_page = (size_t)sysconf(_SC_PAGESIZE) / sizeof(struct gt_event);
	uint64_t cap = r->mask + 1, tail, n;

	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(per_page, 64);
	/* a lap and a half: the last 2048 slots written sit in pages 0-31 */
	for (uint64_t i = 0; i < cap; i++)
		ck_assert_int_eq(produce(r, i, 1), 0);
	ring__consume(r, cap);
	for (uint64_t i = cap; i < cap + cap / 2; i++)
		ck_assert_int_eq(produce(r, i, 1), 0);
	ck_assert_uint_eq(resident_pages(r), 64);
	n = ring__readable(r, &tail);
	ck_assert_uint_eq(n, cap / 2);
	/* nothing whole to give back: hand back what was read */
	ck_assert_uint_eq(ring__release(r, tail, tail + 63), tail + 63);
	ck_assert_uint_eq(ring__release(r, tail + 10, tail + 100), tail + 100);
	ck_assert_uint_eq(resident_pages(r), 64);
	/* from mid-page: that page stays (the producer may write its first part) */
	ck_assert_uint_eq(ring__release(r, tail + 10, tail + 1000), tail + 960);
	ck_assert_uint_eq(resident_pages(r), 64 - 14);
	ck_assert_uint_eq(ring__slot(r, tail + 5)->start_ns, tail + 5);
	ck_assert_uint_eq(ring__slot(r, tail + 960)->start_ns, tail + 960);
	ck_assert_uint_eq(ring__slot(r, tail + 2047)->start_ns, tail + 2047);
	ring__free(r);

	/* across the ring's end: the pages at its end and at its start */
	r = ring__new(64 * 4096, 1, 1);
	for (uint64_t i = 0; i < cap / 2; i++)
		ck_assert_int_eq(produce(r, i, 1), 0);
	ring__consume(r, cap / 2);
	for (uint64_t i = cap / 2; i < cap + cap / 4; i++)
		ck_assert_int_eq(produce(r, i, 1), 0);
	ck_assert_uint_eq(ring__release(r, cap - 128, cap + 128), cap + 128);
	ck_assert_uint_eq(resident_pages(r), 64 - 4);
	ck_assert_uint_eq(ring__slot(r, cap - 129)->start_ns, cap - 129);
	ck_assert_uint_eq(ring__slot(r, cap + 128)->start_ns, cap + 128);
	/* a page given back reads as zeros, and the producer's next lap writes it anew */
	ck_assert_uint_eq(ring__slot(r, cap)->start_ns, 0);
	ring__free(r);
}
END_TEST

/* A big ring's slots past its first RING_POPULATE_AFTER lie in 2 MiB pages (pages.c):
 * they go back whole, a part of one stays for the next call (given back in part, one is
 * split, and khugepaged may collapse it whole again), and the ring's last one goes back
 * with the mapping's unused rest. */
START_TEST(test_release_gives_whole_2mib_pages_back)
{
	struct ring *r = ring__new(8 << 20, 1, 1); /* 131072 slots, 2048 pages */
	const uint64_t per_huge = GT_HUGE_PAGE / sizeof(struct gt_event);
	const uint64_t huge1 = RING_POPULATE_AFTER + per_huge, huge2 = huge1 + per_huge;
	uint64_t cap, tail, per_page = (uint64_t)sysconf(_SC_PAGESIZE) / sizeof(struct gt_event);

	ck_assert_ptr_nonnull(r);
	cap = r->mask + 1;
	for (uint64_t i = 0; i < cap; i++)
		ck_assert_int_eq(produce(r, i, 1), 0);
	ck_assert_uint_eq(ring__readable(r, &tail), cap);
	ck_assert_uint_eq(tail, 0);
	ck_assert_uint_eq(resident_pages(r), cap / per_page);
	/* the 4 KiB pages and the first 2 MiB one, not the start of the second */
	ck_assert_uint_eq(ring__release(r, 0, huge1 + 1000), huge1);
	ck_assert_uint_eq(resident_pages(r), (cap - huge1) / per_page);
	/* less than a 2 MiB page: nothing, the slots keep their contents */
	ck_assert_uint_eq(ring__release(r, huge1, huge2 - 1), huge2 - 1);
	ck_assert_uint_eq(resident_pages(r), (cap - huge1) / per_page);
	/* from inside one: from the next on, to the ring's end */
	ck_assert_uint_eq(ring__release(r, huge1 + 10, cap), cap);
	ck_assert_uint_eq(resident_pages(r), per_huge / per_page);
	ck_assert_uint_eq(ring__slot(r, huge1 + 10)->start_ns, huge1 + 10);
	ck_assert_uint_eq(ring__slot(r, huge2 - 1)->start_ns, huge2 - 1);
	ck_assert_uint_eq(ring__slot(r, huge2)->start_ns, 0);
	ring__free(r);
}
END_TEST

START_TEST(test_conservation_16_threads)
{
	static struct producer prod[PRODUCERS];
	pthread_t th[PRODUCERS];
	int done = 0;

	for (int i = 0; i < PRODUCERS; i++) {
		/* small rings so both drops and wraparound happen */
		prod[i] = (struct producer){ .ring = ring__new(4096 * 64, i + 1, i + 1) };
		pthread_create(&th[i], NULL, producer_main, &prod[i]);
	}
	while (done < PRODUCERS) {
		done = 0;
		for (int i = 0; i < PRODUCERS; i++) {
			struct producer *p = &prod[i];
			bool finished = atomic_load(&p->done);
			uint64_t tail, n = ring__readable(p->ring, &tail), end = tail + n;

			while (tail < end) {
				uint64_t v = ring__slot(p->ring, tail)->start_ns;
				unsigned nslots = v % 7 ? 1 : 3;
				for (unsigned k = 1; k < nslots; k++)
					ck_assert_uint_eq(ring__slot(p->ring, tail + k)->start_ns, v);
				if (v <= p->last_value)
					p->out_of_order++;
				p->last_value = v;
				p->received++;
				tail += nslots;
			}
			ring__consume(p->ring, end);
			if (finished && !ring__readable(p->ring, &tail))
				done++;
		}
	}
	uint64_t total_lost = 0;
	for (int i = 0; i < PRODUCERS; i++) {
		pthread_join(th[i], NULL);
		ck_assert_uint_eq(prod[i].produced, PER_PRODUCER);
		ck_assert_uint_eq(prod[i].received + prod[i].lost, PER_PRODUCER);
		ck_assert_uint_eq(prod[i].out_of_order, 0);
		total_lost += prod[i].lost;
		ring__free(prod[i].ring);
	}
	/* the consumer cannot keep up with 16 producers on these rings, and
	 * yet most events pass: both paths were exercised */
	ck_assert_uint_gt(total_lost, 0);
	ck_assert_uint_lt(total_lost, (uint64_t)PRODUCERS * PER_PRODUCER);
}
END_TEST


/* The producer's order of trying, as emit_slow (inject/shim.c) has it: the
 * overflow while overflowing, else the ring, else the overflow. Each slot of a
 * record holds the record's value. */
static int produce_any(struct ring *r, uint64_t value, unsigned nslots)
{
	struct gt_event *e;
	bool wake;

	if (atomic_load(&r->overflowing)) {
		if ((e = ring__overflow_reserve(r, nslots, &wake))) {
			for (unsigned i = 0; i < nslots; i++)
				e[i] = (struct gt_event){ .start_ns = value, .corr = nslots };
			ring__overflow_publish(r, nslots);
			return 0;
		}
		if (atomic_load(&r->overflowing))
			return -1;
	}
	if (!produce(r, value, nslots))
		return 0;
	if (!(e = ring__overflow_reserve(r, nslots, &wake)))
		return -1;
	for (unsigned i = 0; i < nslots; i++)
		e[i] = (struct gt_event){ .start_ns = value, .corr = nslots };
	ring__overflow_publish(r, nslots);
	return 0;
}

struct ovf_state {
	uint64_t next, received, bad;
};

/* One record at slots[at & mask]: its value must be the next one. */
static unsigned take(struct ovf_state *st, const struct gt_event *slots, uint64_t mask,
		     uint64_t at)
{
	uint64_t v = slots[at & mask].start_ns;
	unsigned nslots = (unsigned)slots[at & mask].corr;

	for (unsigned k = 1; k < nslots; k++)
		if (slots[(at + k) & mask].start_ns != v)
			st->bad++;
	if (v != st->next)
		st->bad++;
	st->next = v + 1;
	st->received++;
	return nslots;
}

/* The consumer's order, as drain_ring (writer/drain.c) has it: the ring to its
 * end, then what of the overflow may be read, then the ring again. */
static void consume_any(struct ring *r, struct ovf_state *st)
{
	for (;;) {
		uint64_t tail, n = ring__readable(r, &tail), end = tail + n, at;
		struct ring_seg *seg;

		while (tail < end)
			tail += take(st, r->slots, r->mask, tail);
		ring__consume(r, tail);
		n = ring__overflow_readable(r, tail, &seg, &at);
		if (!n)
			return;
		for (end = at + n; at < end;)
			at += take(st, seg->slots, ~0ull, at);
		ring__overflow_consume(r, seg, at);
	}
}

START_TEST(test_overflow_keeps_order_and_loses_nothing)
{
	struct ring *r = small_ring();
	struct ovf_state st = { 0 };
	uint64_t now, peak, segs;

	gt_cfg.overflow_mb = 64;
	/* 3 bursts of 20000 records into a 64-slot ring, read after each: the ring
	 * fills, the rest goes to segments (several: 4096 slots each), all read in
	 * order; between bursts the producer is back on the ring */
	for (uint64_t v = 0, burst = 0; burst < 3; burst++) {
		for (int i = 0; i < 20000; i++, v++)
			ck_assert_int_eq(produce_any(r, v, v % 5 ? 1 : 3), 0);
		ck_assert(atomic_load(&r->overflowing));
		consume_any(r, &st);
		ck_assert_uint_eq(st.received, v);
		/* read to its end: the next record goes to the ring again */
		ck_assert_int_eq(produce_any(r, v, v % 5 ? 1 : 3), 0);
		ck_assert(!atomic_load(&r->overflowing));
		v++;
		consume_any(r, &st);
	}
	ck_assert_uint_eq(st.bad, 0);
	ck_assert_uint_eq(st.received, 60003);
	/* read segments are given back; the newest stays, its read pages returned */
	ring__overflow_stats(&now, &peak, &segs);
	ck_assert_uint_ge(segs, 6);
	ck_assert_uint_eq(now, 4096 + 4096 * sizeof(struct gt_event));
	ck_assert_uint_le(peak, 64u << 20);
	ring__free(r);
	ring__overflow_stats(&now, &peak, &segs);
	ck_assert_uint_eq(now, 0);
	ring__overflow_forget();
}
END_TEST

/* An overflow of a big ring is over: its newest segment, in 2 MiB pages where the kernel
 * has them, keeps none of the pages read (a part of a 2 MiB page is given back too);
 * what stays is the rest of the 2 MiB page the producer would write on into. */
START_TEST(test_an_overflow_that_is_over_keeps_no_memory)
{
	struct ring *r = ring__new(4u << 20, 1, 1);
	struct ovf_state st = { 0 };
	uint64_t cap = r->mask + 1, v = 0;
	size_t page = (size_t)sysconf(_SC_PAGESIZE), in = 0, n;
	unsigned char *vec;
	struct ring_seg *seg;

	ck_assert_ptr_nonnull(r);
	gt_cfg.overflow_mb = 64;
	for (; v < cap + 40000; v++)
		ck_assert_int_eq(produce_any(r, v, 1), 0);
	ck_assert(atomic_load(&r->overflowing));
	consume_any(r, &st);
	/* back to the ring */
	ck_assert_int_eq(produce_any(r, v++, 1), 0);
	ck_assert(!atomic_load(&r->overflowing));
	consume_any(r, &st);
	ck_assert_uint_eq(st.received, v);
	ck_assert_uint_eq(st.bad, 0);
	seg = r->seg_write;
	ck_assert_ptr_nonnull(seg);
	n = seg->cap * sizeof(struct gt_event) / page;
	vec = malloc(n);
	ck_assert_ptr_nonnull(vec);
	ck_assert_int_eq(mincore(seg->slots, n * page, vec), 0);
	/* from the page the last read slot is on to the end of its 2 MiB page at most */
	for (size_t i = 0; i < n; i++) {
		size_t at = i * page, from = atomic_load(&seg->tail) * sizeof(struct gt_event) /
					     page * page;

		if (vec[i] & 1) {
			in++;
			ck_assert_uint_ge(at, from);
			ck_assert_uint_lt(at, (from / GT_HUGE_PAGE + 1) * GT_HUGE_PAGE);
		}
	}
	free(vec);
	ck_assert_uint_le(in, GT_HUGE_PAGE / page);
	ring__free(r);
	ring__overflow_forget();
}
END_TEST

/* A producer that goes idle after a burst, its overflow read: the drain gives the
 * spare segment back (a ring's worth, written) once the producer wrote nothing for a
 * while, without its next call. Only that call gave it back: a thread that made none
 * kept it for good. */
START_TEST(test_an_idle_overflow_keeps_no_spare)
{
	struct ring *r = small_ring();
	struct ovf_state st = { 0 };
	uint64_t now, peak, segs, seg = 4096 + 4096 * sizeof(struct gt_event);
	struct timespec pause = { 0, 30000000 };

	gt_cfg.overflow_mb = 64;
	for (uint64_t v = 0; v < 20000; v++)
		ck_assert_int_eq(produce_any(r, v, 1), 0);
	consume_any(r, &st);
	ck_assert_uint_eq(st.received, 20000);
	/* just read: the newest and the spare */
	ring__overflow_stats(&now, &peak, &segs);
	ck_assert_uint_eq(now, 2 * seg);
	ck_assert_ptr_nonnull(atomic_load(&r->seg_spare));
	nanosleep(&pause, NULL);
	consume_any(r, &st);
	ring__overflow_stats(&now, &peak, &segs);
	ck_assert_uint_eq(now, seg);
	ck_assert_ptr_null(atomic_load(&r->seg_spare));
	/* the producer's next record ends its overflow, and order holds */
	ck_assert_int_eq(produce_any(r, 20000, 1), 0);
	ck_assert(!atomic_load(&r->overflowing));
	consume_any(r, &st);
	ck_assert_uint_eq(st.received, 20001);
	ck_assert_uint_eq(st.bad, 0);
	ring__free(r);
	ring__overflow_stats(&now, &peak, &segs);
	ck_assert_uint_eq(now, 0);
	ring__overflow_forget();
}
END_TEST

/* n records offered, each the count stored so far: those stored, *dropped the rest. */
static uint64_t produce_counting(struct ring *r, uint64_t n, uint64_t *dropped)
{
	uint64_t stored = 0;

	*dropped = 0;
	for (uint64_t v = 0; v < n; v++) {
		if (produce_any(r, stored, 1))
			(*dropped)++;
		else
			stored++;
	}
	return stored;
}

START_TEST(test_overflow_budget_then_drops)
{
	struct ring *r = small_ring();
	struct ovf_state st = { 0 };
	uint64_t stored, dropped, now, peak, segs;

	gt_cfg.overflow_mb = 1; /* 3 segments of 4096 slots (and their header pages) */
	stored = produce_counting(r, 20000, &dropped);
	ring__overflow_stats(&now, &peak, &segs);
	ck_assert_uint_eq(segs, 3);
	ck_assert_uint_le(peak, 1u << 20);
	ck_assert_uint_eq(stored, 64 + 3 * 4096);
	ck_assert_uint_eq(dropped, 20000 - stored);
	consume_any(r, &st);
	ck_assert_uint_eq(st.received, stored);
	ck_assert_uint_eq(st.bad, 0);
	/* off: a full ring drops at once */
	gt_cfg.overflow_mb = 0;
	ring__free(r);
	ring__overflow_forget();
	r = small_ring();
	for (uint64_t v = 0; v < 100; v++)
		produce_any(r, v, 1);
	ck_assert_ptr_null(atomic_load(&r->seg_read));
	ring__free(r);
}
END_TEST

/* A budget below one segment of the ring's size (a 4 MiB ring's is 4 MiB and
 * its header page) still overflows: into smaller segments, two or more of which
 * it holds. It held none: --overflow-mb 1 to 4 with the default rings was off. */
START_TEST(test_a_budget_below_the_ring_still_overflows)
{
	struct ring *r = ring__new(4u << 20, 1, 1);
	struct ovf_state st = { 0 };
	uint64_t cap, stored, dropped, now, peak, segs;

	ck_assert_ptr_nonnull(r);
	cap = r->mask + 1;
	gt_cfg.overflow_mb = 1; /* 3 segments of 4096 slots (and their header pages) */
	stored = produce_counting(r, cap + 20000, &dropped);
	ring__overflow_stats(&now, &peak, &segs);
	ck_assert_uint_eq(segs, 3);
	ck_assert_uint_le(peak, 1u << 20);
	ck_assert_uint_eq(stored, cap + 3 * 4096);
	ck_assert_uint_eq(dropped, cap + 20000 - stored);
	consume_any(r, &st);
	ck_assert_uint_eq(st.received, stored);
	ck_assert_uint_eq(st.bad, 0);
	ring__free(r);
	ring__overflow_forget();
	/* 4 MiB: three segments of 1 MiB (two of 2 MiB and their pages would not fit) */
	r = ring__new(4u << 20, 1, 1);
	gt_cfg.overflow_mb = 4;
	for (uint64_t v = 0; v < cap + 65536; v++)
		produce_any(r, v, 1);
	ring__overflow_stats(&now, &peak, &segs);
	ck_assert_uint_eq(segs, 3);
	ck_assert_uint_eq(peak, 3 * (4096 + (1u << 20)));
	ring__free(r);
	ring__overflow_forget();
	gt_cfg.overflow_mb = GT_OVERFLOW_MB_DEFAULT;
}
END_TEST

#define OVF_RECORDS 2000000

static void *overflow_producer(void *arg)
{
	struct ring *r = arg;

	for (uint64_t v = 0; v < OVF_RECORDS;)
		if (!produce_any(r, v, v % 5 ? 1 : 3))
			v++;
		else
			sched_yield(); /* the budget is out: the consumer frees some */
	return NULL;
}

/* A producer and a consumer at once: the ring, the overflow and the way back
 * race, and order and count still hold (run under ThreadSanitizer too). */
START_TEST(test_overflow_concurrent_order)
{
	struct ring *r = small_ring();
	struct ovf_state st = { 0 };
	uint64_t now, peak, segs;
	pthread_t th;

	gt_cfg.overflow_mb = 4;
	pthread_create(&th, NULL, overflow_producer, r);
	while (st.received < OVF_RECORDS) {
		consume_any(r, &st);
		if (st.bad)
			break;
	}
	pthread_join(th, NULL);
	ck_assert_uint_eq(st.bad, 0);
	ck_assert_uint_eq(st.received, OVF_RECORDS);
	ring__overflow_stats(&now, &peak, &segs);
	ck_assert_uint_gt(segs, 0); /* it overflowed */
	ck_assert_uint_le(peak, 4u << 20);
	ring__free(r);
	ring__overflow_forget();
	gt_cfg.overflow_mb = GT_OVERFLOW_MB_DEFAULT;
}
END_TEST

static Suite *ring_suite(void)
{
	Suite *s = suite_create("ring");
	TCase *tc = tcase_create("ring");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_wraparound_keeps_order);
	tcase_add_test(tc, test_full_ring_drops);
	tcase_add_test(tc, test_wake_when_a_quarter_waits);
	tcase_add_test(tc, test_busy_ring_populated_by_the_drain);
	tcase_add_test(tc, test_big_ring_populated_ahead_only);
	tcase_add_test(tc, test_busy_part_of_a_ring_in_huge_pages);
	tcase_add_test(tc, test_release_gives_read_pages_back);
	tcase_add_test(tc, test_release_gives_whole_2mib_pages_back);
	tcase_add_test(tc, test_conservation_16_threads);
	tcase_add_test(tc, test_overflow_keeps_order_and_loses_nothing);
	tcase_add_test(tc, test_overflow_budget_then_drops);
	tcase_add_test(tc, test_an_idle_overflow_keeps_no_spare);
	tcase_add_test(tc, test_a_budget_below_the_ring_still_overflows);
	tcase_add_test(tc, test_an_overflow_that_is_over_keeps_no_memory);
	tcase_add_test(tc, test_overflow_concurrent_order);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(ring_suite)
