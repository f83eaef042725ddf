/* SPDX-License-Identifier: MIT */
/* Append-only registries the drain thread reads without locks: interned
 * strings and device/queue rows. Writers (cold paths) take a mutex. */
#ifndef GPUTRACE_REGISTRY_H
#define GPUTRACE_REGISTRY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include "event.h"

struct gt_row {
	uint32_t device;       /* device index >= 1 */
	_Atomic uint32_t name; /* string id; may change (gt_queue_rename) */
	_Atomic int sort;
	uint32_t tid;          /* row id inside the device process (1 = the device row itself) */
};

/* Number of devices / tracks registered so far (acquire). */
GT_HIDDEN uint32_t registry__devices(void);
GT_HIDDEN uint32_t registry__tracks(void);
/* Name string id of a device (1-based). */
GT_HIDDEN uint32_t registry__device_name(uint32_t device);
/* The properties a backend gave a device (gt_device_prop): n of them. */
GT_HIDDEN const struct gt_arg *registry__device_props(uint32_t device, uint32_t *n);
/* Track (1-based) description, or NULL. */
GT_HIDDEN const struct gt_row *registry__track(uint32_t track);
/* Changes each time a device or queue row is renamed: rows named before
 * are named again. */
GT_HIDDEN uint32_t registry__names_gen(void);

/* In a fork child: is the parent's row (device, track) one this process registered
 * again (gt_device_row, gt_queue_row)? Rows made in this process always are. Its file
 * names only those: not every row of the parent's, unused here. */
GT_HIDDEN bool registry__device_shown(uint32_t device);
GT_HIDDEN bool registry__track_shown(uint32_t track);
/* A parent's row the child drew on without registering it again (a backend that kept
 * its row ids): shown from the next naming of rows on. */
GT_HIDDEN void registry__claim_track(uint32_t track);
/* The child's rows so far are its parent's, none shown until registered again. */
GT_HIDDEN void registry__fork_child(void);

/* Locks for fork(): held across it so the child finds them free. */
GT_HIDDEN void registry__lock_all(void);
GT_HIDDEN void registry__unlock_all(void);

#endif
