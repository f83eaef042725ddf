// SPDX-License-Identifier: MIT
/*
 * A plug-in that does nothing but hand its builder to the unit test
 * (check_plugins), which then drives the builder call by call. It exports
 * what create received; the test finds it with dlsym.
 */
#include <stdio.h>

#include <gputrace/gputrace_plugin.h>

GPUTRACE_PLUGIN_VISIBLE const struct gputrace_builder_api *capture_api;
GPUTRACE_PLUGIN_VISIBLE gputrace_builder *capture_builder;
GPUTRACE_PLUGIN_VISIBLE uint32_t capture_kinds;
GPUTRACE_PLUGIN_VISIBLE char capture_config[256];
GPUTRACE_PLUGIN_VISIBLE int capture_destroyed;

static int capture_query(struct gputrace_plugin_info *info)
{
	info->name = "capture";
	info->kinds = GPUTRACE_KIND_RUNTIME | GPUTRACE_KIND_KERNEL | GPUTRACE_KIND_ANNOTATION |
		      GPUTRACE_KIND_COUNTER;
	return 0;
}

static int capture_create(const struct gputrace_plugin_setup *setup, void **state)
{
	capture_api = setup->api;
	capture_builder = setup->builder;
	capture_kinds = setup->kinds;
	snprintf(capture_config, sizeof(capture_config), "%s", setup->config);
	*state = NULL;
	return 0;
}

static void capture_destroy(void *state)
{
	(void)state;
	capture_destroyed = 1;
}

/* Only the required calls and destroy: start, stop and flush may be NULL. */
static const struct gputrace_plugin capture_plugin = {
	GPUTRACE_PLUGIN_TABLE_HEAD, capture_query, capture_create, NULL, NULL, NULL,
	capture_destroy,
};

GPUTRACE_PLUGIN_EXPORT(capture_plugin)
