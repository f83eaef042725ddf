/* SPDX-License-Identifier: MIT */
/* Ring memory comes from mmap, not malloc: the program's allocator is not
 * ours to call from its threads' first traced call, and pages are only
 * touched as the ring fills. */
#include <stdlib.h>
#include <sys/mman.h>

#include "ring.h"

struct ring *ring__new(size_t bytes, pid_t tid, uint32_t serial)
{
	size_t slots = 64, header = 4096;
	struct ring *r;
	void *mem;

	while (slots * sizeof(struct gt_event) < bytes && slots < (1ull << 30))
		slots <<= 1;
	mem = mmap(NULL, header + slots * sizeof(struct gt_event), PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return NULL;
	_Static_assert(sizeof(struct ring) <= 4096, "the ring's header fits its page");
	r = mem;
	r->mask = slots - 1;
	r->limit = slots / RING_WAKE_DIV; /* the first refresh wakes the drain */
	r->tid = tid;
	r->serial = serial;
	r->map_bytes = header + slots * sizeof(struct gt_event);
	r->slots = (struct gt_event *)((char *)mem + header);
	return r;
}

void ring__free(struct ring *r)
{
	if (r)
		munmap(r, r->map_bytes);
}
