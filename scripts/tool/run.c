// SPDX-License-Identifier: MIT
/*
 * gputrace run [options] [--] CMD [ARGS...]: trace CMD and every process it
 * starts, and leave one trace and one summary for the whole run.
 *
 *   1. options, checked before anything runs (a bad one: exit 2);
 *   2. where traces go: each traced process writes its own file into the
 *      run's folder of parts (OUT.parts/, or --per-process DIR), or where an
 *      -o template with %p names them; a private state folder lists them;
 *   3. CMD runs under supervise.c (signals forwarded, its exit mirrored);
 *   4. traced processes still running after CMD are waited for;
 *   5. the traces become one (gputrace merge) at OUT; the parts go;
 *   6. one summary of every process: stderr, and --summary-json;
 *   7. --check: the checks (check.c) over that summary;
 *   8. exit as CMD did (or, CMD having succeeded, as the checks did).
 *
 * Processes that record nothing write nothing (the library starts its
 * thread and file at the first event), so the shells, compilers and tools
 * of a job leave no trace. The library finds the run through
 * GPUTRACE_RUN_STATE: no summary of its own, its traces listed there, each
 * distinct warning once per run. If gputrace itself is killed (SIGKILL),
 * the parts stay, valid, in OUT.parts/, for gputrace merge.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inject/utf8.h"
#include "buf.h"
#include "run.h"
#include "summarize.h"
#include "tool.h"
#include "trace.h"
#include "writer/summary.h"

/* ---- messages ---- */

int run__log_level = GT_LOG_WARN;
const struct gt_config *run__log_from;

/* config.c reports through this, as the library does (one line each). */
void gt_log(int level, const char *fmt, ...)
{
	va_list ap;

	/* a parse sets the level (GPUTRACE_LOG first) before its other lines:
	 * --log error hid no warning of a setting, said at the default level
	 * (until 2026-12-07: --stacks-all with --stacks off) */
	if (level > (run__log_from ? run__log_from->log_level : run__log_level))
		return;
	fputs(WHO ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static __attribute__((noreturn)) void refuse(bool usage, const char *fmt, va_list ap)
{
	char *line = NULL;

	fputs(WHO ": ", stderr);
	/* control characters escaped, as the library's refusal of a variable
	 * does: a value holding a newline split the one line in two; and bytes
	 * that are not UTF-8 (printed raw until 2026-12-07) */
	if (vasprintf(&line, fmt, ap) >= 0) {
		size_t n = strlen(line);
		char *shown = malloc(4 * n + 1);

		if (shown)
			fputs(gt_text_line(shown, line, n), stderr);
		else
			summary__put_text(stderr, line);
		free(shown);
	}
	free(line);
	fputc('\n', stderr);
	if (usage)
		fprintf(stderr, "Try '" WHO " --help'.\n");
	exit(2);
}

void run__usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	refuse(true, fmt, ap);
}

void run__value_error(const char *from, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	/* --help is about the options: of no use for a variable's value */
	refuse(strncmp(from, "GPUTRACE_", 9) != 0, fmt, ap);
}

/* ---- 6. the summary ---- */

/* The summary of the run's traces (summarize.c), every process attributed. */
static struct summary *summarize_files(char *const *files, size_t n, uint64_t *bytes)
{
	struct summarized out;
	struct summary *s;

	if (summarize__traces(WHO, files, n, NULL, &out))
		return NULL;
	s = out.s;
	*bytes = out.bytes;
	out.s = NULL;
	summarized__free(&out);
	return s;
}

/* What held every window of the run closed, as its processes' settings say;
 * NULL when nothing did. */
static const char *capture_held(const struct run *r)
{
	const struct gt_config *c = r->settings;

	if (c->capture_range)
		return "--capture-range: its mark never came";
	if (c->start_paused && !c->capture_signal)
		return "--start paused and --capture-signal off: no gputrace capture could open one";
	if (c->start_paused)
		return "--start paused, and no gputrace capture opened one";
	if (c->delay_ns)
		return "--delay: the run ended before it";
	return NULL;
}

/* A file size limit under which no process can list itself: a line of the
 * run's list ("* PID", its first) is left out where it would pass the limit
 * (SIGXFSZ), and under 32 bytes none fits. */
static bool list_unwritable(unsigned long long *limit)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_FSIZE, &rl) || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= 32)
		return false;
	*limit = (unsigned long long)rl.rlim_cur;
	return true;
}

