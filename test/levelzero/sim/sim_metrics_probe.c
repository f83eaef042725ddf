/* sim_metrics_probe: the simulated device's metrics (zet) and Sysman (zes) contract, raw,
 * without gputrace: one "key=value" line per check, for test_sim.py. The environment
 * decides whether metrics and Sysman are on (ZET_ENABLE_METRICS, ZES_ENABLE_SYSMAN). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <level_zero/ze_api.h>
#include <level_zero/zes_api.h>
#include <level_zero/zet_api.h>

#define CHECK(call)                                                                        \
	do {                                                                               \
		ze_result_t r_ = (call);                                                   \
		if (r_ != ZE_RESULT_SUCCESS) {                                             \
			printf("failed=%s 0x%x\n", #call, (unsigned)r_);                   \
			return 1;                                                          \
		}                                                                          \
	} while (0)

static zet_metric_group_handle_t group_named(ze_device_handle_t dev, const char *name)
{
	zet_metric_group_handle_t g[8];
	uint32_t n = 8;

	if (zetMetricGroupGet(dev, &n, g) != ZE_RESULT_SUCCESS)
		return NULL;
	for (uint32_t i = 0; i < n; i++) {
		zet_metric_group_properties_t p = { ZET_STRUCTURE_TYPE_METRIC_GROUP_PROPERTIES };

		if (zetMetricGroupGetProperties(g[i], &p) == ZE_RESULT_SUCCESS && !strcmp(p.name, name))
			return g[i];
	}
	return NULL;
}

/* The value of metric `name` in one set of calculated values of group g. */
static double value_of(zet_metric_group_handle_t g, const zet_typed_value_t *v, const char *name)
{
	zet_metric_handle_t m[16];
	uint32_t n = 16;

	zetMetricGet(g, &n, m);
	for (uint32_t i = 0; i < n; i++) {
		zet_metric_properties_t p = { ZET_STRUCTURE_TYPE_METRIC_PROPERTIES };

		zetMetricGetProperties(m[i], &p);
		if (strcmp(p.name, name))
			continue;
		return v[i].type == ZET_VALUE_TYPE_FLOAT32 ? v[i].value.fp32 : (double)v[i].value.ui64;
	}
	return -1;
}

