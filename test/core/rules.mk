# End-to-end tests of the foundation: life cycle through a real intercepted API.
ifeq ($(HAVE_ZE),1)
$(BUILD)/test/core/lifecycle_app: test/core/lifecycle_app.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -o $@ $< -lze_loader -lpthread
TEST_BUILD += $(BUILD)/test/core/lifecycle_app
endif

# A program with its own use of gputrace's capture signal (no GPU API at all).
$(BUILD)/test/core/sig_own: test/core/sig_own.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -o $@ $<
TEST_BUILD += $(BUILD)/test/core/sig_own

# A program that works its environment after the constructor set ours.
$(BUILD)/test/core/env_app: test/core/env_app.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -o $@ $<
TEST_BUILD += $(BUILD)/test/core/env_app

# Preloaded ahead of ours: a fork's wait for the drain's cycle made long (test_lifecycle.py).
$(BUILD)/test/core/libslowcyclewait.so: test/core/slow_cycle_wait.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -shared -fPIC -o $@ $< -ldl
TEST_BUILD += $(BUILD)/test/core/libslowcyclewait.so
