// SPDX-License-Identifier: MIT
/*
 * stack_many N: N launches, each from a call stack of its own: launch i
 * walks down 5 levels, each through one of 8 functions picked by 3 bits of
 * i (32768 distinct stacks, more than the table's 16384, each 13 frames deep
 * below main: within the default depth of 16).
 */
#include "test/apps/ze_app.h"

#define KEEP_FRAME() __asm__ __volatile__("" ::: "memory")
#define LEVELS 5
#define PER_LIST 1000

static ze_command_list_handle_t list;
static ze_kernel_handle_t kernel;

static void walk(unsigned bits, int level);

__attribute__((noinline)) static void launch(void)
{
	ze_group_count_t g = { 1, 1, 1 };

	ZE_CHECK(zeCommandListAppendLaunchKernel(list, kernel, &g, NULL, 0, NULL));
	KEEP_FRAME();
}

#define STEP(k)								\
	__attribute__((noinline)) static void step##k(unsigned bits, int level)	\
	{								\
		walk(bits, level);					\
		KEEP_FRAME();						\
	}
STEP(0) STEP(1) STEP(2) STEP(3) STEP(4) STEP(5) STEP(6) STEP(7)

static void (*const steps[8])(unsigned, int) = {
	step0, step1, step2, step3, step4, step5, step6, step7,
};

__attribute__((noinline)) static void walk(unsigned bits, int level)
{
	if (level)
		steps[bits & 7](bits >> 3, level - 1);
	else
		launch();
	KEEP_FRAME();
}

int main(int argc, char **argv)
{
	unsigned n = (unsigned)test_arg(argc, argv, 1, 100);
	struct app_ze z;

	app_ze_setup(&z);
	ze_command_queue_handle_t q = app_queue(&z, 0, 0);
	ze_module_handle_t m = app_module(&z);

	kernel = app_kernel(m, "many_kernel", 8, 1, 1);
	for (unsigned first = 0; first < n; first += PER_LIST) {
		list = app_list(&z, 0);
		for (unsigned i = first; i < n && i < first + PER_LIST; i++)
			walk(i, LEVELS);
		ZE_CHECK(zeCommandListClose(list));
		ZE_CHECK(zeCommandQueueExecuteCommandLists(q, 1, &list, NULL));
		ZE_CHECK(zeCommandQueueSynchronize(q, UINT64_MAX));
		ZE_CHECK(zeCommandListDestroy(list));
	}
	printf("stack_many: %u launches ok\n", n);
	return 0;
}
