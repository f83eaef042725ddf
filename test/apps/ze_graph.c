/* What SYCL's Level Zero adapter does with a graph and Intel's driver extensions, on any
 * loader: every function comes from zeDriverGetExtensionFunctionAddress.
 *
 * Part 1, a graph: a mutable regular list (ZE_experimental_mutable_command_list) with two
 * kernel launches and a copy, closed once and executed RUNS times (at least 3); between
 * runs the graph is updated as a SYCL graph update does:
 *   run 0: as recorded: graph_scale 64 groups of 32; graph_tail 16 groups of 4 (no event);
 *   run 1: graph_scale's group count 128 and group size 8;
 *   run 2 and later: the first launch switched to graph_alt (group size 8), 100 groups;
 *          graph_tail now signals an event of the program's, with timestamps, read back;
 * and once more on an in-order immediate list (zeCommandListImmediateAppendCommandListsExp,
 * as SYCL replays a graph), signalling an event of the program's without timestamps.
 * Part 2, Intel's zex functions on an in-order immediate list: kernels signaling
 * counter-based events made by zexCounterBasedEventCreate2 (with and without kernel
 * timestamps), a wait on host memory the host writes 2 ms later, a write to memory, and
 * an imported host pointer.
 *
 *   ze_graph [RUNS]
 *   ze_graph misuse   breaks the mutable lists' rules; prints what each call returned
 */
#include <time.h>
#include <unistd.h>

#include "backends/levelzero/ze_newer.h"
#include "backends/levelzero/ze_intel_ext.h"
#include "ze_app.h"

