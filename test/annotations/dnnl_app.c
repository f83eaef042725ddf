// SPDX-License-Identifier: MIT
/*
 * dnnl_app [iterations]: a ReLU run by oneDNN (Debian's libdnnl) on the
 * CPU. oneDNN links Intel's own static ITT part and marks every primitive
 * it executes with an ITT task named by the primitive's kind: the real
 * thing our collector must serve, untouched by this project.
 */
#include <dnnl.h>
#include <stdio.h>

#include "../arg.h"

#define CHECK(call)                                                                        \
	do {                                                                               \
		dnnl_status_t s_ = (call);                                                 \
		if (s_ != dnnl_success) {                                                  \
			fprintf(stderr, "%s failed: %d\n", #call, (int)s_);                \
			return 1;                                                          \
		}                                                                          \
	} while (0)

int main(int argc, char **argv)
{
	unsigned long iterations = test_arg(argc, argv, 1, 3);
	dnnl_engine_t engine;
	dnnl_stream_t stream;
	dnnl_dims_t dims = { 1, 8, 4, 4 };
	dnnl_memory_desc_t md;
	dnnl_memory_t src, dst;
	dnnl_eltwise_desc_t relu;
	dnnl_primitive_desc_t pd;
	dnnl_primitive_t prim;

	CHECK(dnnl_engine_create(&engine, dnnl_cpu, 0));
	CHECK(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags));
	CHECK(dnnl_memory_desc_init_by_tag(&md, 4, dims, dnnl_f32, dnnl_nchw));
	CHECK(dnnl_memory_create(&src, &md, engine, DNNL_MEMORY_ALLOCATE));
	CHECK(dnnl_memory_create(&dst, &md, engine, DNNL_MEMORY_ALLOCATE));
	CHECK(dnnl_eltwise_forward_desc_init(&relu, dnnl_forward_inference, dnnl_eltwise_relu, &md,
					     0.f, 0.f));
	CHECK(dnnl_primitive_desc_create(&pd, &relu, NULL, engine, NULL));
	CHECK(dnnl_primitive_create(&prim, pd));

	dnnl_exec_arg_t args[2] = { { DNNL_ARG_SRC, src }, { DNNL_ARG_DST, dst } };
	for (unsigned long i = 0; i < iterations; i++) {
		CHECK(dnnl_primitive_execute(prim, stream, 2, args));
		CHECK(dnnl_stream_wait(stream));
	}
	printf("relu: %lu runs\n", iterations);
	dnnl_primitive_destroy(prim);
	dnnl_primitive_desc_destroy(pd);
	dnnl_memory_destroy(src);
	dnnl_memory_destroy(dst);
	dnnl_stream_destroy(stream);
	dnnl_engine_destroy(engine);
	return 0;
}
