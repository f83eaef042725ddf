/* Unit checks of the Level Zero backend's parts that need no driver: the dlsym
 * interposer (inject/dlsym.c), the handle map (backends/levelzero/map.c) and the
 * tick-to-host line of metric reports (backends/levelzero/clockfit.c).
 * Linked with libdlnext_a then libdlnext_b, which both define `which`. */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <stdio.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/levelzero/clockfit.h"
#include "backends/levelzero/map.h"
#include "../check_run.h"

int next_which_from_a(void);
int next_which_from_b(void);
void *gt_dlsym_slow(void *handle, const char *symbol, const void *caller);
void *gt_dlsym_handle(void *handle, const char *symbol);
extern __thread void *gt_dlsym_found;

/* The core's: only the test's backend is enabled here, by a bit of its own. */
#define TEST_BACKEND_BIT 0x80
bool gt_backend_enabled(unsigned enabled_by)
{
	return enabled_by == TEST_BACKEND_BIT;
}

static int marker(void)
{
	return 'w';
}

static void *seen_found;

/* A backend that wraps `which` wherever it is found. */
static void *test_wrapper_for(const char *symbol)
{
	if (strcmp(symbol, "which") != 0)
		return NULL;
	seen_found = gt_dlsym_found;
	return (void *)marker;
}

static const struct gt_backend test_backend = {
	.name = "test",
	.enabled_by = TEST_BACKEND_BIT,
	.wrapper_for = test_wrapper_for,
};
GT_BACKEND_REGISTER(test_backend);

static int call(void *f)
{
	return f ? ((int (*)(void))f)() : '-';
}

static void main_marker(void)
{
}

START_TEST(next_from_each_object)
{
	/* Through the interposer, as the libraries call it (x86-64: a tail jump). */
	ck_assert_int_eq(next_which_from_a(), 'b');
	ck_assert_int_eq(next_which_from_b(), 0);
	/* The walk of the link map used without the real dlsym's help. */
	ck_assert_int_eq(call(gt_dlsym_slow(RTLD_NEXT, "which", (void *)next_which_from_a)), 'b');
	ck_assert_int_eq(call(gt_dlsym_slow(RTLD_NEXT, "which", (void *)main_marker)), 'a');
	ck_assert_ptr_null(gt_dlsym_slow(RTLD_NEXT, "which", (void *)next_which_from_b));
	ck_assert_ptr_null(gt_dlsym_slow(RTLD_NEXT, "gputrace_no_such_symbol",
					 (void *)main_marker));
	ck_assert_ptr_eq(gt_dlsym_slow(RTLD_NEXT, "malloc", (void *)main_marker),
			 dlsym(RTLD_NEXT, "malloc"));
}
END_TEST

START_TEST(handles_get_wrappers)
{
	void *b = dlopen("libdlnext_b.so", RTLD_NOW | RTLD_NOLOAD);
	void *real_b;

	ck_assert_ptr_nonnull(b);
	seen_found = NULL;
	ck_assert_int_eq(call(dlsym(b, "which")), 'w');
	/* The backend saw what the library really has. */
	real_b = seen_found;
	ck_assert_int_eq(call(real_b), 'b');
	ck_assert_ptr_null(gt_dlsym_found);
	/* Missing stays missing: programs probe with dlsym. */
	ck_assert_ptr_null(dlsym(b, "gputrace_no_such_symbol"));
	ck_assert_ptr_nonnull(dlerror());
	ck_assert_ptr_eq(gt_dlsym_handle(b, "next_which_from_b"), (void *)next_which_from_b);
	/* RTLD_DEFAULT and RTLD_NEXT are never replaced. */
	ck_assert_int_eq(call(dlsym(RTLD_DEFAULT, "which")), 'a');
	dlclose(b);
}
END_TEST

const char *gt_soname(const void *dyn, uintptr_t base);
const char *gt_phdr_soname(const struct dl_phdr_info *info);

static int libc_soname(struct dl_phdr_info *info, size_t size, void *data)
{
	const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;

	if (!base || strncmp(base + 1, "libc.so", 7))
		return 0;
	*(const char **)data = gt_phdr_soname(info);
	return 1;
}

