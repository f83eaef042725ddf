/* SPDX-License-Identifier: MIT */
/* A shared object in a plug-in directory that is not a gputrace plug-in. */
int fault_not_a_plugin(void)
{
	return 42;
}
