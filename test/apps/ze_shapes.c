/* ze_shapes: copies of 2D and 3D regions and a cooperative kernel, the shapes an image or
 * stencil code (and SYCL's copy2d, or a grid-synchronizing kernel) puts on a GPU. On one
 * regular list, executed once on queue 0.0:
 *   - a 2D region: 64 rows of 256 bytes, from a host buffer of 512-byte rows (at column
 *     128, row 8) into device memory of 256-byte rows (16384 bytes: 1638 ns simulated);
 *   - a 3D region: 8 slices of 8 rows of 200 bytes, from that device memory seen as
 *     slices of 8 rows into another device buffer of 1 KiB rows and 8 KiB slices
 *     (12800 bytes: 1280 ns);
 *   - a cooperative kernel "grid_sync" of 64-item groups, as many groups as
 *     zeKernelSuggestMaxCooperativeGroupCount allows (2048 items: 2048 ns);
 * then both device buffers copied back to the host, checked byte for byte. Two appends the
 * specification forbids fail as it says and change nothing: overlapping regions, and a
 * cooperative launch of one group more than the suggested count; the left half of
 * each row copied onto its right half (8192 bytes: 1000 ns) is no overlap. */
#include "ze_app.h"

#define ROWS 64
#define WIDTH 256
#define HOST_PITCH 512

int main(void)
{
	struct app_ze z;
	ze_command_queue_handle_t q;
	ze_command_list_handle_t l;
	ze_kernel_handle_t k;
	uint8_t *host, *back, *back3;
	uint8_t *dev, *dev3, *scratch;
	uint32_t max_groups = 0;

	app_ze_setup(&z);
	q = app_queue(&z, 0, 0);
	l = app_list(&z, 0);
	k = app_kernel(app_module(&z), "grid_sync", 64, 1, 1);
	host = app_host_alloc(&z, (ROWS + 8) * HOST_PITCH);
	back = app_host_alloc(&z, ROWS * WIDTH);
	back3 = app_host_alloc(&z, 8 * 8192);
	dev = app_device_alloc(&z, ROWS * WIDTH * 4);
	dev3 = app_device_alloc(&z, 8 * 8192);
	scratch = app_device_alloc(&z, ROWS * WIDTH);
	for (size_t i = 0; i < (ROWS + 8) * HOST_PITCH; i++)
		host[i] = (uint8_t)(i * 7 + i / HOST_PITCH);

	ze_copy_region_t from = { 128, 8, 0, WIDTH, ROWS, 0 }, to = { 0, 0, 0, WIDTH, ROWS, 0 };
	ZE_CHECK(zeCommandListAppendMemoryCopyRegion(l, dev, &to, WIDTH, 0, host, &from,
						     HOST_PITCH, 0, NULL, 0, NULL));
	/* overlapping: rows 0-63 into rows 32-95 of the same buffer */
	ze_copy_region_t low = { 0, 0, 0, WIDTH, ROWS, 0 }, high = { 0, 32, 0, WIDTH, ROWS, 0 };
	APP_EXPECT(zeCommandListAppendMemoryCopyRegion(l, dev, &high, WIDTH, 0, dev, &low, WIDTH,
						       0, NULL, 0, NULL) ==
			   ZE_RESULT_ERROR_OVERLAPPING_REGIONS,
		   "overlapping regions were accepted");
	/* the left half of each row onto its right half: the same rows, no byte in common */
	ze_copy_region_t left = { 0, 0, 0, WIDTH / 2, ROWS, 0 },
			 right = { WIDTH / 2, 0, 0, WIDTH / 2, ROWS, 0 };
	ZE_CHECK(zeCommandListAppendMemoryCopyRegion(l, scratch, &right, WIDTH, 0, scratch, &left,
						     WIDTH, 0, NULL, 0, NULL));
	/* 3D: the 64 rows as 8 slices of 8, 200 bytes of each row */
	ze_copy_region_t s3 = { 0, 0, 0, 200, 8, 8 }, d3 = { 0, 0, 0, 200, 8, 8 };
	ZE_CHECK(zeCommandListAppendMemoryCopyRegion(l, dev3, &d3, 1024, 8192, dev, &s3, WIDTH,
						     8 * WIDTH, NULL, 0, NULL));
	ZE_CHECK(zeKernelSuggestMaxCooperativeGroupCount(k, &max_groups));
	ze_group_count_t too_many = { max_groups + 1, 1, 1 }, all = { max_groups, 1, 1 };
	APP_EXPECT(zeCommandListAppendLaunchCooperativeKernel(l, k, &too_many, NULL, 0, NULL) ==
			   ZE_RESULT_ERROR_INVALID_ARGUMENT,
		   "%u cooperative groups were accepted (at most %u)", max_groups + 1,
		   max_groups);
	ZE_CHECK(zeCommandListAppendLaunchCooperativeKernel(l, k, &all, NULL, 0, NULL));
	ZE_CHECK(zeCommandListAppendBarrier(l, NULL, 0, NULL));
	ze_copy_region_t whole = { 0, 0, 0, WIDTH, ROWS, 0 };
	ZE_CHECK(zeCommandListAppendMemoryCopyRegion(l, back, &whole, WIDTH, 0, dev, &whole,
						     WIDTH, 0, NULL, 0, NULL));
	ZE_CHECK(zeCommandListAppendMemoryCopy(l, back3, dev3, 8 * 8192, NULL, 0, NULL));
	ZE_CHECK(zeCommandListClose(l));
	ZE_CHECK(zeCommandQueueExecuteCommandLists(q, 1, &l, NULL));
	ZE_CHECK(zeCommandQueueSynchronize(q, UINT64_MAX));

	for (int r = 0; r < ROWS; r++)
		APP_EXPECT(!memcmp(back + r * WIDTH, host + (r + 8) * HOST_PITCH + 128, WIDTH),
			   "row %d differs", r);
	for (int r = 0; r < ROWS; r++)
		APP_EXPECT(!memcmp(back3 + (r / 8) * 8192 + (r % 8) * 1024,
				   host + (r + 8) * HOST_PITCH + 128, 200),
			   "row %d of the 3D copy differs", r);
	printf("ze_shapes: %u cooperative groups, %d rows: ok\n", max_groups, ROWS);
	ZE_CHECK(zeCommandListDestroy(l));
	ZE_CHECK(zeCommandQueueDestroy(q));
	ZE_CHECK(zeContextDestroy(z.context));
	return 0;
}
