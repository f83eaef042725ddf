// SPDX-License-Identifier: MIT
/*
 * NVTX without relinking. NVTX v3 is header-only: at the first NVTX call of
 * each module (DSO) the loader in the header dlopen()s NVTX_INJECTION64_PATH
 * (set to this library by backend.c) and calls InitializeInjectionNvtx2, which
 * fills that module's function table with the functions below. Ranges and
 * marks become user_annotation spans and instants on the calling thread.
 *
 * Push/pop ranges live on the thread's range stack (inject/ranges.h, no
 * allocation); start/end ranges, which may end on another thread, in a
 * fixed process-wide table. Both are user ranges: the writer carries them
 * onto the device work launched while they were open.
 */
#define _GNU_SOURCE
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <wchar.h>

#include "backends/backend.h"
#include "backends/cuda/internal.h"
#include "inject/capture.h"
#include "inject/clock.h"
#include "inject/config.h"
#include "inject/ranges.h"
#include "inject/shim.h"
#include "inject/tables.h"

/* ---- strings ---- */

static uint32_t nvtx_str(const char *s)
{
	return gt_range_str(s);
}

static uint32_t nvtx_wstr(const wchar_t *w)
{
	char buf[512];
	size_t n = 0;

	if (!w)
		return GT_S_EMPTY;
	/* UTF-8, truncated: names are for reading */
	for (; *w && n + 4 < sizeof(buf); w++) {
		uint32_t c = (uint32_t)*w;
		if (c < 0x80) {
			buf[n++] = (char)c;
		} else if (c < 0x800) {
			buf[n++] = (char)(0xc0 | (c >> 6));
			buf[n++] = (char)(0x80 | (c & 0x3f));
		} else if (c < 0x10000) {
			buf[n++] = (char)(0xe0 | (c >> 12));
			buf[n++] = (char)(0x80 | ((c >> 6) & 0x3f));
			buf[n++] = (char)(0x80 | (c & 0x3f));
		} else {
			buf[n++] = (char)(0xf0 | (c >> 18));
			buf[n++] = (char)(0x80 | ((c >> 12) & 0x3f));
			buf[n++] = (char)(0x80 | ((c >> 6) & 0x3f));
			buf[n++] = (char)(0x80 | (c & 0x3f));
		}
	}
	buf[n] = 0;
	return nvtx_str(buf);
}

/* ---- domains: the handle points into a fixed table ---- */

#define DOMAINS_MAX 255 /* an index fits a byte, 0 is the default domain */
struct nvtxDomainRegistration_st {
	uint32_t name;
};
static struct nvtxDomainRegistration_st domains[DOMAINS_MAX];
static unsigned ndomains; /* under domains_lock */
/* Creation is rare (once per domain), so a lock: without it two threads
 * creating one name at once got two handles, and a slot was counted
 * before its name was stored (a reader could see it half made). */
static pthread_mutex_t domains_lock = PTHREAD_MUTEX_INITIALIZER;

static nvtxDomainHandle_t domain_create(uint32_t name)
{
	nvtxDomainHandle_t d = NULL; /* none left: the default domain */
	unsigned n;

	pthread_mutex_lock(&domains_lock);
	n = ndomains;
	for (unsigned i = 0; i < n && !d; i++)
		if (domains[i].name == name)
			d = &domains[i];
	if (!d && n < DOMAINS_MAX) {
		domains[n].name = name;
		ndomains = n + 1;
		d = &domains[n];
	}
	pthread_mutex_unlock(&domains_lock);
	return d;
}

static nvtxDomainHandle_t NVTX_API domain_create_a(const char *name)
{
	return domain_create(nvtx_str(name));
}

static nvtxDomainHandle_t NVTX_API domain_create_w(const wchar_t *name)
{
	return domain_create(nvtx_wstr(name));
}

static void NVTX_API domain_destroy(nvtxDomainHandle_t d)
{
	/* kept: ranges of it may still end */
}

static uint8_t domain_index(nvtxDomainHandle_t d)
{
	return d ? (uint8_t)(d - domains + 1) : 0;
}

