"""README "In CI": the GitHub Actions job's shell steps, run as written (the
program is test/cli/ci_app on the simulated device, the main branch's
baseline a summary of an earlier identical run): the checks pass, the
report and every file the job keeps as an artifact are there, and the diff
against the baseline breaks no rule."""
import json
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET

from ci_helpers import CI_APP, ci_env, traced
from conftest import ROOT


def github_steps():
    readme = (ROOT / "README.md").read_text()
    ci = readme[readme.index("## In CI"):]
    block = re.search(r"```yaml\n(.*?)```", ci, re.S).group(1)
    steps, cur = [], None
    for line in block.splitlines():
        if line.strip().startswith("- name:") or line.strip().startswith("- uses:"):
            cur = {"name": line.split(":", 1)[1].strip(), "run": []}
            steps.append(cur)
        elif cur is not None and line.strip().startswith("run:"):
            rest = line.split("run:", 1)[1].strip()
            cur["indent"] = len(line) - len(line.lstrip()) + 2
            if rest != "|":
                cur["run"].append(rest)
        elif cur is not None and "indent" in cur and line.startswith(" " * cur["indent"]):
            cur["run"].append(line[cur["indent"]:])
        elif cur is not None and "indent" in cur and line.strip():
            del cur["indent"]
    return {s["name"]: "\n".join(s["run"]) for s in steps if s["run"]}


def test_the_github_job_runs_as_written(tmp_path):
    steps = github_steps()
    assert set(steps) >= {"Run with checks", "HTML report", "Compare with main", "Job summary"}
    env = ci_env({"PATH": f"{ROOT / 'scripts'}:{os.environ['PATH']}",
                  "GITHUB_STEP_SUMMARY": str(tmp_path / "step_summary.md")})
    work = tmp_path / "job"
    (work / "build").mkdir(parents=True)
    shutil.copy(CI_APP, work / "build" / "app")
    run = steps["Run with checks"].replace("./build/app --smoke", "./build/app 10 64")
    p = subprocess.run(["sh", "-ec", run], cwd=work, env=env, capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    assert "PASS device.kernels >= 1: 20" in p.stderr.decode()
    p = subprocess.run(["sh", "-ec", steps["HTML report"]], cwd=work, env=env,
                       capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode()

    # main's last artifact: the summary of an earlier run of the same job
    _, base, _ = traced(tmp_path, "main", 10, 64)
    (work / "baseline").mkdir()
    shutil.copy(base, work / "baseline" / "summary.json")
    compare = steps["Compare with main"]
    compare = re.sub(r"id=\$\(gh run list.*?\)\n", "id=1\n", compare, flags=re.S)
    compare = compare.replace('gh run download "$id" -n gpu-profile -D baseline', "true")
    p = subprocess.run(["sh", "-ec", compare], cwd=work, env=env, capture_output=True,
                       timeout=120)
    assert p.returncode == 0, p.stdout.decode() + p.stderr.decode()
    assert p.stdout.decode().splitlines()[-1] == "gputrace diff: 0 of 3 rules broken"
    p = subprocess.run(["sh", "-ec", steps["Job summary"]], cwd=work, env=env,
                       capture_output=True, timeout=60)
    assert p.returncode == 0
    page = (tmp_path / "step_summary.md").read_text()
    assert page.startswith("### gputrace checks: 3 passed, 0 failed")
    assert "### gputrace diff: ✅ 3 rules hold" in page

    for artifact in ("trace.json.gz", "summary.json", "report.html", "checks.xml", "diff.xml"):
        assert (work / artifact).stat().st_size > 0, artifact
    assert json.loads((work / "summary.json").read_text())["totals"]["kernels"]["count"] == 20
    assert ET.parse(work / "checks.xml").getroot().find("testsuite").get("failures") == "0"
