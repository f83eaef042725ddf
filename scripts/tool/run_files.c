// SPDX-License-Identifier: MIT
/*
 * Where gputrace run's traces go: OUT (the template expanded once, with
 * CMD's name and the run's start), the processes' own traces in OUT.parts/
 * (or --per-process DIR, or where an -o template with %p names them), a
 * private state folder for the list they keep (writer/checkpoint.c: "*
 * PID" recording, "+ PID PATH" named, "= PID" over) and their once-per-run
 * messages. At the end: the processes still recording are waited for, and
 * their traces become the run's one trace at OUT, never overwriting a file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>

#include <zlib.h>

#include "run.h"
#include "tool.h"
#include "trace.h"
#include "writer/summary.h"

/* ---- 2. where traces go ---- */

/* The space between an option and its value, none after a variable's '=' */
static const char *sep(const char *opt)
{
	return opt[strlen(opt) - 1] == '=' ? "" : " ";
}

/* path made absolute; opt names where it came from (an option, or a
 * variable with its '=') in the line that refuses one too long */
static void absolute(char *out, size_t len, const char *path, const char *opt)
{
	char cwd[PATH_MAX];

	if (path[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		snprintf(out, len, "%s", path);
	else if (snprintf(out, len, "%s/%s", cwd, path) >= (int)len)
		run__value_error(opt, "%s%s'%s': the path is too long", opt, sep(opt), path);
}

/* path with each '%' doubled: a literal part of a template the library
 * expands (a folder named "run%pdir" is no pid code) */
static int escape_percent(char *out, size_t len, const char *path)
{
	size_t n = 0;

	for (const char *p = path; *p; p++) {
		if (n + 2 + (*p == '%') > len)
			return -ENAMETOOLONG;
		if (*p == '%')
			out[n++] = '%';
		out[n++] = *p;
	}
	if (!len)
		return -ENAMETOOLONG;
	out[n] = 0;
	return 0;
}

/* A template made absolute: the current folder's path, escaped, before it. */
static void absolute_template(char *out, size_t len, const char *tmpl, const char *opt)
{
	char cwd[PATH_MAX], escaped[2 * PATH_MAX];

	if (tmpl[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		snprintf(out, len, "%s", tmpl);
	else if (escape_percent(escaped, sizeof(escaped), cwd) ||
		 snprintf(out, len, "%s/%s", escaped, tmpl) >= (int)len)
		run__value_error(opt, "%s%s'%s': the path is too long", opt, sep(opt), tmpl);
}

static bool has_pid_code(const char *tmpl)
{
	for (const char *p = tmpl; *p; p++)
		if (*p == '%' && p[1] && (p++, *p == 'p'))
			return true;
	return false;
}

/* "-o " or "GPUTRACE_OUTPUT=": an option is followed by a blank, a variable
 * by its value */
/* Why the folder of path cannot take new files (into why), or NULL where it can. */
static const char *folder_refusal(const char *path, char *why, size_t len)
{
	char dir[PATH_MAX];
	struct stat st;
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = 0;
	else if (slash)
		*slash = 0;
	/* access() says EACCES of a file, as if a folder refused us */
	if (!stat(dir, &st) && !S_ISDIR(st.st_mode))
		snprintf(why, len, "cannot write in %s: it is a file, not a folder", dir);
	else if (access(dir, W_OK | X_OK))
		snprintf(why, len, "cannot write in %s: %s", dir, strerror(errno));
	else
		return NULL;
	return why;
}

/* The folder of path must exist and take new files; opt names what gave
 * path: an option ("-o"), or a variable ("GPUTRACE_OUTPUT=") */
static void check_folder(const char *opt, const char *path)
{
	char why[PATH_MAX + 100];

	if (folder_refusal(path, why, sizeof(why)))
		run__value_error(opt, "%s%s%s: %s", opt, sep(opt), path, why);
}

/* A file to write: not a folder, in a folder that takes new files, and, where
 * it is there and is replaced (not the trace: it goes beside), writable. Why
 * not (into why), or NULL. */
static const char *file_refusal(const char *path, bool replaced, char *why, size_t len)
{
	struct stat st;
	bool there = !stat(path, &st);

	if (there && S_ISDIR(st.st_mode))
		return snprintf(why, len, "is a folder; give a file name"), why;
	/* a device or a pipe (/dev/stdout) is written into, not made in /dev */
	if ((!there || S_ISREG(st.st_mode)) && folder_refusal(path, why, len))
		return why;
	if (there && (replaced || !S_ISREG(st.st_mode)) && access(path, W_OK))
		return snprintf(why, len, "cannot write it: %s", strerror(errno)), why;
	return NULL;
}

static void check_file(const char *opt, const char *path, bool replaced)
{
	char why[PATH_MAX + 100];

	if (file_refusal(path, replaced, why, sizeof(why)))
		run__value_error(opt, "%s%s%s: %s", opt, sep(opt), path, why);
}

/* A folder to write in: itself where it is there, else the one it is made in.
 * One that is there is asked by making a file in it: access() says yes to root
 * on /proc or a read-only mount, where every process's trace then failed. */
static void check_dir(const char *opt, const char *given, const char *dir)
{
	char probe[PATH_MAX];
	struct stat st;
	int fd;

	if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
		check_folder(opt, dir);
		return;
	}
	if (snprintf(probe, sizeof(probe), "%s/.gputrace-probe-XXXXXX", dir) >= (int)sizeof(probe))
		run__usage_error("%s %s: the path is too long", opt, given);
	fd = mkstemp(probe);
	if (fd < 0)
		run__usage_error("%s %s: cannot write in %s: %s", opt, given, dir, strerror(errno));
	close(fd);
	unlink(probe);
}

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	return remove(path) && errno != ENOENT;
}

/* The state folder: the list, the said-message markers, a merge for a device. */
void run__remove_state(struct run *r)
{
	if (r->state[0])
		nftw(r->state, remove_one, 8, FTW_DEPTH | FTW_PHYS);
}

static void make_state(struct run *r)
{
	const char *tmp = getenv("TMPDIR");
	char dir[PATH_MAX];

	/* absolute: a process names files in it from whatever folder it is in,
	 * and its watchdog knows its trace in our parts folder by this prefix */
	absolute(dir, sizeof(dir), tmp && *tmp ? tmp : "/tmp", "TMPDIR=");
	/* one too long for our names in it: /tmp */
	if (strlen(dir) >= sizeof(r->state) - 32 ||
	    snprintf(r->state, sizeof(r->state), "%s/gputrace-run-XXXXXX", dir) >=
		    (int)sizeof(r->state))
		snprintf(r->state, sizeof(r->state), "/tmp/gputrace-run-XXXXXX");
	if (!mkdtemp(r->state)) {
		fprintf(stderr, WHO ": cannot make a folder in %s: %s\n",
			tmp && *tmp ? tmp : "/tmp", strerror(errno));
		exit(1);
	}
}

static int make_folder(const char *dir, bool *made)
{
	struct stat st;

	*made = !mkdir(dir, 0755);
	if (*made || (errno == EEXIST && !stat(dir, &st) && S_ISDIR(st.st_mode)))
		return 0;
	fprintf(stderr, WHO ": cannot make the folder %s: %s\n", dir,
		errno == EEXIST ? "a file of that name exists" : strerror(errno));
	return -1;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash[1] ? slash + 1 : path;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

/* GPUTRACE_OUTPUT is a folder: the run's trace in it, under the run's default
 * name, said in one line, as the library takes a folder under LD_PRELOAD */
static void in_folder(struct run *r, uint64_t start)
{
	char name[PATH_MAX];
	size_t n = strlen(r->out);

	while (n > 1 && r->out[n - 1] == '/')
		n--;
	if (config__expand_output(DEFAULT_OUTPUT, name, sizeof(name), (int)getpid(),
				  base_name(r->cmd[0]), start) ||
	    snprintf(r->out + n, sizeof(r->out) - n, "%s%s", n > 1 ? "/" : "", name) >=
		    (int)(sizeof(r->out) - n))
		run__value_error("GPUTRACE_OUTPUT", "GPUTRACE_OUTPUT=%s: the path is too long",
				 r->tmpl);
	fprintf(stderr, WHO ": GPUTRACE_OUTPUT='%s' is a folder, not a file name or template "
		"(such as trace-%%t.json): writing %s\n", r->tmpl, r->out);
}

/* OUT's name with suffix, beside it; where that name is too long for a
 * folder (NAME_MAX), short instead: a valid OUT must not fail for it. */
static int beside_out(const struct run *r, const char *suffix, const char *short_name,
		      char *out, size_t len)
{
	const char *base = base_name(r->out);
	int n;

	if (strlen(base) + strlen(suffix) <= NAME_MAX)
		n = snprintf(out, len, "%s%s", r->out, suffix);
	else
		n = snprintf(out, len, "%.*s%s", (int)(base - r->out), r->out, short_name);
	return n >= (int)len ? -ENAMETOOLONG : 0;
}

/* path's name with its folder's links and dots resolved (the folder is there:
 * checked): two names of one file, the file not there yet, read the same */
static void resolve(const char *path, char *out, size_t len)
{
	char dir[PATH_MAX], real[PATH_MAX];
	size_t n = strlen(path);
	char *slash;

	if (realpath(path, real)) {
		snprintf(out, len, "%s", real);
		return;
	}
	while (n > 1 && path[n - 1] == '/')
		n--;
	snprintf(dir, sizeof(dir), "%.*s", (int)n, path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir) {
		snprintf(out, len, "%s", dir);
		return;
	}
	*slash = 0;
	if (!realpath(dir, real))
		snprintf(real, sizeof(real), "%s", dir);
	if (snprintf(out, len, "%s/%s", real, slash + 1) >= (int)len)
		snprintf(out, len, "%s", path); /* as given: compared as such */
}

/* One of the files the run writes: what names it, and its name. */
struct named_output {
	const char *what;    /* "-o", "GPUTRACE_SUMMARY_JSON", ... */
	const char *path;    /* absolute; NULL: none asked */
	const char *tmpl;    /* a %p template (-o), compared as text; else NULL */
};

static bool same_output(const struct named_output *a, const struct named_output *b)
{
	char ra[PATH_MAX], rb[PATH_MAX];
	struct stat sa, sb;
	bool there_a = !stat(a->path, &sa), there_b = !stat(b->path, &sb);

	/* a device or a pipe loses nothing written twice (-o /dev/null) */
	if ((there_a && !S_ISREG(sa.st_mode) && !S_ISDIR(sa.st_mode)) ||
	    (there_b && !S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode)))
		return false;
	if (a->tmpl || b->tmpl) /* each process expands its own: the text is what is known */
		return !strcmp(a->tmpl ?: a->path, b->tmpl ?: b->path);
	if (there_a && there_b && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino)
		return true;
	resolve(a->path, ra, sizeof(ra));
	resolve(b->path, rb, sizeof(rb));
	return !strcmp(ra, rb);
}

/* Two outputs naming one file: the one written last replaced the other (a
 * summary over the trace), so no two may, said before CMD runs. */
static void check_distinct(const struct named_output *o, size_t n)
{
	char name[PATH_MAX];

	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; o[i].path && j < n; j++) {
			if (!o[j].path || !same_output(&o[i], &o[j]))
				continue;
			resolve(o[i].path, name, sizeof(name));
			/* without the hint only where both are variables */
			run__value_error(strncmp(o[i].what, "GPUTRACE_", 9) ? o[i].what : o[j].what,
					 "%s and %s name the same file, %s: give each its own",
					 o[i].what, o[j].what, o[i].tmpl ?: name);
		}
}

/* --summary-json, --markdown, --junit: replaced after CMD ran, so checked
 * before; never one that holds a trace (what was recorded is not lost). */
static const char *replaced_refusal(const char *path, char *why, size_t len)
{
	if (file_refusal(path, true, why, len))
		return why;
	if (summary__holds_trace(path))
		return snprintf(why, len, "%s; give another file name",
				summary__strerror(-EEXIST)), why;
	return NULL;
}

static void check_replaced(const char *opt, const char *path)
{
	char why[PATH_MAX + 100];

	if (replaced_refusal(path, why, sizeof(why)))
		run__value_error(opt, "%s%s%s: %s", opt, sep(opt), path, why);
}

/*
 * A GPUTRACE_OUTPUT or GPUTRACE_SUMMARY_JSON of the environment whose folder cannot
 * take the file is bad input as any refused value is: one line, the default (none
 * for the summary JSON), and CMD runs, as it would under LD_PRELOAD. The options
 * themselves are refused before CMD runs: they are this command's own arguments.
 */
static void env_fallbacks(struct run *r, uint64_t start)
{
	char rel[PATH_MAX], path[PATH_MAX], why[PATH_MAX + 100];
	const char *refused;

	if (r->tmpl_from_env && !config__expand_output(r->tmpl, rel, sizeof(rel), (int)getpid(),
						      base_name(r->cmd[0]), start) &&
	    (absolute(path, sizeof(path), rel, "GPUTRACE_OUTPUT="),
	     refused = folder_refusal(path, why, sizeof(why)))) {
		fprintf(stderr, WHO ": GPUTRACE_OUTPUT='%s': %s (using the default, %s)\n",
			r->tmpl, refused, DEFAULT_OUTPUT);
		r->tmpl = DEFAULT_OUTPUT;
		r->tmpl_from_env = false;
	}
	if (r->summary_json_from_env &&
	    !config__expand_output(r->summary_json, rel, sizeof(rel), (int)getpid(),
				   base_name(r->cmd[0]), start) &&
	    (absolute(path, sizeof(path), rel, "GPUTRACE_SUMMARY_JSON="),
	     refused = replaced_refusal(path, why, sizeof(why)))) {
		fprintf(stderr, WHO ": GPUTRACE_SUMMARY_JSON='%s': %s (no summary JSON is "
			"written)\n", r->summary_json, refused);
		r->summary_json = NULL;
		r->summary_json_from_env = false;
	}
}

void run__plan_outputs(struct run *r)
{
	/* a GPUTRACE_OUTPUT of the environment is named as such, not as an -o never given */
	const char *opt = r->tmpl_from_env ? "GPUTRACE_OUTPUT=" : "-o ";
	const char *json_opt = r->summary_json_from_env ? "GPUTRACE_SUMMARY_JSON=" :
				"--summary-json";
	const char *accepted = NULL;
	char expanded[PATH_MAX], json[PATH_MAX], reports[2][PATH_MAX], json_tmpl[PATH_MAX];
	uint64_t start = (uint64_t)time(NULL) * 1000000000ull;
	struct named_output outs[] = {
		{ r->tmpl_from_env ? "GPUTRACE_OUTPUT" : "-o" },
		{ r->summary_json_from_env ? "GPUTRACE_SUMMARY_JSON" : "--summary-json" },
		{ "--junit" },
		{ "--markdown" },
		{ "--per-process" },
	};
	struct stat st;
	int err;

	if (config__check("GPUTRACE_OUTPUT", r->tmpl, &accepted))
		run__value_error(opt, "%s'%s' is not valid: expected %s", opt, r->tmpl, accepted);
	env_fallbacks(r, start);
	opt = r->tmpl_from_env ? "GPUTRACE_OUTPUT=" : "-o ";
	outs[0].what = r->tmpl_from_env ? "GPUTRACE_OUTPUT" : "-o";
	r->per_process = has_pid_code(r->tmpl);
	if (r->per_process && r->keep_dir)
		run__value_error(opt, "give either --per-process DIR or %s template with %%p, not both",
				 r->tmpl_from_env ? "a GPUTRACE_OUTPUT" : "an -o");
	/* %e is the command's name, %t the run's start, %h and %r this host's */
	err = config__expand_output(r->tmpl, expanded, sizeof(expanded), (int)getpid(),
				    base_name(r->cmd[0]), start);
	if (err)
		run__value_error(opt, "%s'%s': %s", opt, r->tmpl, strerror(-err));
	if (r->summary_json) {
		/* a template too, expanded as OUT is */
		err = config__expand_output(r->summary_json, json, sizeof(json), (int)getpid(),
					    base_name(r->cmd[0]), start);
		if (err)
			run__value_error(json_opt, "%s%s'%s': %s", json_opt, sep(json_opt),
					 r->summary_json, strerror(-err));
		absolute(r->summary_path, sizeof(r->summary_path), json, json_opt);
		check_replaced(json_opt, r->summary_path);
		outs[1].path = r->summary_path;
		absolute_template(json_tmpl, sizeof(json_tmpl), r->summary_json, json_opt);
	}
	/* the checks' reports are written after CMD: a file that cannot be
	 * written is said before it runs, not after */
	for (int i = 0; i < 2; i++) {
		const char *report = i ? r->markdown : r->junit;

		if (report) {
			absolute(reports[i], sizeof(reports[i]), report, i ? "--markdown" : "--junit");
			check_replaced(i ? "--markdown" : "--junit", reports[i]);
			outs[2 + i].path = reports[i];
		}
	}
	if (r->per_process) {
		/* each process names its own file: the template, absolute */
		absolute_template(r->child_output, sizeof(r->child_output), r->tmpl, opt);
		absolute(r->out, sizeof(r->out), expanded, opt);
		check_folder(r->tmpl_from_env ? "GPUTRACE_OUTPUT=" : "-o", r->out);
		/* s-%p.json for both: the run's summary is s-PID.json, a process's trace
		 * too, one day; the same text is a slip either way */
		outs[0].path = r->out;
		outs[0].tmpl = r->child_output;
		if (r->summary_json && has_pid_code(r->summary_json))
			outs[1].tmpl = json_tmpl;
		check_distinct(outs, sizeof(outs) / sizeof(outs[0]));
		r->out[0] = 0;
		return;
	}
	absolute(r->out, sizeof(r->out), expanded, opt);
	/* said now, not after CMD ran (the merge could not name its trace) */
	if (strlen(base_name(r->out)) > NAME_MAX)
		run__value_error(opt, "%s%s: the file name is %zu bytes long; a name may have %d at "
				 "most", opt, r->tmpl, strlen(base_name(r->out)), NAME_MAX);
	if (r->tmpl_from_env && !stat(r->out, &st) && S_ISDIR(st.st_mode))
		in_folder(r, start);
	r->out_special = summary__own_fd(r->out) >= 0 ||
			 (!stat(r->out, &st) && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode));
	if (!r->out_special)
		check_file(r->tmpl_from_env ? "GPUTRACE_OUTPUT=" : "-o", r->out, false);
	outs[0].path = r->out;
	if (r->keep_dir) {
		absolute(r->parts, sizeof(r->parts), r->keep_dir, "--per-process");
		check_dir("--per-process", r->keep_dir, r->parts);
		outs[4].path = r->parts;
	} else if (!r->out_special) {
		char short_name[64];

		snprintf(short_name, sizeof(short_name), "gputrace-%d.parts", (int)getpid());
		if (beside_out(r, ".parts", short_name, r->parts, sizeof(r->parts)))
			run__value_error(opt, "%s%s: the path is too long", opt, r->out);
	}
	check_distinct(outs, sizeof(outs) / sizeof(outs[0]));
}

