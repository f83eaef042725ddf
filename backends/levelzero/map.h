/* SPDX-License-Identifier: MIT */
/*
 * Handle -> value map for the Level Zero backend: open addressing, changes
 * under the caller's lock. A map made with lockfree_reads (launch paths read
 * kernel names without a lock) keeps every table it outgrew, so a reader
 * still probing one stays safe; a deleted slot is taken again by a key whose
 * probe passes it, so churn does not outgrow a table. Others free them.
 */
#ifndef GPUTRACE_LEVELZERO_MAP_H
#define GPUTRACE_LEVELZERO_MAP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "inject/event.h"

struct ze_map_slot {
	_Atomic uintptr_t key; /* 0: never used; deleted: val 0, until a key takes it again */
	_Atomic uintptr_t val;
};

struct ze_map_tab {
	size_t mask;
	size_t used; /* slots with a key, deleted ones included */
	struct ze_map_slot slots[];
};

struct ze_map {
	_Atomic(struct ze_map_tab *) tab;
	bool lockfree_reads;
};

/* Lock-free with lockfree_reads, else under the caller's lock; 0 when absent. */
GT_HIDDEN uintptr_t ze_map__get(struct ze_map *m, const void *key);
/* Under the caller's lock. val must not be 0. 0 or -ENOMEM. */
GT_HIDDEN int ze_map__put(struct ze_map *m, const void *key, uintptr_t val);
/* Under the caller's lock. Returns the old value or 0. */
GT_HIDDEN uintptr_t ze_map__del(struct ze_map *m, const void *key);
/* Under the caller's lock: call fn for every live entry. */
GT_HIDDEN void ze_map__each(struct ze_map *m, void (*fn)(const void *key, uintptr_t val, void *arg),
			    void *arg);
/* Forget everything (after fork; the old tables are leaked on purpose). */
GT_HIDDEN void ze_map__forget(struct ze_map *m);

#endif
