/* SPDX-License-Identifier: MIT */
/*
 * A capture window's close as the drain thread sees it. The drain reads the
 * window's bounds and counts without the capture lock (writer/drain.c,
 * writing_window): a window it sees closed must also be unended until its file
 * is ended, or what the rings still hold of it is dropped as outside every
 * window and counted nowhere. capture.c is compiled in here with a look at
 * each step of the close: what a cycle run between two of them would decide.
 */
#include <stdatomic.h>
#include <stdint.h>

static void close_step(void);
#define GT_CAPTURE_CLOSE_STEP() close_step()
#include "inject/capture.c"

#include "unit.h"

static unsigned steps, dropped_steps;

/* Between two steps: a window closed (close_ns) that the writer would no
 * longer write (not unended), and whose events would not count as late
 * (not yet among the closed windows) either. */
static void close_step(void)
{
	uint64_t close = atomic_load(&gt_cap.close_ns);

	steps++;
	if (close != UINT64_MAX && !capture__unended() && !capture__in_closed_window(close, close))
		dropped_steps++;
}

START_TEST(test_a_window_seen_closed_is_written_until_ended)
{
	gt_cfg.start_paused = true;
	gt_cfg.capture_range = 0;
	atomic_store(&gt_phase, capture__start(1000));
	ck_assert_int_eq(atomic_load(&gt_phase), GT_PHASE_PAUSED);
	ck_assert(gt_cap.controlled);

	for (uint64_t w = 1; w <= 3; w++) {
		uint64_t open = w * 10000, close = open + 5000;

		steps = dropped_steps = 0;
		open_window(open, 0);
		ck_assert_int_eq(atomic_load(&gt_phase), GT_PHASE_RUNNING);
		ck_assert(capture__inside(open + 1, open + 2));
		ck_assert(!capture__unended());

		ck_assert(close_window(close));
		ck_assert_uint_eq(steps, 4);
		ck_assert_uint_eq(dropped_steps, 0);
		/* closed: unended (the writer goes on with its file), its bounds kept */
		ck_assert_int_eq(atomic_load(&gt_phase), GT_PHASE_PAUSED);
		ck_assert(capture__unended());
		ck_assert(capture__inside(open + 1, close));
		ck_assert(!capture__inside(open + 1, close + 1));
		ck_assert(capture__in_closed_window(open, close));
		ck_assert(!capture__in_closed_window(open - 1, close));

		/* a second close of the same window changes nothing */
		ck_assert(!close_window(close + 100));
		ck_assert_uint_eq(steps, 4);
		ck_assert_uint_eq(atomic_load(&gt_cap.close_ns), close);

		capture__ended();
		ck_assert(!capture__unended());
	}
}
END_TEST

static Suite *capture_suite(void)
{
	Suite *s = suite_create("capture");
	TCase *tc = tcase_create("close");

	tcase_add_test(tc, test_a_window_seen_closed_is_written_until_ended);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(capture_suite)
