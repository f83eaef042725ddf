/* ze_fork [inherited|driver_only]: a kernel `parent_kernel` on an immediate list, then fork(); the child
 * calls zeInit again, makes its own context and list and runs `child_kernel`; after the
 * child exits the parent runs `parent_kernel` again on its list. Every kernel is 3000 ns,
 * waited with an event (a pool without timestamps). With `inherited` the child also runs
 * `parent_kernel` on the parent's list (which the simulated driver allows, a real one
 * re-initialising in a fork child does not). With `driver_only` the child only calls
 * zeDriverGet. */
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
	int status = 0;
	pid_t pid;

	session("parent_kernel", &z, &imm, &k);
	run_kernel(&z, imm, k);
	fflush(stdout);
	pid = fork();
	APP_EXPECT(pid >= 0, "fork");
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
