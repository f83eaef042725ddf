// SPDX-License-Identifier: MIT
/*
 * Level Zero devices: their trace rows and their clocks.
 *
 * Device timestamps are ticks of a counter with kernelTimestampValidBits bits
 * (it wraps: 32 bits of 52 ns ticks last 3.7 minutes). They become host time
 * through a (host ns, ticks) pair from zeDeviceGetGlobalTimestamps taken
 * when the work was submitted: host = pair.host + ((ticks - pair.ticks) mod
 * 2^bits) * ns_per_tick (track.c). Each submission takes a fresh
 * pair, so clock drift never accumulates over a long run.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "backends/levelzero/internal.h"
#include "inject/clock.h"

/* How far the driver's host timestamp may lie outside our own reading of the clock. */
#define ZE_HOST_SLACK_NS 50000
#define ZE_PAIR_REUSE_NS 1000000ull /* at most, see ZE_PAIR_REUSE_DIV */
/* A pair read in a call this short (or at most twice the device's shortest) is kept
 * (ze_dev__sync); an ioctl takes microseconds. */
#define ZE_PAIR_TIGHT_NS 20000
#define ZE_PAIR_TRIES 4

static struct ze_map ze_devs; /* handle -> struct ze_dev * */
static struct ze_dev *ze_dev_first;
static int ze_dev_next_index; /* for devices the enumeration does not list */

/* Where h is in the enumeration of all drivers' devices: "3" or, sub-device, "1.0". */
static int ze_dev__position(ze_device_handle_t h, char *buf, size_t len)
{
	uint32_t ndrv = 0, n;
	ze_driver_handle_t *drv;
	int index = 0, found = -1;

	if (ZE_REAL(zeDriverGet)(&ndrv, NULL) != ZE_RESULT_SUCCESS || !ndrv)
		return -ENOENT;
	drv = calloc(ndrv, sizeof(*drv));
	if (!drv || ZE_REAL(zeDriverGet)(&ndrv, drv) != ZE_RESULT_SUCCESS) {
		free(drv);
		return -ENOENT;
	}
	for (uint32_t i = 0; i < ndrv && found < 0; i++) {
		ze_device_handle_t *dev;

		n = 0;
		if (ZE_REAL(zeDeviceGet)(drv[i], &n, NULL) != ZE_RESULT_SUCCESS || !n)
			continue;
		dev = calloc(n, sizeof(*dev));
		if (!dev || ZE_REAL(zeDeviceGet)(drv[i], &n, dev) != ZE_RESULT_SUCCESS) {
			free(dev);
			continue;
		}
		for (uint32_t j = 0; j < n && found < 0; j++, index++) {
			__typeof__(&zeDeviceGetSubDevices) subdevices = ZE_REAL(zeDeviceGetSubDevices);
			uint32_t nsub = 0;
			ze_device_handle_t *sub;

			if (dev[j] == h) {
				found = index;
				snprintf(buf, len, "%d", index);
				break;
			}
			if (subdevices(dev[j], &nsub, NULL) != ZE_RESULT_SUCCESS || !nsub)
				continue;
			sub = calloc(nsub, sizeof(*sub));
			if (sub && subdevices(dev[j], &nsub, sub) == ZE_RESULT_SUCCESS) {
				for (uint32_t k = 0; k < nsub; k++) {
					if (sub[k] == h) {
						found = index;
						snprintf(buf, len, "%d.%u", index, k);
						break;
					}
				}
			}
			free(sub);
		}
		free(dev);
	}
	free(drv);
	return found;
}

/*
 * ns per tick. Legacy properties give integer ns (52 for a 19.2 MHz timer);
 * the 1.2 properties give Hz, exact. A driver that ignores the 1.2 stype
 * answers in ns again: only a value that agrees with the legacy one is used.
 */
