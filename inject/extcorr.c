// SPDX-License-Identifier: MIT
/* The slow half of inject/extcorr.h: hand the id to whoever listens. */
#include "extcorr.h"

GT_HIDDEN _Atomic bool gt_ext_corr_on;
static const struct gt_ext_corr_ops *_Atomic listener;

void gt_ext_corr_listen(const struct gt_ext_corr_ops *ops, bool on)
{
	if (ops)
		atomic_store(&listener, ops);
	atomic_store(&gt_ext_corr_on, on && atomic_load(&listener));
}

uint32_t gt_ext_corr_push_slow(uint64_t id)
{
	const struct gt_ext_corr_ops *ops = atomic_load(&listener);

	return ops ? ops->push(id) : 0;
}

void gt_ext_corr_pop_slow(uint32_t pushed)
{
	const struct gt_ext_corr_ops *ops = atomic_load(&listener);

	if (ops)
		ops->pop(pushed);
}
