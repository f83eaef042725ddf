// SPDX-License-Identifier: MIT
/*
 * stack_app: Level Zero calls made through named functions, for --stacks.
 * main -> run_training -> run_step -> zeCommandListAppendLaunchKernel (a launch)
 * main -> query_version (static) -> zeDriverGetApiVersion (not a launch)
 * Built with -rdynamic so dladdr knows the exported names; query_version is
 * found through the ELF symbol table. noinline + a use after each call keep
 * every frame (no inlining, no tail calls).
 * stack_app STEPS fork: then a child names its own callers (its trace, stacks
 * and all, is its own).
 */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test/apps/ze_app.h"

#define KEEP_FRAME() __asm__ __volatile__("" ::: "memory")

struct work {
	struct app_ze z;
	ze_command_list_handle_t list;
	ze_kernel_handle_t kernel;
};

__attribute__((noinline)) int run_step(struct work *w)
{
	ze_group_count_t groups = { 1, 1, 1 };
	ze_result_t r = zeCommandListAppendLaunchKernel(w->list, w->kernel, &groups, NULL, 0, NULL);

	KEEP_FRAME();
	return r == ZE_RESULT_SUCCESS;
}

__attribute__((noinline)) int run_training(struct work *w, int steps)
{
	int ok = 0;

	for (int i = 0; i < steps; i++)
		ok += run_step(w);
	KEEP_FRAME();
	return ok;
}

__attribute__((noinline)) static int query_version(struct work *w)
{
	ze_api_version_t v = 0;
	ze_result_t r = zeDriverGetApiVersion(w->z.driver, &v);

	KEEP_FRAME();
	return r == ZE_RESULT_SUCCESS && v != 0;
}

int main(int argc, char **argv)
{
	int steps = (int)test_arg(argc, argv, 1, 2);
	struct work w;

	app_ze_setup(&w.z);
	ze_command_queue_handle_t queue = app_queue(&w.z, 0, 0);
	ze_module_handle_t module = app_module(&w.z);

	w.list = app_list(&w.z, 0);
	w.kernel = app_kernel(module, "stack_kernel", 8, 1, 1);
	APP_EXPECT(query_version(&w), "zeDriverGetApiVersion");
	APP_EXPECT(run_training(&w, steps) == steps, "launches");
	ZE_CHECK(zeCommandListClose(w.list));
	ZE_CHECK(zeCommandQueueExecuteCommandLists(queue, 1, &w.list, NULL));
	ZE_CHECK(zeCommandQueueSynchronize(queue, UINT64_MAX));
	if (argc > 2 && !strcmp(argv[2], "fork")) {
		int status;
		pid_t child = fork();

		if (child == 0)
			return query_version(&w) ? 0 : 3;
		APP_EXPECT(child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) &&
				   WEXITSTATUS(status) == 0,
			   "the forked child");
	}
	printf("stack_app: %d steps ok\n", steps);
	KEEP_FRAME();
	return 0;
}
