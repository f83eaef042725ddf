// SPDX-License-Identifier: MIT
/*
 * NVTX without relinking. NVTX v3 is header-only: at the first NVTX call of
 * each module (DSO) the loader in the header dlopen()s NVTX_INJECTION64_PATH
 * (set to this library by cupti.c) and calls InitializeInjectionNvtx2, which
 * fills that module's function table with the functions below. Ranges and
 * marks become user_annotation spans and instants on the calling thread.
 *
 * Push/pop ranges live on a fixed per-thread stack (no allocation); start/end
 * ranges, which may end on another thread, in a fixed process-wide table.
 */
#define _GNU_SOURCE
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <string.h>
#include <wchar.h>

#include "backends/backend.h"
#include "backends/cupti.h"
#include "inject/clock.h"
#include "inject/config.h"
#include "inject/shim.h"

/* ---- strings: content-hashed cache in front of gt_str_intern ---- */

#define NSTR_MAX 4096
static struct {
	_Atomic uint64_t hash;
	_Atomic uint32_t id;
} nstr[NSTR_MAX];

static uint64_t hash_str(const char *s, size_t *len)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t n = 0;

	for (; s[n]; n++)
		h = (h ^ (unsigned char)s[n]) * 0x100000001b3ull;
	*len = n;
	return h | 1; /* never 0: 0 marks an empty slot */
}

