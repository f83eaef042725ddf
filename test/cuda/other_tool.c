// SPDX-License-Identifier: MIT
/*
 * Another CUPTI tool injected through CUDA_INJECTION64_PATH (as Nsight
 * Systems is): at cuInit it subscribes as "other-tool" and counts runtime
 * calls; at exit it writes what it got to $OTHER_TOOL_OUT. A tracer that
 * finds CUPTI taken must leave this tool's session alone.
 */
#include <stdio.h>
#include <stdlib.h>

#include <cupti.h>

static int subscribed = -1, calls;

static void CUPTIAPI on_api(void *ud, CUpti_CallbackDomain d, CUpti_CallbackId cbid,
			    const void *data)
{
	const CUpti_CallbackData *cb = data;

	if (cb->callbackSite == CUPTI_API_EXIT)
		__atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
}

static void report(void)
{
	const char *path = getenv("OTHER_TOOL_OUT");
	FILE *f = path ? fopen(path, "w") : NULL;

	if (f) {
		fprintf(f, "other-tool: subscribe %d, %d runtime calls\n", subscribed,
			__atomic_load_n(&calls, __ATOMIC_RELAXED));
		fclose(f);
	}
}

__attribute__((visibility("default"))) int InitializeInjection(void)
{
	CUpti_SubscriberParams p = { CUpti_SubscriberParams_STRUCT_SIZE, "other-tool", NULL, 0 };
	CUpti_SubscriberHandle sub;

	subscribed = cuptiSubscribe_v2(&sub, on_api, NULL, &p);
	if (subscribed == CUPTI_SUCCESS)
		cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API);
	atexit(report);
	return 1;
}