/*
 * The run's own folder of parts: OUT.parts, or OUT.parts.N where another run
 * with the same OUT has it now (runs started together, as ranks or CI shards
 * are: shared, the first to end removed it under the others' processes, and
 * took their traces as its own). mkdir is the test: atomic.
 */
static int own_parts_folder(struct run *r)
{
	char base[PATH_MAX];

	snprintf(base, sizeof(base), "%s", r->parts);
	for (int i = 1; i < 1000; i++) {
		if (i > 1 && snprintf(r->parts, sizeof(r->parts), "%s.%d", base, i) >=
				     (int)sizeof(r->parts))
			break;
		if (!mkdir(r->parts, 0755)) {
			r->parts_made = true;
			return 0;
		}
		if (errno != EEXIST)
			return make_folder(r->parts, &r->parts_made); /* says why, once */
	}
	fprintf(stderr, WHO ": cannot make a folder for the run's traces beside %s: %s.2 to "
		"%s.999 are taken\n", base, base, base);
	return -1;
}

/* The folders: the state (private), and where the processes write. */
void run__make_folders(struct run *r)
{
	char parts[2 * PATH_MAX];

	make_state(r);
	if (r->per_process)
		return;
	if (r->out_special) /* a device or a pipe has no folder of its own */
		snprintf(r->parts, sizeof(r->parts), "%s/parts", r->state);
	/* the user's folder may be there already; ours is the run's alone */
	if (r->keep_dir ? make_folder(r->parts, &r->parts_made) : own_parts_folder(r)) {
		run__remove_state(r);
		exit(2);
	}
	if (r->keep_dir)
		r->parts_made = false; /* the user's: kept */
	/* kept files follow OUT's compression; parts merged away stay plain
	 * (writing gzip costs the traced process's writer 10x more) */
	if (escape_percent(parts, sizeof(parts), r->parts) ||
	    snprintf(r->child_output, sizeof(r->child_output), "%s/%%e-%%p.json%s", parts,
		     r->keep_dir && ends_with(r->out, ".gz") ? ".gz" : "") >=
		    (int)sizeof(r->child_output)) {
		run__remove_state(r);
		run__usage_error("%s: the path is too long", r->parts);
	}
}

