/* ze_contexts [rounds] [kernels]: each round makes a context with an immediate list, appends
 * `kernels` launches of kernel "r<round>", waits for them (a barrier signaling an event),
 * and destroys everything, the context last, at once. Prints the launches made. */
#include <stdio.h>

#include "ze_app.h"

int main(int argc, char **argv)
{
	unsigned long rounds = test_arg(argc, argv, 1, 20), kernels = test_arg(argc, argv, 2, 200);
	ze_context_desc_t cdesc = { ZE_STRUCTURE_TYPE_CONTEXT_DESC, NULL, 0 };
	ze_event_desc_t ed = { ZE_STRUCTURE_TYPE_EVENT_DESC, NULL, 0, ZE_EVENT_SCOPE_FLAG_HOST,
			       ZE_EVENT_SCOPE_FLAG_HOST };
	ze_group_count_t one = { 1, 1, 1 };
	unsigned long launched = 0;
	struct app_ze z;

	app_ze_setup(&z);
	ZE_CHECK(zeContextDestroy(z.context));
	for (unsigned long r = 0; r < rounds; r++) {
		ze_command_list_handle_t l;
		ze_event_pool_handle_t pool;
		ze_module_handle_t m;
		ze_kernel_handle_t k;
		ze_event_handle_t done;
		char name[32];

		ZE_CHECK(zeContextCreate(z.driver, &cdesc, &z.context));
		l = app_immediate_list(&z, 0, 0);
		pool = app_event_pool(&z, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1);
		ZE_CHECK(zeEventCreate(pool, &ed, &done));
		m = app_module(&z);
		snprintf(name, sizeof(name), "r%lu", r);
		k = app_kernel(m, name, 1, 1, 1);
		for (unsigned long i = 0; i < kernels; i++)
			ZE_CHECK(zeCommandListAppendLaunchKernel(l, k, &one, NULL, 0, NULL));
		ZE_CHECK(zeCommandListAppendBarrier(l, done, 0, NULL));
		ZE_CHECK(zeEventHostSynchronize(done, UINT64_MAX));
		launched += kernels;
		ZE_CHECK(zeKernelDestroy(k));
		ZE_CHECK(zeModuleDestroy(m));
		ZE_CHECK(zeEventDestroy(done));
		ZE_CHECK(zeEventPoolDestroy(pool));
		ZE_CHECK(zeCommandListDestroy(l));
		ZE_CHECK(zeContextDestroy(z.context));
	}
	printf("launched %lu\n", launched);
	return 0;
}
