/* ze_threads [n] [batch]: creates n short-lived threads, `batch` at a time; each makes a
 * couple of cheap Level Zero calls and exits. Prints how many threads and calls succeeded. */
#include <pthread.h>
#include <stdatomic.h>

#include "ze_app.h"

static struct app_ze z;
static atomic_ulong ok_calls;

static void *worker(void *arg)
{
	ze_device_properties_t props = { ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES };
	ze_driver_handle_t driver;
	uint32_t n = 1;

	if (zeDriverGet(&n, &driver) == ZE_RESULT_SUCCESS && driver == z.driver)
		atomic_fetch_add(&ok_calls, 1);
	if (zeDeviceGetProperties(z.device, &props) == ZE_RESULT_SUCCESS &&
	    strcmp(props.name, "gputrace simulated GPU") == 0)
		atomic_fetch_add(&ok_calls, 1);
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long n = test_arg(argc, argv, 1, 64), batch = test_arg(argc, argv, 2, 8);
	unsigned long batches = 0;
	pthread_t *t;

	if (batch == 0)
		batch = 1;
	t = calloc(batch, sizeof(*t));
	APP_EXPECT(t, "calloc");
	app_ze_setup(&z);
	for (unsigned long done = 0; done < n; batches++) {
		unsigned long k = n - done < batch ? n - done : batch;

		for (unsigned long i = 0; i < k; i++)
			APP_EXPECT(pthread_create(&t[i], NULL, worker, NULL) == 0, "pthread_create");
		for (unsigned long i = 0; i < k; i++)
			pthread_join(t[i], NULL);
		done += k;
	}
	printf("ze_threads: threads=%lu batches=%lu calls=%lu\n", n, batches,
	       (unsigned long)atomic_load(&ok_calls));
	APP_EXPECT(atomic_load(&ok_calls) == 2 * n, "some calls failed");
	ZE_CHECK(zeContextDestroy(z.context));
	free(t);
	return 0;
}