/* ---- the run's traces, as its processes list them ---- */

/*
 * The list its processes keep in the state folder (writer/checkpoint.c):
 * "* PID" a process records, "+ PID PATH" its trace has a name, "= PID"
 * its recording is over, "- PID" over with nothing to write by design (a
 * flight recorder that ended well, windows that held no complete call); at
 * its exit, a process with capture windows adds
 * "w PID" when one opened, or "! PID WHY" (inject/capture.c); with
 * --telemetry, "T PID" when it recorded telemetry, or "? PID WHY" when it
 * would have said it had none (backends/cuda/nvml.c). Read whole each time:
 * it is a few lines per process.
 */
struct run_list {
	char **paths;       /* the traces, each once, in the order named */
	size_t npaths;
	pid_t *recording;   /* processes that started recording and did not end */
	size_t nrecording;
	pid_t *named;       /* processes whose trace has a name */
	size_t nnamed;
	pid_t *ended;       /* processes that recorded and whose recording is over */
	size_t nended;
	size_t write_failed; /* traces that stop where a write failed ("x PID WHY") */
	char write_error[256]; /* the first one's reason */
	bool window_opened;
	char no_window[1024]; /* the first process's reason for none */
	pid_t *windowless;  /* processes that opened no window ("! PID WHY") */
	size_t nwindowless;
	bool telemetry;
	char no_telemetry[1024]; /* the first process's reason for none */
};

