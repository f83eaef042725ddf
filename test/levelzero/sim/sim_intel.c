/* What a program gets from zeDriverGetExtensionFunctionAddress: the mutable command
 * lists of spec 1.9/1.10 (ZE_experimental_mutable_command_list, also in the command
 * list exp table for newer loaders) and Intel's own driver functions (zex*, as
 * compute-runtime hands them out). Rules, from the specification and Intel's headers:
 *  - a mutable list is a regular list created with ze_mutable_command_list_exp_desc_t;
 *    zeCommandListGetNextCommandId*Exp on it, while open, gives the id of the next
 *    kernel launch appended, with what may change (flags); kernel switches only to the
 *    kernels named then (KERNEL_INSTRUCTION);
 *  - updates are made to a closed list, only to what the id's flags allow; each later
 *    execution runs the commands as updated (group counts and sizes set the duration);
 *  - zexCommandListAppendWaitOnMemory* holds the list until the value at the address
 *    compares as asked (polled: a host write wakes nobody); WriteToMemory writes 8 bytes.
 * A broken rule: one "ze_sim:" line on stderr, the driver's error code back. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

static ze_result_t misuse(const char *call, const char *rule)
{
	fprintf(stderr, "ze_sim: %s: %s (mutable command lists, spec 1.9)\n", call, rule);
	return ZE_RESULT_ERROR_INVALID_ARGUMENT;
}

bool sim_list_desc_mutable(const ze_command_list_desc_t *desc)
{
	for (const ze_base_desc_t *d = desc->pNext; d; d = d->pNext)
		if (d->stype == ZE_STRUCTURE_TYPE_MUTABLE_COMMAND_LIST_EXP_DESC)
			return true;
	return false;
}

void sim_mutable_take_id(struct sim_list *l, struct sim_cmd *c)
{
	struct sim_mut_kernels *mk;

	if (!l->mut_pending)
		return;
	c->mutable_cmd = true;
	c->mut_id = l->mut_pending_id;
	c->mut_flags = l->mut_pending_flags;
	l->mut_pending = false;
	if (!l->mut_pending_kernels)
		return;
	if ((mk = calloc(1, sizeof(*mk))) != NULL) {
		mk->id = c->mut_id;
		mk->n = l->mut_pending_nkernels;
		mk->kernels = l->mut_pending_kernels;
		mk->next = l->mut_kernels;
		l->mut_kernels = mk;
	} else {
		free(l->mut_pending_kernels);
	}
	l->mut_pending_kernels = NULL;
	l->mut_pending_nkernels = 0;
}

void sim_mutable_forget(struct sim_list *l)
{
	while (l->mut_kernels) {
		struct sim_mut_kernels *next = l->mut_kernels->next;

		free(l->mut_kernels->kernels);
		free(l->mut_kernels);
		l->mut_kernels = next;
	}
	free(l->mut_pending_kernels);
	l->mut_pending_kernels = NULL;
	l->mut_pending = false;
}

/* The mutable list behind h, open (GetNextCommandId) or closed (updates). */
static ze_result_t mutable_list(ze_command_list_handle_t h, bool closed, const char *call,
				struct sim_list **out)
{
	ze_result_t r = sim_obj_check(h, SIM_K_LIST);
	struct sim_list *l = (struct sim_list *)h;