static double ze_dev__tick(ze_device_handle_t h, const ze_device_properties_t *legacy)
{
	ze_device_properties_t p12 = { .stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2 };
	double ns = (double)legacy->timerResolution;

	if (ZE_REAL(zeDeviceGetProperties)(h, &p12) == ZE_RESULT_SUCCESS && p12.timerResolution) {
		double exact = 1e9 / (double)p12.timerResolution;

		if (ns == 0 || (exact > ns - 1.0 && exact < ns + 1.0))
			return exact;
	}
	return ns > 0 ? ns : 1.0;
}

static void ze_dev__prop_u64(uint32_t row, const char *key, uint64_t v)
{
	gt_device_prop(row, (struct gt_arg){ .key = gt_str_intern(key), .type = GT_ARG_U64, .v.u = v });
}

/* The trace's "deviceProperties", with the keys Kineto's XPU profiler writes
 * (the SYCL device info of a Level Zero device), as far as the driver tells. */
static void ze_dev__properties(struct ze_dev *d, const ze_device_properties_t *p)
{
	ze_device_compute_properties_t cp = { .stype = ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES };
	ze_device_memory_properties_t mp[8];
	uint32_t nmem = 8;
	uint64_t total = 0;
	char vendor[32];

	ze_dev__prop_u64(d->row, "id", (uint64_t)d->index);
	gt_device_prop(d->row, (struct gt_arg){ .key = gt_str_intern("name"), .type = GT_ARG_STR,
						.v.u = gt_str_intern(p->name) });
	for (uint32_t i = 0; i < nmem; i++)
		mp[i] = (ze_device_memory_properties_t){ .stype = ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES };
	if (ZE_REAL(zeDeviceGetMemoryProperties)(d->handle, &nmem, mp) == ZE_RESULT_SUCCESS) {
		for (uint32_t i = 0; i < nmem && i < 8; i++)
			total += mp[i].totalSize;
		if (total)
			ze_dev__prop_u64(d->row, "totalGlobalMem", total);
	}
	ze_dev__prop_u64(d->row, "maxComputeUnits",
			 (uint64_t)p->numSlices * p->numSubslicesPerSlice * p->numEUsPerSubslice);
	if (ZE_REAL(zeDeviceGetComputeProperties)(d->handle, &cp) == ZE_RESULT_SUCCESS) {
		ze_dev__prop_u64(d->row, "maxWorkGroupSize", cp.maxTotalGroupSize);
		ze_dev__prop_u64(d->row, "localMemSize", cp.maxSharedLocalMemory);
	}
	ze_dev__prop_u64(d->row, "maxClockFrequency", p->coreClockRate);
	ze_dev__prop_u64(d->row, "maxMemAllocSize", p->maxMemAllocSize);
	snprintf(vendor, sizeof(vendor), p->vendorId == 0x8086 ? "Intel(R) Corporation" : "0x%04x",
		 p->vendorId);
	gt_device_prop(d->row, (struct gt_arg){ .key = gt_str_intern("vendor"), .type = GT_ARG_STR,
						.v.u = gt_str_intern(vendor) });
}

/* 1/div of a timestamp wrap, at most cap ns. */
static uint64_t ze_dev__wrap_share(const struct ze_dev *d, unsigned div, uint64_t cap)
{
	double part = d->ns_per_tick * ((double)d->mask + 1.0) / div;

	return part < (double)cap ? (uint64_t)part : cap;
}

/*
 * How long a (host, ticks) pair converts new work well enough (pair_reuse_ns): the
 * two clocks drift apart by some ppm (1 ms: tens of ns at most), and work must start
 * within a wrap of the pair's ticks (a 16-bit counter of 52 ns ticks wraps every
 * 3.4 ms): 1/16 of a wrap, at most 1 ms.
 */
#define ZE_PAIR_REUSE_DIV 16
/* The clocks' error on a start (early_slack_ns: a tick's rounding, drift over a pair's
 * life, the TSC line's own: microseconds), well under a wrap: 1/64 of it, at most 20 us. */