static void list__free(struct run_list *l)
{
	for (size_t i = 0; i < l->npaths; i++)
		free(l->paths[i]);
	free(l->paths);
	free(l->recording);
	free(l->named);
	free(l->ended);
	free(l->windowless);
	memset(l, 0, sizeof(*l));
}

static void *grow(void *v, size_t n, size_t size)
{
	/* room for one more when n is a power of two (or 0) */
	if (n & (n - 1))
		return v;
	v = realloc(v, (n ? n * 2 : 8) * size);
	if (!v) {
		fprintf(stderr, WHO ": out of memory\n");
		exit(1);
	}
	return v;
}

static void read_list(const struct run *r, struct run_list *l)
{
	char path[sizeof(r->state) + 16], line[PATH_MAX + 64];
	FILE *f;

	memset(l, 0, sizeof(*l));
	snprintf(path, sizeof(path), "%s/traces", r->state);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *nl = strchr(line, '\n'), *file;
		pid_t pid;
		size_t i;

		if (!nl || !strchr("*+=-w!T?x", line[0]) || line[1] != '\t')
			continue;
		*nl = 0;
		pid = (pid_t)atol(line + 2);
		file = strchr(line + 2, '\t');
		for (i = 0; i < l->nrecording && l->recording[i] != pid; i++)
			;
		if (line[0] == '*' && i == l->nrecording) {
			l->recording = grow(l->recording, l->nrecording, sizeof(pid_t));
			l->recording[l->nrecording++] = pid;
		} else if (line[0] == '=' && i < l->nrecording) {
			l->recording[i] = l->recording[--l->nrecording];
			l->ended = grow(l->ended, l->nended, sizeof(pid_t));
			l->ended[l->nended++] = pid;
		} else if (line[0] == '-' && i < l->nrecording) {
			/* over, with nothing to write by design (a flight recorder
			 * whose process ended well) */
			l->recording[i] = l->recording[--l->nrecording];
		} else if (line[0] == 'w') {
			l->window_opened = true;
		} else if (line[0] == '!' && file) {
			if (!l->no_window[0])
				snprintf(l->no_window, sizeof(l->no_window), "%s", file + 1);
			l->windowless = grow(l->windowless, l->nwindowless, sizeof(pid_t));
			l->windowless[l->nwindowless++] = pid;
		} else if (line[0] == 'x' && file) {
			if (!l->write_failed++)
				snprintf(l->write_error, sizeof(l->write_error), "%s", file + 1);
		} else if (line[0] == 'T') {
			l->telemetry = true;
		} else if (line[0] == '?' && file && !l->no_telemetry[0]) {
			snprintf(l->no_telemetry, sizeof(l->no_telemetry), "%s", file + 1);
		} else if (line[0] == '+' && file) {
			l->named = grow(l->named, l->nnamed, sizeof(pid_t));
			l->named[l->nnamed++] = pid;
			for (i = 0; i < l->npaths && strcmp(l->paths[i], file + 1); i++)
				;
			if (i == l->npaths) {
				l->paths = grow(l->paths, l->npaths, sizeof(char *));
				l->paths[l->npaths++] = strdup(file + 1);
			}
		}
	}
	fclose(f);
}

