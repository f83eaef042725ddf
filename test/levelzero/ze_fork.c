/* ze_fork [inherited|driver_only|parents_events]: a kernel `parent_kernel` on an immediate list, then fork(); the child
 * calls zeInit again, makes its own context and list and runs `child_kernel`; after the
 * child exits the parent runs `parent_kernel` again on its list. Every kernel is 3000 ns,
 * waited with an event (a pool without timestamps). With `inherited` the child also runs
 * `parent_kernel` on the parent's list (which the simulated driver allows, a real one
 * re-initialising in a fork child does not). With `driver_only` the child only calls
 * zeDriverGet. With `parents_events` the parent makes a pool with kernel timestamps and
 * one event of it; the child runs `parent_kernel` on a list of its own twice, timed by
 * that event, then by one it makes of the pool, and says whether the kernel's
 * timestamps span it. */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../apps/ze_app.h"

static void run_kernel(struct app_ze *z, ze_command_list_handle_t imm, ze_kernel_handle_t k)
{
	ze_group_count_t groups = { 3000, 1, 1 };
	ze_event_pool_handle_t pool = app_event_pool(z, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1);
	ze_event_handle_t done = app_event(pool, 0);

	ZE_CHECK(zeCommandListAppendLaunchKernel(imm, k, &groups, done, 0, NULL));
	ZE_CHECK(zeEventHostSynchronize(done, UINT64_MAX));
	ZE_CHECK(zeEventDestroy(done));
	ZE_CHECK(zeEventPoolDestroy(pool));
}

static void session(const char *name, struct app_ze *z, ze_command_list_handle_t *imm,
		    ze_kernel_handle_t *k)
{
	app_ze_setup(z);
	*imm = app_immediate_list(z, 0, 0);
	*k = app_kernel(app_module(z), name, 1, 1, 1);
}

int main(int argc, char **argv)
{
	struct app_ze z;
	ze_command_list_handle_t imm;
	ze_kernel_handle_t k;
	ze_event_pool_handle_t pool = NULL;
	ze_event_handle_t made = NULL;
	int status = 0;
	pid_t pid;

	session("parent_kernel", &z, &imm, &k);
	if (argc > 1 && !strcmp(argv[1], "parents_events")) {
		pool = app_event_pool(&z, ZE_EVENT_POOL_FLAG_HOST_VISIBLE |
				      ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP, 2);
		made = app_event(pool, 0);
	}
	run_kernel(&z, imm, k);
	fflush(stdout);
	pid = fork();
	APP_EXPECT(pid >= 0, "fork");
	if (pid == 0 && pool) {
		/* on a list of its own: the parent's event, then one it makes of the pool */
		ze_command_list_handle_t cimm = app_immediate_list(&z, 0, 0);
		ze_group_count_t groups = { 3000, 1, 1 };

		for (int i = 0; i < 2; i++) {
			ze_event_handle_t e = i ? app_event(pool, 1) : made;
			ze_kernel_timestamp_result_t ts;

			ZE_CHECK(zeCommandListAppendLaunchKernel(cimm, k, &groups, e, 0, NULL));
			ZE_CHECK(zeEventHostSynchronize(e, UINT64_MAX));
			ZE_CHECK(zeEventQueryKernelTimestamp(e, &ts));
			printf("child: the kernel took %s ticks\n",
			       ts.global.kernelEnd > ts.global.kernelStart + 10 ? "> 10" : "<= 10");
		}
		return 0;
	}
	if (pid == 0 && argc > 1 && !strcmp(argv[1], "driver_only")) {
		uint32_t n = 0;

		ZE_CHECK(zeDriverGet(&n, NULL));
		printf("child: %u driver(s)\n", n);
		return 0;
	}
	if (pid == 0) {
		struct app_ze c;
		ze_command_list_handle_t cimm;
		ze_kernel_handle_t ck;

		session("child_kernel", &c, &cimm, &ck);
		run_kernel(&c, cimm, ck);
		if (argc > 1 && !strcmp(argv[1], "inherited"))
			run_kernel(&z, imm, k);
		printf("child: child_kernel done\n");
		return 0;
	}
	APP_EXPECT(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		   WEXITSTATUS(status) == 0, "child failed");
	run_kernel(&z, imm, k);
	printf("parent: parent_kernel done twice\n");
	return 0;
}
