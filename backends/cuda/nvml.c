// SPDX-License-Identifier: MIT
/*
 * NVIDIA GPU telemetry through NVML, when GPUTRACE_TELEMETRY asks: GPU and
 * memory utilisation, SM and memory clocks, power, temperature, memory used
 * and PCIe throughput of every GPU NVML sees, sampled by the drain thread
 * every 1/GPUTRACE_TELEMETRY_HZ s as counter tracks on the rows "GPU <n>
 * (<name>)" (n is NVML's index, the order nvidia-smi shows; the CUDA rows
 * use the same names where CUDA numbers the GPUs the same way).
 *
 * libnvidia-ml.so.1 is opened at the first sample, never linked (the few
 * entry points used are declared in nvml_api.h). A process that never
 * touches CUDA gets its telemetry all the same. No NVML: one line, then
 * nothing more.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backends/backend.h"
#include "inject/clock.h"
#include "inject/config.h"

#include "backends/cuda/nvml_api.h"

static struct {
#define NVML_FN(ret, name, params) ret(*name) params;
	NVML_FUNCS(NVML_FN)
#undef NVML_FN
} nv;

/* ---- what is sampled ---- */

enum nv_query { Q_UTIL, Q_CLOCK_SM, Q_CLOCK_MEM, Q_POWER, Q_TEMP, Q_MEM, Q_PCIE, Q__COUNT };

static const char *const nv_query_names[Q__COUNT] = {
	"utilization", "SM clock", "memory clock", "power", "temperature", "memory use", "PCIe "
	"throughput",
};

#define NV_DEVS_MAX 64

struct nv_dev {
	nvmlDevice_t h;
	unsigned index; /* NVML's, as its row names it (a GPU without a handle is skipped) */
	uint32_t track;
	bool off[Q__COUNT]; /* not supported or not permitted: asked once */
};

static struct nv_dev nv_devs[NV_DEVS_MAX];
static unsigned nv_ndevs;
static void *nv_lib;
static enum { NV_NEW, NV_ON, NV_OFF } nv_state;
/* libnvidia-ml.so.1 not found, no NVIDIA driver either, or an NVML that sees no GPU:
 * said at exit, once it is known whether another backend (Level Zero's Sysman) sampled
 * telemetry instead. */
static enum { NV_PRESENT, NV_NO_LIBRARY, NV_NO_GPU } nv_absent;
/* the drain thread samples while an exiting thread may stop */
static pthread_mutex_t nv_lock = PTHREAD_MUTEX_INITIALIZER;

static struct {
	uint32_t util, freq, power, temp, mem, pcie;
	uint32_t gpu_pct, mem_pct, sm_mhz, mem_mhz, watts, gpu_c, used, tx, rx;
} nv_str;

static bool nv_wanted(void)
{
	return gt_cfg.telemetry && gt_backend_enabled(GT_BACKEND_CUPTI);
}

static const char *nv_error(nvmlReturn_t r)
{
	const char *s = nv.nvmlErrorString ? nv.nvmlErrorString(r) : NULL;

	return s ? s : "unknown error";
}

static void nv_intern(void)
{
	nv_str.util = gt_str_intern("utilization");
	nv_str.freq = gt_str_intern("frequency");
	nv_str.power = gt_str_intern("power");
	nv_str.temp = gt_str_intern("temperature");
	nv_str.mem = gt_str_intern("memory");
	nv_str.pcie = gt_str_intern("pcie");
	nv_str.gpu_pct = gt_str_intern("gpu %");
	nv_str.mem_pct = gt_str_intern("memory %");
	nv_str.sm_mhz = gt_str_intern("sm MHz");
	nv_str.mem_mhz = gt_str_intern("memory MHz");
	nv_str.watts = gt_str_intern("W");
	nv_str.gpu_c = gt_str_intern("gpu °C");
	nv_str.used = gt_str_intern("used bytes");
	nv_str.tx = gt_str_intern("tx KB/s");
	nv_str.rx = gt_str_intern("rx KB/s");
}

/* dlopen, nvmlInit, the devices and their rows. */
static bool nv_open(void)
{
	unsigned int n = 0, no_handle = 0, first = 0;
	nvmlReturn_t r, first_err = NVML_SUCCESS;

	nv_lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!nv_lib) {
		/* an NVIDIA driver without its NVML is worth a warning now; no NVIDIA at all
		 * is, at exit, only if nothing else gave telemetry (nv_said_absent) */
		if (access("/dev/nvidiactl", F_OK) == 0)
			pr_warn("NVML (libnvidia-ml.so.1) not found: no NVIDIA GPU telemetry");
		else
			nv_absent = NV_NO_LIBRARY;
		return false;
	}