/* Traced processes still recording after the command ended (sup__wait_others). */
static size_t still_tracing(void *ctx, pid_t *pids, size_t max)
{
	struct run *r = ctx;
	struct run_list l;
	size_t k = 0;

	read_list(r, &l);
	for (size_t i = 0; i < l.nrecording && k < max; i++) {
		pid_t pid = l.recording[i];

		if (pid != r->sup.child && !kill(pid, 0) && sup__is_ours(pid))
			pids[k++] = pid;
	}
	list__free(&l);
	return k;
}

void run__wait_for_stragglers(struct run *r)
{
	pid_t pids[8];
	size_t n = still_tracing(r, pids, 8);

	if (!n)
		return;
	fprintf(stderr, WHO ": %s ended; waiting for %zu traced process%s still running "
		"(pid %d%s; Ctrl-C stops the wait)\n", base_name(r->cmd[0]), n,
		n == 1 ? "" : "es", (int)pids[0], n > 1 ? ", ..." : "");
	if (!sup__wait_others(&r->sup, still_tracing, r))
		fprintf(stderr, WHO ": stopped waiting: the traces of processes still running "
			"end at their last checkpoint\n");
}

/* NAME.watchdog.json or NAME.watchdog.N.json: a hang report, the library's name */
static bool report_name(const char *name)
{
	const char *w = strstr(name, ".watchdog.");

	for (; w; w = strstr(w + 1, ".watchdog.")) {
		const char *nth = w + strlen(".watchdog."), *p = nth;

		while (*p >= '0' && *p <= '9')
			p++;
		if (!strcmp(p, p == nth ? "json" : ".json"))
			return true;
	}
	return false;
}

