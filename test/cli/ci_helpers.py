"""Helpers of the CI command tests (check, diff, report): runs of
test/cli/ci_app on the simulated Level Zero device under `gputrace run`,
and the summary JSON they leave."""
import json
import pathlib

from cli_helpers import CLI, gputrace, gt_env
from conftest import need, sim_env

CI_APP = CLI / "ci_app"


def ci_env(extra=None):
    e = gt_env(sim_env())
    if extra:
        e.update(extra)
    return e


def traced(tmp_path, name, *args, opts=(), env=None):
    """ci_app ARGS under `gputrace run`: (trace path, summary JSON path, summary)."""
    need(CI_APP)
    trace = pathlib.Path(tmp_path) / f"{name}.json"
    summary = pathlib.Path(tmp_path) / f"{name}.summary.json"
    p = gputrace(["run", "-o", trace, "--summary-json", summary, "--no-summary", *opts, "--",
                  CI_APP, *[str(a) for a in args]], tmp_path, env=ci_env(env))
    assert p.returncode == 0, p.stderr.decode()
    return trace, summary, json.loads(summary.read_text())


def gt(args, cwd, **kw):
    """scripts/gputrace ARGS with this build, on the simulated device."""
    return gputrace(args, cwd, env=ci_env(), **kw)


def rows(summary, table, key="name"):
    return {r[key]: r for r in summary[table]}
