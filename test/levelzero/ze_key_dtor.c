/* A pthread key destructor that calls the GPU as its thread exits (a
 * per-thread cache freed), its key made after the process's first traced
 * call, so after gputrace's own key (KEY_FIRST=1: before it). The destructor
 * sets its value again, so glibc calls it in ROUNDS rounds (2; 1 to 4). */
#include <level_zero/ze_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define DTOR_CALLS 6

static ze_driver_handle_t drv;
static pthread_key_t key;
static _Atomic int dtor_calls;
static int rounds = 2, round_done;

static void cache_free(void *p)
{
	ze_api_version_t v;

	for (int i = 0; i < DTOR_CALLS; i++, dtor_calls++)
		zeDriverGetApiVersion(drv, &v);
	if (++round_done < rounds) /* once more in glibc's next round */
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

	if (getenv("ROUNDS"))
		rounds = atoi(getenv("ROUNDS"));
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
