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
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "inject/config.h"
#include "summarize.h"
#include "supervise.h"
#include "tool.h"
#include "writer/summary.h"

#define WHO "gputrace"
#define DEFAULT_OUTPUT "gputrace-%e-%t.json"

extern char **environ;

/* The library variables a run option sets (the rest are run's own). */
#define RUN_VAR_OPTIONS(X)                                                                 \
	X("--backends", "GPUTRACE_BACKENDS", true)                                         \
	X("--activities", "GPUTRACE_ACTIVITIES", true)                                     \
	X("--buffer-kb", "GPUTRACE_BUFFER_KB", true)                                       \
	X("--flush-ms", "GPUTRACE_FLUSH_MS", true)                                         \
	X("--plugin-path", "GPUTRACE_PLUGIN_PATH", true)                                   \
	X("--log", "GPUTRACE_LOG", true)                                                   \
	X("--stacks-all", "GPUTRACE_STACKS_ALL", false)                                    \
	X("--graph-trace", "GPUTRACE_GRAPH_TRACE", false)                                  \
	X("--no-cupti", "GPUTRACE_DISABLE_CUPTI", false)

static const struct var_option {
	const char *name, *var;
	bool takes_value;
} var_options[] = {
#define RUN_OPT(name, var, value) { name, var, value },
	RUN_VAR_OPTIONS(RUN_OPT)
#undef RUN_OPT
};
#define NVAR_OPTIONS (sizeof(var_options) / sizeof(var_options[0]))

struct run {
	/* what was asked */
	const char *tmpl;            /* -o */
	const char *keep_dir;        /* --per-process */
	const char *summary_json;    /* --summary-json */
	const char *stacks;          /* --stacks depth, "on" or "off" */
	bool no_summary;
	const char *var_value[NVAR_OPTIONS];
	char **checks;               /* --check, each one check */
	size_t nchecks;
	const char *checks_file;     /* --checks */
	const char *junit, *markdown;
	char **cmd;
	/* where things go */
	bool per_process;            /* -o has %p: the files are the result */
	char out[PATH_MAX];          /* the trace to make (not per_process) */
	bool out_special;            /* OUT is a device or a pipe: written, not renamed */
	char parts[PATH_MAX];        /* the processes' own traces */
	bool parts_made;             /* we made that folder: it goes at the end */
	char child_output[PATH_MAX]; /* GPUTRACE_OUTPUT for the processes */
	char state[1024];            /* private: the list of traces, said messages */
	/* what came of it */
	struct supervisor sup;
	char **traces;               /* the run's traces (listed by its processes) */
	size_t ntraces;
	char trace[PATH_MAX];        /* the run's one trace, once made ("" if none) */
	char summary_path[PATH_MAX]; /* the run's summary JSON, once written */
	struct summary *sum;
};

/* ---- messages ---- */

static int log_level = GT_LOG_WARN;

