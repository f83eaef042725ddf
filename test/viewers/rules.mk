# Viewer checks (test/viewers/test_viewers.py): a plug-in that records a
# busy, awkward trace, a program whose threads name themselves and exit, and
# one whose kernels are shorter than the device's tick.
VIEWERS_OUT := $(BUILD)/test/viewers

$(VIEWERS_OUT)/plugin/libbusy.so: test/viewers/busyplug.c backends/plugins/gputrace_plugin.h
	@mkdir -p $(dir $@) $(VIEWERS_OUT)/include/gputrace
	cp backends/plugins/gputrace_plugin.h $(VIEWERS_OUT)/include/gputrace/
	$(CC) $(CFLAGS) -std=c99 -Wall -Wextra -Werror -fPIC -shared -I$(VIEWERS_OUT)/include \
	  -o $@ $<

TEST_BUILD += $(VIEWERS_OUT)/plugin/libbusy.so

ifeq ($(HAVE_ZE),1)
$(VIEWERS_OUT)/thread_names $(VIEWERS_OUT)/ze_tiny_kernels: \
		$(VIEWERS_OUT)/%: test/viewers/%.c test/apps/ze_app.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -o $@ $< -lze_loader -lpthread
TEST_BUILD += $(VIEWERS_OUT)/thread_names $(VIEWERS_OUT)/ze_tiny_kernels
endif
