// SPDX-License-Identifier: MIT
/*
 * Device telemetry through Sysman (zes), when GPUTRACE_TELEMETRY asks:
 * frequency, power (from the energy counter), temperature, memory use and
 * bandwidth, engine utilisation, sampled by the drain thread every
 * 1/GPUTRACE_TELEMETRY_HZ s as counter tracks on each device's row.
 *
 * Level Zero 1.4 (Debian's loader 1.8.12) has no zesInit: Sysman works on the
 * core device handles when ZES_ENABLE_SYSMAN=1 is in the environment before
 * zeInit, which the constructor sets. A loader that has zesInit and a driver
 * that wants it get it, and its devices are matched to the core ones by UUID.
 *
 * Rates (power, bandwidth, utilisation) are differences of two readings: each
 * is drawn from the earlier reading's time, so a counter's value holds over the
 * interval it measures. Values that are instants (frequency, temperature,
 * memory used) are drawn at their reading.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backends/levelzero/internal.h"
#include "inject/clock.h"
#include "inject/config.h"
#include "inject/registry.h"
#include "inject/shim.h"
#include "inject/tables.h"

#define ZT_DEVS_MAX 16
#define ZT_DOMAINS  4  /* per kind of resource */
#define ZT_ENGINES  8
#define ZT_RATE_MIN_US 1000 /* a rate over less is mostly the counters' rounding */

struct zt_dev {
	ze_device_handle_t core;
	zes_device_handle_t handle;
	struct ze_dev *dev;
	zes_freq_handle_t freq[ZT_DOMAINS];
	uint32_t freq_key[ZT_DOMAINS];
	unsigned nfreq;
	zes_pwr_handle_t pwr[ZT_DOMAINS];
	uint32_t pwr_key[ZT_DOMAINS];
	zes_power_energy_counter_t energy[ZT_DOMAINS];
	unsigned npwr;
	zes_temp_handle_t temp[ZT_DOMAINS];
	uint32_t temp_key[ZT_DOMAINS];
	unsigned ntemp;
	zes_mem_handle_t mem[ZT_DOMAINS];
	zes_mem_bandwidth_t bw[ZT_DOMAINS];
	unsigned nmem;
	zes_engine_handle_t eng[ZT_ENGINES];
	uint32_t eng_key[ZT_ENGINES];
	zes_engine_stats_t stats[ZT_ENGINES];
	unsigned neng;
	struct gt_run_lock sampler; /* under gputrace run: this process samples it */
	char sampler_name[48];      /* "sysman-UUID.lock": a GPU's, whichever its index */
	bool have_prev;    /* the rates have an earlier reading */
	uint64_t prev_ns[3]; /* its host time: power, bandwidth, engines */
};

static pthread_mutex_t zt_lock = PTHREAD_MUTEX_INITIALIZER;
GT_TABLE(struct zt_dev, zt_devs, ZT_DEVS_MAX);
static unsigned zt_ndevs;
static _Atomic bool zt_started GT_STARTUP_STATE; /* read at every exit */
static bool zt_stopped;

static struct {
	uint32_t frequency, power, temperature, bandwidth, memory, engines;
	uint32_t read, write, used;
} zt_str;

static bool zt_wanted(void)
{
	return gt_cfg.telemetry && gt_backend_enabled(GT_BACKEND_ZE);
}

/* Names of the tracks and series, once (at the first zeInit). */
static void zt_intern(void)
{
	zt_str.frequency = gt_str_intern("frequency");
	zt_str.power = gt_str_intern("power");
	zt_str.temperature = gt_str_intern("temperature");
	zt_str.bandwidth = gt_str_intern("memory bandwidth");
	zt_str.memory = gt_str_intern("memory");
	zt_str.engines = gt_str_intern("engine utilization");
	zt_str.read = gt_str_intern("read GB/s");
	zt_str.write = gt_str_intern("write GB/s");
	zt_str.used = gt_str_intern("used bytes");
}

/* "gpu MHz", or "gpu 1 MHz" for a second domain of the same kind. */
static uint32_t zt_key(const char *what, unsigned nth, const char *unit)
{
	char key[64];

	if (nth)
		snprintf(key, sizeof(key), "%s %u %s", what, nth, unit);
	else
		snprintf(key, sizeof(key), "%s %s", what, unit);
	return gt_str_intern(key);
}

