/* SPDX-License-Identifier: MIT */
/*
 * bench_core: the tracer's core (rings, drain thread, JSON writer) linked in
 * statically, no interposition, timed from inside.
 *
 *   bench_core emit <trace> <threads> <calls> [burst] [pause_us]
 *	What a wrapper does around the real call, per call: a correlation id,
 *	two clock reads, one gt_emit of a host span with one argument. The
 *	drain thread writes <trace> meanwhile. Compare with bench_floor.
 *
 *   bench_core drain <trace> <threads> <events> [rounds]
 *	Fill the rings from <threads> threads with <events> host spans in all
 *	(no drain yet: the rings stay under their high-water mark and the flush
 *	interval is long), then time the one drain cycle that turns them into
 *	JSON in <trace> (a ".gz" name compresses), then time plain write() of
 *	the same number of bytes to <trace>.raw, in the drain's 1 MiB pieces.
 *	cpu_ms: the CPU the best cycle took, its drain and (a .gz) output threads
 *	together (beside drain_ms: how many cores the machine gave them).
 *	For a .gz trace the bytes are the compressed ones: compare its time with
 *	the raw write of the uncompressed run's bytes. A device (/dev/null) as
 *	<trace> measures the formatting alone (nothing is unlinked or written
 *	beside it).
 *
 *   bench_core dead <trace> <exited> [cycles]
 *	<exited> threads record one event each and exit, and are drained;
 *	then the median time of <cycles> drain cycles of one event each (a
 *	checkpoint every cycle). Compare 0 with many: a cycle must not cost
 *	more for the threads that have gone.
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "inject/clock.h"
#include "inject/event.h"
#include "inject/shim.h"
#include "writer/writer.h"

/* The tracer stays off until main starts it (see gt_constructor). */
int gt_unit_test = 1;
void gt_test_start(char *const *envp);

#define NAMES 8
static const char *const api_names[NAMES] = {
	"zeDriverGetApiVersion", "zeCommandListAppendLaunchKernel", "zeEventHostSynchronize",
	"zeCommandQueueExecuteCommandLists", "zeCommandListAppendMemoryCopy", "zeEventQueryStatus",
	"zeKernelSetArgumentValue", "zeCommandListReset",
};
static uint32_t name_ids[NAMES];

static unsigned long calls, burst, pause_us;
static pthread_barrier_t start_line;
static struct bench_time *times;
static _Atomic uint64_t dropped;

static bool is_regular(const char *path)
{
	struct stat st;

	return stat(path, &st) || S_ISREG(st.st_mode); /* absent: will be a file */
}

static void start_tracer(const char *trace, size_t buffer_kb, unsigned flush_ms)
{
	static char out[4200], buf[64], flush[64];
	char *env[] = { out, "GPUTRACE_SUMMARY=0", buf, flush, NULL };

	if (is_regular(trace))
		unlink(trace); /* never a device: /dev/null measures formatting alone */
	snprintf(out, sizeof(out), "GPUTRACE_OUTPUT=%s", trace);
	snprintf(buf, sizeof(buf), "GPUTRACE_BUFFER_KB=%zu", buffer_kb);
	snprintf(flush, sizeof(flush), "GPUTRACE_FLUSH_MS=%u", flush_ms);
	gt_test_start(env);
	for (int i = 0; i < NAMES; i++)
		name_ids[i] = gt_str_intern(api_names[i]);
}

/* One traced call without the call: the wrapper's share of the work. */
static inline int record_call(uint32_t name)
{
	struct gt_arg result = { .key = GT_S_ARG_RESULT, .type = GT_ARG_I64, .v.i = 0 };
	struct gt_event ev = { .cat = GT_S_CAT_ZE_API, .type = GT_EV_HOST_SPAN, .name = name };

	ev.corr = gt_corr_next();
	ev.start_ns = gt_clock_ns();
	ev.end_ns = gt_clock_ns();
	return gt_emit(&ev, &result, 1);
}

static __attribute__((noinline)) uint64_t record_loop(uint64_t n, uint32_t name)
{
	uint64_t lost = 0;

	for (uint64_t i = 0; i < n; i++)
		lost += record_call(name) != 0;
	return lost;
}