static int trace_name(const struct dirent *d)
{
	/* a hidden .gputrace-PID-XXXXXX is a trace not yet named: no input; nor
	 * is a watchdog report (a library that put one beside its part) */
	return d->d_name[0] != '.' && !report_name(d->d_name) &&
	       (ends_with(d->d_name, ".json") || ends_with(d->d_name, ".json.gz"));
}

/*
 * A process that could not add its trace to the list (no file descriptor
 * left for it: RLIMIT_NOFILE) still wrote it into the parts folder. A
 * folder this run made holds only the run's traces: the unlisted ones are
 * taken too, after the listed.
 */
static void take_unlisted(const struct run *r, struct run_list *l)
{
	struct dirent **names;
	int n;

	if (r->per_process || !r->parts_made)
		return;
	n = scandir(r->parts, &names, trace_name, alphasort);
	for (int i = 0; i < n; i++) {
		char path[PATH_MAX];
		struct stat st;
		size_t k;

		if (snprintf(path, sizeof(path), "%s/%s", r->parts, names[i]->d_name) <
			    (int)sizeof(path) &&
		    !stat(path, &st) && S_ISREG(st.st_mode)) {
			/* named %e-%p.json: its process wrote it, listed or not */
			const char *dash = strrchr(names[i]->d_name, '-');
			pid_t pid = dash ? (pid_t)atol(dash + 1) : 0;

			if (pid > 0) {
				l->named = grow(l->named, l->nnamed, sizeof(pid_t));
				l->named[l->nnamed++] = pid;
			}
			for (k = 0; k < l->npaths && strcmp(l->paths[k], path); k++)
				;
			if (k == l->npaths) {
				l->paths = grow(l->paths, l->npaths, sizeof(char *));
				l->paths[l->npaths++] = strdup(path);
			}
		}
		free(names[i]);
	}
	if (n > 0)
		free(names);
}

static bool has_pid(const pid_t *pids, size_t n, pid_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (pids[i] == pid)
			return true;
	return false;
}

/* How many of pids have no trace named. One that said it opened no window
 * had none to write (what it made while paused, an NVTX range's stack, is
 * no trace): the run says why in the no-window line, not as a failure. */
static size_t unnamed(const struct run_list *l, const pid_t *pids, size_t n)
{
	size_t count = 0;

	for (size_t i = 0; i < n; i++)
		count += !has_pid(l->named, l->nnamed, pids[i]) &&
			 !has_pid(l->windowless, l->nwindowless, pids[i]);
	return count;
}

