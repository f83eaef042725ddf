/* SPDX-License-Identifier: MIT */
/* gputrace run's hold on the command it runs (see supervise.c). */
#ifndef GPUTRACE_TOOL_SUPERVISE_H
#define GPUTRACE_TOOL_SUPERVISE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct supervisor {
	sigset_t old_mask; /* what the command gets back */
	sigset_t caught;   /* taken through sfd */
	int sfd;
	pid_t child;
	int status;        /* its wait status, once child_done */
	bool child_done;
};

/* Take the signals (before anything can arrive for the command). 0 or -errno. */
int sup__init(struct supervisor *s);
/* Run argv with envp (PATH searched). 0, or -errno when it could not be
 * executed (then it has been waited for). */
int sup__spawn(struct supervisor *s, char *const argv[], char *const envp[]);
/* Until the command ends, forwarding signals; s->status is then its. */
void sup__wait_command(struct supervisor *s);
/* Until alive() finds none of the processes it lists (up to max pids)
 * running, forwarding signals to them. False when a SIGINT, SIGTERM,
 * SIGHUP or SIGQUIT cut the wait short. */
bool sup__wait_others(struct supervisor *s, size_t (*alive)(void *ctx, pid_t *pids, size_t max),
		      void *ctx);
/* pid is us or one of our descendants. */
bool sup__is_ours(pid_t pid);
/* Exit with the command's status, or die by its signal. */
__attribute__((noreturn)) void sup__exit_as(int status);

#endif
