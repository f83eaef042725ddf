/* dlnext: dlsym(RTLD_NEXT / RTLD_DEFAULT / handle) from different objects, printed, so a
 * traced run can be compared with an untraced one. Linked with libdlnext_a then _b. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int next_which_from_a(void);
int next_which_from_b(void);
void *next_missing_from_a(void);

int main(void)
{
	int (*f)(void);
	void *h;

	f = (int (*)(void))dlsym(RTLD_NEXT, "which");
	printf("main RTLD_NEXT which: %c\n", f ? f() : '-');
	f = (int (*)(void))dlsym(RTLD_DEFAULT, "which");
	printf("main RTLD_DEFAULT which: %c\n", f ? f() : '-');
	printf("a RTLD_NEXT which: %c\n", next_which_from_a() ? next_which_from_a() : '-');
	printf("b RTLD_NEXT which: %c\n", next_which_from_b() ? next_which_from_b() : '-');
	printf("a RTLD_NEXT missing: %s\n", next_missing_from_a() ? "found" : "null");
	printf("dlerror set: %s\n", dlerror() ? "yes" : "no");
	h = dlopen("libdlnext_b.so", RTLD_NOW | RTLD_NOLOAD);
	f = h ? (int (*)(void))dlsym(h, "which") : NULL;
	printf("handle b which: %c\n", f ? f() : '-');
	printf("handle b missing: %s\n", h && dlsym(h, "gputrace_no_such_symbol") ? "found" : "null");
	printf("RTLD_NEXT malloc: %s\n", dlsym(RTLD_NEXT, "malloc") ? "found" : "null");
	return 0;
}
