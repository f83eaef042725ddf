// SPDX-License-Identifier: MIT
/*
 * An ITT collector for capture control: Intel's static ittnotify part
 * (linked into oneDNN, SYCL, PyTorch XPU, ...) dlopens the library named by
 * INTEL_LIBITTNOTIFY64 and, since backends/itt exports __itt_api_version,
 * fills its function pointers by dlsym of "__itt_<name>" (protocol 1).
 * We answer only __itt_resume and __itt_pause: under --capture-range
 * cudaProfilerApi they open and close a window, as cudaProfilerStart/Stop
 * do (Level Zero has no marker API of its own). Every other ITT call stays
 * the static part's no-op. `gputrace run` points INTEL_LIBITTNOTIFY64 here.
 */
#include "capture.h"
#include "clock.h"
#include "config.h"
#include "shim.h"

GT_EXPORT void __itt_resume(void)
{
	gt_ensure_init();
	if (gt_cfg.capture_range == GT_RANGE_PROFILER)
		capture__range_begin(gt_clock_ns());
}

GT_EXPORT void __itt_pause(void)
{
	gt_ensure_init();
	if (gt_cfg.capture_range == GT_RANGE_PROFILER)
		capture__range_end(gt_clock_ns());
}
