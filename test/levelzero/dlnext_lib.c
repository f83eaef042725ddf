/* Two copies of this library (A and B) define the same function `which`; A also looks the
 * next definition up with dlsym(RTLD_NEXT), which must find B's even under the tracer. */
#define _GNU_SOURCE
#include <dlfcn.h>

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)

int which(void)
{
	return LETTER;
}

int CAT(next_which_from_, LIBNAME)(void)
{
	int (*f)(void) = (int (*)(void))dlsym(RTLD_NEXT, "which");

	return f ? f() : 0;
}

void *CAT(next_missing_from_, LIBNAME)(void)
{
	return dlsym(RTLD_NEXT, "gputrace_no_such_symbol");
}