static const char *zt_engine_name(zes_engine_group_t t)
{
	switch (t) {
	case ZES_ENGINE_GROUP_ALL:
		return "all";
	case ZES_ENGINE_GROUP_COMPUTE_ALL:
		return "compute";
	case ZES_ENGINE_GROUP_MEDIA_ALL:
		return "media";
	case ZES_ENGINE_GROUP_COPY_ALL:
		return "copy";
	case ZES_ENGINE_GROUP_RENDER_ALL:
		return "render";
	case ZES_ENGINE_GROUP_3D_ALL:
		return "3d";
	default:
		return NULL; /* single engines: their groups say it */
	}
}

static const char *zt_temp_name(zes_temp_sensors_t t)
{
	switch (t) {
	case ZES_TEMP_SENSORS_GLOBAL:
		return "global";
	case ZES_TEMP_SENSORS_GPU:
		return "gpu";
	case ZES_TEMP_SENSORS_MEMORY:
		return "memory";
	default:
		return NULL; /* minimums and others */
	}
}

/* Count of handles of one kind (Enum* calls), filled into out. */
#define ZT_ENUM(fn, h, out, max)                                                           \
	({                                                                                 \
		uint32_t n_ = 0;                                                           \
		ze_result_t r_ = ZE_REAL(fn)(h, &n_, NULL);                                \
		if (r_ == ZE_RESULT_SUCCESS) {                                             \
			if (n_ > (max))                                                    \
				n_ = (max);                                                \
			if (ZE_REAL(fn)(h, &n_, out) != ZE_RESULT_SUCCESS)                 \
				n_ = 0;                                                    \
		}                                                                          \
		r_ == ZE_RESULT_SUCCESS ? (int)n_ : -(int)1;                               \
	})

static void zt_find_domains(struct zt_dev *t)
{
	zes_freq_handle_t f[ZT_DOMAINS];
	zes_temp_handle_t tp[ZT_DOMAINS];
	zes_engine_handle_t e[ZT_ENGINES * 4];
	int n;
	unsigned nth[16] = { 0 };

	n = ZT_ENUM(zesDeviceEnumFrequencyDomains, t->handle, f, ZT_DOMAINS);
	for (int i = 0; i < n; i++) {
		zes_freq_properties_t p = { .stype = ZES_STRUCTURE_TYPE_FREQ_PROPERTIES };

		if (ZE_REAL(zesFrequencyGetProperties)(f[i], &p) != ZE_RESULT_SUCCESS)
			continue;
		t->freq_key[t->nfreq] = zt_key(p.type == ZES_FREQ_DOMAIN_MEMORY ? "memory" : "gpu",
					       nth[p.type == ZES_FREQ_DOMAIN_MEMORY]++, "MHz");
		t->freq[t->nfreq++] = f[i];
	}
	n = ZT_ENUM(zesDeviceEnumPowerDomains, t->handle, t->pwr, ZT_DOMAINS);
	for (int i = 0; i < n; i++)
		t->pwr_key[t->npwr++] = i ? zt_key("domain", (unsigned)i, "W") : gt_str_intern("W");
	memset(nth, 0, sizeof(nth));
	n = ZT_ENUM(zesDeviceEnumTemperatureSensors, t->handle, tp, ZT_DOMAINS);
	for (int i = 0; i < n; i++) {
		zes_temp_properties_t p = { .stype = ZES_STRUCTURE_TYPE_TEMP_PROPERTIES };
		const char *name;

		if (ZE_REAL(zesTemperatureGetProperties)(tp[i], &p) != ZE_RESULT_SUCCESS ||
		    !(name = zt_temp_name(p.type)))
			continue;
		t->temp_key[t->ntemp] = zt_key(name, nth[p.type & 15]++, "°C");
		t->temp[t->ntemp++] = tp[i];
	}
	n = ZT_ENUM(zesDeviceEnumMemoryModules, t->handle, t->mem, ZT_DOMAINS);
	t->nmem = n > 0 ? (unsigned)n : 0;
	n = ZT_ENUM(zesDeviceEnumEngineGroups, t->handle, e, ZT_ENGINES * 4);
	for (int i = 0; i < n && t->neng < ZT_ENGINES; i++) {
		zes_engine_properties_t p = { .stype = ZES_STRUCTURE_TYPE_ENGINE_PROPERTIES };
		const char *name;

		if (ZE_REAL(zesEngineGetProperties)(e[i], &p) != ZE_RESULT_SUCCESS || p.onSubdevice ||
		    !(name = zt_engine_name(p.type)))
			continue;
		t->eng_key[t->neng] = zt_key(name, 0, "%");
		t->eng[t->neng++] = e[i];
	}
}