int main(void)
{
	ze_driver_handle_t drv;
	ze_device_handle_t dev;
	ze_context_handle_t ctx;
	ze_context_desc_t cd = { ZE_STRUCTURE_TYPE_CONTEXT_DESC };
	uint32_t n = 1;
	ze_result_t r;

	CHECK(zeInit(0));
	CHECK(zeDriverGet(&n, &drv));
	n = 1;
	CHECK(zeDeviceGet(drv, &n, &dev));
	CHECK(zeContextCreate(drv, &cd, &ctx));

	n = 0;
	r = zesDeviceEnumPowerDomains((zes_device_handle_t)dev, &n, NULL);
	printf("sysman=0x%x domains=%u\n", (unsigned)r, n);
	n = 0;
	r = zetMetricGroupGet(dev, &n, NULL);
	printf("metrics=0x%x groups=%u\n", (unsigned)r, n);
	if (r != ZE_RESULT_SUCCESS || !n)
		return 0;

	zet_metric_group_handle_t basic = group_named(dev, "ComputeBasic");
	zet_metric_group_handle_t memory = group_named(dev, "MemoryProfile");
	zet_metric_group_handle_t both[2] = { basic, basic };
	zet_metric_streamer_desc_t sd = { ZET_STRUCTURE_TYPE_METRIC_STREAMER_DESC, NULL, 100, 1000 };
	zet_metric_streamer_handle_t streamer;
	zet_metric_query_pool_desc_t pd = { ZET_STRUCTURE_TYPE_METRIC_QUERY_POOL_DESC, NULL,
					    ZET_METRIC_QUERY_POOL_TYPE_PERFORMANCE, 2 };
	zet_metric_query_pool_handle_t pool;
	zet_metric_query_handle_t query;

	printf("activate_same_domain=0x%x\n",
	       (unsigned)zetContextActivateMetricGroups(ctx, dev, 2, both));
	printf("streamer_inactive=0x%x\n",
	       (unsigned)zetMetricStreamerOpen(ctx, dev, basic, &sd, NULL, &streamer));
	printf("query_pool_time_only=0x%x\n",
	       (unsigned)zetMetricQueryPoolCreate(ctx, dev, memory, &pd, &pool));
	both[1] = memory;
	CHECK(zetContextActivateMetricGroups(ctx, dev, 2, both));
	printf("query_pool_time_only_active=0x%x\n",
	       (unsigned)zetMetricQueryPoolCreate(ctx, dev, memory, &pd, &pool));
	CHECK(zetMetricStreamerOpen(ctx, dev, basic, &sd, NULL, &streamer));
	printf("streamer_period=%u\n", sd.samplingPeriod); /* raised to the minimum */
	printf("streamer_twice=0x%x\n",
	       (unsigned)zetMetricStreamerOpen(ctx, dev, basic, &sd, NULL, &streamer));
	CHECK(zetMetricStreamerClose(streamer));

	/* a query around one kernel of 640 work-items on an immediate list */
	ze_command_queue_desc_t qd = { ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, NULL, 0, 0, 0,
				       ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS,
				       ZE_COMMAND_QUEUE_PRIORITY_NORMAL };
	ze_command_list_handle_t list;
	ze_module_desc_t md = { ZE_STRUCTURE_TYPE_MODULE_DESC, NULL, ZE_MODULE_FORMAT_IL_SPIRV, 1,
				(const uint8_t *)"x", NULL, NULL };
	ze_module_handle_t mod;
	ze_kernel_desc_t kd = { ZE_STRUCTURE_TYPE_KERNEL_DESC, NULL, 0, "probe" };
	ze_kernel_handle_t k;
	ze_group_count_t gc = { 10, 1, 1 };
	ze_event_pool_desc_t epd = { ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, NULL,
				     ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1 };
	ze_event_pool_handle_t ep;
	ze_event_desc_t ed = { ZE_STRUCTURE_TYPE_EVENT_DESC, NULL, 0, ZE_EVENT_SCOPE_FLAG_HOST,
			       ZE_EVENT_SCOPE_FLAG_HOST };
	ze_event_handle_t done;
	uint8_t raw[256];
	size_t size = 0;
	uint32_t count = 0;
	zet_typed_value_t v[16];

	CHECK(zeModuleCreate(ctx, dev, &md, &mod, NULL));
	CHECK(zeKernelCreate(mod, &kd, &k));
	CHECK(zeKernelSetGroupSize(k, 64, 1, 1));
	CHECK(zeEventPoolCreate(ctx, &epd, 1, &dev, &ep));
	CHECK(zeEventCreate(ep, &ed, &done));
	CHECK(zeCommandListCreateImmediate(ctx, dev, &qd, &list));
	CHECK(zetMetricQueryPoolCreate(ctx, dev, basic, &pd, &pool));
	CHECK(zetMetricQueryCreate(pool, 0, &query));
	printf("query_before=0x%x\n", (unsigned)zetMetricQueryGetData(query, &size, NULL));
	CHECK(zetCommandListAppendMetricQueryBegin(list, query));
	CHECK(zeCommandListAppendLaunchKernel(list, k, &gc, NULL, 0, NULL));
	CHECK(zetCommandListAppendMetricQueryEnd(list, query, done, 0, NULL));
	CHECK(zeEventHostSynchronize(done, UINT64_MAX));
	for (int tries = 0; (r = zetMetricQueryGetData(query, &size, NULL)) == ZE_RESULT_NOT_READY &&
			    tries < 1000; tries++) {
		struct timespec ts = { 0, 1000000 };

		nanosleep(&ts, NULL);
	}
	CHECK(r);
	CHECK(zetMetricQueryGetData(query, &size, raw));
	CHECK(zetMetricGroupCalculateMetricValues(
		basic, ZET_METRIC_GROUP_CALCULATION_TYPE_METRIC_VALUES, size, raw, &count, NULL));
	CHECK(zetMetricGroupCalculateMetricValues(
		basic, ZET_METRIC_GROUP_CALCULATION_TYPE_METRIC_VALUES, size, raw, &count, v));
	printf("query_values=%u\n", count);
	/* the begin ran when appended, the kernel after: the window holds the host's gap too */
	printf("query_window_holds_kernel=%d\n", value_of(basic, v, "GpuTime") >= 640);
	printf("EuThreadOccupancy=%.4f\n", value_of(basic, v, "EuThreadOccupancy") *
						   value_of(basic, v, "GpuTime") / 640);
	printf("other_group_data=0x%x\n",
	       (unsigned)zetMetricGroupCalculateMetricValues(
		       memory, ZET_METRIC_GROUP_CALCULATION_TYPE_METRIC_VALUES, size, raw, &count, v));
	CHECK(zetMetricQueryDestroy(query));
	CHECK(zetMetricQueryPoolDestroy(pool));
	CHECK(zeCommandListDestroy(list));
	CHECK(zeEventDestroy(done));
	CHECK(zeEventPoolDestroy(ep));
	CHECK(zeKernelDestroy(k));
	CHECK(zeModuleDestroy(mod));
	CHECK(zeContextDestroy(ctx));
	printf("probe=ok\n");
	return 0;
}