static void *emit_thread(void *arg)
{
	struct bench_time *t = &times[(uintptr_t)arg];
	uint64_t lost = record_loop(100, name_ids[0]); /* the ring exists */

	pthread_barrier_wait(&start_line);
	for (uint64_t done = 0; done < calls; done += burst) {
		uint64_t n = calls - done < burst ? calls - done : burst;
		uint64_t w = bench_wall(), c = bench_cpu();

		lost += record_loop(n, name_ids[0]);
		c = bench_cpu() - c;
		bench_burst(t, bench_wall() - w, c, n);
		bench_sleep_us(pause_us);
	}
	atomic_fetch_add(&dropped, lost);
	return NULL;
}

static void *fill_thread(void *arg)
{
	uint64_t n = calls, lost = 0;

	for (uint64_t i = 0; i < n; i++)
		lost += record_call(name_ids[(i + (uintptr_t)arg) % NAMES]) != 0;
	atomic_fetch_add(&dropped, lost);
	return NULL;
}

static void run_threads(unsigned nthreads, void *(*fn)(void *))
{
	pthread_t *th = calloc(nthreads, sizeof(*th));

	if (!th)
		BENCH_DIE("bench_core: out of memory");
	for (unsigned i = 0; i < nthreads; i++)
		if (pthread_create(&th[i], NULL, fn, (void *)(uintptr_t)i))
			BENCH_DIE("bench_core: pthread_create failed");
	for (unsigned i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	free(th);
}

static int bench_emit(const char *trace, unsigned nthreads)
{
	uint64_t span;
	char extra[64];

	times = calloc(nthreads, sizeof(*times));
	if (!times || pthread_barrier_init(&start_line, NULL, nthreads + 1))
		BENCH_DIE("bench_core: out of memory");
	start_tracer(trace, 4096, 200);
	/* The barrier lets every thread create its ring before the clock starts. */
	pthread_t *th = calloc(nthreads, sizeof(*th));
	for (unsigned i = 0; i < nthreads; i++)
		if (pthread_create(&th[i], NULL, emit_thread, (void *)(uintptr_t)i))
			BENCH_DIE("bench_core: pthread_create failed");
	pthread_barrier_wait(&start_line);
	span = bench_wall();
	for (unsigned i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	span = bench_wall() - span;
	gt_finish("exit", 60000);
	snprintf(extra, sizeof(extra), "dropped=%llu", (unsigned long long)atomic_load(&dropped));
	bench_report("emit", nthreads, times, span, extra);
	free(th);
	return 0;
}

static uint64_t file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) ? 0 : (uint64_t)st.st_size;
}

/* write() of `bytes` bytes in 1 MiB pieces to a fresh file: the floor of any writer. */
static uint64_t raw_write_ns(const char *path, uint64_t bytes)
{
	static char chunk[1 << 20];
	uint64_t t0, left = bytes;
	int fd;

	memset(chunk, 'x', sizeof(chunk));
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		BENCH_DIE("bench_core: cannot create %s", path);
	t0 = bench_wall();
	while (left) {
		size_t n = left < sizeof(chunk) ? left : sizeof(chunk);
		ssize_t w = write(fd, chunk, n);
		if (w <= 0)
			BENCH_DIE("bench_core: write to %s failed", path);
		left -= (uint64_t)w;
	}
	t0 = bench_wall() - t0;
	close(fd);
	unlink(path);
	return t0;
}

/* CPU time of the whole process (ns): during a drain round only the drain
 * and output threads run (the caller waits, the fillers have exited). */
static uint64_t process_cpu_ns(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000ull +
	       ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000ull;
}

static uint64_t round_cpu; /* the last round's, ns */

static uint64_t drain_round(uint64_t per_thread, unsigned nthreads)
{
	uint64_t t0, c0;

	calls = per_thread;
	run_threads(nthreads, fill_thread);
	if (atomic_load(&dropped))
		BENCH_DIE("bench_core: %llu events dropped while filling",
			  (unsigned long long)atomic_load(&dropped));
	c0 = process_cpu_ns();
	t0 = bench_wall();
	if (writer__sync(false, 600000))
		BENCH_DIE("bench_core: the drain cycle did not finish");
	t0 = bench_wall() - t0;
	round_cpu = process_cpu_ns() - c0;
	return t0;
}

/* Rounds, best of each: fresh memory (page cache, first-touched pages) costs
 * this VM-backed machine a varying amount the first time it is used. */
