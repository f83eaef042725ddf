/* SPDX-License-Identifier: MIT */
/*
 * Preloaded right after the ThreadSanitizer runtime into the programs the tests
 * run that are not instrumented (scripts/gputrace's sh, shells, python). That
 * runtime starts from instrumented code, or from some of its interceptors, and
 * its _setjmp interceptor jumps through a pointer that only the start sets: in
 * a program with nothing instrumented, dash's first _setjmp() jumped to 0 (gcc
 * 12). This library only starts it; its name begins with "libtsan" so that
 * `gputrace run` keeps it in front with the runtime (scripts/tool/run_options.c).
 */
void __tsan_init(void);

__attribute__((constructor)) static void tsan_start(void)
{
	__tsan_init();
}
