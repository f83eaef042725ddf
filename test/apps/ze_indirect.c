/* ze_indirect: launches whose group counts the program writes after appending them (as a
 * GPU-driven pipeline does: counts computed by an earlier kernel), and a copy from another
 * context's memory. On one regular list, on queue 0.0:
 *   - zeCommandListAppendLaunchKernelIndirect of "indirect_a" (64-item groups), its counts
 *     in host memory written after the append: 4 groups on the first execution (256 ns
 *     simulated), 8 on the second (512 ns), 200000 on the third (12.8 ms: a
 *     zeCommandQueueSynchronize with timeout 0 says not ready);
 *   - zeCommandListAppendLaunchMultipleKernelsIndirect of "indirect_b" (32), "indirect_c"
 *     (16) and "indirect_a", the count buffer saying 2 (the third never runs): 2 and 8
 *     groups, 64 + 128 = 192 ns, one command and one span;
 *   - zeCommandListAppendMemoryCopyFromContext: 65536 bytes of device memory of a second
 *     context (filled from its host memory by a synchronous immediate list of its own,
 *     6553 ns) into device memory of the first (6553 ns), then copied back, byte for byte.
 * The list runs three times. Two appends the specification forbids fail and change nothing: an
 * indirect launch whose arguments are not device-readable memory (the program's own
 * malloc), and a copy naming the first context for the second's memory. */
#include <stdlib.h>

#include "ze_app.h"

#define BYTES 65536

