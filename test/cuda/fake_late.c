// SPDX-License-Identifier: MIT
/*
 * CUDA loaded late: `fake_late lib DIR` dlopen()s a library that links
 * libcudart (as `import torch` does); `fake_late dlsym DIR` dlopen()s
 * libcudart itself and looks its functions up (as ctypes users do).
 * Both RTLD_LOCAL: libcudart is not in the global scope.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	char path[4096];

	if (argc < 3)
		return 2;
	if (!strcmp(argv[1], "lib")) {
		snprintf(path, sizeof(path), "%s/libfake_late_lib.so", argv[2]);
		void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		int (*run)(void) = h ? (int (*)(void))dlsym(h, "late_lib_run") : NULL;
		if (!run) {
			printf("cannot load %s: %s\n", path, dlerror());
			return 1;
		}
		printf("late lib: %d\n", run());
		return 0;
	}
	snprintf(path, sizeof(path), "%s/fake/libcudart.so.13", argv[2]);
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	int (*set)(int) = h ? (int (*)(int))dlsym(h, "cudaSetDevice") : NULL;
	int (*count)(int *) = h ? (int (*)(int *))dlsym(h, "cudaGetDeviceCount") : NULL;
	int n = 0;
	if (!set || !count) {
		printf("cannot load %s\n", path);
		return 1;
	}
	count(&n);
	printf("dlsym: %d\n", set(7) * 1000 + n);
	return 0;
}