static int bench_drain(const char *trace, unsigned nthreads, uint64_t events, unsigned rounds)
{
	uint64_t per_thread = (events + nthreads - 1) / nthreads, best = UINT64_MAX, raw = UINT64_MAX;
	uint64_t before, bytes = 0, cpu = 0;
	size_t ring_kb = 64;
	char raw_path[4200];

	/* under a quarter full (the high-water mark) with every event in it */
	while (ring_kb * 1024 / 64 < per_thread * 4 + 4096)
		ring_kb *= 2;
	start_tracer(trace, ring_kb, 60000);
	/* the file is open and its head written before the measured cycles */
	drain_round(1, 1);
	snprintf(raw_path, sizeof(raw_path), "%s.raw", trace);
	for (unsigned r = 0; r < rounds; r++) {
		uint64_t ns;

		before = file_size(trace);
		ns = drain_round(per_thread, nthreads);
		if (ns < best) {
			best = ns;
			cpu = round_cpu; /* the best round's */
		}
		/* the file grew by this round's events (its trailer is rewritten in place) */
		bytes = file_size(trace) - before;
		ns = is_regular(trace) ? raw_write_ns(raw_path, bytes) : 0;
		if (ns < raw)
			raw = ns;
	}
	gt_finish("exit", 60000);
	printf("bench=drain threads=%u events=%llu rounds=%u drain_ms=%.3f cpu_ms=%.3f round_bytes=%llu "
	       "raw_write_ms=%.3f events_per_s=%.0f file_mb_per_s=%.1f raw_mb_per_s=%.1f\n",
	       nthreads, (unsigned long long)(per_thread * nthreads), rounds, best / 1e6, cpu / 1e6,
	       (unsigned long long)bytes, raw / 1e6, per_thread * nthreads * 1e9 / best,
	       bytes * 1e3 / best, bytes * 1e3 / raw);
	return 0;
}

static int bench_dead(const char *trace, unsigned exited, unsigned cycles)
{
	struct bench_time t = { 0 };
	uint64_t span = bench_wall();

	start_tracer(trace, 64, 60000);
	calls = 1;
	for (unsigned done = 0; done < exited; done += 64)
		run_threads(exited - done < 64 ? exited - done : 64, fill_thread);
	if (writer__sync(false, 60000) || writer__sync(false, 60000))
		BENCH_DIE("bench_core: the drain cycle did not finish");
	for (unsigned i = 0; i < cycles; i++) {
		uint64_t w;

		record_call(name_ids[0]);
		w = bench_wall();
		if (writer__sync(false, 60000))
			BENCH_DIE("bench_core: the drain cycle did not finish");
		bench_burst(&t, bench_wall() - w, 0, 1);
	}
	gt_finish("exit", 60000);
	printf("bench=dead exited=%u cycles=%u med_cycle_ns=%.0f dropped=%llu wall_ms=%.1f\n",
	       exited, cycles, bench_median(&t, 1, false),
	       (unsigned long long)atomic_load(&dropped), (bench_wall() - span) / 1e6);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	const char *trace = argc > 2 ? argv[2] : "";
	unsigned nthreads = (unsigned)test_arg(argc, argv, 3, 1);

	if (*trace && !strcmp(mode, "dead")) /* argument 3: exited threads, 0 too */
		return bench_dead(trace, nthreads, (unsigned)test_arg(argc, argv, 4, 200));
	if (!*trace || !nthreads)
		BENCH_DIE("usage: bench_core emit <trace> <threads> <calls> [burst] [pause_us]\n"
			  "       bench_core drain <trace> <threads> <events> [rounds]\n"
			  "       bench_core dead <trace> <exited> [cycles]");
	if (!strcmp(mode, "emit")) {
		calls = test_arg(argc, argv, 4, 1000000);
		burst = test_arg(argc, argv, 5, BENCH_BURST_DEFAULT);
		pause_us = test_arg(argc, argv, 6, 25000);
		if (!burst)
			burst = calls;
		return bench_emit(trace, nthreads);
	}
	if (!strcmp(mode, "drain"))
		return bench_drain(trace, nthreads, test_arg(argc, argv, 4, 1000000),
				   (unsigned)test_arg(argc, argv, 5, 3));
	BENCH_DIE("bench_core: unknown mode '%s': use emit, drain or dead", mode);
}