/* A loader with zesInit (1.5 and later) whose driver wants it: Sysman's own handles,
 * matched to the core devices by UUID. */
static zes_device_handle_t zt_zes_handle(ze_device_handle_t core)
{
	ze_result_t (*zes_init)(uint32_t) = (ze_result_t(*)(uint32_t))gt_real("zesInit");
	ze_result_t (*driver_get)(uint32_t *, void **) =
		(ze_result_t(*)(uint32_t *, void **))gt_real("zesDriverGet");
	ze_result_t (*device_get)(void *, uint32_t *, void **) =
		(ze_result_t(*)(void *, uint32_t *, void **))gt_real("zesDeviceGet");
	ze_device_properties_t want = { .stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES };
	void *drv[8], *dev[ZT_DEVS_MAX];
	uint32_t nd = 8;
	static _Atomic bool inited;

	if (!zes_init || !driver_get || !device_get ||
	    ZE_REAL(zeDeviceGetProperties)(core, &want) != ZE_RESULT_SUCCESS)
		return NULL;
	if (!atomic_exchange(&inited, true) && zes_init(0) != ZE_RESULT_SUCCESS)
		return NULL;
	if (driver_get(&nd, drv) != ZE_RESULT_SUCCESS)
		return NULL;
	for (uint32_t i = 0; i < nd && i < 8; i++) {
		uint32_t n = ZT_DEVS_MAX;

		if (device_get(drv[i], &n, dev) != ZE_RESULT_SUCCESS)
			continue;
		for (uint32_t j = 0; j < n && j < ZT_DEVS_MAX; j++) {
			zes_device_properties_t p = { .stype = ZES_STRUCTURE_TYPE_DEVICE_PROPERTIES };

			if (ZE_REAL(zesDeviceGetProperties)(dev[j], &p) == ZE_RESULT_SUCCESS &&
			    !memcmp(p.core.uuid.id, want.uuid.id, sizeof(want.uuid.id)))
				return dev[j];
		}
	}
	return NULL;
}

static void zt_add_device(ze_device_handle_t core)
{
	struct zt_dev *t = &zt_devs[zt_ndevs];
	zes_device_properties_t p = { .stype = ZES_STRUCTURE_TYPE_DEVICE_PROPERTIES };
	ze_result_t r;
	struct ze_dev *d;

	pthread_mutex_lock(&ze_lock);
	d = ze_dev__get(core);
	pthread_mutex_unlock(&ze_lock);
	if (!d)
		return;
	memset(t, 0, sizeof(*t));
	t->core = core;
	t->dev = d;
	t->handle = (zes_device_handle_t)core;
	r = ZE_REAL(zesDeviceGetProperties)(t->handle, &p);
	if (r == ZE_RESULT_ERROR_UNINITIALIZED) {
		zes_device_handle_t h = zt_zes_handle(core);

		if (h) {
			t->handle = h;
			r = ZE_REAL(zesDeviceGetProperties)(h, &p);
		}
	}
	if (r != ZE_RESULT_SUCCESS) {
		pr_warn("ze: no telemetry from %s: %s",
			gt_str_get(registry__device_name(d->row), NULL),
			r == ZE_RESULT_ERROR_UNINITIALIZED
				? "Sysman is off in the driver (ZES_ENABLE_SYSMAN=1 must be in the "
				  "environment before the first zeInit; gputrace sets it at start-up, "
				  "so zeInit ran earlier)"
			: r == ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS
				? "no permission to read it"
				: "the driver does not offer Sysman");
		return;
	}
	t->sampler = (struct gt_run_lock)GT_RUN_LOCK_FREE;
	memcpy(t->sampler_name, "sysman-", 7);
	for (unsigned i = 0; i < sizeof(p.core.uuid.id); i++)
		snprintf(t->sampler_name + 7 + 2 * i, 3, "%02x", p.core.uuid.id[i]);
	strcat(t->sampler_name, ".lock");
	zt_find_domains(t);
	pr_info("ze: telemetry of %s: %u frequency, %u power, %u temperature, %u memory, "
		"%u engine domains",
		gt_str_get(registry__device_name(d->row), NULL), t->nfreq, t->npwr, t->ntemp,
		t->nmem, t->neng);
	zt_ndevs++;
	atomic_fetch_add(&gt_telemetry_devices, 1);
}

