# User ranges (test/annotations/test_annotations.py): a Level Zero program
# annotated with NVTX and with ITT (the ITT one through the static part in
# itt_static.c, version 2 or 1), one whose ranges cross (ze_cross, both APIs),
# one with NVTX and ITT domains, each a stack of its own (ze_domains),
# a host-only ITT program, and one using
# oneDNN, whose Intel-built static ITT part is the real thing.
ANNOT_OUT := $(BUILD)/test/annotations
HAVE_NVTX := $(shell test -f $(CUDA_HOME)/include/nvtx3/nvToolsExt.h && echo 1)
HAVE_DNNL := $(shell test -f /usr/include/dnnl.h && echo 1)

$(ANNOT_OUT)/itt_host: test/annotations/itt_host.c test/annotations/itt_static.c \
		       test/annotations/itt_static.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -o $@ test/annotations/itt_host.c \
	  test/annotations/itt_static.c -ldl -lpthread
TEST_BUILD += $(ANNOT_OUT)/itt_host

ifeq ($(HAVE_ZE),1)
# ze_ranges and ze_cross, each built once per range API: _itt with the static
# ITT part, _nvtx with NVTX's headers (where the CUDA toolkit has them)
ANNOT_ZE := ze_ranges ze_cross
$(ANNOT_OUT)/%_itt: test/annotations/%.c test/annotations/itt_static.c \
		    test/annotations/itt_static.h test/apps/ze_app.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -DUSE_ITT -o $@ $< test/annotations/itt_static.c \
	  -lze_loader -ldl -lpthread
TEST_BUILD += $(ANNOT_ZE:%=$(ANNOT_OUT)/%_itt)

ifeq ($(HAVE_NVTX),1)
$(ANNOT_OUT)/%_nvtx: test/annotations/%.c test/apps/ze_app.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -DUSE_NVTX -I$(CUDA_HOME)/include -o $@ $< \
	  -lze_loader -ldl -lpthread
TEST_BUILD += $(ANNOT_ZE:%=$(ANNOT_OUT)/%_nvtx)

# ze_domains: NVTX domains and ITT domains in one program
$(ANNOT_OUT)/ze_domains: test/annotations/ze_domains.c test/annotations/itt_static.c \
			 test/annotations/itt_static.h test/apps/ze_app.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -I$(CUDA_HOME)/include -o $@ $< \
	  test/annotations/itt_static.c -lze_loader -ldl -lpthread
TEST_BUILD += $(ANNOT_OUT)/ze_domains
endif
endif

ifeq ($(HAVE_DNNL),1)
$(ANNOT_OUT)/dnnl_app: test/annotations/dnnl_app.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASEFLAGS) -o $@ $< -ldnnl
TEST_BUILD += $(ANNOT_OUT)/dnnl_app
endif
