/* ze_sysman: what PTI-GPU's Sysman sample does, written here: with ZES_ENABLE_SYSMAN=1
 * set before zeInit, the device's Sysman properties, engines and frequency domains.
 * A driver without Sysman answers ZE_RESULT_ERROR_UNSUPPORTED_FEATURE: the program says
 * so on one line and succeeds, as the sample does on such a driver. A loader of spec 1.5
 * or later also has zesInit (found with dlsym): it is tried first. */
#define _GNU_SOURCE
#include <dlfcn.h>

#include <level_zero/zes_api.h>
#include "backends/levelzero/ze_newer.h"
#include "ze_app.h"

static int unsupported(const char *what, ze_result_t r)
{
	if (r != ZE_RESULT_ERROR_UNSUPPORTED_FEATURE && r != ZE_RESULT_ERROR_UNINITIALIZED)
		return 0;
	printf("sysman: %s: not supported by this driver (0x%x)\n", what, (unsigned)r);
	return 1;
}

int main(void)
{
	zes_device_properties_t props = { ZES_STRUCTURE_TYPE_DEVICE_PROPERTIES };
	uint32_t nengines = 0, nfreq = 0;
	struct app_ze z;
	ze_result_t r;

	__typeof__(&zesInit) zes_init = (__typeof__(&zesInit))dlsym(RTLD_DEFAULT, "zesInit");

	if (zes_init && !unsupported("zesInit", r = zes_init(0)))
		ZE_CHECK(r);
	setenv("ZES_ENABLE_SYSMAN", "1", 1);
	app_ze_setup(&z);
	r = zesDeviceGetProperties((zes_device_handle_t)z.device, &props);
	if (unsupported("device properties", r))
		goto out;
	ZE_CHECK(r);
	printf("sysman: %s, %u sub-devices\n", props.modelName, props.numSubdevices);
	r = zesDeviceEnumEngineGroups((zes_device_handle_t)z.device, &nengines, NULL);
	if (!unsupported("engines", r)) {
		ZE_CHECK(r);
		printf("sysman: %u engine group(s)\n", nengines);
	}
	r = zesDeviceEnumFrequencyDomains((zes_device_handle_t)z.device, &nfreq, NULL);
	if (!unsupported("frequency", r)) {
		ZE_CHECK(r);
		printf("sysman: %u frequency domain(s)\n", nfreq);
	}
out:
	ZE_CHECK(zeContextDestroy(z.context));
	return 0;
}