void ze_telemetry__init(void)
{
	uint32_t ndrv = 8;
	ze_driver_handle_t drv[8];
	bool expect = false;

	if (!zt_wanted() || !atomic_compare_exchange_strong(&zt_started, &expect, true))
		return;
	pthread_mutex_lock(&zt_lock);
	zt_intern();
	if (ZE_REAL(zeDriverGet)(&ndrv, drv) == ZE_RESULT_SUCCESS) {
		for (uint32_t i = 0; i < ndrv && i < 8; i++) {
			ze_device_handle_t devs[ZT_DEVS_MAX];
			uint32_t n = ZT_DEVS_MAX;

			if (ZE_REAL(zeDeviceGet)(drv[i], &n, devs) != ZE_RESULT_SUCCESS)
				continue;
			for (uint32_t j = 0; j < n && zt_ndevs < ZT_DEVS_MAX; j++)
				zt_add_device(devs[j]);
		}
	}
	pthread_mutex_unlock(&zt_lock);
}

/* ---- sampling ---- */

static void zt_counter(const struct zt_dev *t, uint32_t name, uint64_t when,
		       const struct gt_arg *args, unsigned n)
{
	gt_emit_counter(t->dev->counter, name, when, args, n);
}

static void zt_arg(struct gt_arg *args, unsigned *n, uint32_t key, double v)
{
	if (*n >= GT_ARGS_MAX)
		return;
	args[*n].key = key;
	args[*n].type = GT_ARG_F64;
	args[(*n)++].v.f = v;
}

/* per second from two readings in microseconds */
static double zt_rate(uint64_t now, uint64_t before, uint64_t now_us, uint64_t before_us)
{
	return now_us > before_us ? (double)(now - before) * 1e6 / (double)(now_us - before_us)
				  : 0.0;
}

/* Is a reading at now_us (a counter's timestamp) too soon after the one at before_us for a
 * rate (with no earlier reading there is none to be too soon after)? */
static bool zt_too_soon(bool prev, uint64_t now_us, uint64_t before_us)
{
	return prev && now_us < before_us + ZT_RATE_MIN_US;
}

/* The host time of a reading: the middle of the calls that took it. */
static uint64_t zt_mid(uint64_t before)
{
	uint64_t after = gt_clock_ns();

	return before + (after - before) / 2;
}

