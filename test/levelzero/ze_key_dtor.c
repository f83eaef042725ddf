/* A pthread key destructor that calls the GPU as its thread exits (a
 * per-thread cache freed), its key made after the process's first traced
 * call, so after gputrace's own key (KEY_FIRST=1: before it). The destructor
 * sets its value again once, so glibc calls it in a second round too. */
#include <level_zero/ze_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define DTOR_CALLS 6

static ze_driver_handle_t drv;
static pthread_key_t key;
static _Atomic int dtor_calls;

static void cache_free(void *p)
{
	ze_api_version_t v;

	for (int i = 0; i < DTOR_CALLS; i++, dtor_calls++)
		zeDriverGetApiVersion(drv, &v);
	if (p == &key) /* the first round: once more in the next */
		pthread_setspecific(key, &drv);
}

static void *worker(void *arg)
{
	ze_api_version_t v;

	(void)arg;
	zeDriverGetApiVersion(drv, &v);
	pthread_setspecific(key, &key);
	return NULL;
}

int main(void)
{
	uint32_t count = 1;
	pthread_t t;

	if (getenv("KEY_FIRST"))
		pthread_key_create(&key, cache_free);
	if (zeInit(0) || zeDriverGet(&count, &drv))
		return 3;
	if (!getenv("KEY_FIRST"))
		pthread_key_create(&key, cache_free);
	pthread_create(&t, NULL, worker, NULL);
	pthread_join(t, NULL);
	printf("zeDriverGetApiVersion calls: %d\n", 1 + dtor_calls);
	return 0;
}
