/* ze_cost [calls=50000] [rounds=5]: the best per-call time of zeDriverGetApiVersion over
 * `rounds` rounds of `calls` calls, printed in ns on stderr (stdout stays deterministic):
 * run traced and untraced, the difference is what an intercepted call costs. */
#include <time.h>

#include "../apps/ze_app.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	unsigned long calls = test_arg(argc, argv, 1, 50000), rounds = test_arg(argc, argv, 2, 5);
	double best = 1e30;
	struct app_ze z;

	app_ze_setup(&z);
	for (unsigned long r = 0; r < rounds; r++) {
		uint64_t t0 = now_ns();

		for (unsigned long i = 0; i < calls; i++) {
			ze_api_version_t v;

			ZE_CHECK(zeDriverGetApiVersion(z.driver, &v));
		}
		double per = (double)(now_ns() - t0) / (double)(calls ? calls : 1);
		if (per < best)
			best = per;
	}
	fprintf(stderr, "ze_cost: %.1f ns per call\n", best);
	printf("ze_cost: %lu rounds of %lu calls\n", rounds, calls);
	ZE_CHECK(zeContextDestroy(z.context));
	return 0;
}
