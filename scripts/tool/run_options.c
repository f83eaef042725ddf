// SPDX-License-Identifier: MIT
/*
 * gputrace run's options (checked before anything runs: a bad one exits 2,
 * with the library's own words for what is accepted, config__check), the
 * GPUTRACE_* settings of its environment (a bad one said once for the run
 * and left out, so the processes use the default quietly), and CMD's
 * environment: the settings, GPUTRACE_OUTPUT and GPUTRACE_RUN_STATE for
 * the processes, LD_PRELOAD with the library.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "buf.h"
#include "run.h"
#include "tool.h"

extern char **environ;

static const struct var_option {
	const char *name, *var;
	bool takes_value;
} var_options[] = {
#define RUN_OPT(name, var, value) { name, var, value },
	RUN_VAR_OPTIONS(RUN_OPT)
#undef RUN_OPT
};

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
		run__usage_error("%s '%s' is not valid: expected %s", opt, val,
			    accepted ? accepted : "another value");
}

/* --stacks, --stacks=DEPTH, --stacks DEPTH (a number, on or off as the next
 * word): what GPUTRACE_STACKS takes, 0 being off there as here. */
static void set_stacks(struct run *r, const char *val)
{
	const char *accepted = NULL;

	if (!val) {
		r->stacks = "on";
		return;
	}
	if (config__check("GPUTRACE_STACKS", val, &accepted))
		run__usage_error("--stacks DEPTH must be a number of frames from 1 to 64, on, or off "
				 "(or 0), not '%s'", val);
	r->stacks = val;
}

/* The word after --stacks is its value when it is one GPUTRACE_STACKS takes:
 * a number, on/off and their other spellings. "--stacks true -- ./app" ran
 * true (exit 0, a CI step passed with ./app never run) and "--stacks yes"
 * ran yes; a program named so is run after "--" ("--stacks -- true"). */
static bool stacks_word(const char *w)
{
	static const char *const words[] = { "on", "off", "yes", "no", "true", "false" };

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (!strcasecmp(w, words[i]))
			return true;
	return is_number(w);
}

/* The word after --lossless is its value when it looks like one
 * GPUTRACE_LOSSLESS takes (on/off and their other spellings, or the longest
 * wait in seconds, 2.5): the README's table gives the option those values,
 * and "--lossless=2.5" was refused ("takes no value") while "--lossless 2.5
 * -- ./app" ran a program named 2.5 (exit 127). A program named so is run
 * after "--", as for --stacks. */
static bool lossless_word(const char *w)
{
	size_t digits = strspn(w, "0123456789.");

	/* a decimal such as 2.5 or .5, not ./app (a program, as ever) */
	return stacks_word(w) || (w[0] && !w[digits] && strpbrk(w, "0123456789"));
}

/* stdout is CMD's: "-" made a file named "-" (as report -o - and summary
 * --json - write to stdout, a surprise); /dev/stdout is written once the run
 * is over, after CMD's own output. */
static void refuse_stdout_dash(const char *opt, const char *val, const char *expected,
			       const char *what)
{
	if (!strcmp(val, "-"))
		run__usage_error("%s - is not taken: CMD's stdout is its own; give a %s, or "
				 "/dev/stdout for %s once the run is over", opt, expected, what);
}

void run__parse_options(struct run *r, int argc, char **argv)
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
			/* a name too long for name is no option's: kept cut, as the
			 * refusal's words ("unknown option ''" named nothing) */
			if (strchr(a, '=') - a < (long)sizeof(name))
				name[strchr(a, '=') - a] = 0;
			val = strchr(a, '=') + 1;
		}
#define NEXT_VALUE()                                                                       \
	do {                                                                               \
		if (!val) {                                                                \
			/* "--" ends the options: it is no value */                        \
			if (i + 1 >= argc || !strcmp(argv[i + 1], "--"))                   \
				run__usage_error("option '%s' needs a value", name);            \
			val = argv[++i];                                                   \
		}                                                                          \
	} while (0)