static uint32_t domain_name(uint8_t index)
{
	return index ? domains[index - 1].name : 0;
}

/* Registered strings: the handle is the string id (never 0). */
static nvtxStringHandle_t NVTX_API register_string_a(nvtxDomainHandle_t d, const char *s)
{
	return (nvtxStringHandle_t)(uintptr_t)nvtx_str(s);
}

static nvtxStringHandle_t NVTX_API register_string_w(nvtxDomainHandle_t d, const wchar_t *s)
{
	return (nvtxStringHandle_t)(uintptr_t)nvtx_wstr(s);
}

/* ---- attributes ---- */

static uint32_t attr_name(const nvtxEventAttributes_t *a)
{
	if (!a)
		return GT_S_EMPTY;
	switch (a->messageType) {
	case NVTX_MESSAGE_TYPE_ASCII:
		return nvtx_str(a->message.ascii);
	case NVTX_MESSAGE_TYPE_UNICODE:
		return nvtx_wstr(a->message.unicode);
	case NVTX_MESSAGE_TYPE_REGISTERED:
		return (uint32_t)(uintptr_t)a->message.registered;
	default:
		return GT_S_EMPTY;
	}
}

/* What a range keeps of its attributes until it ends: category, colour
 * and payload (the message became the name). */
struct nvtx_attrs {
	uint32_t category, color;
	uint8_t has_color, payload_type;
	union {
		uint64_t u;
		int64_t i;
		double f;
	} payload;
};

static bool attrs_read(struct nvtx_attrs *out, const nvtxEventAttributes_t *a)
{
	*out = (struct nvtx_attrs){ 0 };
	if (!a || a->size < offsetof(nvtxEventAttributes_t, messageType))
		return false;
	out->category = a->category;
	out->has_color = a->colorType == NVTX_COLOR_ARGB;
	out->color = a->color;
	switch (a->payloadType) {
	case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64:
		out->payload_type = GT_ARG_U64;
		out->payload.u = a->payload.ullValue;
		break;
	case NVTX_PAYLOAD_TYPE_INT64:
		out->payload_type = GT_ARG_I64;
		out->payload.i = a->payload.llValue;
		break;
	case NVTX_PAYLOAD_TYPE_DOUBLE:
		out->payload_type = GT_ARG_F64;
		out->payload.f = a->payload.dValue;
		break;
	case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32:
		out->payload_type = GT_ARG_U64;
		out->payload.u = a->payload.uiValue;
		break;
	case NVTX_PAYLOAD_TYPE_INT32:
		out->payload_type = GT_ARG_I64;
		out->payload.i = a->payload.iValue;
		break;
	case NVTX_PAYLOAD_TYPE_FLOAT:
		out->payload_type = GT_ARG_F64;
		out->payload.f = a->payload.fValue;
		break;
	default:
		break;
	}
	return out->category || out->has_color || out->payload_type;
}

/* domain, category, color, payload as args (at most 4); at NULL, the domain only */
static unsigned attr_args(struct gt_arg *args, const struct nvtx_attrs *a, uint8_t dom)
{
	unsigned n = 0;

	if (dom)
		args[n++] = (struct gt_arg){ .key = cupti__key("domain"), .type = GT_ARG_STR,
					     .v.u = domain_name(dom) };
	if (!a)
		return n;
	if (a->category)
		args[n++] = (struct gt_arg){ .key = cupti__key("category"), .type = GT_ARG_U64,
					     .v.u = a->category };
	if (a->has_color)
		args[n++] = (struct gt_arg){ .key = cupti__key("color"), .type = GT_ARG_HEX,
					     .v.u = a->color };
	if (a->payload_type)
		args[n++] = (struct gt_arg){ .key = cupti__key("payload"),
					     .type = a->payload_type, .v.u = a->payload.u };
	return n;
}

static bool recording(void)
{
	return gt_range_recording();
}

/* ---- marks ---- */