/* Range names repeat (loop iterations): after the first time, no lock. */
static uint32_t nvtx_str(const char *s)
{
	size_t len, got;
	uint64_t h;

	if (!s)
		return GT_S_EMPTY;
	h = hash_str(s, &len);
	for (unsigned i = 0; i < 8; i++) {
		unsigned slot = (unsigned)((h >> 7) + i) % NSTR_MAX;
		uint64_t cur = atomic_load_explicit(&nstr[slot].hash, memory_order_acquire);
		uint32_t id;

		if (cur == h && (id = atomic_load_explicit(&nstr[slot].id, memory_order_relaxed))) {
			const char *known = gt_str_get(id, &got);
			if (known && got == len && !memcmp(known, s, len))
				return id;
		}
		if (!cur) {
			uint64_t expect = 0;
			id = gt_str_intern_n(s, len);
			if (atomic_compare_exchange_strong(&nstr[slot].hash, &expect, ~0ull)) {
				atomic_store_explicit(&nstr[slot].id, id, memory_order_relaxed);
				atomic_store_explicit(&nstr[slot].hash, h, memory_order_release);
			}
			return id;
		}
	}
	return gt_str_intern_n(s, len);
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
static _Atomic unsigned ndomains;

static nvtxDomainHandle_t domain_create(uint32_t name)
{
	unsigned n = atomic_load(&ndomains);

	for (unsigned i = 0; i < n; i++)
		if (domains[i].name == name)
			return &domains[i];
	n = atomic_fetch_add(&ndomains, 1);
	if (n >= DOMAINS_MAX) {
		atomic_store(&ndomains, DOMAINS_MAX);
		return NULL; /* the default domain */
	}
	domains[n].name = name;
	return &domains[n];
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

/* domain, category, color, payload: what the attributes carry */
static unsigned attr_args(struct gt_arg *args, const nvtxEventAttributes_t *a, uint8_t dom)
{
	unsigned n = 0;

	if (dom)
		args[n++] = (struct gt_arg){ .key = cupti__key("domain"), .type = GT_ARG_STR,
					     .v.u = domain_name(dom) };
	if (!a || a->size < offsetof(nvtxEventAttributes_t, messageType))
		return n;
	if (a->category)
		args[n++] = (struct gt_arg){ .key = cupti__key("category"), .type = GT_ARG_U64,
					     .v.u = a->category };
	if (a->colorType == NVTX_COLOR_ARGB)
		args[n++] = (struct gt_arg){ .key = cupti__key("color"), .type = GT_ARG_HEX,
					     .v.u = a->color };
	switch (a->payloadType) {
	case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64:
		args[n++] = (struct gt_arg){ cupti__key("payload"), GT_ARG_U64,
					     { .u = a->payload.ullValue } };
		break;
	case NVTX_PAYLOAD_TYPE_INT64:
		args[n++] = (struct gt_arg){ cupti__key("payload"), GT_ARG_I64,
					     { .i = a->payload.llValue } };
		break;
	case NVTX_PAYLOAD_TYPE_DOUBLE:
		args[n++] = (struct gt_arg){ cupti__key("payload"), GT_ARG_F64,
					     { .f = a->payload.dValue } };
		break;
	case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32:
		args[n++] = (struct gt_arg){ cupti__key("payload"), GT_ARG_U64,
					     { .u = a->payload.uiValue } };
		break;
	case NVTX_PAYLOAD_TYPE_INT32:
		args[n++] = (struct gt_arg){ cupti__key("payload"), GT_ARG_I64,
					     { .i = a->payload.iValue } };
		break;
	case NVTX_PAYLOAD_TYPE_FLOAT:
		args[n++] = (struct gt_arg){ cupti__key("payload"), GT_ARG_F64,
					     { .f = a->payload.fValue } };
		break;
	default:
		break;
	}
	return n;
}

static bool recording(void)
{
	return gt_tracing() && (gt_cfg.kinds & GT_KIND(ANNOTATION)) && !gt_in_tracer;
}

static void emit(uint8_t type, uint64_t start, uint64_t end, uint32_t name, uint32_t track,
		 const struct gt_arg *args, unsigned n)
{
	struct gt_event ev = {
		.start_ns = start, .end_ns = end, .name = name,
		.cat = GT_S_CAT_USER_ANNOTATION, .track = track, .type = type,
	};
	gt_emit(&ev, args, n);
}

/* ---- marks ---- */

static void mark(nvtxDomainHandle_t d, uint32_t name, const nvtxEventAttributes_t *a)
{
	struct gt_arg args[6];
	uint64_t now = gt_clock_ns();

	if (recording())
		emit(GT_EV_INSTANT, now, now, name, 0, args, attr_args(args, a, domain_index(d)));
}

static void NVTX_API mark_ex(const nvtxEventAttributes_t *a)
{
	mark(NULL, attr_name(a), a);
}

static void NVTX_API mark_a(const char *m)
{
	mark(NULL, nvtx_str(m), NULL);
}

static void NVTX_API mark_w(const wchar_t *m)
{
	mark(NULL, nvtx_wstr(m), NULL);
}

static void NVTX_API domain_mark_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	mark(d, attr_name(a), a);
}

/* ---- push/pop: a fixed per-thread stack ---- */

/* Two arrays, not one of structs: static TLS is scarce when NVTX alone
 * dlopen()s this library. The start time keeps the domain in its low byte
 * (2^56 ns of CLOCK_MONOTONIC_RAW is two years of uptime). */
#define STACK_DEPTH 32
static GT_TLS uint64_t stack_start_dom[STACK_DEPTH];
static GT_TLS uint32_t stack_name[STACK_DEPTH];
static GT_TLS int depth;

static int push(nvtxDomainHandle_t d, uint32_t name)
{
	int level = depth++;

	if (level < STACK_DEPTH) {
		stack_start_dom[level] = gt_clock_ns() << 8 | domain_index(d);
		stack_name[level] = name;
	} else {
		gt_lost_add(cupti__key("nvtx_too_deep"), 1);
	}
	return level;
}

static int pop(nvtxDomainHandle_t d)
{
	uint8_t dom = domain_index(d);
	struct gt_arg args[1];
	int level, i;

	if (depth <= 0)
		return -1;
	level = --depth;
	if (level >= STACK_DEPTH)
		return level;
	/* the innermost range of this domain (domains interleave rarely) */
	for (i = level; i > 0 && level - i < 4 && (uint8_t)stack_start_dom[i] != dom; i--)
		;
	if ((uint8_t)stack_start_dom[i] != dom)
		i = level;
	uint64_t start = stack_start_dom[i] >> 8;
	uint32_t name = stack_name[i];
	uint8_t fdom = (uint8_t)stack_start_dom[i];
	memmove(&stack_start_dom[i], &stack_start_dom[i + 1],
		(size_t)(level - i) * sizeof(stack_start_dom[0]));
	memmove(&stack_name[i], &stack_name[i + 1], (size_t)(level - i) * sizeof(stack_name[0]));
	if (recording())
		emit(GT_EV_HOST_SPAN, start, gt_clock_ns(), name, 0, args,
		     fdom ? attr_args(args, NULL, fdom) : 0);
	return level;
}

static int NVTX_API push_ex(const nvtxEventAttributes_t *a)
{
	return push(NULL, attr_name(a));
}

static int NVTX_API push_a(const char *m)
{
	return push(NULL, nvtx_str(m));
}

static int NVTX_API push_w(const wchar_t *m)
{
	return push(NULL, nvtx_wstr(m));
}

static int NVTX_API pop_core(void)
{
	return pop(NULL);
}

static int NVTX_API domain_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	return push(d, attr_name(a));
}

