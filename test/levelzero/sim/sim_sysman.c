/* Sysman (zes) of the simulated device: frequency, power, temperature, memory and engine
 * activity that respond to the simulated work (README.md, "Sysman"). Refused with
 * ZE_RESULT_ERROR_UNINITIALIZED unless ZES_ENABLE_SYSMAN=1 was in the environment at the
 * first zeInit, as Intel's driver does (spec 1.4 has no zesInit). A Sysman handle of the
 * device is its core handle.
 *
 * The model, from the spans of the commands run so far (sim_window_locked):
 *   busy share s over a window = union of all engines' busy time / window length; windows
 *                   and counters end where every command is known (the engines' horizon)
 *   GPU frequency   300 + 1300 * s MHz over the last 10 ms; memory frequency 1200 MHz
 *   power           20 W idle + 80 W while any engine is busy: the energy counter (uJ)
 *                   integrates it from the first Sysman call
 *   temperature     GPU 35 + 50 * s C over the last second; memory 30 + 20 * (copy share)
 *   memory          16 GiB, used = live device and shared allocations; read/write
 *                   counters = bytes copies read and copies/fills wrote (prorated in time)
 *   engines         ALL (any), COMPUTE_ALL (kernels), COPY_ALL (copies and fills): active
 *                   time in us, cumulative
 *
 * ZE_SIM_ENGINE_READ_STALL_US=US[/N]: every Nth reading of an engine's activity (any
 * engine, counted in call order) is taken US later than asked, as by a driver whose read
 * of the engine's counters blocked: readings of one round are then apart.
 */
#include <stdio.h>
#include <string.h>

#include "sim.h"

bool sim_sysman_enabled;

#define MEM_SIZE (16ULL << 30)
#define FREQ_WINDOW_NS 10000000ULL
#define TEMP_WINDOW_NS 1000000000ULL

enum res_kind { R_FREQ, R_POWER, R_TEMP, R_MEM, R_ENGINE };

struct sim_res {
	enum res_kind kind;
	int type;	/* zes_freq_domain_t, zes_temp_sensors_t, zes_engine_group_t */
};

static const struct sim_res freqs[] = { { R_FREQ, ZES_FREQ_DOMAIN_GPU },
					{ R_FREQ, ZES_FREQ_DOMAIN_MEMORY } };
static const struct sim_res powers[] = { { R_POWER, 0 } };
static const struct sim_res temps[] = { { R_TEMP, ZES_TEMP_SENSORS_GPU },
					{ R_TEMP, ZES_TEMP_SENSORS_MEMORY } };
static const struct sim_res mems[] = { { R_MEM, 0 } };
static const struct sim_res engines[] = { { R_ENGINE, ZES_ENGINE_GROUP_ALL },
					  { R_ENGINE, ZES_ENGINE_GROUP_COMPUTE_ALL },
					  { R_ENGINE, ZES_ENGINE_GROUP_COPY_ALL } };

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* The handle h when it is one of arr's, else an error from the function. */
#define SIM_RES(var, h, arr)							\
	const struct sim_res *var = (const struct sim_res *)(const void *)(h);	\
	do {									\
		if (!sim_tool_call(sim_sysman_enabled))					\
			return ZE_RESULT_ERROR_UNINITIALIZED;			\
		if (!(h))							\
			return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;		\
		if (var < (arr) || var >= (arr) + N(arr))			\
			return ZE_RESULT_ERROR_INVALID_ARGUMENT;		\
	} while (0)

/* ---- cumulative counters: committed up to a time no command can start before ---- */
static struct {
	bool started;
	uint64_t t0, until;
	struct sim_window sum;
} acc;

static void window_add(struct sim_window *to, const struct sim_window *w)
{
	to->busy_ns += w->busy_ns;
	to->kernel_ns += w->kernel_ns;
	to->copy_ns += w->copy_ns;
	to->occupancy += w->occupancy;
	to->bytes_read += w->bytes_read;
	to->bytes_written += w->bytes_written;
}

