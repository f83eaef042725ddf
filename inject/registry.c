/* SPDX-License-Identifier: MIT */
/*
 * Interned strings and device rows. Ids index chunked arrays whose chunks
 * never move, so the drain thread reads them lock-free. A string's entry is
 * published by its own release store (str_entry.s), not only by the ring record
 * that carries its id: backends cache ids for all threads in relaxed atomics
 * (ze__name, the CUDA name caches), so a thread may emit an id it never
 * synchronized with the interning thread for (TSan, ze_lists: a data race
 * between intern_locked's write and gt_str_get's read).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "registry.h"
#include "tables.h"
#include "hash.h"

#define STR_CHUNK_BITS 12
#define STR_CHUNK      (1u << STR_CHUNK_BITS)
#define STR_CHUNKS     4096 /* 16M strings */

struct str_entry {
	const char *_Atomic s; /* stored last (release): len and hash are valid once it is set */
	uint32_t len;
	uint32_t hash;
};

static pthread_mutex_t str_lock = PTHREAD_MUTEX_INITIALIZER;
GT_TABLE(struct str_entry *_Atomic, str_chunks, STR_CHUNKS);
static uint32_t str_count; /* next id; under str_lock */
static uint32_t *str_index;  /* open addressing: ids, 0 = empty; under str_lock */
static uint32_t str_index_mask;

/* Rows of a fixed width, not pointers: none for the loader to relocate in every
 * process (README, "Overhead"). */
#define GT_S_FITS(id, str) _Static_assert(sizeof(str) <= 16, "static string " #id " too long");
GT_STATIC_STRINGS(GT_S_FITS)
#undef GT_S_FITS
static const char static_strings[][16] = {
	"",
#define GT_S_STR(id, str) str,
	GT_STATIC_STRINGS(GT_S_STR)
#undef GT_S_STR
};

static uint32_t hash_bytes(const char *s, size_t n)
{
	return gt_fnv1a32(s, n);
}

static struct str_entry *str_entry(uint32_t id)
{
	struct str_entry *chunk =
		atomic_load_explicit(&str_chunks[id >> STR_CHUNK_BITS], memory_order_acquire);

	return chunk ? &chunk[id & (STR_CHUNK - 1)] : NULL;
}

static int index_grow(void)
{
	uint32_t newsize = str_index ? (str_index_mask + 1) * 2 : 1024;
	uint32_t *idx = calloc(newsize, sizeof(*idx));

	if (!idx)
		return -1;
	for (uint32_t id = 1; id < str_count; id++) {
		uint32_t h = str_entry(id)->hash & (newsize - 1);
		while (idx[h])
			h = (h + 1) & (newsize - 1);
		idx[h] = id;
	}
	free(str_index);
	str_index = idx;
	str_index_mask = newsize - 1;
	return 0;
}

/* force_new: the static strings keep their enum ids even when two are
 * spelled the same ("kernel" is a category and an arg key). */
static uint32_t intern_locked(const char *s, size_t len, bool force_new)
{
	uint32_t h = hash_bytes(s, len), slot;
	struct str_entry *e;
	char *copy;

	if (!str_count)
		str_count = 1; /* id 0 means "none" */
	if ((!str_index || str_count * 2 > str_index_mask) && index_grow())
		return GT_S_EMPTY;
	for (slot = h & str_index_mask; str_index[slot]; slot = (slot + 1) & str_index_mask) {
		e = str_entry(str_index[slot]);
		if (e->hash == h && e->len == len &&
		    !memcmp(atomic_load_explicit(&e->s, memory_order_relaxed), s, len)) {
			if (!force_new)
				return str_index[slot];
			break;
		}
	}
	if (str_count >= STR_CHUNK * STR_CHUNKS)
		return GT_S_EMPTY;
	if (!str_entry(str_count)) {
		struct str_entry *chunk = calloc(STR_CHUNK, sizeof(*chunk));
		if (!chunk)
			return GT_S_EMPTY;
		atomic_store_explicit(&str_chunks[str_count >> STR_CHUNK_BITS], chunk,
				      memory_order_release);
	}
	if (force_new) {
		copy = (char *)s; /* a static string: ours for the process's life */
	} else {
		copy = malloc(len + 1);
		if (!copy)
			return GT_S_EMPTY;
		memcpy(copy, s, len);
		copy[len] = 0;
	}
	e = str_entry(str_count);
	e->len = (uint32_t)len;
	e->hash = h;
	atomic_store_explicit(&e->s, copy, memory_order_release);
	if (!str_index[slot])
		str_index[slot] = str_count;
	return str_count++;
}

