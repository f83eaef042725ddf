/* A statically linked program (no dynamic linker, so no LD_PRELOAD): prints its
 * arguments and exits with status 3. */
#include <stdio.h>

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		printf("%s\n", argv[i]);
	return 3;
}