#define NVML_SYM(ret, name, params)                                                       \
	nv.name = (ret(*) params)gt_dlsym_real(nv_lib, #name);                            \
	if (!nv.name) {                                                                   \
		pr_warn("NVML has no %s: no NVIDIA GPU telemetry", #name);                \
		return false;                                                             \
	}
	NVML_FUNCS(NVML_SYM)
#undef NVML_SYM
	r = nv.nvmlInit_v2();
	if (r != NVML_SUCCESS) {
		pr_warn("NVML did not start (%s): no NVIDIA GPU telemetry", nv_error(r));
		return false;
	}
	r = nv.nvmlDeviceGetCount_v2(&n);
	if (r != NVML_SUCCESS || !n) {
		/* an error is news now; no GPU, at exit as no NVML is (it said nothing
		 * at the default level: telemetry asked for, none recorded, not a word) */
		if (r != NVML_SUCCESS)
			pr_warn("NVML cannot count its GPUs (%s): no NVIDIA GPU telemetry",
				nv_error(r));
		else
			nv_absent = NV_NO_GPU;
		nv.nvmlShutdown();
		return false;
	}
	nv_intern();
	for (unsigned i = 0; i < n && nv_ndevs < NV_DEVS_MAX; i++) {
		char name[NVML_DEVICE_NAME_BUFFER_SIZE], row[NVML_DEVICE_NAME_BUFFER_SIZE + 24];
		struct nv_dev *d = &nv_devs[nv_ndevs];

		memset(d, 0, sizeof(*d));
		d->index = i;
		if ((r = nv.nvmlDeviceGetHandleByIndex_v2(i, &d->h)) != NVML_SUCCESS) {
			/* one line for all of them (a node's GPUs of other jobs may all refuse) */
			if (!no_handle++)
				first_err = r, first = i;
			continue;
		}
		if (nv.nvmlDeviceGetName(d->h, name, sizeof(name)) == NVML_SUCCESS) {
			name[sizeof(name) - 1] = 0;
			snprintf(row, sizeof(row), "GPU %u: %s", i, name);
		} else {
			snprintf(row, sizeof(row), "GPU %u", i);
		}
		d->track = gt_device_track(gt_device_row(row));
		if (!d->track) {
			/* past the process's devices: its telemetry would land on the
			 * process's row */
			static bool said;

			gt_device_row_refused(&said, "NVML", row, "telemetry");
			continue;
		}
		nv_ndevs++;
	}
	if (no_handle)
		pr_warn("NVML: %u of %u GPU(s) gave no handle (GPU %u: %s): no telemetry of %s",
			no_handle, n, first, nv_error(first_err), no_handle > 1 ? "them" : "it");
	if (!nv_ndevs) {
		nv.nvmlShutdown(); /* none to sample (none has a row) */
		return false;
	}
	pr_info("NVML: telemetry of %u GPU(s)", nv_ndevs);
	atomic_fetch_add(&gt_telemetry_devices, nv_ndevs);
	return true;
}

/* A query's result: true if it gave a value. Unsupported: never asked again;
 * not permitted: one line, then never again. A GPU that fell off the bus: one line
 * for the GPU and none of its readings asked again (each said so in a line of its
 * own, six for one GPU). */
static bool nv_ok(struct nv_dev *d, enum nv_query q, nvmlReturn_t r)
{
	if (r == NVML_SUCCESS)
		return true;
	if (r == NVML_ERROR_GPU_IS_LOST) {
		for (unsigned i = 0; i < Q__COUNT; i++)
			d->off[i] = true;
		pr_warn("NVML: GPU %u: %s; its telemetry ends here", d->index, nv_error(r));
		return false;
	}
	d->off[q] = true;
	if (r != NVML_ERROR_NOT_SUPPORTED)
		pr_warn("NVML: %s of GPU %u: %s; not sampled", nv_query_names[q], d->index,
			nv_error(r));
	return false;
}

static void nv_put(struct gt_arg *a, unsigned *n, uint32_t key, double v)
{
	a[*n].key = key;
	a[*n].type = GT_ARG_F64;
	a[(*n)++].v.f = v;
}

static void nv_emit(const struct nv_dev *d, uint32_t name, uint64_t when, const struct gt_arg *a,
		    unsigned n)
{
	gt_emit_counter(d->track, name, when, a, n);
}

static void nv_sample_dev(struct nv_dev *d, uint64_t now)
{
	struct gt_arg a[4];
	unsigned n = 0, v, v2;
	nvmlUtilization_t u;
	nvmlMemory_t m;

	if (!d->off[Q_UTIL] && nv_ok(d, Q_UTIL, nv.nvmlDeviceGetUtilizationRates(d->h, &u))) {
		nv_put(a, &n, nv_str.gpu_pct, u.gpu);
		nv_put(a, &n, nv_str.mem_pct, u.memory);
	}
	nv_emit(d, nv_str.util, now, a, n);
	n = 0;
	if (!d->off[Q_CLOCK_SM] &&
	    nv_ok(d, Q_CLOCK_SM, nv.nvmlDeviceGetClockInfo(d->h, NVML_CLOCK_SM, &v)))
		nv_put(a, &n, nv_str.sm_mhz, v);
	if (!d->off[Q_CLOCK_MEM] &&
	    nv_ok(d, Q_CLOCK_MEM, nv.nvmlDeviceGetClockInfo(d->h, NVML_CLOCK_MEM, &v)))
		nv_put(a, &n, nv_str.mem_mhz, v);
	nv_emit(d, nv_str.freq, now, a, n);
	n = 0;
	if (!d->off[Q_POWER] && nv_ok(d, Q_POWER, nv.nvmlDeviceGetPowerUsage(d->h, &v)))
		nv_put(a, &n, nv_str.watts, v / 1000.0); /* mW */
	nv_emit(d, nv_str.power, now, a, n);
	n = 0;
	if (!d->off[Q_TEMP] &&
	    nv_ok(d, Q_TEMP, nv.nvmlDeviceGetTemperature(d->h, NVML_TEMPERATURE_GPU, &v)))
		nv_put(a, &n, nv_str.gpu_c, v);
	nv_emit(d, nv_str.temp, now, a, n);
	n = 0;
	if (!d->off[Q_MEM] && nv_ok(d, Q_MEM, nv.nvmlDeviceGetMemoryInfo(d->h, &m)))
		nv_put(a, &n, nv_str.used, (double)m.used);
	nv_emit(d, nv_str.mem, now, a, n);
	n = 0;
	if (!d->off[Q_PCIE] &&
	    nv_ok(d, Q_PCIE, nv.nvmlDeviceGetPcieThroughput(d->h, NVML_PCIE_UTIL_TX_BYTES, &v)) &&
	    nv_ok(d, Q_PCIE, nv.nvmlDeviceGetPcieThroughput(d->h, NVML_PCIE_UTIL_RX_BYTES, &v2))) {
		nv_put(a, &n, nv_str.tx, v);
		nv_put(a, &n, nv_str.rx, v2);
	}
	nv_emit(d, nv_str.pcie, now, a, n);
}

/*
 * NVML's telemetry is the machine's: under gputrace run one process samples
 * it at a time (gt_run_lock; a shell around the CUDA program had its own
 * rows). The holder lets go when it stops sampling: its capture window
 * closed, NVML did not open there, its exit. Under nv_lock.
 */
#define NV_RUN_LOCK "nvml.lock"
static struct gt_run_lock nv_run_lock = GT_RUN_LOCK_FREE;

/* Drain thread, every 1/GPUTRACE_TELEMETRY_HZ s. */
static uint64_t nv_sample(uint64_t now_ns)
{
	uint64_t at = now_ns; /* the round's first reading, once NVML is open */
	bool on;

	if (!nv_wanted())
		return 0;
	pthread_mutex_lock(&nv_lock);
	if (nv_state != NV_OFF && !gt_run_lock_hold(&nv_run_lock, NV_RUN_LOCK)) {
		pthread_mutex_unlock(&nv_lock);
		return now_ns + 1000000000ull / gt_cfg.telemetry_hz;
	}
	if (nv_state == NV_NEW)
		nv_state = nv_open() ? NV_ON : NV_OFF;
	on = nv_state == NV_ON;
	if (!on)
		gt_run_lock_drop(&nv_run_lock); /* another process of the run may have NVML */
	if (on && (gt_cfg.kinds & GT_KIND(COUNTER)))
		for (unsigned i = 0; i < nv_ndevs; i++) {
			uint64_t t = gt_clock_ns();
			if (!i)
				at = t;
			nv_sample_dev(&nv_devs[i], t);
		}
	pthread_mutex_unlock(&nv_lock);
	/* a period after this round's reading, not after now_ns: opening NVML
	 * (tens of ms on a loaded machine) would bring the second round close
	 * behind the first, a rate above the one asked for */
	return on ? at + 1000000000ull / gt_cfg.telemetry_hz : 0;
}

#define NO_TELEMETRY_WHY                                                                   \
	"libnvidia-ml.so.1 (NVML, which the NVIDIA driver installs) could not be opened, and " \
	"no Level Zero device gave Sysman telemetry (read from the program's zeInit on); "     \
	"telemetry needs one of them"
#define NO_GPU_WHY                                                                         \
	"NVML (libnvidia-ml.so.1) sees no GPU, and no Level Zero device gave Sysman "          \
	"telemetry (read from the program's zeInit on); telemetry needs one of them"

/* No NVML and no NVIDIA driver: one line. A warning when no backend sampled any
 * telemetry (the user asked for it and gets none); where Level Zero's Sysman gave it,
 * NVML's absence is no news (info). Under gputrace run, the run says it, once, and
 * only if no process of it recorded telemetry: a shell around the GPU program has
 * none of its own ('T' and '?' lines of the run's list). */
static void nv_said_absent(void)
{
	bool any = atomic_load(&gt_telemetry_devices);
	bool no_gpu = nv_absent == NV_NO_GPU;

	if (gt_under_run() && (any || nv_absent))
		gt_run_note(any ? 'T' : '?', any ? NULL : no_gpu ? NO_GPU_WHY : NO_TELEMETRY_WHY);
	if (!nv_absent)
		return;
	nv_absent = NV_PRESENT;
	if (any)
		pr_info("%s: no NVIDIA GPU telemetry (the Level Zero devices' is recorded)",
			no_gpu ? "NVML sees no GPU" : "NVML (libnvidia-ml.so.1) not found");
	else if (!gt_under_run())
		pr_warn("GPUTRACE_TELEMETRY: nothing recorded: %s",
			no_gpu ? NO_GPU_WHY : NO_TELEMETRY_WHY);
}

GT_STARTUP_CODE static void nv_stop(void)
{
	if (!nv_wanted())
		return; /* never opened (nv_sample neither) */
	pthread_mutex_lock(&nv_lock);
	/* a program that ended before the drain thread's first sample still gets one */
	if (nv_state == NV_NEW && gt_run_lock_hold(&nv_run_lock, NV_RUN_LOCK))
		nv_state = nv_open() ? NV_ON : NV_OFF;
	if (nv_state == NV_ON) {
		/* the rates of the last stretch (where this process samples), then
		 * no more NVML calls */
		if ((gt_cfg.kinds & GT_KIND(COUNTER)) && gt_run_lock_hold(&nv_run_lock, NV_RUN_LOCK))
			for (unsigned i = 0; i < nv_ndevs; i++)
				nv_sample_dev(&nv_devs[i], gt_clock_ns());
		nv.nvmlShutdown();
	}
	nv_state = NV_OFF;
	gt_run_lock_drop(&nv_run_lock);
	nv_said_absent();
	pthread_mutex_unlock(&nv_lock);
}

GT_FORK_CODE static void nv_atfork_child(void)
{
	/* the child opens its own NVML session (the library stays loaded);
	 * without telemetry none was ever opened: nothing to write */
	if (!nv_wanted())
		return;
	pthread_mutex_init(&nv_lock, NULL);
	nv_state = NV_NEW;
	nv_ndevs = 0;
	nv_absent = NV_PRESENT;
	/* the parent's lock, shared with it: the parent samples on, the child
	 * asks for the lock as any process does */
	gt_run_lock_drop(&nv_run_lock);
}

/* A capture window closing: this process samples no more until the next
 * opens; under gputrace run another process of the run may meanwhile. */
static void nv_window(bool open)
{
	if (open || !nv_wanted())
		return;
	pthread_mutex_lock(&nv_lock);
	gt_run_lock_drop(&nv_run_lock);
	pthread_mutex_unlock(&nv_lock);
}

static const struct gt_backend nvml_backend = {
	.name = "nvml",
	.enabled_by = GT_BACKEND_CUPTI, /* NVIDIA's: on with the CUDA backend, with or without CUPTI */
	.sample = nv_sample,
	.window = nv_window,
	.stop = nv_stop,
	.atfork_child = nv_atfork_child,
};

GT_BACKEND_REGISTER(nvml_backend);