static void zt_sample_dev(struct zt_dev *t)
{
	struct gt_arg a[GT_ARGS_MAX];
	unsigned n = 0;
	bool prev = t->have_prev, fresh[3] = { false, false, false };
	uint64_t t0 = gt_clock_ns(), at;

	for (unsigned i = 0; i < t->nfreq; i++) {
		zes_freq_state_t s = { .stype = ZES_STRUCTURE_TYPE_FREQ_STATE };

		if (ZE_REAL(zesFrequencyGetState)(t->freq[i], &s) == ZE_RESULT_SUCCESS &&
		    s.actual >= 0)
			zt_arg(a, &n, t->freq_key[i], s.actual);
	}
	zt_counter(t, zt_str.frequency, zt_mid(t0), a, n);
	n = 0;
	t0 = gt_clock_ns();
	for (unsigned i = 0; i < t->ntemp; i++) {
		double c;

		if (ZE_REAL(zesTemperatureGetState)(t->temp[i], &c) == ZE_RESULT_SUCCESS)
			zt_arg(a, &n, t->temp_key[i], c);
	}
	zt_counter(t, zt_str.temperature, zt_mid(t0), a, n);
	n = 0;
	t0 = gt_clock_ns();
	for (unsigned i = 0; i < t->nmem && i < 1; i++) {
		zes_mem_state_t s = { .stype = ZES_STRUCTURE_TYPE_MEM_STATE };

		if (ZE_REAL(zesMemoryGetState)(t->mem[i], &s) == ZE_RESULT_SUCCESS && s.size >= s.free)
			zt_arg(a, &n, zt_str.used, (double)(s.size - s.free));
	}
	zt_counter(t, zt_str.memory, zt_mid(t0), a, n);

	/*
	 * Rates: over [the previous reading, this one), drawn from the previous one.
	 * A group's domains share one sample, so they share its interval: when one
	 * domain's reading is too soon for a rate (jitter at a high rate, or the last
	 * reading at exit), the whole group waits for the next round. Skipping only
	 * that domain left a sample without it, and its next rate drawn from a start
	 * its own reading was not taken at.
	 */
	n = 0;
	t0 = gt_clock_ns();
	{
		zes_power_energy_counter_t e[ZT_DOMAINS];
		bool got[ZT_DOMAINS], soon = false;

		for (unsigned i = 0; i < t->npwr; i++) {
			got[i] = ZE_REAL(zesPowerGetEnergyCounter)(t->pwr[i], &e[i]) ==
				 ZE_RESULT_SUCCESS;
			soon |= got[i] && zt_too_soon(prev, e[i].timestamp, t->energy[i].timestamp);
		}
		for (unsigned i = 0; i < t->npwr && !soon; i++) {
			if (!got[i])
				continue;
			if (prev) /* uJ per us = W */
				zt_arg(a, &n, t->pwr_key[i],
				       (double)(e[i].energy - t->energy[i].energy) /
					       (double)(e[i].timestamp - t->energy[i].timestamp));
			t->energy[i] = e[i];
			fresh[0] = true;
		}
	}
	at = zt_mid(t0);
	zt_counter(t, zt_str.power, t->prev_ns[0], a, n);
	if (fresh[0])
		t->prev_ns[0] = at;
	n = 0;
	t0 = gt_clock_ns();
	for (unsigned i = 0; i < t->nmem && i < 1; i++) {
		zes_mem_bandwidth_t b;

		if (ZE_REAL(zesMemoryGetBandwidth)(t->mem[i], &b) != ZE_RESULT_SUCCESS ||
		    zt_too_soon(prev, b.timestamp, t->bw[i].timestamp))
			continue;
		fresh[1] = true;
		if (prev) {
			zt_arg(a, &n, zt_str.read,
			       zt_rate(b.readCounter, t->bw[i].readCounter, b.timestamp,
				       t->bw[i].timestamp) / 1e9);
			zt_arg(a, &n, zt_str.write,
			       zt_rate(b.writeCounter, t->bw[i].writeCounter, b.timestamp,
				       t->bw[i].timestamp) / 1e9);
		}
		t->bw[i] = b;
	}
	at = zt_mid(t0);
	zt_counter(t, zt_str.bandwidth, t->prev_ns[1], a, n);
	if (fresh[1])
		t->prev_ns[1] = at;
	n = 0;
	t0 = gt_clock_ns();
	{
		zes_engine_stats_t s[ZT_ENGINES];
		bool got[ZT_ENGINES], soon = false;

		for (unsigned i = 0; i < t->neng; i++) {
			got[i] = ZE_REAL(zesEngineGetActivity)(t->eng[i], &s[i]) ==
				 ZE_RESULT_SUCCESS;
			soon |= got[i] && zt_too_soon(prev, s[i].timestamp, t->stats[i].timestamp);
		}
		for (unsigned i = 0; i < t->neng && !soon; i++) {
			if (!got[i])
				continue;
			if (prev) {
				/* activeTime and timestamp are each rounded down to the us:
				 * a busy engine read 100.1 % over 1 ms (1000 Hz), 100.005 %
				 * over 20 ms; a share of time is at most all of it */
				double pct = 100.0 * (double)(s[i].activeTime -
							      t->stats[i].activeTime) /
					     (double)(s[i].timestamp - t->stats[i].timestamp);

				zt_arg(a, &n, t->eng_key[i], pct < 100.0 ? pct : 100.0);
			}
			t->stats[i] = s[i];
			fresh[2] = true;
		}
	}
	at = zt_mid(t0);
	zt_counter(t, zt_str.engines, t->prev_ns[2], a, n);
	if (fresh[2])
		t->prev_ns[2] = at;
	t->have_prev = true;
}

