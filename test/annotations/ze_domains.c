// SPDX-License-Identifier: MIT
/*
 * ze_domains: each NVTX domain, and each ITT domain, is a push/pop stack of
 * its own (nvToolsExt.h: "Each domain maintains its own nvtxRangePush and
 * nvtxRangePop stack"), on the simulated Level Zero device. Prints what each
 * push and pop returned; exit 0.
 *  - domain "trainer" pushes "epoch", the default domain l1..l5 inside it,
 *    then trainer pops: "epoch" ends (5 levels down), k_nest runs in l1..l5;
 *  - the default domain pushes "default-open"; trainer pops with nothing of
 *    its own open, and ITT ends a task of domain "lib" with none begun: both
 *    end nothing; k_odd runs in "default-open", whose pop returns 0;
 *  - ITT: "ta" in domain "lib", "tb" in "io", "ta" ended: k_itt runs in "tb".
 */
#include <nvtx3/nvToolsExt.h>

#include "../apps/ze_app.h"
#include "itt_static.h"

static ze_module_handle_t module;
static ze_command_list_handle_t imm;
static ze_event_handle_t done;

static void launch(const char *kernel)
{
	ze_group_count_t groups = { 1, 1, 1 };

	ZE_CHECK(zeEventHostReset(done));
	ZE_CHECK(zeCommandListAppendLaunchKernel(imm, app_kernel(module, kernel, 8, 1, 1),
						 &groups, done, 0, NULL));
	ZE_CHECK(zeEventHostSynchronize(done, UINT64_MAX));
}

int main(void)
{
	struct app_ze z;
	nvtxEventAttributes_t a = { 0 };
	itt_domain *lib = itt_domain_create("lib"), *io = itt_domain_create("io");
	char name[8];

	app_ze_setup(&z);
	module = app_module(&z);
	imm = app_immediate_list(&z, 0, 0);
	done = app_event(app_event_pool(&z, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1), 0);

	nvtxDomainHandle_t trainer = nvtxDomainCreateA("trainer");

	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = "epoch";
	printf("push epoch %d\n", nvtxDomainRangePushEx(trainer, &a));
	for (int i = 1; i <= 5; i++) {
		snprintf(name, sizeof(name), "l%d", i);
		printf("push %s %d\n", name, nvtxRangePushA(name));
	}
	printf("pop trainer %d\n", nvtxDomainRangePop(trainer));
	launch("k_nest");
	for (int i = 5; i >= 1; i--)
		printf("pop l%d %d\n", i, nvtxRangePop());

	nvtxRangePushA("default-open");
	printf("pop trainer %d\n", nvtxDomainRangePop(trainer));
	itt_task_end(lib);
	launch("k_odd");
	printf("pop default-open %d\n", nvtxRangePop());
	printf("pop nothing %d\n", nvtxRangePop());

	itt_task_begin(lib, itt_null, itt_null, itt_string_handle_create("ta"));
	itt_task_begin(io, itt_null, itt_null, itt_string_handle_create("tb"));
	itt_task_end(lib);
	launch("k_itt");
	itt_task_end(io);
	printf("ze_domains: done\n");
	return 0;
}