#define ZE_EARLY_SLACK_DIV 64
#define ZE_EARLY_SLACK_NS 20000ull
/* A tick's rounding and a pair's drift over a run: 2 us, or 4 ticks if longer. */
#define ZE_OVERLAP_SLACK_NS 2000ull

struct ze_dev *ze_dev__get(ze_device_handle_t h)
{
	ze_device_properties_t props = { .stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES };
	struct ze_dev *d = (struct ze_dev *)ze_map__get(&ze_devs, h);
	char pos[32], row[sizeof(props.name) + 48];
	uint32_t bits;
	int index;

	if (d || !h || atomic_load(&ze_closed))
		return d && d->row ? d : NULL; /* row 0: known to have none */
	if (ZE_REAL(zeDeviceGetProperties)(h, &props) != ZE_RESULT_SUCCESS)
		return NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->handle = h;
	index = ze_dev__position(h, pos, sizeof(pos));
	if (index < 0) {
		index = 1000 + ze_dev_next_index++;
		snprintf(pos, sizeof(pos), "%d", index);
	}
	d->index = index;
	props.name[sizeof(props.name) - 1] = 0;
	snprintf(row, sizeof(row), "GPU %s: %s", pos, props.name);
	d->row = gt_device_row(row);
	if (!d->row) {
		/* as a device we cannot name: its work untracked, not on another's row */
		static bool said;

		gt_device_row_refused(&said, "ze", row, "work");
		/* remembered as such: not looked up again at each list or allocation */
		if (ze_map__put(&ze_devs, h, (uintptr_t)d))
			free(d);
		return NULL;
	}
	ze_dev__properties(d, &props);
	d->counter = gt_device_track(d->row);
	d->ns_per_tick = ze_dev__tick(h, &props);
	bits = props.kernelTimestampValidBits;
	d->mask = (bits == 0 || bits >= 64) ? ~0ull : (1ull << bits) - 1;
	d->pair_reuse_ns = ze_dev__wrap_share(d, ZE_PAIR_REUSE_DIV, ZE_PAIR_REUSE_NS);
	d->early_slack_ns = ze_dev__wrap_share(d, ZE_EARLY_SLACK_DIV, ZE_EARLY_SLACK_NS);
	d->same_wrap_ns = ze_dev__wrap_share(d, 4, 1000000000ull);
	d->overlap_slack_ns = 4 * d->ns_per_tick > ZE_OVERLAP_SLACK_NS
				      ? (uint64_t)(4 * d->ns_per_tick) : ZE_OVERLAP_SLACK_NS;
	if (d->overlap_slack_ns > d->early_slack_ns)
		d->overlap_slack_ns = d->early_slack_ns;
	if (ze_map__put(&ze_devs, h, (uintptr_t)d)) {
		free(d);
		return NULL;
	}
	if (!ze_dev_first || d->index < ze_dev_first->index)
		ze_dev_first = d;
	pr_dbg("ze: %s: %.3f ns per tick, %u-bit kernel timestamps", row, d->ns_per_tick,
	       bits ? bits : 64);
	return d;
}

struct ze_dev *ze_dev__first(void)
{
	return ze_dev_first;
}

/*
 * zeDeviceGetGlobalTimestamps is a driver call (on a GPU an ioctl, microseconds) that
 * an immediate append would otherwise make every time: appends a moment apart share one.
 */
