// SPDX-License-Identifier: MIT
/* Handle map of the Level Zero backend: see map.h. */
#include <errno.h>
#include <stdlib.h>
#include "backends/levelzero/map.h"

#define ZE_MAP_MIN 64

static size_t ze_map__hash(uintptr_t key)
{
	/* Handles are aligned pointers: drop the low bits, then mix. */
	uint64_t h = (uint64_t)key >> 3;

	h *= 0x9e3779b97f4a7c15ull;
	return (size_t)(h ^ (h >> 29));
}

/* The key's slot, or the empty one its probe ends at; with deleted (a
 * writer's), also the first deleted slot on the way (NULL if none). */
static inline struct ze_map_slot *ze_map__probe(struct ze_map_tab *t, uintptr_t key,
						struct ze_map_slot **deleted)
{
	if (deleted)
		*deleted = NULL;
	for (size_t i = ze_map__hash(key) & t->mask;; i = (i + 1) & t->mask) {
		uintptr_t k = atomic_load_explicit(&t->slots[i].key, memory_order_acquire);

		if (k == key || k == 0)
			return &t->slots[i];
		if (deleted && !*deleted &&
		    !atomic_load_explicit(&t->slots[i].val, memory_order_relaxed))
			*deleted = &t->slots[i];
	}
}

static struct ze_map_slot *ze_map__find(struct ze_map_tab *t, uintptr_t key)
{
	return ze_map__probe(t, key, NULL);
}

uintptr_t ze_map__get(struct ze_map *m, const void *key)
{
	struct ze_map_tab *t = atomic_load_explicit(&m->tab, memory_order_acquire);
	struct ze_map_slot *s;

	if (!t || !key)
		return 0;
	s = ze_map__find(t, (uintptr_t)key);
	if (atomic_load_explicit(&s->key, memory_order_acquire) != (uintptr_t)key)
		return 0;
	return atomic_load_explicit(&s->val, memory_order_acquire);
}

static int ze_map__grow(struct ze_map *m)
{
	struct ze_map_tab *old = atomic_load_explicit(&m->tab, memory_order_relaxed);
	size_t live = 0, cap = ZE_MAP_MIN;
	struct ze_map_tab *t;

	if (old)
		for (size_t i = 0; i <= old->mask; i++)
			live += atomic_load_explicit(&old->slots[i].val, memory_order_relaxed) != 0;
	while (cap < 4 * (live + 1))
		cap *= 2;
	t = calloc(1, sizeof(*t) + cap * sizeof(t->slots[0]));
	if (!t)
		return -ENOMEM;
	t->mask = cap - 1;
	for (size_t i = 0; old && i <= old->mask; i++) {
		uintptr_t k = atomic_load_explicit(&old->slots[i].key, memory_order_relaxed);
		uintptr_t v = atomic_load_explicit(&old->slots[i].val, memory_order_relaxed);
		struct ze_map_slot *s;

		if (!k || !v)
			continue;
		s = ze_map__find(t, k);
		atomic_store_explicit(&s->val, v, memory_order_relaxed);
		atomic_store_explicit(&s->key, k, memory_order_relaxed);
		t->used++;
	}
	atomic_store_explicit(&m->tab, t, memory_order_release);
	/* Else a lock-free reader may still be in it. */
	if (!m->lockfree_reads)
		free(old);
	return 0;
}