static void mark(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a, uint32_t name)
{
	struct gt_arg args[4];
	struct nvtx_attrs at;
	uint64_t now = gt_clock_ns();

	struct gt_event ev = { .start_ns = now, .end_ns = now, .name = name,
			       .cat = GT_S_CAT_USER_ANNOTATION, .type = GT_EV_INSTANT };

	if (recording())
		gt_emit(&ev, args, attr_args(args, attrs_read(&at, a) ? &at : NULL, domain_index(d)));
}

static void NVTX_API mark_ex(const nvtxEventAttributes_t *a)
{
	mark(NULL, a, attr_name(a));
}

static void NVTX_API mark_a(const char *m)
{
	mark(NULL, NULL, nvtx_str(m));
}

static void NVTX_API mark_w(const wchar_t *m)
{
	mark(NULL, NULL, nvtx_wstr(m));
}

static void NVTX_API domain_mark_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	mark(d, a, attr_name(a));
}

/* ---- attributes of pushed ranges, until their pop ---- */

/* Shared slots, not per-thread copies: static TLS is scarce when NVTX alone
 * dlopen()s this library, and most pushes carry no attributes at all. A
 * range whose thread never pops it keeps its slot; when none is free the
 * range is drawn without its attributes and the loss is counted. */
#define ATTR_SLOTS 4096
struct attr_slot {
	_Atomic uint32_t busy;
	struct nvtx_attrs attrs;
};
GT_TABLE(struct attr_slot, attr_slots, ATTR_SLOTS);
static _Atomic uint32_t next_attr_slot;

/* slot number + 1, or 0 for none */
static uint16_t attrs_keep(const struct nvtx_attrs *a)
{
	for (int tries = 0; tries < 8; tries++) {
		uint32_t i = atomic_fetch_add_explicit(&next_attr_slot, 1, memory_order_relaxed) %
			     ATTR_SLOTS;

		if (!atomic_exchange_explicit(&attr_slots[i].busy, 1, memory_order_acquire)) {
			attr_slots[i].attrs = *a;
			return (uint16_t)(i + 1);
		}
	}
	gt_lost_add(cupti__key("nvtx_attributes"), 1);
	return 0;
}

static bool attrs_take(uint16_t slot, struct nvtx_attrs *out)
{
	if (!slot)
		return false;
	*out = attr_slots[slot - 1].attrs;
	atomic_store_explicit(&attr_slots[slot - 1].busy, 0, memory_order_release);
	return true;
}

/* ---- push/pop: the thread's range stack (inject/ranges.h) ---- */

/* The level of the push that opened a capture window, and that window's
 * number (two ints: static TLS is scarce, see above): its pop closes that
 * window, not one opened since by another thread's range. */
static GT_TLS int capture_level = -1;
static GT_TLS uint32_t capture_window;

/* --capture-range nvtx:NAME[@DOMAIN]: is this the range? (no @DOMAIN: the
 * default domain, as Nsight Systems reads it) */
static bool capture_match(uint32_t name, uint8_t dom)
{
	static _Atomic uint32_t want_name, want_dom;
	uint32_t n;

	if (gt_likely(gt_cfg.capture_range != GT_RANGE_NVTX))
		return false;
	n = atomic_load(&want_name);
	if (!n) {
		atomic_store(&want_dom, gt_cfg.capture_nvtx_domain[0]
						? gt_str_intern(gt_cfg.capture_nvtx_domain) : 0);
		n = gt_str_intern(gt_cfg.capture_nvtx);
		atomic_store(&want_name, n);
	}
	return name == n && domain_name(dom) == atomic_load(&want_dom);
}

