/* ze_hammer [threads] [calls]: every thread calls zeDriverGetApiVersion (lock-free in the
 * simulated driver) `calls` times; prints the total number of successful calls. */
#include <pthread.h>
#include <stdatomic.h>

#include "ze_app.h"

static struct app_ze z;
static unsigned long calls;
static atomic_ulong total;

static void *hammer(void *arg)
{
	unsigned long ok = 0;

	for (unsigned long i = 0; i < calls; i++) {
		ze_api_version_t v = 0;

		if (zeDriverGetApiVersion(z.driver, &v) == ZE_RESULT_SUCCESS &&
		    ZE_MAJOR_VERSION(v) == 1 && ZE_MINOR_VERSION(v) >= 4)
			ok++;
	}
	atomic_fetch_add(&total, ok);
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long nthreads = test_arg(argc, argv, 1, 4);
	pthread_t *t;

	calls = test_arg(argc, argv, 2, 100000);
	t = calloc(nthreads ? nthreads : 1, sizeof(*t));
	APP_EXPECT(t, "calloc");
	app_ze_setup(&z);
	for (unsigned long i = 0; i < nthreads; i++)
		APP_EXPECT(pthread_create(&t[i], NULL, hammer, NULL) == 0, "pthread_create");
	for (unsigned long i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	printf("ze_hammer: threads=%lu calls=%lu total=%lu\n", nthreads, calls,
	       (unsigned long)atomic_load(&total));
	APP_EXPECT(atomic_load(&total) == nthreads * calls, "some calls failed");
	ZE_CHECK(zeContextDestroy(z.context));
	free(t);
	return 0;
}
