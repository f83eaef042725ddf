/* SPDX-License-Identifier: MIT */
/*
 * fault_malloc N: a program with its own allocator (a bump allocator over a
 * static arena with a spin lock; free does nothing), as some HPC codes and
 * games have. Every malloc of the process, the tracer's included, lands
 * here. It makes threads and calls, and checks its arena at exit.
 */
#include "fault.h"

#include <malloc.h>

#define ARENA (256u << 20)
static char arena[ARENA] __attribute__((aligned(64)));
static size_t used;
static volatile int lock;
static unsigned long long nallocs;

static void *bump(size_t align, size_t n)
{
	void *p = NULL;

	while (__atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE))
		;
	/* the block is aligned, its size header sits in the 16 bytes before it */
	size_t at = (used + 16 + align - 1) & ~(align - 1);
	if (n < ARENA && at + n <= ARENA) {
		*(size_t *)(arena + at - 16) = n;
		p = arena + at;
		used = at + n;
		nallocs++;
	}
	__atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
	if (!p)
		errno = ENOMEM;
	return p;
}

void *malloc(size_t n)
{
	return bump(16, n);
}

void free(void *p)
{
	(void)p;
}

void *calloc(size_t a, size_t b)
{
	if (b && a > (size_t)-1 / b) {
		errno = ENOMEM;
		return NULL;
	}
	return bump(16, a * b); /* the arena starts zeroed and is never reused */
}

void *realloc(void *p, size_t n)
{
	void *q = bump(16, n);

	if (p && q) {
		size_t old = *(size_t *)((char *)p - 16);
		memcpy(q, p, old < n ? old : n);
	}
	return q;
}

void *memalign(size_t align, size_t n)
{
	return bump(align < 16 ? 16 : align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
	void *p = bump(align < 16 ? 16 : align, n);

	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

void *aligned_alloc(size_t align, size_t n)
{
	void *p;

	return posix_memalign(&p, align, n) ? NULL : p;
}

size_t malloc_usable_size(void *p)
{
	return p ? *(size_t *)((char *)p - 16) : 0;
}

static void *worker(void *arg)
{
	char *mine = malloc(100);

	calls((int)(intptr_t)arg);
	strcpy(mine, "worker");
	report();
	return NULL;
}

int main(int argc, char **argv)
{
	int n = arg_int(argc, argv, 1, 1000);
	pthread_t t[4];

	fault_init();
	calls(n);
	report();
	for (int i = 0; i < 4; i++) {
		fault_thread(&t[i], NULL, worker, (void *)(intptr_t)n);
		pthread_join(t[i], NULL);
	}
	sleep_ms(50);
	calls(n);
	report();
	say("allocator %s\n", used <= ARENA && nallocs > 0 ? "served" : "unused");
	return 0;
}