/* A library is known by its soname whatever file name it was opened by. */
START_TEST(sonames_read_from_the_dynamic_section)
{
	struct link_map *l = NULL;
	const char *from_phdr = NULL;
	Dl_info info;

	/* a function of libc's that no sanitizer's runtime intercepts (printf is
	 * libasan's under ASan) */
	ck_assert(dladdr1((void *)gnu_get_libc_version, &info, (void **)&l, RTLD_DL_LINKMAP) && l);
	ck_assert_str_eq(gt_soname(l->l_ld, l->l_addr), "libc.so.6");
	ck_assert_int_eq(dl_iterate_phdr(libc_soname, &from_phdr), 1);
	ck_assert_str_eq(from_phdr, "libc.so.6");
	/* the program has none */
	ck_assert(dladdr1((void *)main_marker, &info, (void **)&l, RTLD_DL_LINKMAP) && l);
	ck_assert_ptr_null(gt_soname(l->l_ld, l->l_addr));
}
END_TEST

START_TEST(map_put_get_delete_grow)
{
	struct ze_map m = { 0 };
	const uintptr_t n = 5000;

	ck_assert_uint_eq(ze_map__get(&m, (void *)0x1000), 0);
	for (uintptr_t i = 1; i <= n; i++)
		ck_assert_int_eq(ze_map__put(&m, (void *)(i * 64), i), 0);
	for (uintptr_t i = 1; i <= n; i++)
		ck_assert_uint_eq(ze_map__get(&m, (void *)(i * 64)), i);
	for (uintptr_t i = 1; i <= n; i += 2)
		ck_assert_uint_eq(ze_map__del(&m, (void *)(i * 64)), i);
	ck_assert_uint_eq(ze_map__del(&m, (void *)64), 0);
	for (uintptr_t i = 1; i <= n; i++)
		ck_assert_uint_eq(ze_map__get(&m, (void *)(i * 64)), i % 2 ? 0 : i);
	/* Re-put of a deleted key and an update of a live one. */
	ck_assert_int_eq(ze_map__put(&m, (void *)64, 77), 0);
	ck_assert_int_eq(ze_map__put(&m, (void *)128, 78), 0);
	ck_assert_uint_eq(ze_map__get(&m, (void *)64), 77);
	ck_assert_uint_eq(ze_map__get(&m, (void *)128), 78);
	/* Churn: many deletes and inserts keep working (deleted slots are reclaimed). */
	for (uintptr_t round = 0; round < 50; round++) {
		for (uintptr_t i = 0; i < 1000; i++)
			ck_assert_int_eq(ze_map__put(&m, (void *)((round * 1000 + i + 1) << 20), i + 1), 0);
		for (uintptr_t i = 0; i < 1000; i++)
			ck_assert_uint_eq(ze_map__del(&m, (void *)((round * 1000 + i + 1) << 20)), i + 1);
	}
	ck_assert_uint_eq(ze_map__get(&m, (void *)(4000 * 64)), 4000);
	ck_assert_int_eq(ze_map__put(&m, NULL, 1), -EINVAL);
	free(atomic_load(&m.tab)); /* the backend's maps live as long as the process */
}
END_TEST

START_TEST(map_churn_keeps_its_table)
{
	/* kernels made and destroyed over and over: a map with lock-free readers
	 * kept a new table each time deleted slots filled it (100 000 handles: 3846
	 * tables, ~4 MB never freed) */
	struct ze_map m = { .lockfree_reads = true };
	struct ze_map_tab *first;
	unsigned tables = 0;

	for (uintptr_t i = 1; i <= 10; i++)
		ck_assert_int_eq(ze_map__put(&m, (void *)(i * 64), i), 0);
	first = atomic_load(&m.tab);
	for (uintptr_t i = 0; i < 100000; i++) {
		void *key = (void *)((i + 1) << 16);
		struct ze_map_tab *before = atomic_load(&m.tab);

		ck_assert_int_eq(ze_map__put(&m, key, i + 1), 0);
		ck_assert_uint_eq(ze_map__get(&m, key), i + 1);
		ck_assert_uint_eq(ze_map__del(&m, key), i + 1);
		tables += atomic_load(&m.tab) != before;
	}
	ck_assert_uint_le(tables, 1);
	for (uintptr_t i = 1; i <= 10; i++)
		ck_assert_uint_eq(ze_map__get(&m, (void *)(i * 64)), i);
	if (atomic_load(&m.tab) != first)
		free(first);
	free(atomic_load(&m.tab));
}
END_TEST

static void count_live(const void *key, uintptr_t val, void *arg)
{
	(*(size_t *)arg)++;
}

