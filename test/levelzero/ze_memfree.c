/* ze_memfree: 1 MiB of device memory and 64 KiB of host USM allocated in one context, each
 * freed first with another context (the driver refuses: the memory stays allocated), then
 * with its own. Prints each result. */
#include "../apps/ze_app.h"

static void free_with_other_then_own(struct app_ze *z, ze_context_handle_t other, void *p,
				     const char *what)
{
	ze_memory_allocation_properties_t props = { ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES };
	ze_result_t r = zeMemFree(other, p);

	printf("%s: zeMemFree(other context) 0x%x\n", what, (unsigned)r);
	if (r == ZE_RESULT_SUCCESS)
		exit(1);
	ZE_CHECK(zeMemGetAllocProperties(z->context, p, &props, NULL));
	printf("%s: still allocated, type %d\n", what, props.type);
	ZE_CHECK(zeMemFree(z->context, p));
	printf("%s: freed\n", what);
}

int main(void)
{
	ze_context_desc_t cd = { ZE_STRUCTURE_TYPE_CONTEXT_DESC, NULL, 0 };
	ze_context_handle_t other;
	struct app_ze z;

	app_ze_setup(&z);
	ZE_CHECK(zeContextCreate(z.driver, &cd, &other));
	free_with_other_then_own(&z, other, app_device_alloc(&z, 1 << 20), "device");
	free_with_other_then_own(&z, other, app_host_alloc(&z, 1 << 16), "host");
	ZE_CHECK(zeContextDestroy(other));
	ZE_CHECK(zeContextDestroy(z.context));
	return 0;
}