int ze_map__put(struct ze_map *m, const void *key, uintptr_t val)
{
	struct ze_map_tab *t = atomic_load_explicit(&m->tab, memory_order_relaxed);
	struct ze_map_slot *s, *deleted;

	if (!key)
		return -EINVAL;
	if (t) {
		s = ze_map__probe(t, (uintptr_t)key, &deleted);
		/* A re-put of a present key needs no room. */
		if (atomic_load_explicit(&s->key, memory_order_relaxed) == (uintptr_t)key) {
			atomic_store_explicit(&s->val, val, memory_order_release);
			return 0;
		}
		/*
		 * A deleted slot on the key's path is taken again, the key first:
		 * a lock-free reader of the deleted key probes on past it, and one
		 * of the new key (no one holds it before this returns) reads it
		 * absent until the value is in. Without it, handles made and
		 * destroyed over and over (kernels) filled the table again and
		 * again, and a map with lock-free readers kept every table.
		 */
		if (deleted) {
			atomic_store_explicit(&deleted->key, (uintptr_t)key, memory_order_release);
			atomic_store_explicit(&deleted->val, val, memory_order_release);
			return 0;
		}
	}
	if (!t || 2 * (t->used + 1) > t->mask + 1) {
		if (ze_map__grow(m))
			return -ENOMEM;
		t = atomic_load_explicit(&m->tab, memory_order_relaxed);
		s = ze_map__find(t, (uintptr_t)key);
	}
	/* An empty slot. Value first, then the key: a reader that sees the key
	 * sees its value. */
	atomic_store_explicit(&s->val, val, memory_order_release);
	atomic_store_explicit(&s->key, (uintptr_t)key, memory_order_release);
	t->used++;
	return 0;
}

/* Whether a live key's probe passes slot i: one in the run of slots after it
 * (up to an empty one) whose probe began at i or before. */
static bool ze_map__probe_passes(struct ze_map_tab *t, size_t i)
{
	for (size_t j = (i + 1) & t->mask;; j = (j + 1) & t->mask) {
		uintptr_t k = atomic_load_explicit(&t->slots[j].key, memory_order_relaxed);
		size_t home;

		if (!k)
			return false;
		if (!atomic_load_explicit(&t->slots[j].val, memory_order_relaxed))
			continue;
		home = ze_map__hash(k) & t->mask;
		if (((home - i) & t->mask) == 0 || ((home - i) & t->mask) > ((j - i) & t->mask))
			return true;
	}
}

uintptr_t ze_map__del(struct ze_map *m, const void *key)
{
	struct ze_map_tab *t = atomic_load_explicit(&m->tab, memory_order_relaxed);
	struct ze_map_slot *s;

	if (!t || !key)
		return 0;
	s = ze_map__find(t, (uintptr_t)key);
	if (atomic_load_explicit(&s->key, memory_order_relaxed) != (uintptr_t)key)
		return 0;
	uintptr_t old = atomic_exchange_explicit(&s->val, 0, memory_order_acq_rel);
	/*
	 * A deleted slot no live key's probe passes is empty again, and then the
	 * deleted one before it is looked at: a reader misses nothing (one of a
	 * deleted key may stop early, finding it absent, as it is).
	 */
	for (size_t i = (size_t)(s - t->slots);
	     atomic_load_explicit(&t->slots[i].key, memory_order_relaxed) &&
	     !atomic_load_explicit(&t->slots[i].val, memory_order_relaxed) &&
	     !ze_map__probe_passes(t, i);
	     i = (i - 1) & t->mask) {
		atomic_store_explicit(&t->slots[i].key, 0, memory_order_release);
		t->used--;
	}
	return old;
}

void ze_map__each(struct ze_map *m, void (*fn)(const void *key, uintptr_t val, void *arg),
		  void *arg)
{
	struct ze_map_tab *t = atomic_load_explicit(&m->tab, memory_order_relaxed);

	if (!t)
		return;
	for (size_t i = 0; i <= t->mask; i++) {
		uintptr_t k = atomic_load_explicit(&t->slots[i].key, memory_order_relaxed);
		uintptr_t v = atomic_load_explicit(&t->slots[i].val, memory_order_relaxed);

		if (k && v)
			fn((const void *)k, v, arg);
	}
}

GT_FORK_CODE void ze_map__forget(struct ze_map *m)
{
	/* After fork: the parent's tables may be mid-change; leave them. */
	atomic_store_explicit(&m->tab, NULL, memory_order_relaxed);
}