/* key: the domain's index + 1 (0 is no key of a domain handle) */
static int push(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a, uint32_t name)
{
	struct nvtx_attrs at;
	uint32_t opens = 0;
	uint16_t slot;
	int level, nesting;

	if (gt_unlikely(capture_match(name, domain_index(d))) && capture_level < 0 &&
	    !gt_in_tracer) {
		/* the window opens before the range starts: the range is in it.
		 * Only the push that opened it closes it: a range of that name on
		 * another thread, inside the window, is just recorded */
		opens = capture__range_begin(gt_clock_ns());
	}
	slot = attrs_read(&at, a) && recording() ? attrs_keep(&at) : 0;
	level = gt_range_push((uintptr_t)domain_index(d) + 1, name, slot, &nesting);
	/* not kept on the stack (past GT_RANGE_DEPTH, or a handler's range that
	 * interrupted a change of it): its pop hands back no slot, free it now */
	if (slot && (nesting < 0 || nesting >= GT_RANGE_DEPTH))
		attrs_take(slot, &at);
	if (gt_unlikely(opens)) {
		if (nesting < GT_RANGE_DEPTH) {
			capture_level = level;
			capture_window = opens;
		} else { /* a range too deep to be kept has no end to wait for */
			capture__range_end(gt_clock_ns(), opens);
		}
	}
	/* the thread's outermost range, of any domain, is the one measured */
	if (gt_metrics_on(cupti_range_nvtx))
		cupti__range_nvtx_push(nesting, name);
	return level;
}

static int pop(nvtxDomainHandle_t d)
{
	struct gt_range_frame f;
	struct gt_arg args[GT_ARGS_MAX];
	struct nvtx_attrs at;
	uint64_t end = gt_clock_ns(); /* before its metrics, which wait for its kernels */
	int nesting;
	uint16_t end_flags;
	int level = gt_range_pop((uintptr_t)domain_index(d) + 1, &f, &nesting, &end_flags);
	bool has_attrs;
	unsigned n;

	if (level < 0)
		return level;
	has_attrs = attrs_take((uint16_t)f.aux, &at); /* freed also where nothing is drawn */
	if (!f.name)
		return level;
	n = attr_args(args, has_attrs ? &at : NULL, (uint8_t)(f.key - 1));
	if (gt_metrics_on(cupti_range_nvtx))
		n = cupti__range_nvtx_pop(nesting, args, n, GT_ARGS_MAX);
	gt_range_end(f.id, f.start_ns, end, f.name, 0, end_flags, args, n);
	/* after the range's own span: it is in the window it ends (an inner
	 * range of the same name pops at a deeper level) */
	if (gt_unlikely(capture_level >= 0) && level <= capture_level &&
	    capture_match(f.name, (uint8_t)(f.key - 1))) {
		capture_level = -1;
		capture__range_end(gt_clock_ns(), capture_window);
	}
	return level;
}

static int NVTX_API push_ex(const nvtxEventAttributes_t *a)
{
	return push(NULL, a, attr_name(a));
}

static int NVTX_API push_a(const char *m)
{
	return push(NULL, NULL, nvtx_str(m));
}

static int NVTX_API push_w(const wchar_t *m)
{
	return push(NULL, NULL, nvtx_wstr(m));
}

static int NVTX_API pop_core(void)
{
	return pop(NULL);
}

static int NVTX_API domain_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	return push(d, a, attr_name(a));
}

static int NVTX_API domain_pop(nvtxDomainHandle_t d)
{
	return pop(d);
}

/* ---- start/end: ranges that may end on another thread ---- */

/*
 * Start/end ranges open at once, each in a slot of its own. A range's id holds its
 * slot in its low bits (the end finds it from the id alone) and a count above them
 * (an id never repeats). A range that finds every slot taken is the one refused,
 * counted, and its end ignored: one taking the slot of the oldest made that one look
 * never ended in the trace, the loss counted against it, and drew the new one.
 */
#define OPEN_MAX       4096
#define OPEN_BITS      12
#define OPEN_CLAIMED   UINT64_MAX /* a slot being filled */
_Static_assert(OPEN_MAX == 1u << OPEN_BITS, "the slot is the id's low bits");
struct open_range {
	_Atomic uint64_t id; /* 0: free */
	uint64_t range_id; /* its begin record's (inject/ranges.h) */
	uint64_t start;
	uint32_t name, tid;
	uint8_t domain;
	bool has_attrs;
	struct nvtx_attrs attrs;
};
GT_TABLE(struct open_range, open_ranges, OPEN_MAX);
static _Atomic uint64_t next_range_id;
static _Atomic unsigned ranges_open; /* slots taken */
/* A range was ever started here: else a fork child has none to forget, and
 * leaves the table's pages untouched (a shell forks for every command). */