static void summarize(struct run *r)
{
	/* the run's trace, or its processes' (-o %p, or when they could not
	 * be merged) */
	bool parts = r->per_process || (r->ntraces && !r->trace[0]);
	char *const *files = parts ? r->traces : (char *const[]){ r->trace };
	size_t n = parts ? r->ntraces : !!r->trace[0];
	struct buf label = { 0 };
	uint64_t bytes = 0;
	/* what the run's own settings leave out may be why nothing was recorded */
	const char *backends = run__setting(r, "GPUTRACE_BACKENDS");
	const char *activities = run__setting(r, "GPUTRACE_ACTIVITIES");
	unsigned long long fsize = 0;
	int err;

	r->sum = n ? summarize_files(files, n, &bytes) : summary__new();
	if (!r->sum)
		return;
	/* a process that recorded and left no trace (killed before its first file, or
	 * its file unwritable) was not closed either: the run's `incomplete` counts it,
	 * or "incomplete == 0" passed on a run that lost a process whole */
	summary__incomplete(r->sum, r->unwritten + r->unwritable, 0, r->unwritable, NULL);
	summary__set_hints(r->sum, &(struct summary_hints){ .more = "--summary-json",
							    .buffer = "--buffer-kb ",
							    .buffer_kb = run__buffer_kb(r),
							    .overflow = "--overflow-mb ",
							    .overflow_mb = run__overflow_mb(r) });
	if (n == 1) {
		buf__adds(&label, r->out_special && !parts ? r->out : files[0]);
	} else {
		buf__printf(&label, "%zu traces:", n);
		for (size_t i = 0; i < n; i++)
			buf__printf(&label, " %s", files[i]);
	}
	if (!n && r->unreachable)
		; /* said before CMD ran: nothing more */
	else if (!n && !r->window_opened && !r->no_window[0] && capture_held(r))
		/* ended on a signal before any window: its process never said why */
		fprintf(stderr, WHO ": no capture window opened before the run ended (%s): no "
			"trace written\n", capture_held(r));
	else if (!n && run__flight_recorder(r))
		fprintf(stderr, WHO ": flight recorder: no process crashed, failed or was asked "
			"for its window: no trace written\n");
	else if (!n && r->unwritten)
		fprintf(stderr, WHO ": %zu %s of the run recorded GPU calls but ended before "
			"writing %s trace (killed, or cut short while exiting, as when several "
			"threads call exit() at once): no trace written\n", r->unwritten,
			r->unwritten == 1 ? "process" : "processes",
			r->unwritten == 1 ? "its" : "their");
	else if (!n && r->unwritable)
		fprintf(stderr, WHO ": %zu %s of the run recorded GPU calls but could not write "
			"%s (the reason is above): no trace written\n", r->unwritable,
			r->unwritable == 1 ? "process" : "processes",
			r->unwritable == 1 ? "its trace" : "their traces");
	else if (!n && !r->window_opened && r->no_window[0])
		/* its processes made calls, maybe, but only windows record them */
		fprintf(stderr, WHO ": no capture window opened: %s; no trace written\n",
			r->no_window);
	else if (!n && r->window_opened)
		/* its processes' files are their windows': none held anything */
		fprintf(stderr, WHO ": a capture window opened, but no GPU call began and ended "
			"inside one (a call running across a window's edge, as one long wait, is "
			"not recorded): no trace written\n");
	else if (!n && list_unwritable(&fsize))
		/* the run's list (and any trace) past the limit: nothing was heard of
		 * its processes, which is not "they recorded nothing" */
		fprintf(stderr, WHO ": no trace written: under the file size limit (ulimit -f: %llu "
			"bytes) no process of the run can write its trace, nor list it for the run\n",
			fsize);
	else if (!n)
		fprintf(stderr, WHO ": no process of the run recorded anything (no GPU API call "
			"gputrace knows%s%s%s%s): no trace written\n",
			!backends ? "" : run__setting_is_option(r, "GPUTRACE_BACKENDS")
				? ", or none through --backends " : ", or none through GPUTRACE_BACKENDS=",
			backends ?: "",
			!activities ? "" : run__setting_is_option(r, "GPUTRACE_ACTIVITIES")
				? ", or none of the kinds in --activities "
				: ", or none of the kinds in GPUTRACE_ACTIVITIES=",
			activities ?: "");
	else if (!r->no_summary)
		summary__print(r->sum, stderr, label.p, bytes);
	else
		summary__print_lost_line(r->sum, stderr, label.p);
	if (n && r->write_failed)
		fprintf(stderr, WHO ": %zu %s at %s last checkpoint: a write failed (%s); what "
			"%s recorded after it is not in the trace, nor counted as lost\n",
			r->write_failed, r->write_failed == 1 ? "trace stops" : "traces stop",
			r->write_failed == 1 ? "its" : "their", r->write_error,
			r->write_failed == 1 ? "its process" : "their processes");
	if (n && r->unwritable)
		fprintf(stderr, WHO ": %zu more %s recorded GPU calls but could not write %s "
			"(the reason is above)\n", r->unwritable,
			r->unwritable == 1 ? "process" : "processes",
			r->unwritable == 1 ? "its trace" : "their traces");
	if (n && r->unwritten)
		fprintf(stderr, WHO ": %zu more %s recorded GPU calls but ended before writing "
			"%s trace (killed, or cut short while exiting)\n", r->unwritten,
			r->unwritten == 1 ? "process" : "processes",
			r->unwritten == 1 ? "its" : "their");
	buf__free(&label);
	/* the run's summary JSON: asked for (planned), or for the checks in the
	 * state folder */
	if (!r->summary_json && (r->nchecks || r->nchecks_files))
		snprintf(r->summary_path, sizeof(r->summary_path), "%s/summary.json", r->state);
	if (!r->summary_path[0])
		return;
	char *abs = n != 1 ? NULL : r->out_special && !parts ? strdup(r->out)
						   : summarize__json_path(files[0]);

	err = summary__write_json(r->sum, r->summary_path, abs, bytes);
	if (err) {
		fprintf(stderr, WHO ": cannot write the summary to %s: %s\n", r->summary_path,
			summary__strerror(err));
		r->summary_path[0] = 0;
	} else if (r->summary_json && (r->nchecks || r->nchecks_files)) {
		/* the checks read a copy in the state folder: --summary-json
		 * /dev/stdout, /dev/null or a pipe cannot be read back */
		snprintf(r->check_path, sizeof(r->check_path), "%s/summary.json", r->state);
		if (summary__write_json(r->sum, r->check_path, abs, bytes))
			r->check_path[0] = 0;
	}
	free(abs);
}

