/* SPDX-License-Identifier: MIT */
/*
 * Our injection variables: the environment variables through which vendor
 * runtimes load a tool into a process (CUDA_INJECTION64_PATH,
 * NVTX_INJECTION64_PATH, INTEL_LIBITTNOTIFY64). gputrace names itself in
 * them for its own process, so the runtimes call it however late they are
 * loaded, and leaves one that names another tool alone.
 *
 * Children inherit them. A child whose environment still preloads gputrace
 * is traced anyway; one whose environment drops the preload (an exec with
 * an explicit environment, `env -u LD_PRELOAD`) asked not to be, so the exec
 * wrappers take out of its environment the variables that name us
 * (injection__child_env), and a runtime there cannot load us behind its
 * back. Exec paths that no wrapper sees still leave them: a claim also
 * marks the environment (GPUTRACE_INJECTED=1), and a process loaded through
 * an inherited variable without the preload stays untraced (shim.c).
 */
#ifndef GPUTRACE_INJECTION_H
#define GPUTRACE_INJECTION_H

#include <stdbool.h>
#include <stddef.h>
#include "event.h"

#define GT_INJECTION_VARS(X)                                                               \
	X(CUDA, "CUDA_INJECTION64_PATH")                                                   \
	X(NVTX, "NVTX_INJECTION64_PATH")                                                   \
	X(ITT, "INTEL_LIBITTNOTIFY64")

enum gt_injection {
#define GT_INJ_ENUM(id, var) GT_INJ_##id,
	GT_INJECTION_VARS(GT_INJ_ENUM)
#undef GT_INJ_ENUM
	GT_INJ__COUNT
};

/* The mark a claim leaves in the environment: GPUTRACE_INJECTED=1 (with
 * the start-up code, GT_STARTUP_CONST: every process looks for it). */
extern GT_HIDDEN const char gt_injected_var[], gt_injected_value[];
/* "LD_PRELOAD", there too: a fork child looks for it in the environment it
 * execs with. */
extern GT_HIDDEN const char gt_preload_var[];

/* This library's absolute path (children may run elsewhere); NULL if unknown. */
GT_HIDDEN const char *injection__self_path(void);

/* Name this library in the variable unless it is set already. Returns 1
 * when it names us now, 0 when it names another tool (*other is its
 * value, for the caller's one line), -errno when our path is unknown. */
GT_HIDDEN int injection__claim(enum gt_injection which, const char **other);

/* The environment an exec hands its new image: envp itself, or, when envp
 * does not preload this library but holds injection variables naming it,
 * a copy without them in buf (cap pointers; envp when it does not fit). */
GT_HIDDEN char *const *injection__child_env(char *const *envp, char **buf, size_t cap);
/* How many pointers injection__child_env may need for envp. */
GT_HIDDEN size_t injection__env_len(char *const *envp);

#endif
