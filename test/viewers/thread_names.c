// SPDX-License-Identifier: MIT
/* thread_names: two threads name themselves ("worker-1", "worker-2"), make
 * one traced Level Zero call each and exit long before the next drain
 * cycle; the trace must still name their rows. */
#define _GNU_SOURCE
#include <pthread.h>
#include <unistd.h>

#include "../apps/ze_app.h"

static struct app_ze z;

static void *worker(void *name)
{
	ze_api_version_t v = 0;

	pthread_setname_np(pthread_self(), name);
	ZE_CHECK(zeDriverGetApiVersion(z.driver, &v));
	return NULL;
}

int main(void)
{
	pthread_t t[2];
	char *names[2] = { "worker-1", "worker-2" };

	app_ze_setup(&z);
	for (int i = 0; i < 2; i++)
		APP_EXPECT(pthread_create(&t[i], NULL, worker, names[i]) == 0, "pthread_create");
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	ZE_CHECK(zeContextDestroy(z.context));
	printf("thread_names: ok\n");
	return 0;
}