/*
 * A GPU's telemetry is the machine's: under gputrace run one process samples
 * each GPU at a time (gt_run_lock), so two Level Zero programs of one run do
 * not draw the same series twice, side by side. One that takes a GPU over
 * starts its rates afresh.
 */
/* Devices of one UUID (a driver that gives none, or one GPU seen twice) share
 * the first one's lock: two of ours on one file would shut each other out. */
static struct gt_run_lock *zt_sampler(struct zt_dev *t)
{
	for (struct zt_dev *u = zt_devs; u < t; u++)
		if (!strcmp(u->sampler_name, t->sampler_name))
			return &u->sampler;
	return &t->sampler;
}

static void zt_round(void)
{
	if (!(gt_cfg.kinds & GT_KIND(COUNTER)))
		return;
	for (unsigned d = 0; d < zt_ndevs; d++) {
		struct zt_dev *t = &zt_devs[d];

		if (gt_run_lock_hold(zt_sampler(t), t->sampler_name))
			zt_sample_dev(t);
		else
			t->have_prev = false;
	}
}

/* This process samples no GPU until its next round: at its end, in a fork
 * child (the parent's locks stay the parent's), as a capture window closes.
 * Under zt_lock. */
static void zt_let_go(void)
{
	for (unsigned d = 0; d < zt_ndevs; d++) {
		gt_run_lock_drop(&zt_devs[d].sampler);
		zt_devs[d].have_prev = false;
	}
}

uint64_t ze_telemetry__sample(uint64_t now_ns)
{
	uint64_t period = 1000000000ull / gt_cfg.telemetry_hz;
	bool stopped;

	if (!zt_wanted())
		return 0;
	/* the program has not called zeInit yet: looked at again within the drain's own
	 * tick, so the first reading is near it, not a period later (a program shorter
	 * than the period got one reading, at its exit: no rates) */
	if (!atomic_load(&zt_started))
		return now_ns + (period < GT_DRAIN_POLL_MS * 1000000ull ? period
									: GT_DRAIN_POLL_MS * 1000000ull);
	pthread_mutex_lock(&zt_lock);
	now_ns = gt_clock_ns(); /* the round's time: the lock may have been held a while */
	stopped = zt_stopped; /* read under the lock: an exiting thread sets it */
	if (!stopped && !atomic_load(&ze_closed))
		zt_round();
	pthread_mutex_unlock(&zt_lock);
	return stopped ? 0 : now_ns + period;
}

GT_STARTUP_CODE void ze_telemetry__stop(void)
{
	if (!atomic_load(&zt_started))
		return;
	pthread_mutex_lock(&zt_lock);
	if (!zt_stopped && !atomic_load(&ze_closed))
		zt_round(); /* the rates up to the end */
	zt_stopped = true;
	zt_let_go();
	pthread_mutex_unlock(&zt_lock);
}

void ze_telemetry__window(bool open)
{
	if (open || !atomic_load(&zt_started))
		return;
	pthread_mutex_lock(&zt_lock);
	zt_let_go();
	pthread_mutex_unlock(&zt_lock);
}

GT_FORK_CODE void ze_telemetry__forget(void)
{
	/* none without telemetry asked for (ze_telemetry__init, __sample):
	 * nothing to write */
	if (!zt_wanted())
		return;
	pthread_mutex_init(&zt_lock, NULL);
	zt_let_go();
	zt_ndevs = 0;
	atomic_store(&zt_started, false);
	zt_stopped = false;
}
