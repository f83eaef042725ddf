/* GPU work in the exit handlers and destructors that run after gputrace's own
 * exit handler: an atexit handler registered before the first GPU call (as a
 * library's init would) and a destructor, each ROUNDS rounds of {copy 4096 B,
 * kernel `late_kernel`, event synchronize, reset}, as main does before them.
 * Prints "main did N" when main returns. EXIT_IN=handler: the handler then
 * calls exit(3); EXIT_IN=destructor: the destructor then calls exit(5). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../apps/ze_app.h"

#define ROUNDS 2

static struct app_ze z;
static ze_module_handle_t module;
static ze_command_list_handle_t list;
static ze_kernel_handle_t kernel;
static ze_event_handle_t done;
static void *host, *dev;

static void work(void)
{
	ze_group_count_t g = { 1000, 1, 1 };

	for (int i = 0; i < ROUNDS; i++) {
		ZE_CHECK(zeCommandListAppendMemoryCopy(list, dev, host, 4096, NULL, 0, NULL));
		ZE_CHECK(zeCommandListAppendLaunchKernel(list, kernel, &g, done, 0, NULL));
		ZE_CHECK(zeEventHostSynchronize(done, UINT64_MAX));
		ZE_CHECK(zeEventHostReset(done));
	}
}

static bool exit_in(const char *where)
{
	const char *v = getenv("EXIT_IN");

	return v && !strcmp(v, where);
}

static void early_handler(void)
{
	if (list)
		work();
	if (exit_in("handler"))
		exit(3);
}

__attribute__((destructor)) static void late_destructor(void)
{
	if (list)
		work();
	if (list && exit_in("destructor"))
		exit(5);
}

int main(void)
{
	atexit(early_handler); /* before the first GPU call: runs after gputrace's handler */
	app_ze_setup(&z);
	module = app_module(&z);
	list = app_immediate_list(&z, 0, 0);
	kernel = app_kernel(module, "late_kernel", 1, 1, 1);
	host = app_host_alloc(&z, 4096);
	dev = app_device_alloc(&z, 4096);
	done = app_event(app_event_pool(&z, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1), 0);
	work();
	printf("main did %d\n", ROUNDS);
	return 0;
}