/* config.c reports through this, as the library does (one line each). */
void gt_log(int level, const char *fmt, ...)
{
	va_list ap;

	if (level > log_level)
		return;
	fputs(WHO ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

__attribute__((format(printf, 1, 2), noreturn)) static void usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs(WHO ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '" WHO " --help'.\n");
	exit(2);
}

/* ---- 1. options ---- */

static bool is_number(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/* A value for a library variable, checked as the library would. */
static void check_value(const char *opt, const char *var, const char *val)
{
	const char *accepted = NULL;

	if (config__check(var, val, &accepted))
		usage_error("%s '%s' is not valid: expected %s", opt, val,
			    accepted ? accepted : "another value");
}

/* --stacks, --stacks=DEPTH, --stacks DEPTH (a number as the next word):
 * always the depth in frames. */
static void set_stacks(struct run *r, const char *val)
{
	const char *accepted = NULL;

	if (!val) {
		r->stacks = "on";
		return;
	}
	if (config__check("GPUTRACE_STACKS", val, &accepted) ||
	    (is_number(val) && !strcmp(val, "0")))
		usage_error("--stacks DEPTH must be a number of frames from 1 to 64 (or on, off), "
			    "not '%s'", val);
	r->stacks = val;
}

static void parse_options(struct run *r, int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		char *a = argv[i], *val = NULL;
		char name[64];
		size_t k;

		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-' || !a[1])
			break;
		/* --opt=value and --opt value alike */
		snprintf(name, sizeof(name), "%s", a);
		if (!strncmp(a, "--", 2) && strchr(a, '=')) {
			name[strchr(a, '=') - a < (long)sizeof(name) ? strchr(a, '=') - a : 0] = 0;
			val = strchr(a, '=') + 1;
		}
#define NEXT_VALUE()                                                                       \
	do {                                                                               \
		if (!val) {                                                                \
			if (i + 1 >= argc)                                                 \
				usage_error("option '%s' needs a value", name);            \
			val = argv[++i];                                                   \
		}                                                                          \
	} while (0)
#define NO_VALUE()                                                                         \
	do {                                                                               \
		if (val)                                                                   \
			usage_error("option '%s' takes no value", name);                   \
	} while (0)
		if (!strcmp(name, "-h") || !strcmp(name, "--help")) {
			/* exit 2: run ran nothing (a CI step must not pass on it) */
			tool__usage(stdout);
			exit(2);
		} else if (!strcmp(name, "--version")) {
			printf(WHO " %s\n", GPUTRACE_VERSION);
			exit(2);
		} else if (!strcmp(name, "-o") || !strcmp(name, "--output")) {
			NEXT_VALUE();
			if (!*val)
				usage_error("%s needs a file name template", name);
			r->tmpl = val;
		} else if (!strcmp(name, "--per-process")) {
			NEXT_VALUE();
			if (!*val)
				usage_error("--per-process needs a folder");
			r->keep_dir = val;
		} else if (!strcmp(name, "--summary-json")) {
			NEXT_VALUE();
			if (!*val)
				usage_error("--summary-json needs a file name");
			r->summary_json = val;
		} else if (!strcmp(name, "--no-summary")) {
			NO_VALUE();
			r->no_summary = true;
		} else if (!strcmp(name, "--check")) {
			NEXT_VALUE();
			if (strchr(val, '\n'))
				usage_error("--check takes one check; give --check once per check");
			r->checks = realloc(r->checks, (r->nchecks + 1) * sizeof(*r->checks));
			if (!r->checks)
				exit(1);
			r->checks[r->nchecks++] = val;
		} else if (!strcmp(name, "--checks")) {
			NEXT_VALUE();
			if (access(val, R_OK))
				usage_error("--checks: cannot read '%s': %s", val, strerror(errno));
			r->checks_file = val;
		} else if (!strcmp(name, "--junit") || !strcmp(name, "--markdown")) {
			NEXT_VALUE();
			if (!*val)
				usage_error("%s needs a file name", name);
			*(name[2] == 'j' ? &r->junit : &r->markdown) = val;
		} else if (!strcmp(name, "--stacks")) {
			if (!val && i + 1 < argc && is_number(argv[i + 1]))
				val = argv[++i];
			set_stacks(r, val);
		} else {
			for (k = 0; k < NVAR_OPTIONS; k++)
				if (!strcmp(name, var_options[k].name))
					break;
			if (k == NVAR_OPTIONS)
				usage_error("unknown option '%s' for run", name);
			if (var_options[k].takes_value) {
				NEXT_VALUE();
				check_value(name, var_options[k].var, val);
				r->var_value[k] = val;
			} else {
				NO_VALUE();
				r->var_value[k] = "1";
			}
		}
#undef NEXT_VALUE
#undef NO_VALUE
	}
	if (i >= argc)
		usage_error("run: no command given (" WHO " run [options] -- CMD ARGS...)");
	if ((r->junit || r->markdown) && !r->nchecks && !r->checks_file)
		usage_error("--junit and --markdown report checks: give --check or --checks");
	r->cmd = argv + i;
}

/* ---- 7. checks (check.c) ---- */

/* gputrace check with our options: its lines on stderr (stdout is CMD's). */
static int check(struct run *r, bool syntax_only)
{
	char **argv = calloc(r->nchecks + 16, sizeof(*argv));
	int argc = 0, st, out;

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
	if (r->checks_file) {
		argv[argc++] = "--checks";
		argv[argc++] = (char *)r->checks_file;
	}
	if (!syntax_only)
		argv[argc++] = r->summary_path;
	argv[argc++] = "--";
	for (size_t i = 0; i < r->nchecks; i++)
		argv[argc++] = r->checks[i];
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

static const char *option_value(const struct run *r, const char *var)
{
	for (size_t k = 0; k < NVAR_OPTIONS; k++)
		if (!strcmp(var_options[k].var, var))
			return r->var_value[k];
	return NULL;
}

/* A GPUTRACE_* variable a run option (or the run itself) sets. */
static bool set_by_run(const struct run *r, const char *var)
{
	static const char *const own[] = { "GPUTRACE_OUTPUT", "GPUTRACE_SUMMARY",
					   "GPUTRACE_SUMMARY_JSON", "GPUTRACE_RUN_STATE",
					   "GPUTRACE_STACKS" };

	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		if (!strcmp(var, own[i]))
			return true;
	return option_value(r, var) != NULL;
}

/* A variable an option of this run replaces: its value in the environment
 * does not matter (nor is it checked). */
static bool overridden(const struct run *r, const char *name)
{
	return option_value(r, name) || (r->tmpl && !strcmp(name, "GPUTRACE_OUTPUT")) ||
	       (r->summary_json && !strcmp(name, "GPUTRACE_SUMMARY_JSON")) ||
	       (r->no_summary && !strcmp(name, "GPUTRACE_SUMMARY")) ||
	       (r->stacks && !strcmp(name, "GPUTRACE_STACKS"));
}

/* Our environment's GPUTRACE_* settings, as the library would read them:
 * a bad value or an unknown name is said here, once for the run. */
static void read_env(struct run *r, struct gt_config *env)
{
	size_t n = 0, k = 0;
	char **mine;

	while (environ[n])
		n++;
	mine = calloc(n + 1, sizeof(*mine));
	for (size_t i = 0; mine && i < n; i++) {
		const char *eq = strchr(environ[i], '=');
		char name[128];

		if (!eq || strncmp(environ[i], "GPUTRACE_", 9))
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)(eq - environ[i]), environ[i]);
		if (!overridden(r, name))
			mine[k++] = environ[i];
	}
	config__parse(env, mine);
	free(mine);
}

/* The run's defaults from the environment, as the library reads them:
 * GPUTRACE_OUTPUT as -o, GPUTRACE_SUMMARY=0 as --no-summary,
 * GPUTRACE_SUMMARY_JSON as --summary-json, GPUTRACE_STACKS as --stacks. */
static void env_defaults(struct run *r, const struct gt_config *env)
{
	if (!r->tmpl && getenv("GPUTRACE_OUTPUT") &&
	    !config__check("GPUTRACE_OUTPUT", getenv("GPUTRACE_OUTPUT"), NULL))
		r->tmpl = getenv("GPUTRACE_OUTPUT");
	if (!r->tmpl)
		r->tmpl = DEFAULT_OUTPUT;
	if (!env->summary)
		r->no_summary = true;
	if (!r->summary_json && env->summary_json[0])
		r->summary_json = getenv("GPUTRACE_SUMMARY_JSON");
	if (r->summary_json && config__check("GPUTRACE_SUMMARY_JSON", r->summary_json, NULL))
		usage_error("--summary-json '%s' is not valid: %%-codes as in -o only",
			    r->summary_json);
	if (!r->stacks && getenv("GPUTRACE_STACKS") && !config__check("GPUTRACE_STACKS",
								       getenv("GPUTRACE_STACKS"), NULL))
		r->stacks = getenv("GPUTRACE_STACKS");
	if (!r->stacks && option_value(r, "GPUTRACE_STACKS_ALL"))
		r->stacks = "on"; /* --stacks-all implies --stacks */
	if (r->stacks && !strcmp(r->stacks, "on"))
		r->stacks = "16"; /* the default depth, spelled out for the processes */
	log_level = env->log_level;
	if (option_value(r, "GPUTRACE_LOG")) {
		struct gt_config one;
		char var[64], *e[] = { var, NULL };

		snprintf(var, sizeof(var), "GPUTRACE_LOG=%s", option_value(r, "GPUTRACE_LOG"));
		config__parse(&one, e);
		log_level = one.log_level;
	}
}

/* ---- 2. where traces go ---- */

static void absolute(char *out, size_t len, const char *path)
{
	char cwd[PATH_MAX];

	if (path[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		snprintf(out, len, "%s", path);
	else if (snprintf(out, len, "%s/%s", cwd, path) >= (int)len)
		usage_error("'%s': the path is too long", path);
}

static bool has_pid_code(const char *tmpl)
{
	for (const char *p = tmpl; *p; p++)
		if (*p == '%' && p[1] && (p++, *p == 'p'))
			return true;
	return false;
}

/* The folder of path must exist and take new files. */
static void check_folder(const char *opt, const char *path)
{
	char dir[PATH_MAX];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = 0;
	else if (slash)
		*slash = 0;
	if (access(dir, W_OK | X_OK))
		usage_error("%s %s: cannot write in %s: %s", opt, path, dir, strerror(errno));
}

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	return remove(path) && errno != ENOENT;
}

/* The state folder: the list, the said-message markers, a merge for a device. */
static void remove_state(struct run *r)
{
	if (r->state[0])
		nftw(r->state, remove_one, 8, FTW_DEPTH | FTW_PHYS);
}

static void make_state(struct run *r)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(r->state, sizeof(r->state), "%s/gputrace-run-XXXXXX",
		 tmp && *tmp && strlen(tmp) < sizeof(r->state) - 32 ? tmp : "/tmp");
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

static void plan_outputs(struct run *r)
{
	const char *accepted = NULL;
	char expanded[PATH_MAX], json[PATH_MAX];
	uint64_t start = (uint64_t)time(NULL) * 1000000000ull;
	struct stat st;
	int err;

	if (config__check("GPUTRACE_OUTPUT", r->tmpl, &accepted))
		usage_error("-o '%s' is not valid: expected %s", r->tmpl, accepted);
	r->per_process = has_pid_code(r->tmpl);
	if (r->per_process && r->keep_dir)
		usage_error("give either --per-process DIR or an -o template with %%p, not both");
	/* %e is the command's name, %t the run's start, %h and %r this host's */
	err = config__expand_output(r->tmpl, expanded, sizeof(expanded), (int)getpid(),
				    base_name(r->cmd[0]), start);
	if (err)
		usage_error("-o '%s': %s", r->tmpl, strerror(-err));
	if (r->summary_json) {
		/* a template too, expanded as OUT is */
		err = config__expand_output(r->summary_json, json, sizeof(json), (int)getpid(),
					    base_name(r->cmd[0]), start);
		if (err)
			usage_error("--summary-json '%s': %s", r->summary_json, strerror(-err));
		absolute(r->summary_path, sizeof(r->summary_path), json);
		check_folder("--summary-json", r->summary_path);
	}
	if (r->per_process) {
		/* each process names its own file: the template, absolute */
		absolute(r->child_output, sizeof(r->child_output), r->tmpl);
		absolute(r->out, sizeof(r->out), expanded);
		check_folder("-o", r->out);
		r->out[0] = 0;
		return;
	}
	absolute(r->out, sizeof(r->out), expanded);
	if (!stat(r->out, &st) && S_ISDIR(st.st_mode))
		usage_error("-o %s: is a folder; give a file name", r->out);
	r->out_special = !stat(r->out, &st) && !S_ISREG(st.st_mode);
	if (!r->out_special)
		check_folder("-o", r->out);
	if (r->keep_dir) {
		absolute(r->parts, sizeof(r->parts), r->keep_dir);
		check_folder("--per-process", r->parts);
	} else if (!r->out_special &&
		   snprintf(r->parts, sizeof(r->parts), "%s.parts", r->out) >= (int)sizeof(r->parts)) {
		usage_error("-o %s: the path is too long", r->out);
	}
}

/* The folders: the state (private), and where the processes write. */
static void make_folders(struct run *r)
{
	make_state(r);
	if (r->per_process)
		return;
	if (r->out_special) /* a device or a pipe has no folder of its own */
		snprintf(r->parts, sizeof(r->parts), "%s/parts", r->state);
	if (make_folder(r->parts, &r->parts_made)) {
		remove_state(r);
		exit(2);
	}
	if (r->keep_dir)
		r->parts_made = false; /* the user's: kept */
	/* kept files follow OUT's compression; parts merged away stay plain
	 * (writing gzip costs the traced process's writer 10x more) */
	if (snprintf(r->child_output, sizeof(r->child_output), "%s/%%e-%%p.json%s", r->parts,
		     r->keep_dir && ends_with(r->out, ".gz") ? ".gz" : "") >=
	    (int)sizeof(r->child_output)) {
		remove_state(r);
		usage_error("%s: the path is too long", r->parts);
	}
}

/* ---- the command's environment ---- */

static bool is_sanitizer_runtime(const char *p)
{
	return strstr(p, "libasan") || strstr(p, "libtsan") || strstr(p, "libhwasan") ||
	       strstr(p, "libubsan");
}

/* Ours in front of the program's own preloads, behind a sanitizer runtime
 * (which must come first); never twice. */
static char *preload(const char *lib)
{
	const char *old = getenv("LD_PRELOAD");
	struct buf first = { 0 }, rest = { 0 }, out = { 0 };
	char *copy = strdup(old ? old : ""), *save = NULL;

	for (char *p = strtok_r(copy, " :", &save); p; p = strtok_r(NULL, " :", &save)) {
		if (!strcmp(p, lib))
			continue;
		if (!rest.len && is_sanitizer_runtime(p)) {
			buf__printf(&first, "%s ", p);
			continue;
		}
		buf__printf(&rest, " %s", p);
	}
	buf__printf(&out, "LD_PRELOAD=%s%s%s", first.p ? first.p : "", lib, rest.p ? rest.p : "");
	buf__free(&first);
	buf__free(&rest);
	free(copy);
	return out.p;
}

/* A GPUTRACE_* variable of our environment the library would refuse (said
 * once, by cmd_run): left out, so the processes use the default quietly. */
static bool refused(const char *kv)
{
	const char *eq = strchr(kv, '=');
	char name[128];

	snprintf(name, sizeof(name), "%.*s", (int)(eq - kv), kv);
	return config__check(name, eq + 1, NULL) != 0;
}

static char *var(const char *name, const char *value)
{
	struct buf b = { 0 };

	buf__printf(&b, "%s=%s", name, value);
	return b.p;
}

static char **command_env(struct run *r, const char *lib)
{
	size_t n = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + NVAR_OPTIONS + 8, sizeof(*env));
	if (!env)
		exit(1);
	for (char **e = environ; *e; e++) {
		const char *eq = strchr(*e, '=');
		char name[128];

		if (!eq || !strncmp(*e, "LD_PRELOAD=", 11))
			continue;
		if (!strncmp(*e, "GPUTRACE_", 9)) {
			snprintf(name, sizeof(name), "%.*s", (int)(eq - *e), *e);
			if (set_by_run(r, name) || refused(*e))
				continue;
		}
		env[k++] = *e;
	}
	for (size_t i = 0; i < NVAR_OPTIONS; i++)
		if (r->var_value[i])
			env[k++] = var(var_options[i].var, r->var_value[i]);
	if (r->stacks)
		env[k++] = var("GPUTRACE_STACKS", r->stacks);
	env[k++] = var("GPUTRACE_OUTPUT", r->child_output);
	env[k++] = var("GPUTRACE_RUN_STATE", r->state);
	env[k++] = preload(lib);
	env[k] = NULL;
	return env;
}

/* ---- the run's traces, as its processes list them ---- */

/*
 * The list its processes keep in the state folder (writer/checkpoint.c):
 * "* PID" a process records, "+ PID PATH" its trace has a name, "= PID"
 * its recording is over. Read whole each time: it is a few lines per
 * process that recorded something.
 */
struct run_list {
	char **paths;       /* the traces, each once, in the order named */
	size_t npaths;
	pid_t *recording;   /* processes that started recording and did not end */
	size_t nrecording;
};

static void list__free(struct run_list *l)
{
	for (size_t i = 0; i < l->npaths; i++)
		free(l->paths[i]);
	free(l->paths);
	free(l->recording);
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

		if (!nl || !strchr("*+=", line[0]) || line[1] != '\t')
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
		} else if (line[0] == '+' && file) {
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

static void wait_for_stragglers(struct run *r)
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

static void collect_traces(struct run *r)
{
	struct run_list l;

	read_list(r, &l);
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

/* OUT is a device or a pipe: the bytes go into it. */
static int deliver(struct run *r, const char *tmp)
{
	char buf[1 << 16];
	int in = open(tmp, O_RDONLY | O_CLOEXEC), out = open(r->out, O_WRONLY | O_CLOEXEC);
	ssize_t n = 0;
	int err = 0;

	if (in < 0 || out < 0)
		err = -errno;
	while (!err && (n = read(in, buf, sizeof(buf))) > 0)
		for (ssize_t done = 0, w; done < n && !err; done += w)
			if ((w = write(out, buf + done, (size_t)(n - done))) < 0)
				err = -errno;
	if (n < 0)
		err = -errno;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	if (!err)
		snprintf(r->trace, sizeof(r->trace), "%s", r->out);
	return err;
}

static int make_trace(struct run *r)
{
	char tmp[PATH_MAX];
	struct merge_opts opts = { .by_start = true, .quiet = true };
	int err;

	if (!r->ntraces)
		return 0;
	/* one process, same format: its own trace is the run's (moved, or
	 * linked when kept: nothing is copied) */
	if (r->ntraces == 1 && !r->out_special &&
	    ends_with(r->traces[0], ".gz") == ends_with(r->out, ".gz") &&
	    !publish(r, r->traces[0], r->keep_dir != NULL))
		return 0;
	if (r->out_special)
		snprintf(tmp, sizeof(tmp), "%s/trace%s", r->state,
			 ends_with(r->out, ".gz") ? ".json.gz" : ".json");
	else if (snprintf(tmp, sizeof(tmp), "%s.gputrace-%d%s", r->out, (int)getpid(),
			  ends_with(r->out, ".gz") ? ".gz" : "") >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	if (tool__merge(tmp, r->traces, (unsigned)r->ntraces, &opts))
		return -EIO;
	err = r->out_special ? deliver(r, tmp) : publish(r, tmp, false);
	if (err || r->out_special)
		unlink(tmp);
	return err;
}

/* The parts are merged: they go, and their folder if we made it. */
static void remove_parts(struct run *r)
{
	if (r->keep_dir || r->per_process)
		return;
	for (size_t i = 0; i < r->ntraces; i++)
		unlink(r->traces[i]);
	if (r->parts_made)
		rmdir(r->parts); /* left if anything else is in it */
}

/* ---- 6. the summary ---- */

static unsigned long buffer_kb(const struct run *r)
{
	const char *v = option_value(r, "GPUTRACE_BUFFER_KB");

	if (!v)
		v = getenv("GPUTRACE_BUFFER_KB");
	return v && is_number(v) ? strtoul(v, NULL, 10) : GT_BUFFER_KB_DEFAULT;
}

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

static void summarize(struct run *r)
{
	/* the run's trace, or its processes' (-o %p, or when they could not
	 * be merged) */
	bool parts = r->per_process || (r->ntraces && !r->trace[0]);
	char *const *files = parts ? r->traces : (char *const[]){ r->trace };
	size_t n = parts ? r->ntraces : !!r->trace[0];
	struct buf label = { 0 };
	uint64_t bytes = 0;
	int err;

	r->sum = n ? summarize_files(files, n, &bytes) : summary__new();
	if (!r->sum)
		return;
	summary__set_hints(r->sum, &(struct summary_hints){ .more = "--summary-json",
							    .buffer = "--buffer-kb ",
							    .buffer_kb = buffer_kb(r) });
	if (n == 1) {
		buf__adds(&label, files[0]);
	} else {
		buf__printf(&label, "%zu traces:", n);
		for (size_t i = 0; i < n; i++)
			buf__printf(&label, " %s", files[i]);
	}
	if (!n)
		fprintf(stderr, WHO ": no process of the run recorded anything (no GPU API call "
			"gputrace knows): no trace written\n");
	else if (!r->no_summary)
		summary__print(r->sum, stderr, label.p, bytes);
	else
		summary__print_lost_line(r->sum, stderr, label.p);
	buf__free(&label);
	/* the run's summary JSON: asked for (planned), or kept in the state folder */
	if (!r->summary_json)
		snprintf(r->summary_path, sizeof(r->summary_path), "%s/summary.json", r->state);
	err = summary__write_json(r->sum, r->summary_path, n == 1 ? files[0] : NULL, bytes);
	if (err) {
		fprintf(stderr, WHO ": cannot write the summary to %s: %s\n", r->summary_path,
			strerror(-err));
		r->summary_path[0] = 0;
	}
}

/* ---- the flow ---- */

int cmd_run(int argc, char **argv)
{
	struct run r = { 0 };
	struct gt_config env;
	const char *lib = getenv("GPUTRACE_LIB");
	char **cmd_env;
	int err, checked = -1;

	parse_options(&r, argc, argv);
	if (!lib || !*lib) {
		fprintf(stderr, WHO ": GPUTRACE_LIB is not set: run gputrace run through the "
			"gputrace command\n");
		return 1;
	}
	/* a malformed check stops here, before CMD runs */
	if ((r.nchecks || r.checks_file) && check(&r, true))
		return 2;
	read_env(&r, &env);
	env_defaults(&r, &env);
	plan_outputs(&r);
	make_folders(&r);
	cmd_env = command_env(&r, lib);

	if ((err = sup__init(&r.sup))) {
		fprintf(stderr, WHO ": cannot supervise the command: %s\n", strerror(-err));
		return 1;
	}
	err = sup__spawn(&r.sup, r.cmd, cmd_env);
	if (err) {
		/* as a shell says it: 127 not found, 126 found but not runnable */
		fprintf(stderr, WHO ": %s: %s\n", r.cmd[0],
			err == -ENOENT ? "not found" : strerror(-err));
		if (r.parts_made)
			rmdir(r.parts);
		remove_state(&r);
		return err == -ENOENT ? 127 : 126;
	}
	sup__wait_command(&r.sup);
	wait_for_stragglers(&r);

	collect_traces(&r);
	if (!r.per_process && (err = make_trace(&r))) {
		fprintf(stderr, WHO ": could not make %s%s%s; the traces of the run are in %s "
			"(gputrace merge -o %s %s/*.json)\n", r.out, err == -EIO ? "" : ": ",
			err == -EIO ? "" : strerror(-err), r.parts, r.out, r.parts);
	} else {
		remove_parts(&r);
	}
	summarize(&r);
	/*
	 * Here the run is over and all of it is on disk: r.trace is its trace
	 * ("" if nothing was recorded; r.traces with -o %p), r.summary_path its
	 * summary JSON and r.sum the summary itself.
	 */
	if (r.nchecks || r.checks_file) {
		if (!r.summary_path[0])
			fprintf(stderr, WHO ": run --check: no summary was written; the checks "
				"cannot be evaluated\n");
		checked = r.summary_path[0] ? check(&r, false) : 2;
	}
	summary__free(r.sum);
	remove_state(&r);
	/* CMD's failure is the run's; else the checks': 3 failed, 4 not evaluable */
	if (checked >= 0 && WIFEXITED(r.sup.status) && !WEXITSTATUS(r.sup.status))
		exit(checked == 0 ? 0 : checked == 1 ? 3 : 4);
	sup__exit_as(r.sup.status);
}
