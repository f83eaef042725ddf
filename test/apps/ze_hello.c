/* ze_hello: what the Level Zero loader's own "hello world" sample does, written here.
 * It asks the process for zeInitDrivers with dlsym(RTLD_DEFAULT) (a newer loader has it)
 * and starts with it, asking for GPU drivers, else with zeInit + zeDriverGet; prints the
 * loader's components, the driver's API version and the device; then signals an event
 * from an immediate list and waits for it on the host. */
#define _GNU_SOURCE
#include <dlfcn.h>

#include <level_zero/loader/ze_loader.h>
#include "backends/levelzero/ze_newer.h"
#include "ze_app.h"

static void print_loader(void)
{
	zel_component_version_t *v;
	size_t n = 0;

	ZE_CHECK(zelLoaderGetVersions(&n, NULL));
	v = calloc(n ? n : 1, sizeof(*v));
	APP_EXPECT(v, "calloc");
	ZE_CHECK(zelLoaderGetVersions(&n, v));
	for (size_t i = 0; i < n; i++)
		printf("component %s\n", v[i].component_name);
	free(v);
}

int main(void)
{
	__typeof__(&zeInitDrivers) init_drivers =
		(__typeof__(&zeInitDrivers))dlsym(RTLD_DEFAULT, "zeInitDrivers");
	ze_init_driver_type_desc_t types = { ZE_STRUCTURE_TYPE_INIT_DRIVER_TYPE_DESC, NULL,
					     ZE_INIT_DRIVER_TYPE_FLAG_GPU };
	ze_device_properties_t props = { ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES };
	ze_context_desc_t cdesc = { ZE_STRUCTURE_TYPE_CONTEXT_DESC };
	ze_driver_handle_t drivers[4];
	uint32_t ndrivers = 0, ndev = 1;
	struct app_ze z;
	ze_api_version_t version;

	if (init_drivers) {
		/* The count first, then the handles, as the loader's sample does. */
		ZE_CHECK(init_drivers(&ndrivers, NULL, &types));
		APP_EXPECT(ndrivers >= 1 && ndrivers <= 4, "%u GPU drivers", ndrivers);
		ZE_CHECK(init_drivers(&ndrivers, drivers, &types));
		printf("init: zeInitDrivers, %u GPU driver(s)\n", ndrivers);
	} else {
		ZE_CHECK(zeInit(ZE_INIT_FLAG_GPU_ONLY));
		ndrivers = 4;
		ZE_CHECK(zeDriverGet(&ndrivers, drivers));
		printf("init: zeInit (this loader has no zeInitDrivers)\n");
	}
	print_loader();
	z.driver = drivers[0];
	ZE_CHECK(zeDriverGetApiVersion(z.driver, &version));
	printf("driver API %u.%u\n", ZE_MAJOR_VERSION(version), ZE_MINOR_VERSION(version));
	ZE_CHECK(zeDeviceGet(z.driver, &ndev, &z.device));
	ZE_CHECK(zeDeviceGetProperties(z.device, &props));
	APP_EXPECT(props.type == ZE_DEVICE_TYPE_GPU, "not a GPU");
	printf("device %s\n", props.name);
	ZE_CHECK(zeContextCreate(z.driver, &cdesc, &z.context));

	ze_command_list_handle_t list = app_immediate_list(&z, 0, 0);
	ze_event_pool_handle_t pool = app_event_pool(&z, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1);
	ze_event_handle_t done = app_event(pool, 0);

	ZE_CHECK(zeCommandListAppendSignalEvent(list, done));
	ZE_CHECK(zeEventHostSynchronize(done, UINT64_MAX));
	printf("signaled from the device and seen by the host\n");

	/* The loader's sample destroys the context before what was made in it: so do we. */
	ZE_CHECK(zeContextDestroy(z.context));
	ZE_CHECK(zeCommandListDestroy(list));
	ZE_CHECK(zeEventDestroy(done));
	ZE_CHECK(zeEventPoolDestroy(pool));
	return 0;
}