int ze_dev__pair(struct ze_dev *d, uint64_t now, uint64_t *host_ns, uint64_t *ticks,
		 uint64_t *err)
{
	uint64_t seq = atomic_load_explicit(&d->pair_seq, memory_order_acquire), host, dev, width;

	if (!(seq & 1) && seq) {
		host = atomic_load_explicit(&d->pair_host, memory_order_relaxed);
		dev = atomic_load_explicit(&d->pair_ticks, memory_order_relaxed);
		width = atomic_load_explicit(&d->pair_err, memory_order_relaxed);
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&d->pair_seq, memory_order_relaxed) == seq &&
		    (int64_t)(now - host) < (int64_t)d->pair_reuse_ns) {
			*host_ns = host;
			*ticks = dev;
			*err = width;
			return 0;
		}
	}
	if (ze_dev__sync(d, &host, &dev, &width))
		return -EIO;
	/* Published by one writer at a time; a writer that loses the race keeps its own. */
	if (!(seq & 1) && atomic_compare_exchange_strong(&d->pair_seq, &seq, seq + 1)) {
		atomic_store_explicit(&d->pair_host, host, memory_order_relaxed);
		atomic_store_explicit(&d->pair_ticks, dev, memory_order_relaxed);
		atomic_store_explicit(&d->pair_err, width, memory_order_relaxed);
		atomic_store_explicit(&d->pair_seq, seq + 2, memory_order_release);
	}
	*host_ns = host;
	*ticks = dev;
	*err = width;
	return 0;
}

/*
 * A pair is as good as the call that read it is short: the driver reads the host clock and
 * the device counter at two moments inside the call (i915's engine-cycles query reads the
 * CPU clock first), and a thread preempted between them pairs a host time with ticks read
 * later. Everything converted on that pair lands early by the gap, and a command placed
 * back from one so converted lands before its own call. A call longer than
 * ZE_PAIR_TIGHT_NS is made again, up to ZE_PAIR_TRIES times, and the shortest kept; on a
 * driver whose every call is that slow, one longer than twice its shortest.
 */
int ze_dev__sync(struct ze_dev *d, uint64_t *host_ns, uint64_t *ticks, uint64_t *width)
{
	static atomic_bool warned, warned_slow;
	uint64_t best_width = UINT64_MAX, min = atomic_load_explicit(&d->pair_call_min_ns,
								      memory_order_relaxed);
	uint64_t tight = min && 2 * min > ZE_PAIR_TIGHT_NS ? 2 * min : ZE_PAIR_TIGHT_NS;

	for (int try = 0; try < ZE_PAIR_TRIES && best_width > tight; try++) {
		uint64_t before = gt_clock_ns(), host = 0, dev = 0, after;

		if (ZE_REAL(zeDeviceGetGlobalTimestamps)(d->handle, &host, &dev) !=
		    ZE_RESULT_SUCCESS) {
			if (!try)
				return -EIO;
			break;
		}
		after = gt_clock_ns();
		/*
		 * The driver's host half should be CLOCK_MONOTONIC_RAW, our clock (read
		 * directly or extrapolated: allow some slack). If it is not (it falls well
		 * outside the call), use the middle of the call instead.
		 */
		if (host + ZE_HOST_SLACK_NS < before || host > after + ZE_HOST_SLACK_NS) {
			if (!atomic_exchange(&warned, true))
				pr_warn("ze: the driver's host timestamps are not %s; device times "
					"are aligned to within the cost of "
					"zeDeviceGetGlobalTimestamps", GT_CLOCK_NAME);
			host = before + (after - before) / 2;
		}
		if (after - before < best_width) {
			best_width = after - before;
			*host_ns = host;
			*ticks = dev;
		}
	}
	if (best_width > ZE_PAIR_TIGHT_NS && !atomic_exchange(&warned_slow, true))
		pr_warn("ze: zeDeviceGetGlobalTimestamps took %llu us (the shortest of up to %d "
			"calls): device times may be off by up to that much",
			(unsigned long long)(best_width / 1000), ZE_PAIR_TRIES);
	if (!min || best_width < min) /* (a race loses a minimum: another call finds it) */
		atomic_store_explicit(&d->pair_call_min_ns, best_width ? best_width : 1,
				      memory_order_relaxed);
	if (width)
		*width = best_width;
	return 0;
}

GT_FORK_CODE void ze_dev__forget(void)
{
	ze_map__forget(&ze_devs);
	ze_dev_first = NULL;
	ze_dev_next_index = 0;
}
