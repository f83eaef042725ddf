// SPDX-License-Identifier: MIT
/*
 * libstackdlA.so / libstackdlB.so for stack_dl: one launch through an
 * exported function (LAUNCH_FN: alpha_launch or beta_launch) and a static
 * one, the same code at the same offsets in both, so a library loaded where
 * the other was closed has its frames at the very same addresses.
 */
#include <level_zero/ze_api.h>

#define KEEP_FRAME() __asm__ __volatile__("" ::: "memory")

__attribute__((noinline)) static int inner_static(ze_command_list_handle_t l, ze_kernel_handle_t k)
{
	ze_group_count_t g = { 1, 1, 1 };
	int r = zeCommandListAppendLaunchKernel(l, k, &g, NULL, 0, NULL);

	KEEP_FRAME();
	return r;
}

__attribute__((noinline)) int LAUNCH_FN(ze_command_list_handle_t l, ze_kernel_handle_t k)
{
	int r = inner_static(l, k);

	KEEP_FRAME();
	return r;
}