static void intern_static_once(void)
{
	/* Static strings take ids 1.. in enum order (GT_S_EMPTY == 1). */
	for (size_t i = 1; i < sizeof(static_strings) / sizeof(static_strings[0]); i++)
		intern_locked(static_strings[i], strlen(static_strings[i]), true);
}

uint32_t gt_str_intern_n(const char *s, size_t len)
{
	uint32_t id;

	if (!s)
		return GT_S_EMPTY;
	pthread_mutex_lock(&str_lock);
	if (!str_count)
		intern_static_once();
	id = intern_locked(s, len, false);
	pthread_mutex_unlock(&str_lock);
	return id;
}

uint32_t gt_str_intern(const char *s)
{
	return gt_str_intern_n(s, s ? strlen(s) : 0);
}

const char *gt_str_get(uint32_t id, size_t *len)
{
	struct str_entry *e;
	const char *s;

	if (id && id < GT_S__COUNT) {
		/* Static ids are valid before anything was interned. */
		if (len)
			*len = strlen(static_strings[id]);
		return static_strings[id];
	}
	e = id ? str_entry(id) : NULL;
	s = e ? atomic_load_explicit(&e->s, memory_order_acquire) : NULL;
	if (!s) {
		if (len)
			*len = 0;
		return "";
	}
	if (len)
		*len = e->len;
	return s;
}

/* ---- device rows ---- */

static pthread_mutex_t row_lock = PTHREAD_MUTEX_INITIALIZER;
/* Names may change (gt_device_rename) while the drain thread reads them. */
static _Atomic uint32_t device_names[GT_DEVICES_MAX + 1];
static _Atomic uint32_t names_gen;
static uint32_t device_tracks[GT_DEVICES_MAX + 1];
GT_TABLE(struct gt_row, tracks, GT_TRACKS_MAX + 1);
static uint32_t device_next_tid[GT_DEVICES_MAX + 1];
static struct gt_arg device_props[GT_DEVICES_MAX + 1][GT_DEVICE_PROPS_MAX];
static _Atomic uint32_t device_nprops[GT_DEVICES_MAX + 1];
static _Atomic uint32_t ndevices, ntracks;
/* A fork child's rows up to these are its parent's: shown once claimed, as the child
 * registers them again (its backends forgot theirs; names find the same rows). */
static uint32_t inherited_devices GT_STARTUP_STATE, inherited_tracks GT_STARTUP_STATE;
/* any row made: read by every fork child (beside the start-up state: a shell's child
 * touches no other page of ours for it) */
static bool any_rows GT_STARTUP_STATE;
static _Atomic bool device_claimed[GT_DEVICES_MAX + 1];
static _Atomic bool track_claimed[GT_TRACKS_MAX + 1];

/* row_lock held: the row (and its device) are this process's too; named again. */
static void claim_locked(uint32_t device, uint32_t track)
{
	bool any = false;

	if (device && device <= inherited_devices && !device_claimed[device]) {
		atomic_store_explicit(&device_claimed[device], true, memory_order_relaxed);
		if (device_tracks[device] <= inherited_tracks)
			atomic_store_explicit(&track_claimed[device_tracks[device]], true,
					      memory_order_relaxed);
		any = true;
	}
	if (track && track <= inherited_tracks && !track_claimed[track]) {
		atomic_store_explicit(&track_claimed[track], true, memory_order_relaxed);
		any = true;
	}
	if (any)
		atomic_fetch_add_explicit(&names_gen, 1, memory_order_release);
}

