// SPDX-License-Identifier: MIT
/*
 * itt_host: every ITT call gputrace records, no GPU: nested tasks, two
 * overlapped tasks ended out of order, one crossing a task ("around"), a
 * frame begun and ended and one submitted whole, a marker, a u64 counter
 * stepped up and a double one set, tasks on a second thread. Handles made
 * before the collector loads are the static part's own. Prints the protocol
 * the collector spoke.
 * `itt_host overlapped N`: N overlapped tasks open at once, their ids scattered as
 * addresses are, ended newest first.
 * `itt_host unended`: a task, an overlapped task and a frame begun and
 * never ended, around a task that ends, until main returns.
 * `itt_host hammer N`: N tasks "outer", each around a task "inner", as fast
 * as the thread can make them (into a small ring: most are lost); every one
 * ended. Prints "tasks 2N".
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "itt_static.h"

static itt_domain *dom;

static void work(long us)
{
	struct timespec t = { 0, us * 1000 };
	nanosleep(&t, NULL);
}

static void *second(void *arg)
{
	itt_string_handle *name = itt_string_handle_create("second thread");

	itt_task_begin(dom, itt_null, itt_null, name);
	work(200);
	itt_task_end(dom);
	return NULL;
}

static int unended(void)
{
	itt_domain *frames = itt_domain_create("frames");
	itt_id pending = { 3, 0, 0 };

	dom = itt_domain_create("host");
	itt_task_begin(dom, itt_null, itt_null, itt_string_handle_create("whole_program"));
	itt_task_begin_overlapped(dom, pending, itt_null, itt_string_handle_create("pending"));
	itt_frame_begin_v3(frames, NULL);
	itt_task_begin(dom, itt_null, itt_null, itt_string_handle_create("step"));
	work(200);
	itt_task_end(dom);
	work(100);
	printf("itt protocol: %d\n", itt_test_protocol());
	return 0;
}

static int overlapped(int n)
{
	itt_domain *d = itt_domain_create("many");
	itt_string_handle *name = itt_string_handle_create("ov");
	uint64_t x = 0x243f6a8885a308d3ull;
	itt_id *ids = calloc((size_t)n, sizeof(*ids));

	if (!ids)
		return 1;
	for (int i = 0; i < n; i++) { /* splitmix64 */
		uint64_t z = (x += 0x9e3779b97f4a7c15ull);

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		ids[i] = (itt_id){ z ^ (z >> 31), 0, 0 };
		itt_task_begin_overlapped(d, ids[i], itt_null, name);
	}
	for (int i = n; i-- > 0;)
		itt_task_end_overlapped(d, ids[i]);
	free(ids);
	printf("itt protocol: %d\n", itt_test_protocol());
	return 0;
}

/* One name in three domains (none the third's): three counters, as ITT keys
 * them by name and domain; the second handle of (mem, dnnl) is the first. */
static int counters(void)
{
	itt_counter dnnl = itt_counter_create_typed("mem", "dnnl", ITT_META_U64);
	itt_counter ccl = itt_counter_create_typed("mem", "ccl", ITT_META_U64);
	itt_counter again = itt_counter_create_typed("mem", "dnnl", ITT_META_U64);
	itt_counter none = itt_counter_create_typed("mem", NULL, ITT_META_U64);

	itt_counter_inc_delta(dnnl, 100);
	itt_counter_inc_delta(ccl, 5);
	itt_counter_inc_delta(again, 100);
	itt_counter_inc_delta(ccl, 1);
	itt_counter_inc_delta(none, 7);
	printf("itt protocol: %d\n", itt_test_protocol());
	return 0;
}

/* A frame and a region begun again while open (ignored, ittnotify.h says,
 * until their end). */
static int frames_again(void)
{
	itt_domain *f = itt_domain_create("loop");
	itt_id one = { 5, 0, 0 };

	dom = itt_domain_create("host");
	for (int i = 0; i < 3; i++) { /* begun each iteration, ended once */
		itt_frame_begin_v3(f, NULL);
		work(100);
	}
	itt_frame_end_v3(f, NULL);
	itt_frame_end_v3(f, NULL); /* ends nothing */
	itt_frame_begin_v3(f, &one);
	work(100);
	itt_frame_begin_v3(f, &one);
	work(100);
	itt_frame_end_v3(f, &one);
	itt_region_begin(dom, one, itt_null, itt_string_handle_create("region"));
	work(100);
	itt_region_begin(dom, one, itt_null, itt_string_handle_create("region again"));
	work(100);
	itt_region_end(dom, one);
	itt_region_end(dom, one);
	/* 3000 open at once (their ids' home slots taken by others): each begun
	 * again, then ended once */
	itt_domain *many = itt_domain_create("many");
	for (int round = 0; round < 2; round++)
		for (unsigned long long i = 0; i < 3000; i++) {
			itt_id id = { i * 0x9e3779b97f4a7c15ull, 0, 0 };

			itt_frame_begin_v3(many, &id);
		}
	for (unsigned long long i = 0; i < 3000; i++) {
		itt_id id = { i * 0x9e3779b97f4a7c15ull, 0, 0 };

		itt_frame_end_v3(many, &id);
	}
	printf("itt protocol: %d\n", itt_test_protocol());
	return 0;
}

/* A frame submitted with no end (__itt_timestamp_none: now). */
static int submit_to_now(void)
{
	itt_domain *f = itt_domain_create("loop");
	unsigned long long t0 = itt_get_timestamp();

	work(200);
	itt_frame_submit_v3(f, NULL, t0, ITT_TIMESTAMP_NONE);
	work(100);
	printf("itt protocol: %d\n", itt_test_protocol());
	return 0;
}