int main(void)
{
	struct app_ze z;
	ze_context_desc_t cdesc = { ZE_STRUCTURE_TYPE_CONTEXT_DESC, NULL, 0 };
	ze_context_handle_t other;
	ze_host_mem_alloc_desc_t hdesc = { ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, NULL, 0 };
	ze_command_queue_desc_t sync_desc = { ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, NULL, 1, 0, 0,
					      ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS,
					      ZE_COMMAND_QUEUE_PRIORITY_NORMAL };
	ze_device_mem_alloc_desc_t ddesc = { ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, NULL, 0, 0 };
	ze_command_queue_handle_t q;
	ze_command_list_handle_t l, theirs_list;
	ze_module_handle_t m;
	ze_kernel_handle_t a, kernels[3];
	ze_group_count_t *one, *three, *plain;
	uint32_t *num;
	uint8_t *theirs_host, *theirs, *dev, *back;

	app_ze_setup(&z);
	ZE_CHECK(zeContextCreate(z.driver, &cdesc, &other));
	q = app_queue(&z, 0, 0);
	l = app_list(&z, 0);
	m = app_module(&z);
	a = app_kernel(m, "indirect_a", 64, 1, 1);
	kernels[0] = app_kernel(m, "indirect_b", 32, 1, 1);
	kernels[1] = app_kernel(m, "indirect_c", 16, 1, 1);
	kernels[2] = a;
	one = app_host_alloc(&z, sizeof(*one));
	three = app_host_alloc(&z, 3 * sizeof(*three));
	num = app_host_alloc(&z, sizeof(*num));
	plain = calloc(1, sizeof(*plain));
	ZE_CHECK(zeMemAllocHost(other, &hdesc, BYTES, 64, (void **)&theirs_host));
	ZE_CHECK(zeMemAllocDevice(other, &ddesc, BYTES, 64, z.device, (void **)&theirs));
	ZE_CHECK(zeCommandListCreateImmediate(other, z.device, &sync_desc, &theirs_list));
	dev = app_device_alloc(&z, BYTES);
	back = app_host_alloc(&z, BYTES);
	memset(one, 0, sizeof(*one));
	memset(three, 0, 3 * sizeof(*three));
	*num = 0;
	/* allocations belong to their context: the first one knows nothing of theirs */
	ze_memory_allocation_properties_t props = { ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES };
	ZE_CHECK(zeMemGetAllocProperties(other, theirs, &props, NULL));
	APP_EXPECT(props.type == ZE_MEMORY_TYPE_DEVICE, "their memory is of type %d", props.type);
	ZE_CHECK(zeMemGetAllocProperties(z.context, theirs, &props, NULL));
	APP_EXPECT(props.type == ZE_MEMORY_TYPE_UNKNOWN, "another context's memory is known");
	for (size_t i = 0; i < BYTES; i++)
		theirs_host[i] = (uint8_t)(i * 13 + i / 251);
	ZE_CHECK(zeCommandListAppendMemoryCopy(theirs_list, theirs, theirs_host, BYTES, NULL, 0,
					       NULL));

	ZE_CHECK(zeCommandListAppendLaunchKernelIndirect(l, a, one, NULL, 0, NULL));
	APP_EXPECT(zeCommandListAppendLaunchKernelIndirect(l, a, plain, NULL, 0, NULL) ==
			   ZE_RESULT_ERROR_INVALID_ARGUMENT,
		   "an indirect launch read the program's malloc");
	ZE_CHECK(zeCommandListAppendLaunchMultipleKernelsIndirect(l, 3, kernels, num, three, NULL,
								 0, NULL));
	ZE_CHECK(zeCommandListAppendMemoryCopyFromContext(l, dev, other, theirs, BYTES, NULL, 0,
							  NULL));
	APP_EXPECT(zeCommandListAppendMemoryCopyFromContext(l, dev, z.context, theirs, BYTES, NULL,
							    0, NULL) ==
			   ZE_RESULT_ERROR_INVALID_ARGUMENT,
		   "a copy named the wrong context for its source");
	ZE_CHECK(zeCommandListAppendBarrier(l, NULL, 0, NULL));
	ZE_CHECK(zeCommandListAppendMemoryCopy(l, back, dev, BYTES, NULL, 0, NULL));
	ZE_CHECK(zeCommandListClose(l));

	/* the counts, written after the appends */
	*one = (ze_group_count_t){ 4, 1, 1 };
	three[0] = (ze_group_count_t){ 2, 1, 1 };
	three[1] = (ze_group_count_t){ 8, 1, 1 };
	three[2] = (ze_group_count_t){ 100, 1, 1 };
	*num = 2;
	ZE_CHECK(zeCommandQueueExecuteCommandLists(q, 1, &l, NULL));
	ZE_CHECK(zeCommandQueueSynchronize(q, UINT64_MAX));
	APP_EXPECT(!memcmp(back, theirs_host, BYTES), "the copy from the other context differs");
	one->groupCountX = 8;
	ZE_CHECK(zeCommandQueueExecuteCommandLists(q, 1, &l, NULL));
	ZE_CHECK(zeCommandQueueSynchronize(q, UINT64_MAX));
	/* a long one: a wait of 0 answers at once, as for any other kernel */
	one->groupCountX = 200000;
	ZE_CHECK(zeCommandQueueExecuteCommandLists(q, 1, &l, NULL));
	APP_EXPECT(zeCommandQueueSynchronize(q, 0) == ZE_RESULT_NOT_READY,
		   "a 12.8 ms indirect kernel was done at once");
	ZE_CHECK(zeCommandQueueSynchronize(q, UINT64_MAX));
	/* a context made after another's end never owns that one's memory, even at its
	 * address (the specification lets a driver free it with its context) */
	for (int i = 0; i < 8; i++) {
		ze_context_handle_t gone, next;
		void *left;

		ZE_CHECK(zeContextCreate(z.driver, &cdesc, &gone));
		ZE_CHECK(zeMemAllocDevice(gone, &ddesc, 64, 64, z.device, &left));
		ZE_CHECK(zeContextDestroy(gone));
		ZE_CHECK(zeContextCreate(z.driver, &cdesc, &next));
		ZE_CHECK(zeMemGetAllocProperties(next, left, &props, NULL));
		APP_EXPECT(props.type == ZE_MEMORY_TYPE_UNKNOWN,
			   "a new context owns a destroyed one's memory");
		ZE_CHECK(zeContextDestroy(next));
	}
	printf("ze_indirect: ok\n");
	free(plain);
	ZE_CHECK(zeCommandListDestroy(l));
	ZE_CHECK(zeCommandQueueDestroy(q));
	ZE_CHECK(zeCommandListDestroy(theirs_list));
	ZE_CHECK(zeMemFree(other, theirs));
	ZE_CHECK(zeMemFree(other, theirs_host));
	ZE_CHECK(zeContextDestroy(other));
	ZE_CHECK(zeContextDestroy(z.context));
	return 0;
}