bool registry__device_shown(uint32_t device)
{
	return device > inherited_devices ||
	       atomic_load_explicit(&device_claimed[device], memory_order_relaxed);
}

bool registry__track_shown(uint32_t track)
{
	return track > inherited_tracks ||
	       atomic_load_explicit(&track_claimed[track], memory_order_relaxed);
}

void registry__claim_track(uint32_t track)
{
	pthread_mutex_lock(&row_lock);
	if (track >= 1 && track <= atomic_load_explicit(&ntracks, memory_order_relaxed))
		claim_locked(tracks[track].device, track);
	pthread_mutex_unlock(&row_lock);
}

GT_FORK_CODE void registry__fork_child(void)
{
	if (!any_rows)
		return;
	inherited_devices = atomic_load_explicit(&ndevices, memory_order_relaxed);
	inherited_tracks = atomic_load_explicit(&ntracks, memory_order_relaxed);
	/* (a grandchild: the claims were its parent's; none written when no rows) */
	for (uint32_t d = 1; d <= inherited_devices; d++)
		atomic_store_explicit(&device_claimed[d], false, memory_order_relaxed);
	for (uint32_t t = 1; t <= inherited_tracks; t++)
		atomic_store_explicit(&track_claimed[t], false, memory_order_relaxed);
}

static uint32_t add_track_locked(uint32_t device, uint32_t name, int sort, uint32_t tid)
{
	uint32_t n = atomic_load_explicit(&ntracks, memory_order_relaxed);

	if (n >= GT_TRACKS_MAX)
		return 0;
	n++;
	any_rows = true;
	tracks[n].device = device;
	tracks[n].tid = tid;
	atomic_store_explicit(&tracks[n].name, name, memory_order_relaxed);
	atomic_store_explicit(&tracks[n].sort, sort, memory_order_relaxed);
	atomic_store_explicit(&ntracks, n, memory_order_release);
	return n;
}

uint32_t gt_device_row(const char *name)
{
	uint32_t id = gt_str_intern(name), n, dev = 0;

	pthread_mutex_lock(&row_lock);
	n = atomic_load_explicit(&ndevices, memory_order_relaxed);
	for (uint32_t d = 1; d <= n; d++)
		if (device_names[d] == id)
			dev = d;
	if (dev)
		claim_locked(dev, 0);
	/* a device needs its own row too: none is made without it */
	if (!dev && n < GT_DEVICES_MAX &&
	    atomic_load_explicit(&ntracks, memory_order_relaxed) < GT_TRACKS_MAX) {
		dev = n + 1;
		device_names[dev] = id;
		device_next_tid[dev] = 2;
		atomic_store_explicit(&ndevices, dev, memory_order_release);
		/* The device's own row carries its counters. */
		device_tracks[dev] = add_track_locked(dev, id, -1, 1);
	}
	pthread_mutex_unlock(&row_lock);
	return dev;
}

void gt_device_row_refused(bool *said, const char *backend, const char *name, const char *what)
{
	if (!*said)
		pr_warn("%s: device \"%s\" has no row: at most %d devices (and %d rows) per "
			"process, taken by other backends' and plug-ins' devices; its %s is not "
			"drawn; said once", backend, name, GT_DEVICES_MAX, GT_TRACKS_MAX, what);
	*said = true;
}

uint32_t gt_queue_row(uint32_t device, const char *name, int sort)
{
	uint32_t id = gt_str_intern(name), n, track = 0;

	pthread_mutex_lock(&row_lock);
	if (device >= 1 && device <= atomic_load_explicit(&ndevices, memory_order_relaxed)) {
		n = atomic_load_explicit(&ntracks, memory_order_relaxed);
		for (uint32_t t = 1; t <= n && !track; t++)
			if (tracks[t].device == device && tracks[t].name == id && tracks[t].tid != 1)
				track = t;
		if (!track)
			track = add_track_locked(device, id, sort, device_next_tid[device]++);
		claim_locked(device, track);
	}
	pthread_mutex_unlock(&row_lock);
	return track;
}