static int NVTX_API domain_pop(nvtxDomainHandle_t d)
{
	return pop(d);
}

/* ---- start/end: ranges that may end on another thread ---- */

#define OPEN_MAX 4096
static struct open_range {
	_Atomic uint64_t id; /* 0: free */
	uint64_t start;
	uint32_t name, tid;
	uint8_t domain;
} open_ranges[OPEN_MAX];
static _Atomic uint64_t next_range_id;

static nvtxRangeId_t start_range(nvtxDomainHandle_t d, uint32_t name)
{
	uint64_t id = atomic_fetch_add(&next_range_id, 1) + 1;
	struct open_range *r = &open_ranges[id % OPEN_MAX];
	uint64_t old = atomic_exchange(&r->id, 0);

	if (old)
		gt_lost_add(cupti__key("nvtx_open_ranges"), 1); /* 4096 ranges were open */
	r->start = gt_clock_ns();
	r->name = name;
	r->tid = (uint32_t)gt_gettid();
	r->domain = domain_index(d);
	atomic_store_explicit(&r->id, id, memory_order_release);
	return id;
}

static void end_range(nvtxRangeId_t id)
{
	struct open_range *r = &open_ranges[id % OPEN_MAX];
	uint64_t expect = id;
	struct gt_arg args[1];
	struct open_range copy;

	if (!id || atomic_load_explicit(&r->id, memory_order_acquire) != id)
		return;
	copy = (struct open_range){ .start = r->start, .name = r->name, .tid = r->tid,
				    .domain = r->domain };
	if (!atomic_compare_exchange_strong(&r->id, &expect, 0))
		return; /* ended twice, concurrently */
	if (recording())
		emit(GT_EV_HOST_SPAN, copy.start, gt_clock_ns(), copy.name, copy.tid, args,
		     copy.domain ? attr_args(args, NULL, copy.domain) : 0);
}

static nvtxRangeId_t NVTX_API range_start_ex(const nvtxEventAttributes_t *a)
{
	return start_range(NULL, attr_name(a));
}

static nvtxRangeId_t NVTX_API range_start_a(const char *m)
{
	return start_range(NULL, nvtx_str(m));
}

static nvtxRangeId_t NVTX_API range_start_w(const wchar_t *m)
{
	return start_range(NULL, nvtx_wstr(m));
}

static void NVTX_API range_end(nvtxRangeId_t id)
{
	end_range(id);
}

static nvtxRangeId_t NVTX_API domain_range_start_ex(nvtxDomainHandle_t d,
						    const nvtxEventAttributes_t *a)
{
	return start_range(d, attr_name(a));
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
	if (!get_table || !gt_backend_enabled("cupti") || !(gt_cfg.kinds & GT_KIND(ANNOTATION)))
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

void cupti__nvtx_forget(void)
{
	/* the fork child keeps its thread's stack; other threads are gone */
	for (unsigned i = 0; i < OPEN_MAX; i++)
		atomic_store(&open_ranges[i].id, 0);
}
