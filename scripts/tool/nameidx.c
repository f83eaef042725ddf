/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nameidx.h"
#include "inject/hash.h"

static size_t hash(const char *s)
{
	return (size_t)gt_fnv1a64_str(s);
}

/* The slot of name: its row's, or the free one where it goes. */
static size_t *slot_of(const struct nameidx *x, const char *name, nameidx_name_fn *name_of,
		       const void *ctx)
{
	size_t mask = x->cap - 1, i = hash(name) & mask;

	while (x->slot[i] && strcmp(name_of(ctx, x->slot[i] - 1), name))
		i = (i + 1) & mask;
	return &x->slot[i];
}

long nameidx__find(const struct nameidx *x, const char *name, nameidx_name_fn *name_of,
		   const void *ctx)
{
	size_t *s;

	if (!x->cap)
		return -1;
	s = slot_of(x, name, name_of, ctx);
	return *s ? (long)(*s - 1) : -1;
}

int nameidx__add(struct nameidx *x, size_t i, nameidx_name_fn *name_of, const void *ctx)
{
	if ((x->n + 1) * 2 > x->cap) {
		struct nameidx bigger = { .cap = x->cap ? x->cap * 2 : 64, .n = x->n };

		bigger.slot = calloc(bigger.cap, sizeof(*bigger.slot));
		if (!bigger.slot)
			return -ENOMEM;
		for (size_t k = 0; k < x->cap; k++)
			if (x->slot[k])
				*slot_of(&bigger, name_of(ctx, x->slot[k] - 1), name_of, ctx) =
					x->slot[k];
		free(x->slot);
		*x = bigger;
	}
	*slot_of(x, name_of(ctx, i), name_of, ctx) = i + 1;
	x->n++;
	return 0;
}

void nameidx__free(struct nameidx *x)
{
	free(x->slot);
	*x = (struct nameidx){ 0 };
}