void gt_device_rename(uint32_t device, const char *name)
{
	uint32_t id = gt_str_intern(name);

	pthread_mutex_lock(&row_lock);
	if (device >= 1 && device <= atomic_load_explicit(&ndevices, memory_order_relaxed) &&
	    atomic_load_explicit(&device_names[device], memory_order_relaxed) != id) {
		atomic_store_explicit(&device_names[device], id, memory_order_relaxed);
		atomic_store_explicit(&tracks[device_tracks[device]].name, id, memory_order_relaxed);
		atomic_fetch_add_explicit(&names_gen, 1, memory_order_release);
	}
	pthread_mutex_unlock(&row_lock);
}

void gt_queue_rename(uint32_t track, const char *name, int sort)
{
	uint32_t id = gt_str_intern(name);

	pthread_mutex_lock(&row_lock);
	if (track >= 1 && track <= atomic_load_explicit(&ntracks, memory_order_relaxed) &&
	    tracks[track].tid != 1 &&
	    (atomic_load_explicit(&tracks[track].name, memory_order_relaxed) != id ||
	     atomic_load_explicit(&tracks[track].sort, memory_order_relaxed) != sort)) {
		atomic_store_explicit(&tracks[track].name, id, memory_order_relaxed);
		atomic_store_explicit(&tracks[track].sort, sort, memory_order_relaxed);
		atomic_fetch_add_explicit(&names_gen, 1, memory_order_release);
	}
	pthread_mutex_unlock(&row_lock);
}

uint32_t registry__names_gen(void)
{
	return atomic_load_explicit(&names_gen, memory_order_acquire);
}

uint32_t gt_device_track(uint32_t device)
{
	if (device < 1 || device > atomic_load_explicit(&ndevices, memory_order_acquire))
		return 0;
	return device_tracks[device];
}

void gt_device_prop(uint32_t device, struct gt_arg prop)
{
	uint32_t n;

	pthread_mutex_lock(&row_lock);
	if (device >= 1 && device <= atomic_load_explicit(&ndevices, memory_order_relaxed)) {
		n = atomic_load_explicit(&device_nprops[device], memory_order_relaxed);
		for (uint32_t i = 0; i < n; i++)
			if (device_props[device][i].key == prop.key)
				goto out;
		if (n < GT_DEVICE_PROPS_MAX) {
			device_props[device][n] = prop;
			/* the drain thread reads them without the lock */
			atomic_store_explicit(&device_nprops[device], n + 1, memory_order_release);
		}
	}
out:
	pthread_mutex_unlock(&row_lock);
}

const struct gt_arg *registry__device_props(uint32_t device, uint32_t *n)
{
	*n = device >= 1 && device <= registry__devices()
		     ? atomic_load_explicit(&device_nprops[device], memory_order_acquire)
		     : 0;
	return *n ? device_props[device] : NULL;
}

uint32_t registry__devices(void)
{
	return atomic_load_explicit(&ndevices, memory_order_acquire);
}

uint32_t registry__tracks(void)
{
	return atomic_load_explicit(&ntracks, memory_order_acquire);
}

uint32_t registry__device_name(uint32_t device)
{
	return device >= 1 && device <= registry__devices() ? device_names[device] : 0;
}

const struct gt_row *registry__track(uint32_t track)
{
	return track >= 1 && track <= registry__tracks() ? &tracks[track] : NULL;
}

void registry__lock_all(void)
{
	pthread_mutex_lock(&str_lock);
	pthread_mutex_lock(&row_lock);
}

GT_FORK_CODE void registry__unlock_all(void)
{
	pthread_mutex_unlock(&row_lock);
	pthread_mutex_unlock(&str_lock);
}