START_TEST(map_each_visits_live_entries)
{
	struct ze_map m = { 0 };
	size_t live = 0;

	for (uintptr_t i = 1; i <= 100; i++)
		ze_map__put(&m, (void *)(i * 8), i);
	for (uintptr_t i = 1; i <= 30; i++)
		ze_map__del(&m, (void *)(i * 8));
	ze_map__each(&m, count_live, &live);
	ck_assert_uint_eq(live, 70);
	struct ze_map_tab *tab = atomic_load(&m.tab);
	ze_map__forget(&m);
	free(tab);
	ck_assert_uint_eq(ze_map__get(&m, (void *)800), 0);
}
END_TEST

/* A device clock as a driver shows it: a fractional tick (52.083 ns) reported as a
 * whole frequency (19.2 MHz: 6.4 ppm off), an offset, 32 valid bits that wrap
 * during the run; a pair's ticks are read up to a tick after their edge. */
#define FIT_TICK   52.083L
#define FIT_OFFSET (4294967296.0L * 52.083L - 40e6L) /* wraps 40 ms in */
#define FIT_MASK   0xffffffffull

static uint64_t fit_ticks(uint64_t host)
{
	return (uint64_t)floorl(((long double)host + FIT_OFFSET) / FIT_TICK) & FIT_MASK;
}

static uint64_t fit_rand(uint64_t *seed, uint64_t lo, uint64_t hi)
{
	*seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
	return lo + (*seed >> 33) % (hi - lo + 1);
}

/* Reports one period (1 ms) apart from 5 ms after the streamer opened (the first
 * burst), read in cycles of 0.3 to 40 ms: converted, any
 * two neighbours are as far apart as their ticks say, whichever cycles read them
 * (a cycle's own pair would move its reports by up to a tick, and by 6.4 ppm of the
 * cycle's length); and each is within a tick and a half of its true time. */
START_TEST(fit_reports_keep_their_spacing_across_reads)
{
	const uint64_t h0 = 1000000000000ull, period = 1000000;
	const double nominal = 1e9 / 19200000.0;
	struct ze_clock_fit f;
	uint64_t seed = 12345 + (uint64_t)_i, now = h0, next_report = 0, prev_ticks = 0;
	double prev = 0;
	unsigned reads = 0, checked = 0;

	ze_fit__init(&f, nominal, FIT_MASK);
	now = h0 - 5000000; /* the first burst: when the streamer opened */
	while (now < h0 + 400000000ull) {
		uint64_t host[64], ticks[64];
		unsigned n = f.pairs ? 16 : 64;

		if (f.pairs)
			now += fit_rand(&seed, 300000, 40000000);
		for (unsigned i = 0; i < n; i++) {
			host[i] = now + i * fit_rand(&seed, 40, 3000);
			ticks[i] = fit_ticks(host[i]);
		}
		ze_fit__add(&f, host, ticks, n);
		reads++;
		/* the reports the streamer made before this read */
		for (; h0 + next_report * period + 777 < now; next_report++) {
			uint64_t truth = h0 + next_report * period + 777;
			uint64_t t = fit_ticks(truth);
			double got = (double)ze_fit__host(&f, t);

			ck_assert_msg(fabs(got - (double)truth) < 1.5 * FIT_TICK,
				      "report %llu at %.0f, truly %llu (read %u)",
				      (unsigned long long)next_report, got - (double)h0,
				      (unsigned long long)(truth - h0), reads);
			if (next_report) {
				double want = (double)((t - prev_ticks) & FIT_MASK) * (double)FIT_TICK;

				ck_assert_msg(fabs(got - prev - want) <= 2.0,
					      "reports %llu and %llu: %.1f ns apart, their ticks say %.1f",
					      (unsigned long long)next_report - 1,
					      (unsigned long long)next_report, got - prev, want);
				checked++;
			}
			prev = got;
			prev_ticks = t;
		}
	}
	ck_assert_uint_ge(checked, 390);
	ck_assert_uint_ge(reads, 15);
	/* the rate measured over the run, not the reported one */
	ck_assert_msg(fabs(f.rate - (double)FIT_TICK) < 1e-5, "rate %.7f", f.rate);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("levelzero");
	TCase *t = tcase_create("core");

	tcase_add_test(t, next_from_each_object);
	tcase_add_test(t, handles_get_wrappers);
	tcase_add_test(t, sonames_read_from_the_dynamic_section);
	tcase_add_test(t, map_put_get_delete_grow);
	tcase_add_test(t, map_each_visits_live_entries);
	tcase_add_test(t, map_churn_keeps_its_table);
	tcase_add_loop_test(t, fit_reports_keep_their_spacing_across_reads, 0, 20);
	suite_add_tcase(s, t);
	return check_run(s);
}