#define NO_VALUE()                                                                         \
	do {                                                                               \
		if (val)                                                                   \
			run__usage_error("option '%s' takes no value", name);                   \
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
				run__usage_error("%s needs a file name template", name);
			refuse_stdout_dash(name, val, "file name template", "the trace");
			r->tmpl = val;
		} else if (!strcmp(name, "--per-process")) {
			NEXT_VALUE();
			if (!*val)
				run__usage_error("--per-process needs a folder");
			r->keep_dir = val;
		} else if (!strcmp(name, "--summary-json")) {
			NEXT_VALUE();
			if (!*val)
				run__usage_error("--summary-json needs a file name");
			refuse_stdout_dash(name, val, "file name", "the summary");
			r->summary_json = val;
		} else if (!strcmp(name, "--no-summary")) {
			NO_VALUE();
			r->no_summary = true;
		} else if (!strcmp(name, "--check")) {
			NEXT_VALUE();
			if (strchr(val, '\n'))
				run__usage_error("--check takes one check; give --check once per check");
			r->checks = realloc(r->checks, (r->nchecks + 1) * sizeof(*r->checks));
			if (!r->checks)
				exit(1);
			r->checks[r->nchecks++] = val;
		} else if (!strcmp(name, "--checks")) {
			NEXT_VALUE();
			if (access(val, R_OK))
				run__usage_error("--checks: cannot read '%s': %s", val, strerror(errno));
			r->checks_files = realloc(r->checks_files, (r->nchecks_files + 1) *
								       sizeof(*r->checks_files));
			r->checks_before = realloc(r->checks_before, (r->nchecks_files + 1) *
									 sizeof(*r->checks_before));
			if (!r->checks_files || !r->checks_before)
				exit(1);
			r->checks_before[r->nchecks_files] = r->nchecks;
			r->checks_files[r->nchecks_files++] = val;
		} else if (!strcmp(name, "--junit") || !strcmp(name, "--markdown")) {
			NEXT_VALUE();
			if (!*val)
				run__usage_error("%s needs a file name", name);
			refuse_stdout_dash(name, val, "file name", "the checks' report");
			*(name[2] == 'j' ? &r->junit : &r->markdown) = val;
		} else if (!strcmp(name, "--stacks")) {
			if (!val && i + 1 < argc && stacks_word(argv[i + 1]))
				val = argv[++i];
			set_stacks(r, val);
		} else {
			for (k = 0; k < NVAR_OPTIONS; k++)
				if (!strcmp(name, var_options[k].name))
					break;
			if (k == NVAR_OPTIONS)
				run__usage_error("unknown option '%s' for run", name);
			if (var_options[k].takes_value) {
				NEXT_VALUE();
				check_value(name, var_options[k].var, val);
				r->var_value[k] = val;
			} else if (!strcmp(name, "--lossless")) {
				/* --lossless, --lossless=SEC|on|off, --lossless SEC */
				if (!val && i + 1 < argc && lossless_word(argv[i + 1]))
					val = argv[++i];
				if (val)
					check_value(name, var_options[k].var, val);
				r->var_value[k] = val ? val : "1";
			} else {
				NO_VALUE();
				r->var_value[k] = "1";
			}
		}
#undef NEXT_VALUE
#undef NO_VALUE
	}
	if (i >= argc)
		run__usage_error("run: no command given (" WHO " run [options] -- CMD ARGS...)");
	if ((r->junit || r->markdown) && !r->nchecks && !r->nchecks_files)
		run__usage_error("--junit and --markdown report checks: give --check or --checks");
	r->cmd = argv + i;
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

/* The environment's GPUTRACE_STACKS turns stacks off (a valid value, read
 * as the library reads it). */
static bool env_stacks_off(void)
{
	const char *v = getenv("GPUTRACE_STACKS");
	struct gt_config *c;
	char *kv = NULL;
	bool off;

	if (!v || config__check("GPUTRACE_STACKS", v, NULL) ||
	    asprintf(&kv, "GPUTRACE_STACKS=%s", v) < 0)
		return false;
	c = calloc(1, sizeof(*c));
	if (c)
		config__parse(c, (char *[]){ kv, NULL });
	off = c && !c->stacks;
	free(c);
	free(kv);
	return off;
}

/* The processes' GPUTRACE_* settings, as the library will read them: the
 * environment's, where no option of the run replaces them, and the options'
 * (checked already). One parse, so every setting and what it implies (a
 * --stacks-all's depth) is decided where the library decides it. A bad value
 * or an unknown name in the environment is said here, once for the run. */
void run__read_env(struct run *r, struct gt_config *env)
{
	size_t n = 0, k = 0, first_own;
	char **mine;

	/* --stacks-all implies --stacks, which replaces the environment's
	 * GPUTRACE_STACKS, as an option replaces its variable: a depth there
	 * is kept, an off there is not (it recorded no stack, said nothing) */
	if (!r->stacks && option_value(r, "GPUTRACE_STACKS_ALL") && env_stacks_off())
		r->stacks = "on";
	while (environ[n])
		n++;
	mine = calloc(n + NVAR_OPTIONS + 2, sizeof(*mine));
	for (size_t i = 0; mine && i < n; i++) {
		const char *eq = strchr(environ[i], '=');
		char name[128];

		if (!eq || strncmp(environ[i], "GPUTRACE_", 9))
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)(eq - environ[i]), environ[i]);
		if (!overridden(r, name))
			mine[k++] = environ[i];
	}
	first_own = k;
	for (size_t i = 0; mine && i < NVAR_OPTIONS; i++)
		if (r->var_value[i] && asprintf(&mine[k], "%s=%s", var_options[i].var,
						r->var_value[i]) >= 0)
			k++;
	if (mine && r->stacks && asprintf(&mine[k], "GPUTRACE_STACKS=%s", r->stacks) >= 0)
		k++;
	if (mine)
		mine[k] = NULL;
	run__log_from = env;
	config__parse(env, mine);
	run__log_from = NULL;
	for (size_t i = first_own; mine && i < k; i++)
		free(mine[i]);
	free(mine);
	r->settings = env;
}