static _Atomic bool ranges_used GT_STARTUP_STATE;

/* A free slot for range n, claimed (OPEN_CLAIMED), from n's own on; NULL when all
 * are taken. */
static struct open_range *claim_slot(uint64_t n, unsigned *slot)
{
	if (atomic_fetch_add(&ranges_open, 1) >= OPEN_MAX) {
		atomic_fetch_sub(&ranges_open, 1);
		return NULL;
	}
	/* one is free (counted above): a few taken ones passed at most */
	for (unsigned i = 0; i < OPEN_MAX; i++) {
		uint64_t free_id = 0;

		*slot = (unsigned)((n + i) % OPEN_MAX);
		if (atomic_compare_exchange_strong(&open_ranges[*slot].id, &free_id, OPEN_CLAIMED))
			return &open_ranges[*slot];
	}
	atomic_fetch_sub(&ranges_open, 1);
	return NULL;
}

static nvtxRangeId_t start_range(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a,
				 uint32_t name)
{
	uint64_t n = atomic_fetch_add(&next_range_id, 1) + 1, id;
	unsigned slot;
	struct open_range *r;

	if (!atomic_load_explicit(&ranges_used, memory_order_relaxed))
		atomic_store(&ranges_used, true);
	r = claim_slot(n, &slot);
	if (!r) {
		/* refused: an id that names no open range, so its end is ignored */
		gt_lost_add(cupti__key("nvtx_open_ranges"), 1); /* 4096 ranges are open */
		return n << OPEN_BITS | (n % OPEN_MAX);
	}
	id = n << OPEN_BITS | slot;
	r->start = gt_clock_ns();
	r->name = name;
	r->tid = (uint32_t)gt_gettid();
	r->domain = domain_index(d);
	r->has_attrs = attrs_read(&r->attrs, a);
	r->range_id = gt_range_begin(name, r->start, GT_EVF_PROCESS);
	atomic_store_explicit(&r->id, id, memory_order_release);
	return id;
}

static void end_range(nvtxRangeId_t id)
{
	struct open_range *r = &open_ranges[id % OPEN_MAX];
	uint64_t expect = id;
	struct gt_arg args[4];
	struct open_range copy;

	if (!id || atomic_load_explicit(&r->id, memory_order_acquire) != id)
		return;
	copy = (struct open_range){ .range_id = r->range_id, .start = r->start, .name = r->name,
				    .tid = r->tid,
				    .domain = r->domain, .has_attrs = r->has_attrs,
				    .attrs = r->attrs };
	if (!atomic_compare_exchange_strong(&r->id, &expect, 0))
		return; /* ended twice, concurrently */
	atomic_fetch_sub(&ranges_open, 1);
	gt_range_end(copy.range_id, copy.start, gt_clock_ns(), copy.name, copy.tid,
		     GT_EVF_PROCESS, args,
		     attr_args(args, copy.has_attrs ? &copy.attrs : NULL, copy.domain));
}

static nvtxRangeId_t NVTX_API range_start_ex(const nvtxEventAttributes_t *a)
{
	return start_range(NULL, a, attr_name(a));
}

static nvtxRangeId_t NVTX_API range_start_a(const char *m)
{
	return start_range(NULL, NULL, nvtx_str(m));
}

static nvtxRangeId_t NVTX_API range_start_w(const wchar_t *m)
{
	return start_range(NULL, NULL, nvtx_wstr(m));
}

static void NVTX_API range_end(nvtxRangeId_t id)
{
	end_range(id);
}

static nvtxRangeId_t NVTX_API domain_range_start_ex(nvtxDomainHandle_t d,
						    const nvtxEventAttributes_t *a)
{
	return start_range(d, a, attr_name(a));
}