/* ---- 7. checks (check.c) ---- */

/* A --checks file, read once, before CMD runs, into a file of ours that
 * both passes of the checks read (syntax before CMD, values after): a pipe
 * (--checks <(...), /dev/stdin) would be empty the second time, and a file
 * changed while CMD ran would not be the checks that were parsed. */
static void copy_checks_file(const char *file, char *copy, size_t len)
{
	char buf[65536];
	ssize_t n;
	int in = open(file, O_RDONLY | O_CLOEXEC), out = -1;

	if (in >= 0)
		out = memfd_create("gputrace-checks", MFD_CLOEXEC);
	while (out >= 0 && (n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || write(out, buf, (size_t)n) != n) {
			close(out);
			out = -1;
		}
	}
	if (out < 0) {
		fprintf(stderr, WHO ": --checks: cannot read '%s': %s\n", file, strerror(errno));
		exit(2);
	}
	close(in);
	snprintf(copy, len, "/proc/self/fd/%d", out);
}

static void copy_checks(struct run *r)
{
	if (!r->nchecks_files)
		return;
	r->checks_copies = calloc(r->nchecks_files, sizeof(*r->checks_copies));
	if (!r->checks_copies)
		exit(1);
	for (size_t i = 0; i < r->nchecks_files; i++)
		copy_checks_file(r->checks_files[i], r->checks_copies[i],
				 sizeof(r->checks_copies[i]));
}