void run__collect_traces(struct run *r)
{
	struct run_list l;

	read_list(r, &l);
	take_unlisted(r, &l);
	r->window_opened = l.window_opened;
	memcpy(r->no_window, l.no_window, sizeof(r->no_window));
	if (!l.telemetry)
		memcpy(r->no_telemetry, l.no_telemetry, sizeof(r->no_telemetry));
	/* recording, never ended, no trace named: died before its first file
	 * (SIGKILL, or an exit cut short, as by exit() from two threads) */
	r->unwritten = unnamed(&l, l.recording, l.nrecording);
	/* ended, no trace named: its file could not be written (it said why) */
	r->unwritable = unnamed(&l, l.ended, l.nended);
	r->write_failed = l.write_failed;
	memcpy(r->write_error, l.write_error, sizeof(r->write_error));
	r->traces = calloc(l.npaths + 1, sizeof(*r->traces));
	for (size_t i = 0; r->traces && i < l.npaths; i++) {
		/* a file that is gone (deleted by the program) is no input */
		if (!access(l.paths[i], R_OK)) {
			r->traces[r->ntraces++] = l.paths[i];
			l.paths[i] = NULL;
		}
	}
	list__free(&l);
}

/* ---- 5. one trace ---- */

/* OUT, or OUT with .1, .2, ... before its extension: never overwritten,
 * as the library names its files. */
static int candidate(const char *path, int i, char *out, size_t len)
{
	size_t base = strlen(path);

	if (!i)
		return snprintf(out, len, "%s", path) >= (int)len ? -ENAMETOOLONG : 0;
	if (ends_with(path, ".json.gz"))
		base -= 8;
	else if (ends_with(path, ".json"))
		base -= 5;
	else if (ends_with(path, ".gz"))
		base -= 3; /* trace.1.gz: trace.gz.1 was no .gz name (gunzip refused it) */
	return snprintf(out, len, "%.*s.%d%s", (int)base, path, i, path + base) >= (int)len
		       ? -ENAMETOOLONG
		       : 0;
}

/* Give the file at tmp the first free name of OUT's; keep: tmp stays too. */
static int publish(struct run *r, const char *tmp, bool keep)
{
	char name[PATH_MAX];
	int err;

	for (int i = 0; i < 10000; i++) {
		if ((err = candidate(r->out, i, name, sizeof(name))))
			return err;
		if (!link(tmp, name)) {
			if (!keep)
				unlink(tmp);
			snprintf(r->trace, sizeof(r->trace), "%s", name);
			if (i)
				fprintf(stderr, WHO ": %s exists: the trace is %s\n", r->out, name);
			return 0;
		}
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

/* What a gzip stream's failed call failed on: the system's reason where a
 * read or write failed (a full disk: said, not a bare "could not make"), or
 * -EIO. */
static int gz_failure(gzFile z, int ret)
{
	int e = errno, zerr = ret;

	if (z)
		(void)gzerror(z, &zerr);
	return zerr == Z_ERRNO && e ? -e : -EIO;
}

/*
 * A FIFO or a pipe may take nothing for good (no reader, or one that stopped
 * reading): Ctrl-C must still end the run. A signal caught just before a
 * blocking open or write would not interrupt it, so nothing here blocks for
 * longer than a poll of 100 ms between looks at trace__stop_signal.
 */
#define STOP_POLL_MS 100

static int open_out(const char *path)
{
	for (;;) {
		/* a FIFO without a reader: ENXIO at once, not a wait */
		int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);

		if (fd >= 0) {
			/* our own open file: blocking again, the writes poll first */
			fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
			return fd;
		}
		if (errno != ENXIO && errno != EINTR)
			return -errno;
		if (trace__stop_signal)
			return -EINTR;
		poll(NULL, 0, STOP_POLL_MS);
	}
}

/* Some of p into out: the bytes written, or -errno. stoppable (out a FIFO, a
 * pipe or a device): after a poll of out of up to STOP_POLL_MS, none (not
 * ready, or interrupted), and -EINTR once trace__stop_signal is set. */
static ssize_t write_some(int out, const char *p, size_t len, bool stoppable)
{
	struct pollfd pfd = { .fd = out, .events = POLLOUT };
	ssize_t w;
	int ready;

	if (!stoppable)
		return (w = write(out, p, len)) < 0 ? -errno : w;
	ready = poll(&pfd, 1, STOP_POLL_MS);
	if (trace__stop_signal)
		return -EINTR;
	if (ready < 0 && errno != EINTR)
		return -errno;
	if (ready <= 0)
		return 0;
	/* a pipe that polls writable has a page free: a page's write does not
	 * block (a bigger one waits for the reader) */
	w = write(out, p, len < 4096 ? len : 4096);
	if (w < 0 && errno != EINTR && errno != EAGAIN)
		return -errno;
	return w > 0 ? w : 0;
}

/* All of in into out, or into z (its gzip stream) where given; stoppable:
 * as write_some. */
static int pump(int in, int out, gzFile z, bool stoppable)
{
	char buf[1 << 16];
	ssize_t n;
	int err = 0;

	while (!err && (n = read(in, buf, sizeof(buf))) > 0) {
		if (z) {
			if (gzwrite(z, buf, (unsigned)n) != (int)n)
				err = gz_failure(z, Z_OK);
			continue;
		}
		for (ssize_t done = 0, w; done < n && !err; done += w)
			if ((w = write_some(out, buf + done, (size_t)(n - done), stoppable)) < 0)
				err = (int)w;
	}
	if (!err && n < 0)
		err = -errno;
	return err;
}

/* OUT is a device or a pipe: the bytes go into it (not created, truncated or
 * removed on failure, as a file would be). */
static int deliver(struct run *r, const char *tmp)
{
	/* /dev/stdout: through our own descriptor, CMD's too, after what CMD wrote
	 * there (reopened by its name, a file behind it is written from its start) */
	int own = summary__own_fd(r->out), in = open(tmp, O_RDONLY | O_CLOEXEC);
	int err = in < 0 ? -errno : 0;
	int out = err ? -1 : own >= 0 ? fcntl(own, F_DUPFD_CLOEXEC, 3) : open_out(r->out);

	if (!err)
		err = out >= 0 ? pump(in, out, NULL, true) : own >= 0 ? -errno : out;

	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return err;
}

/* One process's trace, byte for byte, into DST: compressed when DST is
 * .gz (one gzip member, as the writer's own) and SRC is not. */
static int copy_trace(const char *src, const char *dst)
{
	bool gz = ends_with(dst, ".gz") && !ends_with(src, ".gz");
	int in = open(src, O_RDONLY | O_CLOEXEC), out = -1, err = 0;
	gzFile z = NULL;

	if (in < 0)
		return -errno;
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0 || (gz && !(z = gzdopen(out, "wb6")))) {
		err = out < 0 ? -errno : -ENOMEM;
		if (out >= 0)
			close(out);
		close(in);
		return err;
	}
	err = pump(in, out, z, false);
	if (z) {
		int ret = gzclose(z); /* its last write: a full disk may fail it */

		if (ret != Z_OK && !err)
			err = gz_failure(NULL, ret);
	} else if (close(out) && !err) {
		err = -EIO;
	}
	close(in);
	if (err)
		unlink(dst);
	return err;
}

