// SPDX-License-Identifier: MIT
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "json.h"
#include "trace.h"

volatile sig_atomic_t trace__stop_signal;

static void take_stop(int sig)
{
	trace__stop_signal = sig;
}

void trace__catch_stop(void)
{
	static const int stops[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
	struct sigaction sa = { .sa_handler = take_stop };
	sigset_t set;

	sigemptyset(&set);
	for (size_t i = 0; i < sizeof(stops) / sizeof(stops[0]); i++) {
		struct sigaction cur;

		/* ignored as we were started (nohup): it stays so */
		if (sigaction(stops[i], NULL, &cur) || (!(cur.sa_flags & SA_SIGINFO) &&
							cur.sa_handler == SIG_IGN))
			continue;
		sigaction(stops[i], &sa, NULL);
		sigaddset(&set, stops[i]);
	}
	sigprocmask(SIG_UNBLOCK, &set, NULL);
}

const char *trace__stop_name(void)
{
	switch (trace__stop_signal) {
	case SIGINT: return "SIGINT";
	case SIGTERM: return "SIGTERM";
	case SIGHUP: return "SIGHUP";
	case SIGQUIT: return "SIGQUIT";
	}
	return "a signal";
}

void trace__die_by(int sig)
{
	struct rlimit no_core = { 0, 0 };
	sigset_t set;

	fflush(NULL);
	/* a core (SIGQUIT's, or a command's crash gputrace run passes on) would
	 * be ours: none */
	setrlimit(RLIMIT_CORE, &no_core);
	signal(sig, SIG_DFL);
	/* blocked where gputrace run's supervisor reads it from its signalfd */
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
	exit(128 + sig);
}

/* The elements of an array whose '[' is next; events counted into *n. */
static int scan_events(struct jr *r, const struct trace_ops *ops, struct buf *ev, uint64_t *n)
{
	int c;

	jr_take(r); /* '[' */
	if (jr_peek(r) == ']') {
		jr_take(r);
		return 0;
	}
	for (;;) {
		if (trace__stop_signal)
			return jr_fail(r, "interrupted");
		buf__reset(ev);
		if (jr_value(r, ev))
			return -1;
		if (ops->event && ops->event(ops->ctx, ev->p, ev->p + ev->len))
			return jr_fail(r, "stopped");
		(*n)++;
		c = jr_peek(r);
		jr_take(r);
		if (c == ']')
			return 0;
		if (c != ',')
			return jr_fail(r, c < 0 ? "unexpected end of input (truncated file?)"
						: "',' or ']' expected in traceEvents");
	}
}

/* The members of a "gputrace" object cut short ([v, e): its bytes up to the
 * cut) that were read whole, as an object in out; false when none was. A
 * member cut inside is left out rather than guessed: a number at the cut may
 * have lost digits, so a scalar counts only with a byte after it. */
static bool whole_members(const char *v, const char *e, struct buf *out)
{
	struct jv_iter it;
	struct jv_member m;
	bool any = false;

	buf__reset(out);
	if (!jv_iter_init(&it, v, e))
		return false;
	buf__addc(out, '{');
	while (jv_iter_next(&it, &m)) {
		if (m.e == e && *m.v != '{' && *m.v != '[' && *m.v != '"')
			break;
		if (any)
			buf__addc(out, ',');
		buf__add(out, m.key - 1, (size_t)(m.v - (m.key - 1)));
		buf__add(out, m.v, (size_t)(m.e - m.v));
		any = true;
	}
	buf__addc(out, '}');
	return any;
}

int trace__scan(const char *who, const char *path, const struct trace_ops *ops)
{
	struct jr r;
	struct buf key = { 0 }, val = { 0 };
	uint64_t nev = 0;
	bool in_events = false, seen_events = false, summary_json = false, in_meta = false;
	bool report = false;
	int c, ret = TRACE_OK, err;

	err = jr_open(&r, path);
	if (err) {
		fprintf(stderr, "%s: cannot open %s: %s\n", who, path, jr_strerror(err));
		return TRACE_ERROR;
	}
	c = jr_peek(&r);
	if (c == '[') {
		/* The bare array form of the format. */
		in_events = seen_events = true;
		if (scan_events(&r, ops, &val, &nev))
			goto fail;
		goto done;
	}
	if (c != '{') {
		jr_fail(&r, c < 0 ? "empty file" : "'{' or '[' expected");
		goto fail;
	}
	jr_take(&r);
	if (jr_peek(&r) == '}') {
		jr_take(&r);
		goto done;
	}
	for (;;) {
		buf__reset(&key);
		/* the end of input between members is a cut too (see fail:) */
		c = jr_peek(&r);
		if (c != '"') {
			jr_fail(&r, c < 0 ? "unexpected end of input (truncated file?)"
					  : "member name expected");
			goto fail;
		}
		if (jr_value(&r, &key))
			goto fail;
		c = jr_peek(&r);
		if (c != ':') {
			jr_fail(&r, c < 0 ? "unexpected end of input (truncated file?)" : "':' expected");
			goto fail;
		}
		jr_take(&r);
		if (!strcmp(key.p, "\"traceEvents\"") && jr_peek(&r) != '[') {
			jr_fail(&r, "traceEvents is not an array");
			goto fail;
		}
		if (!strcmp(key.p, "\"traceEvents\"")) {
			in_events = seen_events = true;
			if (scan_events(&r, ops, &val, &nev))
				goto fail;
			in_events = false;
		} else if (!strcmp(key.p, "\"gputrace\"")) {
			buf__reset(&val);
			in_meta = true;
			if (jr_value(&r, &val))
				goto fail;
			in_meta = false;
			if (ops->meta && ops->meta(ops->ctx, val.p, val.p + val.len)) {
				jr_fail(&r, "stopped");
				goto fail;
			}
		} else if (!strcmp(key.p, "\"distributedInfo\"") && ops->dist) {
			buf__reset(&val);
			if (jr_value(&r, &val))
				goto fail;
			ops->dist(ops->ctx, val.p, val.p + val.len);
		} else if (!strcmp(key.p, "\"gputrace_watchdog\"") && !seen_events) {
			report = true;
			break;
		} else if (!strcmp(key.p, "\"schema\"")) {
			/* a summary JSON given for its trace: say so, not just "no events" */
			buf__reset(&val);
			if (jr_value(&r, &val))
				goto fail;
			summary_json = !strcmp(val.p, "\"gputrace-summary\"");
		} else if (jr_value(&r, NULL)) {
			goto fail;
		}
		c = jr_peek(&r);
		jr_take(&r);
		if (c == '}')
			break;
		if (c != ',') {
			jr_fail(&r, c < 0 ? "unexpected end of input (truncated file?)"
					  : "',' or '}' expected");
			goto fail;
		}
	}
done:
	/* an empty trace has "traceEvents":[]; a JSON without it is something else */
	if (report) {
		fprintf(stderr, "%s: %s: a gputrace watchdog report, not a trace%s\n", who, path,
			ops->skip_reports ? ": skipped" : " (its trace is beside it)");
		ret = ops->skip_reports ? TRACE_SKIPPED : TRACE_ERROR;
	} else if (!seen_events) {
		if (summary_json)
			fprintf(stderr, "%s: %s: a gputrace summary JSON, not a trace (give the trace "
					"it summarizes; check and diff read summary JSONs)\n", who, path);
		else
			fprintf(stderr, "%s: %s: not a readable trace: no traceEvents array\n", who,
				path);
		ret = TRACE_ERROR;
	}
	goto out;
fail:
	if (trace__stop_signal) { /* the caller says it, once */
		ret = TRACE_ERROR;
		goto out;
	}
	/* A process that died mid-write: keep what is complete, wherever the cut
	 * came once the events began (in the trailer too: then they all are). */
	if (seen_events && (!in_events || nev > 0) && strstr(r.err, "end of input")) {
		struct buf whole = { 0 };

		/* the trailer's members read whole are its lost counts, pid, anchor... */
		if (in_meta && ops->meta && whole_members(val.p, val.p + val.len, &whole))
			ops->meta(ops->ctx, whole.p, whole.p + whole.len);
		buf__free(&whole);
		if (!ops->quiet)
			fprintf(stderr, "%s: %s: truncated after %" PRIu64 " event%s (%s); using %s\n",
				who, path, nev, nev == 1 ? "" : "s", r.err, nev == 1 ? "it" : "those");
		ret = TRACE_TRUNCATED;
	} else {
		fprintf(stderr, "%s: %s: not a readable trace: %s\n", who, path, r.err);
		ret = TRACE_ERROR;
	}
out:
	jr_close(&r);
	buf__free(&key);
	buf__free(&val);
	return ret;
}