/* gputrace check with our options: its lines on stderr (stdout is CMD's). */
static int check(struct run *r, bool syntax_only)
{
	char **argv = calloc(2 * r->nchecks + 4 * r->nchecks_files + 16, sizeof(*argv));
	int argc = 0, st, out;
	size_t e = 0; /* the --check given so far */

	if (!argv)
		exit(1);
	argv[argc++] = "check";
	if (syntax_only)
		argv[argc++] = "--syntax-only";
	if (r->junit && !syntax_only) {
		argv[argc++] = "--junit";
		argv[argc++] = (char *)r->junit;
	}
	if (r->markdown && !syntax_only) {
		argv[argc++] = "--markdown";
		argv[argc++] = (char *)r->markdown;
	}
	/* in the order given: each file after the --check before it */
	for (size_t i = 0; i < r->nchecks_files; i++) {
		for (; e < r->checks_before[i]; e++) {
			argv[argc++] = "--check-arg";
			argv[argc++] = r->checks[e];
		}
		argv[argc++] = "--checks-named";
		argv[argc++] = (char *)r->checks_files[i];
		argv[argc++] = "--checks";
		argv[argc++] = r->checks_copies[i];
	}
	if (!syntax_only && r->summary_json && r->check_path[0]) {
		/* the copy is removed with the state folder: name the user's file */
		argv[argc++] = "--label";
		argv[argc++] = r->summary_path;
	} else if (!syntax_only && !r->summary_json) {
		/* the summary in the state folder is removed: name what it summarizes */
		static char label[PATH_MAX + 16];

		snprintf(label, sizeof(label), "summary of %s",
			 !r->trace[0] ? "the run" : r->out_special ? r->out : r->trace);
		argv[argc++] = "--label";
		argv[argc++] = label;
	}
	if (!syntax_only)
		argv[argc++] = r->check_path[0] ? r->check_path : r->summary_path;
	for (; e < r->nchecks; e++) {
		argv[argc++] = "--check-arg";
		argv[argc++] = r->checks[e];
	}
	fflush(stdout);
	out = dup(STDOUT_FILENO);
	dup2(STDERR_FILENO, STDOUT_FILENO);
	st = cmd_check(argc, argv);
	fflush(stdout);
	if (out >= 0) {
		dup2(out, STDOUT_FILENO);
		close(out);
	}
	free(argv);
	return st;
}

/* ---- the flow ---- */

