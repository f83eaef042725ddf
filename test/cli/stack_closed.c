// SPDX-License-Identifier: MIT
/* libstackclosed.so for check_cli_stacks: a library opened and closed in a loop. */
int stack_closed_fn(void)
{
	return 1;
}