/* Totals from the first call up to the time they hold for (sim_lock held): the horizon,
 * before which every command is known, so two readings' differences are exact (a counter
 * that ran ahead of its timestamp would show more than 100% between two reads). */
static void totals_locked(struct sim_window *t, uint64_t *at_ns)
{
	uint64_t now = sim_host_ns(), h = sim_engines_horizon_locked(now);
	struct sim_window w;

	if (!acc.started) {
		acc.started = true;
		acc.t0 = acc.until = h;
	}
	if (h > acc.until) {
		sim_window_locked(acc.until, h, &w);
		window_add(&acc.sum, &w);
		acc.until = h;
	}
	*t = acc.sum;
	*at_ns = acc.until;
}

/* Busy shares of the last `span` ns of the known work (sim_lock held). */
static void recent_locked(uint64_t span, double *busy, double *copy)
{
	uint64_t h = sim_engines_horizon_locked(sim_host_ns());
	struct sim_window w;

	sim_window_locked(h > span ? h - span : 0, h, &w);
	*busy = (double)w.busy_ns / (double)span;
	*copy = (double)w.copy_ns / (double)span;
}

static ze_result_t enum_res(ze_device_handle_t dev, uint32_t *count, void **out,
			    const struct sim_res *arr, uint32_t n)
{
	ze_result_t r;

	if (!sim_tool_call(sim_sysman_enabled))
		return ZE_RESULT_ERROR_UNINITIALIZED;
	if ((r = sim_obj_check(dev, SIM_K_DEVICE)))
		return r;
	SIM_NOT_NULL(count);
	if (*count == 0 || !out) {
		*count = n;
		return ZE_RESULT_SUCCESS;
	}
	if (*count > n)
		*count = n;
	for (uint32_t i = 0; i < *count; i++)
		out[i] = (void *)&arr[i];
	return ZE_RESULT_SUCCESS;
}

/* ---- device ---- */
static ze_result_t device_get_properties(zes_device_handle_t h, zes_device_properties_t *p)
{
	ze_device_dditable_t core;
	ze_result_t r;

	if (!sim_tool_call(sim_sysman_enabled))
		return ZE_RESULT_ERROR_UNINITIALIZED;
	if ((r = sim_obj_check(h, SIM_K_DEVICE)))
		return r;
	SIM_NOT_NULL(p);
	memset(&core, 0, sizeof(core));
	sim_fill_device(&core);
	p->core.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
	if ((r = core.pfnGetProperties((ze_device_handle_t)h, &p->core)))
		return r;
	p->numSubdevices = 0;
	snprintf(p->serialNumber, sizeof(p->serialNumber), "SIM-0001");
	snprintf(p->boardNumber, sizeof(p->boardNumber), "unknown");
	snprintf(p->brandName, sizeof(p->brandName), "gputrace");
	snprintf(p->modelName, sizeof(p->modelName), "%s", SIM_DEVICE_NAME);
	snprintf(p->vendorName, sizeof(p->vendorName), "gputrace");
	snprintf(p->driverVersion, sizeof(p->driverVersion), "1");
	return ZE_RESULT_SUCCESS;
}

#define ENUM_FN(fn, arr, htype)							\
	static ze_result_t fn(zes_device_handle_t dev, uint32_t *count, htype *out)	\
	{									\
		return enum_res((ze_device_handle_t)dev, count, (void **)out, arr, N(arr)); \
	}
ENUM_FN(enum_freqs, freqs, zes_freq_handle_t)
ENUM_FN(enum_powers, powers, zes_pwr_handle_t)
ENUM_FN(enum_temps, temps, zes_temp_handle_t)
ENUM_FN(enum_mems, mems, zes_mem_handle_t)
ENUM_FN(enum_engines, engines, zes_engine_handle_t)