int run__make_trace(struct run *r)
{
	char tmp[PATH_MAX];
	struct merge_opts opts = { .by_start = true, .quiet = true };
	bool out_gz = ends_with(r->out, ".gz");
	int err;

	if (!r->ntraces)
		return 0;
	/* one process: its own trace is the run's, not a merge of one (which
	 * names rows after the host and pid): moved, or linked when kept, and
	 * only copied where OUT is a device or a pipe or is compressed (its
	 * part was written plain, which costs the process less) */
	if (r->ntraces == 1 && !r->out_special &&
	    ends_with(r->traces[0], ".gz") == out_gz &&
	    !publish(r, r->traces[0], r->keep_dir != NULL))
		return 0;
	if (r->out_special)
		snprintf(tmp, sizeof(tmp), "%s/trace%s", r->state, out_gz ? ".json.gz" : ".json");
	else {
		char suffix[64], short_name[64];

		snprintf(suffix, sizeof(suffix), ".gputrace-%d%s", (int)getpid(),
			 out_gz ? ".gz" : "");
		snprintf(short_name, sizeof(short_name), ".gputrace-%d.json%s", (int)getpid(),
			 out_gz ? ".gz" : "");
		if ((err = beside_out(r, suffix, short_name, tmp, sizeof(tmp))))
			return err;
	}
	if (r->ntraces == 1 && (out_gz || !ends_with(r->traces[0], ".gz"))) {
		if ((err = copy_trace(r->traces[0], tmp)))
			return err;
	} else if (tool__merge(tmp, r->traces, (unsigned)r->ntraces, &opts)) {
		return -EIO;
	}
	if (r->out_special) {
		/* read for the summary first: OUT may not be readable (a pipe's
		 * read end is our own stdout's; reading it waited forever) */
		snprintf(r->trace, sizeof(r->trace), "%s", tmp);
		return 0;
	}
	err = publish(r, tmp, false);
	if (err)
		unlink(tmp);
	return err;
}

void run__print_unsaid(struct run *r)
{
	char path[PATH_MAX], buf[4096];
	ssize_t n;
	int fd;

	if (snprintf(path, sizeof(path), "%s/unsaid", r->state) >= (int)sizeof(path) ||
	    (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		fwrite(buf, 1, (size_t)n, stderr);
	close(fd);
}

/* OUT is a device or a pipe: the run's trace, summarized, goes into it. */
int run__deliver_trace(struct run *r)
{
	return r->out_special && r->trace[0] ? deliver(r, r->trace) : 0;
}

/* The parts are merged: they go, and their folder if we made it. */
void run__remove_parts(struct run *r)
{
	if (r->keep_dir || r->per_process)
		return;
	for (size_t i = 0; i < r->ntraces; i++)
		unlink(r->traces[i]);
	if (r->parts_made)
		rmdir(r->parts); /* left if anything else is in it */
}