int cmd_run(int argc, char **argv)
{
	struct run r = { 0 };
	struct gt_config env;
	const char *lib = getenv("GPUTRACE_LIB");
	char **cmd_env;
	int err, checked = -1;

	run__parse_options(&r, argc, argv);
	if (!lib || !*lib) {
		fprintf(stderr, WHO ": GPUTRACE_LIB is not set: run gputrace run through the "
			"gputrace command\n");
		return 1;
	}
	/* a malformed check stops here, before CMD runs */
	copy_checks(&r);
	if ((r.nchecks || r.nchecks_files) && check(&r, true))
		return 2;
	run__read_env(&r, &env);
	run__env_defaults(&r, &env);
	run__plan_outputs(&r);
	run__make_folders(&r);
	cmd_env = run__command_env(&r, lib);

	if ((err = sup__init(&r.sup))) {
		fprintf(stderr, WHO ": cannot supervise the command: %s\n", strerror(-err));
		return 1;
	}
	/* A CMD preload cannot reach runs unchanged, untraced: said once, before. */
	r.unreachable = reach__warn(r.cmd[0]);
	err = sup__spawn(&r.sup, r.cmd, cmd_env);
	if (err) {
		struct stat st;

		/* as a shell says it: 127 not found, 126 found but not runnable
		 * (a folder: EACCES, which said "Permission denied") */
		fprintf(stderr, WHO ": %s: %s\n", r.cmd[0],
			err == -ENOENT ? "not found"
			: err == -EACCES && strchr(r.cmd[0], '/') && !stat(r.cmd[0], &st) &&
					S_ISDIR(st.st_mode)
				? "is a folder, not a program"
				: strerror(-err));
		if (r.parts_made)
			rmdir(r.parts);
		run__remove_state(&r);
		return err == -ENOENT ? 127 : 126;
	}
	sup__wait_command(&r.sup);
	run__wait_for_stragglers(&r);
	run__print_unsaid(&r);
	/* CMD is over: Ctrl-C now stops the merge and the summary, which take
	 * minutes on big traces (it waited for them, and then ended the run all
	 * the same), keeping the processes' traces */
	trace__catch_stop();

	run__collect_traces(&r);
	/* a process that had no telemetry leaves the line to the run (nvml.c):
	 * said once, and only when no process of the run recorded any */
	if (r.no_telemetry[0])
		fprintf(stderr, WHO ": --telemetry: nothing recorded: %s\n", r.no_telemetry);
	if (!r.per_process && (err = run__make_trace(&r))) {
		if (trace__stop_signal) {
			fprintf(stderr, WHO ": stopped by %s while writing %s; the traces of the run "
				"are in %s (gputrace merge -o %s %s/*.json)\n", trace__stop_name(),
				r.out, r.parts, r.out, r.parts);
			run__remove_state(&r);
			trace__die_by(trace__stop_signal);
		}
		fprintf(stderr, WHO ": could not make %s%s%s; the traces of the run are in %s "
			"(gputrace merge -o %s %s/*.json)\n", r.out, err == -EIO ? "" : ": ",
			err == -EIO ? "" : strerror(-err), r.parts, r.out, r.parts);
	} else {
		run__remove_parts(&r);
	}
	summarize(&r);
	if (trace__stop_signal && r.ntraces && !r.sum) {
		fprintf(stderr, WHO ": stopped by %s while summarizing: %s is written; no summary "
			"nor checks\n", trace__stop_name(), r.per_process ? "each process's trace"
			: r.out_special ? "the trace" : r.out);
		run__deliver_trace(&r);
		run__remove_state(&r);
		trace__die_by(trace__stop_signal);
	}
	if ((err = run__deliver_trace(&r)) && trace__stop_signal) {
		/* a FIFO no one reads: its open waited for good, and Ctrl-C was held */
		fprintf(stderr, WHO ": stopped by %s while writing the trace to %s\n",
			trace__stop_name(), r.out);
		summary__free(r.sum);
		run__remove_state(&r);
		trace__die_by(trace__stop_signal);
	} else if (err) {
		fprintf(stderr, WHO ": could not write the trace to %s: %s\n", r.out,
			strerror(-err));
	}
	/*
	 * Here the run is over and all of it is on disk: r.trace is its trace
	 * ("" if nothing was recorded; r.traces with -o %p), r.sum its summary,
	 * r.summary_path its summary JSON (--summary-json, or in the state
	 * folder for the checks: summarize() writes it where a use needs it).
	 */
	if (r.nchecks || r.nchecks_files) {
		if (!r.summary_path[0])
			fprintf(stderr, WHO ": run --check: no summary was written; the checks "
				"cannot be evaluated\n");
		checked = r.summary_path[0] ? check(&r, false) : 2;
	}
	summary__free(r.sum);
	run__remove_state(&r);
	/* CMD's failure is the run's; else the checks': 3 failed, 4 not evaluable */
	if (checked >= 0 && WIFEXITED(r.sup.status) && !WEXITSTATUS(r.sup.status))
		exit(checked == 0 ? 0 : checked == 1 ? 3 : 4);
	sup__exit_as(r.sup.status);
}