	if (r)
		return r;
	if (l->immediate || !l->mutable_list)
		return misuse(call, "not a regular list created with "
				    "ze_mutable_command_list_exp_desc_t");
	if (l->closed != closed)
		return misuse(call, closed ? "updates are made to a closed list"
					   : "command ids are asked for while the list is open");
	*out = l;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t next_command_id(ze_command_list_handle_t h,
				   const ze_mutable_command_id_exp_desc_t *desc, uint32_t nkernels,
				   ze_kernel_handle_t *kernels, uint64_t *id, const char *call)
{
	struct sim_list *l;
	ze_result_t r = mutable_list(h, false, call, &l);

	if (r)
		return r;
	SIM_NOT_NULL(desc);
	SIM_NOT_NULL(id);
	if (desc->stype != ZE_STRUCTURE_TYPE_MUTABLE_COMMAND_ID_EXP_DESC)
		return ZE_RESULT_ERROR_INVALID_ARGUMENT;
	if (!desc->flags || desc->flags > 0xff)
		return ZE_RESULT_ERROR_INVALID_ENUMERATION;
	if ((desc->flags & ZE_MUTABLE_COMMAND_EXP_FLAG_KERNEL_INSTRUCTION) && !nkernels)
		return misuse(call, "KERNEL_INSTRUCTION needs the kernels it may switch to "
				    "(zeCommandListGetNextCommandIdWithKernelsExp)");
	for (uint32_t i = 0; i < nkernels; i++)
		if ((r = sim_obj_check(kernels ? kernels[i] : NULL, SIM_K_KERNEL)))
			return r;
	free(l->mut_pending_kernels);
	l->mut_pending_kernels = NULL;
	l->mut_pending_nkernels = 0;
	if (nkernels) {
		l->mut_pending_kernels = malloc(nkernels * sizeof(*l->mut_pending_kernels));
		if (!l->mut_pending_kernels)
			return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
		memcpy(l->mut_pending_kernels, kernels, nkernels * sizeof(*kernels));
		l->mut_pending_nkernels = nkernels;
	}
	l->mut_pending = true;
	l->mut_pending_flags = desc->flags;
	l->mut_pending_id = ++l->mut_ids;
	*id = l->mut_pending_id;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t get_next_command_id(ze_command_list_handle_t h,
				       const ze_mutable_command_id_exp_desc_t *desc, uint64_t *id)
{
	return next_command_id(h, desc, 0, NULL, id, "zeCommandListGetNextCommandIdExp");
}

static ze_result_t get_next_command_id_with_kernels(ze_command_list_handle_t h,
						    const ze_mutable_command_id_exp_desc_t *desc,
						    uint32_t n, ze_kernel_handle_t *kernels,
						    uint64_t *id)
{
	return next_command_id(h, desc, n, kernels, id,
			       "zeCommandListGetNextCommandIdWithKernelsExp");
}

/* The recorded command with that id, allowed to change `flag`. */
static ze_result_t mutable_cmd(struct sim_list *l, uint64_t id, uint32_t flag, const char *call,
			       struct sim_cmd **out)
{
	for (struct sim_cmd *c = l->head; c; c = c->next) {
		if (!c->mutable_cmd || c->mut_id != id)
			continue;
		if (!(c->mut_flags & flag))
			return misuse(call, "the command's id was not asked for with this flag");
		*out = c;
		return ZE_RESULT_SUCCESS;
	}
	return misuse(call, "no command of the list has this id");
}

static ze_result_t update_commands(ze_command_list_handle_t h,
				   const ze_mutable_commands_exp_desc_t *desc)
{
	static const char call[] = "zeCommandListUpdateMutableCommandsExp";
	const ze_base_desc_t *d;
	struct sim_list *l;
	struct sim_cmd *c;
	ze_result_t r = mutable_list(h, true, call, &l);

	if (r)
		return r;
	SIM_NOT_NULL(desc);
	if (desc->stype != ZE_STRUCTURE_TYPE_MUTABLE_COMMANDS_EXP_DESC || desc->flags)
		return ZE_RESULT_ERROR_INVALID_ARGUMENT;
	/* Everything is checked before anything changes. */
	for (int apply = 0; apply < 2; apply++) {
		for (d = desc->pNext; d; d = d->pNext) {
			switch ((uint32_t)d->stype) {
			case ZE_STRUCTURE_TYPE_MUTABLE_KERNEL_ARGUMENT_EXP_DESC: {
				const ze_mutable_kernel_argument_exp_desc_t *a = (const void *)d;

				if ((r = mutable_cmd(l, a->commandId,
						     ZE_MUTABLE_COMMAND_EXP_FLAG_KERNEL_ARGUMENTS,
						     call, &c)))
					return r;
				break;
			}
			case ZE_STRUCTURE_TYPE_MUTABLE_GROUP_COUNT_EXP_DESC: {
				const ze_mutable_group_count_exp_desc_t *g = (const void *)d;

				if ((r = mutable_cmd(l, g->commandId,
						     ZE_MUTABLE_COMMAND_EXP_FLAG_GROUP_COUNT, call,
						     &c)))
					return r;
				SIM_NOT_NULL(g->pGroupCount);
				if (apply)
					c->count = *g->pGroupCount;
				break;
			}
			case ZE_STRUCTURE_TYPE_MUTABLE_GROUP_SIZE_EXP_DESC: {
				const ze_mutable_group_size_exp_desc_t *g = (const void *)d;

				if ((r = mutable_cmd(l, g->commandId,
						     ZE_MUTABLE_COMMAND_EXP_FLAG_GROUP_SIZE, call,
						     &c)))
					return r;
				if (!g->groupSizeX || !g->groupSizeY || !g->groupSizeZ ||
				    (uint64_t)g->groupSizeX * g->groupSizeY * g->groupSizeZ > 1024)
					return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
				if (apply) {
					c->group_size[0] = g->groupSizeX;
					c->group_size[1] = g->groupSizeY;
					c->group_size[2] = g->groupSizeZ;
				}
				break;
			}
			case ZE_STRUCTURE_TYPE_MUTABLE_GLOBAL_OFFSET_EXP_DESC: {
				const ze_mutable_global_offset_exp_desc_t *o = (const void *)d;

				if ((r = mutable_cmd(l, o->commandId,
						     ZE_MUTABLE_COMMAND_EXP_FLAG_GLOBAL_OFFSET,
						     call, &c)))
					return r;
				break;
			}
			default:
				return misuse(call, "an unknown descriptor in the update's chain");
			}
			if (apply)
				c->duration_ns = sim_kernel_duration(&c->count, c->group_size);
		}
	}
	return ZE_RESULT_SUCCESS;
}

static ze_result_t update_signal_event(ze_command_list_handle_t h, uint64_t id,
				       ze_event_handle_t ev)
{
	static const char call[] = "zeCommandListUpdateMutableCommandSignalEventExp";
	struct sim_list *l;
	struct sim_cmd *c;
	ze_result_t r = mutable_list(h, true, call, &l);

	if (r || (r = mutable_cmd(l, id, ZE_MUTABLE_COMMAND_EXP_FLAG_SIGNAL_EVENT, call, &c)))
		return r;
	if (ev && ((r = sim_obj_check(ev, SIM_K_EVENT)) ||
		   (r = sim_check_cb_signal(l, (struct sim_event *)ev, call))))
		return r;
	c->signal = (struct sim_event *)ev;
	c->signal_serial = sim_obj_serial(ev);
	return ZE_RESULT_SUCCESS;
}

static ze_result_t update_wait_events(ze_command_list_handle_t h, uint64_t id, uint32_t n,
				      ze_event_handle_t *waits)
{
	static const char call[] = "zeCommandListUpdateMutableCommandWaitEventsExp";
	struct sim_wait *w = NULL;
	struct sim_list *l;
	struct sim_cmd *c;
	ze_result_t r = mutable_list(h, true, call, &l);

	if (r || (r = mutable_cmd(l, id, ZE_MUTABLE_COMMAND_EXP_FLAG_WAIT_EVENTS, call, &c)))
		return r;
	if (n > c->nwait)
		return misuse(call, "more wait events than the command was appended with");
	if (n && !waits)
		return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
	for (uint32_t i = 0; i < n; i++)
		if ((r = sim_obj_check(waits[i], SIM_K_EVENT)))
			return r;
	if (n && !(w = calloc(n, sizeof(*w))))
		return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
	for (uint32_t i = 0; i < n; i++) {
		w[i].ev = (struct sim_event *)waits[i];
		w[i].serial = sim_obj_serial(waits[i]);
	}
	/* A recorded command holds no counter-based state yet (taken at submission). */
	free(c->wait);
	c->wait = w;
	c->nwait = n;
	return ZE_RESULT_SUCCESS;
}

static ze_result_t update_kernels(ze_command_list_handle_t h, uint32_t n, uint64_t *ids,
				  ze_kernel_handle_t *kernels)
{
	static const char call[] = "zeCommandListUpdateMutableCommandKernelsExp";
	struct sim_list *l;
	struct sim_cmd *c;
	ze_result_t r = mutable_list(h, true, call, &l);

	if (r)
		return r;
	if (n && (!ids || !kernels))
		return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
	for (int apply = 0; apply < 2; apply++) {
		for (uint32_t i = 0; i < n; i++) {
			const struct sim_mut_kernels *mk = l->mut_kernels;
			bool allowed = false;

			if ((r = mutable_cmd(l, ids[i], ZE_MUTABLE_COMMAND_EXP_FLAG_KERNEL_INSTRUCTION,
					     call, &c)) ||
			    (r = sim_obj_check(kernels[i], SIM_K_KERNEL)))
				return r;
			while (mk && mk->id != ids[i])
				mk = mk->next;
			for (uint32_t k = 0; mk && k < mk->n; k++)
				allowed |= mk->kernels[k] == (struct sim_kernel *)kernels[i];
			if (!allowed)
				return misuse(call, "a kernel not named when the id was asked for");
			if (!apply)
				continue;
			/* The switched-to kernel's group size as set now, as an append takes it. */
			c->kernel = (struct sim_kernel *)kernels[i];
			memcpy(c->group_size, c->kernel->group_size, sizeof(c->group_size));
			c->duration_ns = sim_kernel_duration(&c->count, c->group_size);
		}
	}
	return ZE_RESULT_SUCCESS;
}

void sim_fill_command_list_mutable(struct sim_command_list_exp_ddi *t, ze_api_version_t version)
{
	if (version < SIM_V(9) || !SIM_HAS(9))
		return;
	t->pfnGetNextCommandIdExp = get_next_command_id;
	t->pfnUpdateMutableCommandsExp = update_commands;
	t->pfnUpdateMutableCommandSignalEventExp = update_signal_event;
	t->pfnUpdateMutableCommandWaitEventsExp = update_wait_events;
	if (version < SIM_V(10) || !SIM_HAS(10))
		return;
	t->pfnGetNextCommandIdWithKernelsExp = get_next_command_id_with_kernels;
	t->pfnUpdateMutableCommandKernelsExp = update_kernels;
}

/* ---- Intel's zex functions ---- */

static ze_result_t zex_counter_based_event_create2(ze_context_handle_t ctx, ze_device_handle_t dev,
						   const zex_counter_based_event_desc_t *desc,
						   ze_event_handle_t *out)
{
	/* The same bits and layout as spec 1.15's; no descriptor: for immediate lists. */
	ze_event_counter_based_desc_t d = { .stype = ZE_STRUCTURE_TYPE_EVENT_COUNTER_BASED_DESC,
					    .flags = ZE_EVENT_COUNTER_BASED_FLAG_IMMEDIATE };

	if (desc) {
		if (desc->stype != ZEX_STRUCTURE_COUNTER_BASED_EVENT_DESC)
			return ZE_RESULT_ERROR_INVALID_ARGUMENT;
		if ((desc->flags & ZEX_COUNTER_BASED_EVENT_FLAG_IPC) &&
		    (desc->flags & (ZEX_COUNTER_BASED_EVENT_FLAG_KERNEL_TIMESTAMP |
				    ZEX_COUNTER_BASED_EVENT_FLAG_KERNEL_MAPPED_TIMESTAMP)))
			return ZE_RESULT_ERROR_INVALID_ARGUMENT;
		d.flags = desc->flags;
		d.signal = desc->signalScope;
		d.wait = desc->waitScope;
	}
	return sim_event_counter_based_create(ctx, dev, &d, out);
}

static ze_result_t zex_wait_on_memory(ze_command_list_handle_t h, zex_wait_on_mem_desc_t *desc,
				      void *ptr, uint64_t data, bool is64,
				      ze_event_handle_t signal, const char *call)
{
	struct sim_cmd proto = { .op = SIM_OP_WAIT_MEM, .dst = ptr, .mem_data = data,
				 .mem_64 = is64 };
	uint32_t a;

	SIM_NOT_NULL(desc);
	SIM_NOT_NULL(ptr);
	a = desc->actionFlag;
	/* Exactly one comparison. */
	if (!a || (a & (a - 1)) || a > ZEX_WAIT_ON_MEMORY_FLAG_LESSER_THAN_EQUAL)
		return ZE_RESULT_ERROR_INVALID_ENUMERATION;
	proto.mem_action = a;
	return sim_list_append(h, &proto, signal, 0, NULL, call);
}

static ze_result_t zex_wait_on_memory32(ze_command_list_handle_t h, zex_wait_on_mem_desc_t *desc,
					void *ptr, uint32_t data, ze_event_handle_t signal)
{
	return zex_wait_on_memory(h, desc, ptr, data, false, signal,
				  "zexCommandListAppendWaitOnMemory");
}

static ze_result_t zex_wait_on_memory64(ze_command_list_handle_t h, zex_wait_on_mem_desc_t *desc,
					void *ptr, uint64_t data, ze_event_handle_t signal)
{
	return zex_wait_on_memory(h, desc, ptr, data, true, signal,
				  "zexCommandListAppendWaitOnMemory64");
}

static ze_result_t zex_write_to_memory(ze_command_list_handle_t h, zex_write_to_mem_desc_t *desc,
				       void *ptr, uint64_t data)
{
	struct sim_cmd proto = { .op = SIM_OP_WRITE_MEM, .dst = ptr, .mem_data = data };

	SIM_NOT_NULL(desc);
	SIM_NOT_NULL(ptr);
	return sim_list_append(h, &proto, NULL, 0, NULL, "zexCommandListAppendWriteToMemory");
}

/* Imported host ranges (copies from them go as from device-visible memory). */
#define SIM_IMPORTS_MAX 64
static struct { uint8_t *base; size_t size; } imports[SIM_IMPORTS_MAX]; /* sim_lock */

static int import_find_locked(const void *p)
{
	for (int i = 0; i < SIM_IMPORTS_MAX; i++)
		if (imports[i].base && (const uint8_t *)p >= imports[i].base &&
		    (const uint8_t *)p < imports[i].base + imports[i].size)
			return i;
	return -1;
}

static ze_result_t zex_import_pointer(ze_driver_handle_t h, void *ptr, size_t size)
{
	ze_result_t r = sim_obj_check(h, SIM_K_DRIVER);
	int slot = -1;

	if (r)
		return r;
	SIM_NOT_NULL(ptr);
	if (!size)
		return ZE_RESULT_ERROR_INVALID_SIZE;
	pthread_mutex_lock(&sim_lock);
	if (import_find_locked(ptr) >= 0 || import_find_locked((uint8_t *)ptr + size - 1) >= 0)
		r = ZE_RESULT_ERROR_INVALID_ARGUMENT;	/* imported already */
	for (int i = 0; !r && i < SIM_IMPORTS_MAX && slot < 0; i++)
		if (!imports[i].base)
			slot = i;
	if (!r && slot < 0)
		r = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
	if (!r) {
		imports[slot].base = ptr;
		imports[slot].size = size;
	}
	pthread_mutex_unlock(&sim_lock);
	return r;
}

static ze_result_t zex_release_pointer(ze_driver_handle_t h, void *ptr)
{
	ze_result_t r = sim_obj_check(h, SIM_K_DRIVER);
	int i;

	if (r)
		return r;
	pthread_mutex_lock(&sim_lock);
	i = import_find_locked(ptr);
	if (i >= 0 && imports[i].base == ptr)
		imports[i].base = NULL;
	else
		r = ZE_RESULT_ERROR_INVALID_ARGUMENT;
	pthread_mutex_unlock(&sim_lock);
	return r;
}

static ze_result_t zex_host_pointer_base(ze_driver_handle_t h, void *ptr, void **base)
{
	ze_result_t r = sim_obj_check(h, SIM_K_DRIVER);
	int i;

	if (r)
		return r;
	SIM_NOT_NULL(base);
	pthread_mutex_lock(&sim_lock);
	i = import_find_locked(ptr);
	if (i >= 0)
		*base = imports[i].base;
	else
		r = ZE_RESULT_ERROR_INVALID_ARGUMENT;
	pthread_mutex_unlock(&sim_lock);
	return r;
}

/* ---- zeDriverGetExtensionFunctionAddress ---- */

/* The experimental command list functions: what the exp table has at the version played. */
static void *exp_function(const char *name)
{
	struct sim_command_list_exp_ddi t = { 0 };

	sim_fill_command_list_exp(&t, sim_api_version);
	const struct { const char *name; void *fn; } exp[] = {
		{ "zeCommandListImmediateAppendCommandListsExp",
		  (void *)t.pfnImmediateAppendCommandListsExp },
		{ "zeCommandListGetNextCommandIdExp", (void *)t.pfnGetNextCommandIdExp },
		{ "zeCommandListUpdateMutableCommandsExp", (void *)t.pfnUpdateMutableCommandsExp },
		{ "zeCommandListUpdateMutableCommandSignalEventExp",
		  (void *)t.pfnUpdateMutableCommandSignalEventExp },
		{ "zeCommandListUpdateMutableCommandWaitEventsExp",
		  (void *)t.pfnUpdateMutableCommandWaitEventsExp },
		{ "zeCommandListGetNextCommandIdWithKernelsExp",
		  (void *)t.pfnGetNextCommandIdWithKernelsExp },
		{ "zeCommandListUpdateMutableCommandKernelsExp",
		  (void *)t.pfnUpdateMutableCommandKernelsExp },
	};

	for (size_t i = 0; i < sizeof(exp) / sizeof(exp[0]); i++)
		if (strcmp(exp[i].name, name) == 0)
			return exp[i].fn;
	return NULL;
}

ze_result_t sim_get_extension_function_address(ze_driver_handle_t h, const char *name,
					       void **out)
{
	/* Intel's: whatever the spec version played. */
	static const struct { const char *name; void *fn; } zex[] = {
		{ "zexCounterBasedEventCreate2", (void *)zex_counter_based_event_create2 },
		{ "zexCommandListAppendWaitOnMemory", (void *)zex_wait_on_memory32 },
		{ "zexCommandListAppendWaitOnMemory64", (void *)zex_wait_on_memory64 },
		{ "zexCommandListAppendWriteToMemory", (void *)zex_write_to_memory },
		{ "zexDriverImportExternalPointer", (void *)zex_import_pointer },
		{ "zexDriverReleaseImportedPointer", (void *)zex_release_pointer },
		{ "zexDriverGetHostPointerBaseAddress", (void *)zex_host_pointer_base },
	};
	ze_result_t r = sim_obj_check(h, SIM_K_DRIVER);

	if (r)
		return r;
	SIM_NOT_NULL(name);
	SIM_NOT_NULL(out);
	*out = NULL;
	for (size_t i = 0; i < sizeof(zex) / sizeof(zex[0]); i++)
		if (strcmp(zex[i].name, name) == 0)
			*out = zex[i].fn;
	if (!*out)
		*out = exp_function(name);
	return *out ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_ARGUMENT;
}
