/* SPDX-License-Identifier: MIT */
/* ISA-L on demand (see isal.h). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>

#include "isal.h"

static struct {
	void (*init)(struct isal_zstream *);
	int (*deflate)(struct isal_zstream *);
} isal;
static pthread_once_t isal_once = PTHREAD_ONCE_INIT;

static void isal_load(void)
{
	void *h = dlopen("libisal.so.2", RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		pr_dbg("no ISA-L (libisal.so.2): .gz traces use zlib: %s", dlerror());
		return;
	}
	isal.deflate = (int (*)(struct isal_zstream *))dlsym(h, "isal_deflate");
	if (isal.deflate)
		isal.init = (void (*)(struct isal_zstream *))dlsym(h, "isal_deflate_init");
}

bool isal__available(void)
{
	pthread_once(&isal_once, isal_load);
	return isal.init != NULL;
}

void isal__init(struct isal_zstream *s)
{
	isal.init(s);
}

int isal__deflate(struct isal_zstream *s)
{
	return isal.deflate(s);
}