static void NVTX_API domain_range_end(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
	end_range(id);
}

static void NVTX_API initialize(const void *reserved)
{
}

/* ---- the injection entry point ---- */

static void fill(NvtxFunctionTable table, unsigned size, unsigned cbid, void (*fn)(void))
{
	if (cbid < size && table[cbid])
		*table[cbid] = (NvtxFunctionPointer)fn;
}

#define FN(f) ((void (*)(void))(f))

/* Called once per module that uses NVTX (each DSO has its own table). */
GT_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table)
{
	const NvtxExportTableCallbacks *cb;
	const NvtxExportTableVersionInfo *ver;
	NvtxFunctionTable t;
	unsigned size = 0;

	gt_ensure_init();
	/* 0: NVTX turns itself into no-ops for this module */
	if (!get_table || !gt_backend_enabled(GT_BACKEND_CUPTI) || !(gt_cfg.kinds & GT_KIND(ANNOTATION)))
		return 0;
	cb = get_table(NVTX_ETID_CALLBACKS);
	if (!cb || cb->struct_size < sizeof(*cb) || !cb->GetModuleFunctionTable)
		return 0;
	ver = get_table(NVTX_ETID_VERSIONINFO);
	if (ver && ver->struct_size >= sizeof(*ver) && ver->SetInjectionNvtxVersion)
		ver->SetInjectionNvtxVersion(NVTX_VERSION);
	if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &size) && t) {
		fill(t, size, NVTX_CBID_CORE_MarkEx, FN(mark_ex));
		fill(t, size, NVTX_CBID_CORE_MarkA, FN(mark_a));
		fill(t, size, NVTX_CBID_CORE_MarkW, FN(mark_w));
		fill(t, size, NVTX_CBID_CORE_RangeStartEx, FN(range_start_ex));
		fill(t, size, NVTX_CBID_CORE_RangeStartA, FN(range_start_a));
		fill(t, size, NVTX_CBID_CORE_RangeStartW, FN(range_start_w));
		fill(t, size, NVTX_CBID_CORE_RangeEnd, FN(range_end));
		fill(t, size, NVTX_CBID_CORE_RangePushEx, FN(push_ex));
		fill(t, size, NVTX_CBID_CORE_RangePushA, FN(push_a));
		fill(t, size, NVTX_CBID_CORE_RangePushW, FN(push_w));
		fill(t, size, NVTX_CBID_CORE_RangePop, FN(pop_core));
	}
	if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &size) && t) {
		fill(t, size, NVTX_CBID_CORE2_DomainMarkEx, FN(domain_mark_ex));
		fill(t, size, NVTX_CBID_CORE2_DomainRangeStartEx, FN(domain_range_start_ex));
		fill(t, size, NVTX_CBID_CORE2_DomainRangeEnd, FN(domain_range_end));
		fill(t, size, NVTX_CBID_CORE2_DomainRangePushEx, FN(domain_push_ex));
		fill(t, size, NVTX_CBID_CORE2_DomainRangePop, FN(domain_pop));
		fill(t, size, NVTX_CBID_CORE2_DomainRegisterStringA, FN(register_string_a));
		fill(t, size, NVTX_CBID_CORE2_DomainRegisterStringW, FN(register_string_w));
		fill(t, size, NVTX_CBID_CORE2_DomainCreateA, FN(domain_create_a));
		fill(t, size, NVTX_CBID_CORE2_DomainCreateW, FN(domain_create_w));
		fill(t, size, NVTX_CBID_CORE2_DomainDestroy, FN(domain_destroy));
		fill(t, size, NVTX_CBID_CORE2_Initialize, FN(initialize));
	}
	return 1;
}

GT_FORK_CODE void cupti__nvtx_forget(void)
{
	/* the fork child keeps its thread's stack; other threads are gone */
	if (!atomic_load(&ranges_used))
		return;
	for (unsigned i = 0; i < OPEN_MAX; i++)
		atomic_store(&open_ranges[i].id, 0);
	atomic_store(&ranges_open, 0);
}