/* ---- frequency ---- */
static ze_result_t freq_get_properties(zes_freq_handle_t h, zes_freq_properties_t *p)
{
	SIM_RES(f, h, freqs);

	SIM_NOT_NULL(p);
	p->type = (zes_freq_domain_t)f->type;
	p->onSubdevice = 0;
	p->subdeviceId = 0;
	p->canControl = 0;
	p->isThrottleEventSupported = 0;
	p->min = f->type == ZES_FREQ_DOMAIN_GPU ? 300 : 1200;
	p->max = f->type == ZES_FREQ_DOMAIN_GPU ? 1600 : 1200;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t freq_get_state(zes_freq_handle_t h, zes_freq_state_t *s)
{
	SIM_RES(f, h, freqs);
	double busy, copy, mhz = 1200;

	SIM_NOT_NULL(s);
	if (f->type == ZES_FREQ_DOMAIN_GPU) {
		pthread_mutex_lock(&sim_lock);
		recent_locked(FREQ_WINDOW_NS, &busy, &copy);
		pthread_mutex_unlock(&sim_lock);
		mhz = (double)(300 + (long)(1300 * busy + 0.5));
	}
	s->currentVoltage = -1;
	s->request = mhz;
	s->tdp = f->type == ZES_FREQ_DOMAIN_GPU ? 1600 : 1200;
	s->efficient = f->type == ZES_FREQ_DOMAIN_GPU ? 300 : 1200;
	s->actual = mhz;
	s->throttleReasons = 0;
	return ZE_RESULT_SUCCESS;
}

/* ---- power ---- */
static ze_result_t power_get_properties(zes_pwr_handle_t h, zes_power_properties_t *p)
{
	SIM_RES(pw, h, powers);

	(void)pw;
	SIM_NOT_NULL(p);
	p->onSubdevice = 0;
	p->subdeviceId = 0;
	p->canControl = 0;
	p->isEnergyThresholdSupported = 0;
	p->defaultLimit = 100000;
	p->minLimit = -1;
	p->maxLimit = -1;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t power_get_energy(zes_pwr_handle_t h, zes_power_energy_counter_t *e)
{
	SIM_RES(pw, h, powers);
	struct sim_window t;
	uint64_t now;

	(void)pw;
	SIM_NOT_NULL(e);
	pthread_mutex_lock(&sim_lock);
	totals_locked(&t, &now);
	/* W x ns = nJ */
	e->energy = (20 * (now - acc.t0) + 80 * t.busy_ns) / 1000;
	pthread_mutex_unlock(&sim_lock);
	e->timestamp = now / 1000;
	return ZE_RESULT_SUCCESS;
}

/* ---- temperature ---- */
static ze_result_t temp_get_properties(zes_temp_handle_t h, zes_temp_properties_t *p)
{
	SIM_RES(t, h, temps);

	SIM_NOT_NULL(p);
	p->type = (zes_temp_sensors_t)t->type;
	p->onSubdevice = 0;
	p->subdeviceId = 0;
	p->maxTemperature = 100;
	p->isCriticalTempSupported = 0;
	p->isThreshold1Supported = 0;
	p->isThreshold2Supported = 0;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t temp_get_state(zes_temp_handle_t h, double *celsius)
{
	SIM_RES(t, h, temps);
	double busy, copy;

	SIM_NOT_NULL(celsius);
	pthread_mutex_lock(&sim_lock);
	recent_locked(TEMP_WINDOW_NS, &busy, &copy);
	pthread_mutex_unlock(&sim_lock);
	*celsius = t->type == ZES_TEMP_SENSORS_GPU ? 35 + 50 * busy : 30 + 20 * copy;
	return ZE_RESULT_SUCCESS;
}

/* ---- memory ---- */
static ze_result_t mem_get_properties(zes_mem_handle_t h, zes_mem_properties_t *p)
{
	SIM_RES(m, h, mems);

	(void)m;
	SIM_NOT_NULL(p);
	p->type = ZES_MEM_TYPE_HBM;
	p->onSubdevice = 0;
	p->subdeviceId = 0;
	p->location = ZES_MEM_LOC_DEVICE;
	p->physicalSize = MEM_SIZE;
	p->busWidth = 1024;
	p->numChannels = 8;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t mem_get_state(zes_mem_handle_t h, zes_mem_state_t *s)
{
	SIM_RES(m, h, mems);
	uint64_t used;

	(void)m;
	SIM_NOT_NULL(s);
	pthread_mutex_lock(&sim_lock);
	used = sim_mem_in_use_locked();
	pthread_mutex_unlock(&sim_lock);
	s->health = ZES_MEM_HEALTH_OK;
	s->size = MEM_SIZE;
	s->free = used < MEM_SIZE ? MEM_SIZE - used : 0;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t mem_get_bandwidth(zes_mem_handle_t h, zes_mem_bandwidth_t *b)
{
	SIM_RES(m, h, mems);
	struct sim_window t;
	uint64_t now;

	(void)m;
	SIM_NOT_NULL(b);
	pthread_mutex_lock(&sim_lock);
	totals_locked(&t, &now);
	pthread_mutex_unlock(&sim_lock);
	b->readCounter = t.bytes_read;
	b->writeCounter = t.bytes_written;
	b->maxBandwidth = 100000000000ULL;
	b->timestamp = now / 1000;
	return ZE_RESULT_SUCCESS;
}

/* ---- engines ---- */
static struct sim_stall engine_read_stall = { "ZE_SIM_ENGINE_READ_STALL_US", 0, 1 };

__attribute__((constructor)) static void sim_sysman_setup(void)
{
	sim_stall_parse(&engine_read_stall);
}

static ze_result_t engine_get_properties(zes_engine_handle_t h, zes_engine_properties_t *p)
{
	SIM_RES(e, h, engines);

	SIM_NOT_NULL(p);
	p->type = (zes_engine_group_t)e->type;
	p->onSubdevice = 0;
	p->subdeviceId = 0;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t engine_get_activity(zes_engine_handle_t h, zes_engine_stats_t *s)
{
	SIM_RES(e, h, engines);
	struct sim_window t;
	uint64_t now, ns;

	SIM_NOT_NULL(s);
	sim_stall_maybe(&engine_read_stall);
	pthread_mutex_lock(&sim_lock);
	totals_locked(&t, &now);
	pthread_mutex_unlock(&sim_lock);
	ns = e->type == ZES_ENGINE_GROUP_ALL ? t.busy_ns
	     : e->type == ZES_ENGINE_GROUP_COMPUTE_ALL ? t.kernel_ns : t.copy_ns;
	s->activeTime = ns / 1000;
	s->timestamp = now / 1000;
	return ZE_RESULT_SUCCESS;
}

/* ---- tables ---- */
void sim_fill_sysman_device(zes_device_dditable_t *t)
{
	t->pfnGetProperties = device_get_properties;
	t->pfnEnumFrequencyDomains = enum_freqs;
	t->pfnEnumPowerDomains = enum_powers;
	t->pfnEnumTemperatureSensors = enum_temps;
	t->pfnEnumMemoryModules = enum_mems;
	t->pfnEnumEngineGroups = enum_engines;
}

void sim_fill_sysman_frequency(zes_frequency_dditable_t *t)
{
	t->pfnGetProperties = freq_get_properties;
	t->pfnGetState = freq_get_state;
}

void sim_fill_sysman_power(zes_power_dditable_t *t)
{
	t->pfnGetProperties = power_get_properties;
	t->pfnGetEnergyCounter = power_get_energy;
}

void sim_fill_sysman_temperature(zes_temperature_dditable_t *t)
{
	t->pfnGetProperties = temp_get_properties;
	t->pfnGetState = temp_get_state;
}

void sim_fill_sysman_memory(zes_memory_dditable_t *t)
{
	t->pfnGetProperties = mem_get_properties;
	t->pfnGetState = mem_get_state;
	t->pfnGetBandwidth = mem_get_bandwidth;
}

void sim_fill_sysman_engine(zes_engine_dditable_t *t)
{
	t->pfnGetProperties = engine_get_properties;
	t->pfnGetActivity = engine_get_activity;
}
