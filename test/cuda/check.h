// SPDX-License-Identifier: MIT
// CHECK(call): a CUDA runtime call that must succeed, or the program prints
// the call and its error's name and exits 3 (the nvcc test programs).
#ifndef GT_TEST_CUDA_CHECK_H
#define GT_TEST_CUDA_CHECK_H
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(call)                                                                     \
	do {                                                                            \
		cudaError_t e_ = (call);                                                \
		if (e_ != cudaSuccess) {                                                \
			printf("%s: %s\n", #call, cudaGetErrorName(e_));                \
			exit(3);                                                        \
		}                                                                       \
	} while (0)
#endif