/* What the processes get for var: the run's option (checked before CMD ran), else
 * the environment's where the library takes it; NULL where it refuses it and uses
 * its default (a hint must never name a setting that was not in effect). */
static const char *setting(const struct run *r, const char *var)
{
	const char *v = option_value(r, var);

	if (v)
		return v;
	v = getenv(var);
	return v && !config__check(var, v, NULL) ? v : NULL;
}

/* The run's defaults from the environment, as the library reads them:
 * GPUTRACE_OUTPUT as -o, GPUTRACE_SUMMARY=0 as --no-summary,
 * GPUTRACE_SUMMARY_JSON as --summary-json, GPUTRACE_STACKS as --stacks. */
void run__env_defaults(struct run *r, const struct gt_config *env)
{
	if (!r->tmpl && getenv("GPUTRACE_OUTPUT") &&
	    !config__check("GPUTRACE_OUTPUT", getenv("GPUTRACE_OUTPUT"), NULL)) {
		r->tmpl = getenv("GPUTRACE_OUTPUT");
		r->tmpl_from_env = true;
	}
	if (!r->tmpl)
		r->tmpl = DEFAULT_OUTPUT;
	if (!env->summary)
		r->no_summary = true;
	if (!r->summary_json && env->summary_json[0]) {
		r->summary_json = getenv("GPUTRACE_SUMMARY_JSON");
		r->summary_json_from_env = true;
	}
	if (r->summary_json && config__check("GPUTRACE_SUMMARY_JSON", r->summary_json, NULL))
		run__usage_error("%s'%s' is not valid: %%-codes as in -o only",
				 r->summary_json_from_env ? "GPUTRACE_SUMMARY_JSON=" :
				 "--summary-json ", r->summary_json);
	if (!r->stacks && getenv("GPUTRACE_STACKS") && !config__check("GPUTRACE_STACKS",
								       getenv("GPUTRACE_STACKS"), NULL))
		r->stacks = getenv("GPUTRACE_STACKS");
	if (r->stacks && !strcmp(r->stacks, "on"))
		r->stacks = "16"; /* the default depth, spelled out for the processes */
	run__log_level = env->log_level; /* --log's, else the environment's */
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

/* A variable that asks for nothing in the settings the run read (stacks of
 * every call with stacks off: said once, by cmd_run): left out, so that the
 * processes do not say it again, each. */
static bool idle(const struct run *r, const char *name)
{
	return r->settings && !r->settings->stacks && !strcmp(name, "GPUTRACE_STACKS_ALL");
}

static char *var(const char *name, const char *value)
{
	struct buf b = { 0 };

	buf__printf(&b, "%s=%s", name, value);
	return b.p;
}

char **run__command_env(struct run *r, const char *lib)
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
			if (set_by_run(r, name) || refused(*e) || idle(r, name))
				continue;
		}
		env[k++] = *e;
	}
	for (size_t i = 0; i < NVAR_OPTIONS; i++)
		if (r->var_value[i] && !idle(r, var_options[i].var))
			env[k++] = var(var_options[i].var, r->var_value[i]);
	if (r->stacks)
		env[k++] = var("GPUTRACE_STACKS", r->stacks);
	env[k++] = var("GPUTRACE_OUTPUT", r->child_output);
	env[k++] = var("GPUTRACE_RUN_STATE", r->state);
	env[k++] = preload(lib);
	env[k] = NULL;
	return env;
}

bool run__flight_recorder(const struct run *r)
{
	const char *v = setting(r, "GPUTRACE_FLIGHT_RECORDER");

	return v && !config__check("GPUTRACE_FLIGHT_RECORDER", v, NULL);
}

unsigned long run__overflow_mb(const struct run *r)
{
	return r->settings->overflow_mb;
}

unsigned long run__buffer_kb(const struct run *r)
{
	return r->settings->buffer_kb;
}

const char *run__setting(const struct run *r, const char *var)
{
	return setting(r, var);
}

bool run__setting_is_option(const struct run *r, const char *var)
{
	return option_value(r, var) != NULL;
}
