/* ze_exec [images]: a regular list with one kernel `image_kernel` (3000 ns), executed twice
 * on a queue and synchronized each time, then execv() of itself with one image fewer; the
 * last image (images 0) exits 0. Each image prints "image N". */
#include <unistd.h>

#include "../apps/ze_app.h"

int main(int argc, char **argv)
{
	long images = argc > 1 ? atol(argv[1]) : 2;
	struct app_ze z;
	ze_group_count_t groups = { 3000, 1, 1 };
	ze_command_queue_handle_t q;
	ze_command_list_handle_t l;
	char next[24];

	app_ze_setup(&z);
	q = app_queue(&z, 0, 0);
	l = app_list(&z, 0);
	ZE_CHECK(zeCommandListAppendLaunchKernel(l, app_kernel(app_module(&z), "image_kernel", 1,
								 1, 1),
						 &groups, NULL, 0, NULL));
	ZE_CHECK(zeCommandListClose(l));
	for (int i = 0; i < 2; i++) {
		ZE_CHECK(zeCommandQueueExecuteCommandLists(q, 1, &l, NULL));
		ZE_CHECK(zeCommandQueueSynchronize(q, UINT64_MAX));
	}
	printf("image %ld\n", images);
	fflush(stdout);
	if (images <= 0)
		return 0;
	snprintf(next, sizeof(next), "%ld", images - 1);
	execl(argv[0], argv[0], next, (char *)NULL);
	perror("ze_exec: execl");
	return 1;
}