/* A name first seen past 16384 others: one handle however often it is made
 * (PyTorch makes one at every range), and ranges named by it. */
static int handles(void)
{
	char name[32];
	itt_string_handle *late, *again = NULL;

	itt_get_timestamp(); /* loads the collector: the handles below are its own */
	dom = itt_domain_create("host");
	for (int i = 0; i < 16400; i++) {
		snprintf(name, sizeof(name), "step %d", i);
		itt_string_handle_create(name);
	}
	late = itt_string_handle_create("late");
	for (int i = 0; i < 1000; i++) {
		again = itt_string_handle_create("late");
		if (again != late)
			break;
		itt_task_begin(dom, itt_null, itt_null, again);
		itt_task_end(dom);
	}
	printf("same handle: %d\n", again == late);
	printf("itt protocol: %d\n", itt_test_protocol());
	return 0;
}

/* Four tasks that cross (each begun before the one before it ends): four
 * lanes, then a second thread with a task of its own. Run as pid 1 of a PID
 * namespace (a container's program), that thread's tid is small: 3. */
static int crossed(void)
{
	itt_id ids[4];
	pthread_t t;

	dom = itt_domain_create("host");
	for (int i = 0; i < 4; i++) {
		ids[i] = (itt_id){ (unsigned long long)i + 1, 0, 0 };
		itt_task_begin_overlapped(dom, ids[i], itt_null, itt_string_handle_create("cross"));
		work(50);
	}
	for (int i = 0; i < 4; i++)
		itt_task_end_overlapped(dom, ids[i]);
	if (pthread_create(&t, NULL, second, NULL))
		return 1;
	pthread_join(t, NULL);
	printf("itt protocol: %d\n", itt_test_protocol());
	return 0;
}

static int hammer(int n)
{
	itt_string_handle *outer = itt_string_handle_create("outer");
	itt_string_handle *inner = itt_string_handle_create("inner");

	dom = itt_domain_create("host");
	for (int i = 0; i < n; i++) {
		itt_task_begin(dom, itt_null, itt_null, outer);
		itt_task_begin(dom, itt_null, itt_null, inner);
		itt_task_end(dom);
		itt_task_end(dom);
	}
	printf("tasks %d\n", 2 * n);
	return 0;
}

int main(int argc, char **argv)
{
	/* before any call that loads the collector: the static part's handles */
	itt_domain *frames = itt_domain_create("frames");
	itt_string_handle *outer = itt_string_handle_create("outer");
	pthread_t t;

	if (argc == 2 && !strcmp(argv[1], "unended"))
		return unended();
	if (argc == 2 && !strcmp(argv[1], "handles"))
		return handles();
	if (argc == 2 && !strcmp(argv[1], "frames"))
		return frames_again();
	if (argc == 2 && !strcmp(argv[1], "submit"))
		return submit_to_now();
	if (argc == 2 && !strcmp(argv[1], "counters"))
		return counters();
	if (argc == 2 && !strcmp(argv[1], "crossed"))
		return crossed();
	if (argc == 3 && !strcmp(argv[1], "overlapped"))
		return overlapped(atoi(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "hammer"))
		return hammer(atoi(argv[2]));
	dom = itt_domain_create("host");
	itt_task_begin(dom, itt_null, itt_null, outer);
	itt_task_begin(dom, itt_null, itt_null, itt_string_handle_create("inner"));
	work(200);
	itt_task_end(dom);
	itt_marker(dom, itt_null, itt_string_handle_create("checkpoint"), ITT_SCOPE_GLOBAL);
	itt_task_end(dom);

	itt_id a = { 1, 0, 0 }, b = { 2, 0, 0 };
	itt_task_begin_overlapped(dom, a, itt_null, itt_string_handle_create("overlap a"));
	work(100);
	itt_task_begin_overlapped(dom, b, itt_null, itt_string_handle_create("overlap b"));
	work(100);
	itt_task_end_overlapped(dom, a);
	work(100);
	itt_task_end_overlapped(dom, b);
	/* one begun inside a task and ended after it */
	itt_id c = { 4, 0, 0 };
	itt_task_begin(dom, itt_null, itt_null, itt_string_handle_create("around"));
	work(100);
	itt_task_begin_overlapped(dom, c, itt_null, itt_string_handle_create("overlap c"));
	work(100);
	itt_task_end(dom);
	work(100);
	itt_task_end_overlapped(dom, c);

	itt_frame_begin_v3(frames, NULL);
	work(100);
	itt_frame_end_v3(frames, NULL);
	unsigned long long t0 = itt_get_timestamp();
	work(100);
	itt_frame_submit_v3(frames, NULL, t0, itt_get_timestamp());

	itt_counter items = itt_counter_create_typed("items", "host", ITT_META_U64);
	itt_counter_inc_delta(items, 5);
	itt_counter_inc_delta(items, 2);
	itt_counter load = itt_counter_create_typed("load", "host", ITT_META_DOUBLE);
	double v = 0.75;
	itt_counter_set_value(load, &v);
	/* no number: no sample (a viewer's counter track takes numbers only) */
	v = NAN;
	itt_counter_set_value(load, &v);
	v = -INFINITY;
	itt_counter_set_value(load, &v);
	v = 1.25;
	itt_counter_set_value(load, &v);

	pthread_create(&t, NULL, second, NULL);
	pthread_join(t, NULL);
	printf("itt protocol: %d\n", itt_test_protocol());
	return 0;
}