#define GET(z, name, fn) \
	ZE_CHECK(zeDriverGetExtensionFunctionAddress((z)->driver, #name, (void **)&(fn)))

static void sleep_ns(long ns)
{
	struct timespec t = { ns / 1000000000L, ns % 1000000000L };

	nanosleep(&t, NULL);
}

static void graph(struct app_ze *z, int runs)
{
	__typeof__(&zeCommandListGetNextCommandIdExp) next_id;
	__typeof__(&zeCommandListGetNextCommandIdWithKernelsExp) next_id_with_kernels;
	__typeof__(&zeCommandListUpdateMutableCommandsExp) update;
	__typeof__(&zeCommandListUpdateMutableCommandKernelsExp) update_kernels;
	__typeof__(&zeCommandListUpdateMutableCommandSignalEventExp) update_signal;
	__typeof__(&zeCommandListImmediateAppendCommandListsExp) append_lists;
	ze_mutable_command_list_exp_desc_t mdesc = {
		ZE_STRUCTURE_TYPE_MUTABLE_COMMAND_LIST_EXP_DESC, NULL, 0 };
	ze_command_list_desc_t ldesc = { ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, &mdesc, 0, 0 };
	ze_mutable_command_id_exp_desc_t first_desc = {
		ZE_STRUCTURE_TYPE_MUTABLE_COMMAND_ID_EXP_DESC, NULL,
		ZE_MUTABLE_COMMAND_EXP_FLAG_KERNEL_ARGUMENTS | ZE_MUTABLE_COMMAND_EXP_FLAG_GROUP_COUNT |
			ZE_MUTABLE_COMMAND_EXP_FLAG_GROUP_SIZE |
			ZE_MUTABLE_COMMAND_EXP_FLAG_KERNEL_INSTRUCTION };
	ze_mutable_command_id_exp_desc_t tail_desc = {
		ZE_STRUCTURE_TYPE_MUTABLE_COMMAND_ID_EXP_DESC, NULL,
		ZE_MUTABLE_COMMAND_EXP_FLAG_GROUP_COUNT | ZE_MUTABLE_COMMAND_EXP_FLAG_SIGNAL_EVENT };
	ze_module_handle_t m = app_module(z);
	ze_kernel_handle_t scale = app_kernel(m, "graph_scale", 32, 1, 1);
	ze_kernel_handle_t alt = app_kernel(m, "graph_alt", 8, 1, 1);
	ze_kernel_handle_t tail = app_kernel(m, "graph_tail", 4, 1, 1);
	ze_kernel_handle_t both[2] = { scale, alt };
	ze_group_count_t g64 = { 64, 1, 1 }, g16 = { 16, 1, 1 }, g128 = { 128, 1, 1 },
			 g100 = { 100, 1, 1 };
	ze_event_pool_handle_t pool = app_event_pool(
		z, ZE_EVENT_POOL_FLAG_HOST_VISIBLE | ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP, 1);
	ze_event_handle_t done = app_event(pool, 0);
	ze_event_pool_handle_t plain_pool = app_event_pool(z, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1);
	ze_event_handle_t replayed = app_event(plain_pool, 0);
	ze_command_list_handle_t imm;
	ze_command_queue_handle_t q = app_queue(z, 0, 0);
	ze_command_list_handle_t l;
	size_t nbytes = 40000;
	void *src = app_host_alloc(z, nbytes), *dst = app_device_alloc(z, nbytes);
	uint64_t first, last;

	GET(z, zeCommandListGetNextCommandIdExp, next_id);
	GET(z, zeCommandListGetNextCommandIdWithKernelsExp, next_id_with_kernels);
	GET(z, zeCommandListUpdateMutableCommandsExp, update);
	GET(z, zeCommandListUpdateMutableCommandKernelsExp, update_kernels);
	GET(z, zeCommandListUpdateMutableCommandSignalEventExp, update_signal);
	GET(z, zeCommandListImmediateAppendCommandListsExp, append_lists);

	ZE_CHECK(zeCommandListCreate(z->context, z->device, &ldesc, &l));
	ZE_CHECK(next_id_with_kernels(l, &first_desc, 2, both, &first));
	ZE_CHECK(zeCommandListAppendLaunchKernel(l, scale, &g64, NULL, 0, NULL));
	ZE_CHECK(next_id(l, &tail_desc, &last));
	ZE_CHECK(zeCommandListAppendLaunchKernel(l, tail, &g16, NULL, 0, NULL));
	ZE_CHECK(zeCommandListAppendMemoryCopy(l, dst, src, nbytes, NULL, 0, NULL));
	ZE_CHECK(zeCommandListClose(l));
	APP_EXPECT(first != last, "two commands, one id");

	for (int run = 0; run < runs; run++) {
		if (run == 1) {
			ze_mutable_group_size_exp_desc_t size = {
				ZE_STRUCTURE_TYPE_MUTABLE_GROUP_SIZE_EXP_DESC, NULL, first, 8, 1, 1 };
			ze_mutable_group_count_exp_desc_t count = {
				ZE_STRUCTURE_TYPE_MUTABLE_GROUP_COUNT_EXP_DESC, &size, first, &g128 };
			ze_mutable_commands_exp_desc_t u = {
				ZE_STRUCTURE_TYPE_MUTABLE_COMMANDS_EXP_DESC, &count, 0 };

			ZE_CHECK(update(l, &u));
			ZE_CHECK(zeCommandListClose(l));
		} else if (run == 2) {
			ze_mutable_group_count_exp_desc_t count = {
				ZE_STRUCTURE_TYPE_MUTABLE_GROUP_COUNT_EXP_DESC, NULL, first, &g100 };
			ze_mutable_commands_exp_desc_t u = {
				ZE_STRUCTURE_TYPE_MUTABLE_COMMANDS_EXP_DESC, &count, 0 };

			ZE_CHECK(update_kernels(l, 1, &first, &alt));
			ZE_CHECK(update(l, &u));
			ZE_CHECK(update_signal(l, last, done));
			ZE_CHECK(zeCommandListClose(l));
		}
		if (run >= 2)
			ZE_CHECK(zeEventHostReset(done));
		ZE_CHECK(zeCommandQueueExecuteCommandLists(q, 1, &l, NULL));
		ZE_CHECK(zeCommandQueueSynchronize(q, UINT64_MAX));
		if (run >= 2) {
			ze_kernel_timestamp_result_t ts;

			ZE_CHECK(zeEventQueryStatus(done));
			ZE_CHECK(zeEventQueryKernelTimestamp(done, &ts));
			APP_EXPECT(ts.global.kernelEnd != ts.global.kernelStart,
				   "graph_tail's own event has its times");
		}
		printf("graph run %d done\n", run);
	}
	imm = app_in_order_list(z, 0);
	ZE_CHECK(zeEventHostReset(done));
	ZE_CHECK(append_lists(imm, 1, &l, replayed, 0, NULL));
	ZE_CHECK(zeEventHostSynchronize(replayed, UINT64_MAX));
	printf("graph replayed on an immediate list\n");
	ZE_CHECK(zeCommandListDestroy(imm));
	ZE_CHECK(zeCommandListDestroy(l));
	ZE_CHECK(zeCommandQueueDestroy(q));
	ZE_CHECK(zeEventDestroy(done));
	ZE_CHECK(zeEventPoolDestroy(pool));
	ZE_CHECK(zeEventDestroy(replayed));
	ZE_CHECK(zeEventPoolDestroy(plain_pool));
	ZE_CHECK(zeMemFree(z->context, src));
	ZE_CHECK(zeMemFree(z->context, dst));
	ZE_CHECK(zeKernelDestroy(scale));
	ZE_CHECK(zeKernelDestroy(alt));
	ZE_CHECK(zeKernelDestroy(tail));
	ZE_CHECK(zeModuleDestroy(m));
}

static void intel_extensions(struct app_ze *z)
{
	__typeof__(&zexCounterBasedEventCreate2) cb_create;
	__typeof__(&zexCommandListAppendWaitOnMemory) wait_on_memory;
	__typeof__(&zexCommandListAppendWriteToMemory) write_to_memory;
	__typeof__(&zexDriverImportExternalPointer) import;
	__typeof__(&zexDriverGetHostPointerBaseAddress) base_of;
	__typeof__(&zexDriverReleaseImportedPointer) release;
	zex_counter_based_event_desc_t timed = {
		ZEX_STRUCTURE_COUNTER_BASED_EVENT_DESC, NULL,
		ZEX_COUNTER_BASED_EVENT_FLAG_IMMEDIATE | ZEX_COUNTER_BASED_EVENT_FLAG_HOST_VISIBLE |
			ZEX_COUNTER_BASED_EVENT_FLAG_KERNEL_TIMESTAMP,
		ZE_EVENT_SCOPE_FLAG_HOST, ZE_EVENT_SCOPE_FLAG_HOST };
	zex_counter_based_event_desc_t plain = timed;
	zex_wait_on_mem_desc_t until = { ZEX_WAIT_ON_MEMORY_FLAG_EQUAL, 0 };
	zex_write_to_mem_desc_t write = { 0 };
	ze_module_handle_t m = app_module(z);
	ze_kernel_handle_t first = app_kernel(m, "zex_first", 64, 1, 1);
	ze_kernel_handle_t after = app_kernel(m, "zex_after_flag", 32, 1, 1);
	ze_command_list_handle_t l = app_in_order_list(z, 0);
	ze_group_count_t g = { 50, 1, 1 };
	ze_event_handle_t e_timed, e_plain;
	ze_kernel_timestamp_result_t ts;
	uint64_t *flag = app_host_alloc(z, 2 * sizeof(uint64_t));
	char *imported = malloc(4096);
	void *base = NULL;

	GET(z, zexCounterBasedEventCreate2, cb_create);
	GET(z, zexCommandListAppendWaitOnMemory, wait_on_memory);
	GET(z, zexCommandListAppendWriteToMemory, write_to_memory);
	GET(z, zexDriverImportExternalPointer, import);
	GET(z, zexDriverGetHostPointerBaseAddress, base_of);
	GET(z, zexDriverReleaseImportedPointer, release);
	APP_EXPECT(imported, "memory");

	plain.flags = ZEX_COUNTER_BASED_EVENT_FLAG_IMMEDIATE | ZEX_COUNTER_BASED_EVENT_FLAG_HOST_VISIBLE;
	ZE_CHECK(cb_create(z->context, z->device, &timed, &e_timed));
	ZE_CHECK(cb_create(z->context, z->device, &plain, &e_plain));
	flag[0] = 0;
	flag[1] = 0;

	/* The program's own times from its counter-based event. */
	ZE_CHECK(zeCommandListAppendLaunchKernel(l, first, &g, e_timed, 0, NULL));
	ZE_CHECK(zeEventHostSynchronize(e_timed, UINT64_MAX));
	ZE_CHECK(zeEventQueryKernelTimestamp(e_timed, &ts));
	APP_EXPECT(ts.global.kernelEnd != ts.global.kernelStart, "zex_first has its times");

	/* The list waits for the host's word, then runs a kernel and writes one back. */
	ZE_CHECK(wait_on_memory(l, &until, &flag[0], 1, NULL));
	ZE_CHECK(zeCommandListAppendLaunchKernel(l, after, &g, e_plain, 0, NULL));
	ZE_CHECK(write_to_memory(l, &write, &flag[1], 42));
	ZE_CHECK(zeCommandListAppendLaunchKernel(l, first, &g, e_timed, 0, NULL));
	sleep_ns(2000000);
	APP_EXPECT(zeEventQueryStatus(e_plain) == ZE_RESULT_NOT_READY,
		   "the kernel after the wait ran before the host wrote the word");
	__atomic_store_n(&flag[0], 1, __ATOMIC_RELEASE);
	ZE_CHECK(zeEventHostSynchronize(e_timed, UINT64_MAX));
	APP_EXPECT(__atomic_load_n(&flag[1], __ATOMIC_ACQUIRE) == 42, "the list wrote 42");
	printf("waited on memory, wrote %" PRIu64 "\n", flag[1]);

	ZE_CHECK(import(z->driver, imported, 4096));
	ZE_CHECK(base_of(z->driver, imported + 100, &base));
	APP_EXPECT(base == imported, "the imported range's base");
	ZE_CHECK(release(z->driver, imported));
	printf("imported a host pointer\n");

	ZE_CHECK(zeEventDestroy(e_timed));
	ZE_CHECK(zeEventDestroy(e_plain));
	ZE_CHECK(zeCommandListDestroy(l));
	ZE_CHECK(zeMemFree(z->context, flag));
	free(imported);
	ZE_CHECK(zeKernelDestroy(first));
	ZE_CHECK(zeKernelDestroy(after));
	ZE_CHECK(zeModuleDestroy(m));
}

/* Each broken rule answers an error (and the simulator says which rule, on stderr). */
static void misuse(struct app_ze *z)
{
	__typeof__(&zeCommandListGetNextCommandIdExp) next_id;
	__typeof__(&zeCommandListUpdateMutableCommandsExp) update;
	__typeof__(&zeCommandListUpdateMutableCommandKernelsExp) update_kernels;
	ze_mutable_command_list_exp_desc_t mdesc = {
		ZE_STRUCTURE_TYPE_MUTABLE_COMMAND_LIST_EXP_DESC, NULL, 0 };
	ze_command_list_desc_t ldesc = { ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, &mdesc, 0, 0 };
	ze_mutable_command_id_exp_desc_t idesc = { ZE_STRUCTURE_TYPE_MUTABLE_COMMAND_ID_EXP_DESC,
						   NULL, ZE_MUTABLE_COMMAND_EXP_FLAG_GROUP_SIZE };
	ze_group_count_t g = { 8, 1, 1 };
	ze_mutable_group_count_exp_desc_t count = {
		ZE_STRUCTURE_TYPE_MUTABLE_GROUP_COUNT_EXP_DESC, NULL, 0, &g };
	ze_mutable_commands_exp_desc_t u = { ZE_STRUCTURE_TYPE_MUTABLE_COMMANDS_EXP_DESC, &count, 0 };
	ze_module_handle_t m = app_module(z);
	ze_kernel_handle_t k = app_kernel(m, "misused", 4, 1, 1);
	ze_command_list_handle_t l, plain = app_list(z, 0);
	uint64_t id = 0;

	GET(z, zeCommandListGetNextCommandIdExp, next_id);
	GET(z, zeCommandListUpdateMutableCommandsExp, update);
	GET(z, zeCommandListUpdateMutableCommandKernelsExp, update_kernels);
	ZE_CHECK(zeCommandListCreate(z->context, z->device, &ldesc, &l));
	printf("id on a list not mutable: 0x%x\n", (unsigned)next_id(plain, &idesc, &id));
	ZE_CHECK(next_id(l, &idesc, &id));
	ZE_CHECK(zeCommandListAppendLaunchKernel(l, k, &g, NULL, 0, NULL));
	count.commandId = id;
	printf("update of an open list: 0x%x\n", (unsigned)update(l, &u));
	ZE_CHECK(zeCommandListClose(l));
	printf("group count without its flag: 0x%x\n", (unsigned)update(l, &u));
	printf("kernel switch without its flag: 0x%x\n",
	       (unsigned)update_kernels(l, 1, &id, &k));
	ZE_CHECK(zeCommandListDestroy(l));
	ZE_CHECK(zeCommandListDestroy(plain));
	ZE_CHECK(zeKernelDestroy(k));
	ZE_CHECK(zeModuleDestroy(m));
}

int main(int argc, char **argv)
{
	struct app_ze z;
	int runs = argc > 1 ? atoi(argv[1]) : 4;

	if (argc > 1 && strcmp(argv[1], "misuse") == 0) {
		app_ze_setup(&z);
		misuse(&z);
		ZE_CHECK(zeContextDestroy(z.context));
		return 0;
	}
	APP_EXPECT(runs >= 3, "RUNS: 3 or more");
	app_ze_setup(&z);
	graph(&z, runs);
	intel_extensions(&z);
	ZE_CHECK(zeContextDestroy(z.context));
	printf("ze_graph ok\n");
	return 0;
}
