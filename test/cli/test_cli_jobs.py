"""gputrace run on ordinary jobs: a shell pipeline, make -j on a small
generated project, a pyenv-like chain of shell wrappers. Each run leaves one
trace holding exactly the processes that used the (simulated) GPU, merged on
one timeline, one summary covering all of them, and nothing else: no file of
the shells, compilers and wrappers around them, no parts folder, no state
left in TMPDIR. The program's output and exit status are its own."""
import json
import os
import pathlib
import re
import shutil
import subprocess

import pytest

from cli_helpers import (PLUGIN_DIR, SPAWN, check_summary_json, expected_summary, gputrace,
                         gt_env, load_exact, plugin_env, trace_files)
from conftest import APPS, ZE_SIM, clean_env, gputrace_lines, need, sim_env, strip_gputrace

HAVE_ZE = pathlib.Path("/usr/include/level_zero/ze_api.h").exists()
needs_ze = pytest.mark.skipif(not HAVE_ZE, reason="built without Level Zero headers")
ZE_BASIC, ZE_DLOPEN = APPS / "ze_basic", APPS / "ze_dlopen"


def run_env(tmp_path, extra=None):
    """The Level Zero simulator, and TMPDIR in tmp_path (the run's state
    folder must be gone at the end)."""
    e = gt_env(sim_env({"TMPDIR": str(tmp_path / "tmp")}))
    (tmp_path / "tmp").mkdir(exist_ok=True)
    if extra:
        e.update(extra)
    return e


def summary_blocks(stderr):
    return [l for l in stderr.decode().splitlines() if l.startswith("gputrace summary: ")]


def check_clean(tmp_path, expected):
    """Only the files the job and the run made: nothing from helper processes."""
    assert sorted(f.name for f in tmp_path.iterdir()) == sorted(expected + ["tmp"])
    assert list((tmp_path / "tmp").iterdir()) == [], "the run's state folder is left"


def run_trace(tmp_path, pattern=r"gputrace-sh-\d{8}T\d{6}Z\.json"):
    files = [f for f in trace_files(tmp_path) if re.fullmatch(pattern, f.name)]
    assert len(files) == 1, trace_files(tmp_path)
    return files[0]


def processes(summary):
    return sorted((p["exe"], p["pid"]) for p in summary["processes"])


@needs_ze
@pytest.mark.sanitize
def test_shell_pipeline(tmp_path):
    need(ZE_BASIC)
    need(ZE_SIM)
    job = f"{ZE_BASIC} | grep -c ok | cat > count.txt; {ZE_DLOPEN} | tail -n 1; exit 3"
    plain = subprocess.run(["sh", "-c", job], cwd=tmp_path, env=clean_env(sim_env()),
                           capture_output=True, timeout=60)
    os.unlink(tmp_path / "count.txt")
    p = gputrace(["run", "--summary-json", "s.json", "--", "sh", "-c", job], tmp_path,
                 env=run_env(tmp_path))
    assert (p.returncode, p.stdout) == (plain.returncode, plain.stdout) == (3, b"ze_dlopen: ok\n")
    assert strip_gputrace(p.stderr) == plain.stderr.decode()
    assert (tmp_path / "count.txt").read_text() == "5\n"  # the lines with "ok"
    out = run_trace(tmp_path)
    check_clean(tmp_path, [out.name, "s.json", "count.txt"])
    # one summary on stderr, of the two programs that used the GPU
    assert summary_blocks(p.stderr) == [f"gputrace summary: {out}"]
    trace = load_exact(out)
    assert trace["gputrace"]["merged"] is True
    assert sorted(os.path.basename(i["gputrace"]["exe"]) for i in trace["gputrace"]["inputs"]) \
        == ["ze_basic", "ze_dlopen"]
    s = json.loads((tmp_path / "s.json").read_text())
    assert [e for e, _ in processes(s)] == ["ze_basic", "ze_dlopen"]
    assert s["trace"]["path"] == str(out)
    check_summary_json(s, expected_summary(trace))
    # both processes used the GPU; merged, each has its own row of it
    # ("host [pid N] GPU 0: ..."), and each process's devices are its own row
    assert s["totals"]["kernels"]["count"] == 7 + 1
    rows = {d["name"]: d["spans"] for d in s["devices"]}
    for proc in s["processes"]:
        (dev,) = proc["devices"]
        assert f"[pid {proc['pid']}] GPU 0" in dev["name"]
        assert dev["spans"] == rows[dev["name"]]
    assert len(rows) == 2
    assert "processes: 2" in p.stderr.decode()


MAKEFILE = """\
OBJS = a.o b.o c.o d.o main.o
app: $(OBJS) gpu.stamp
\t$(CC) -o $@ $(OBJS)
gpu.stamp:
\t{ze} > $@
%.o: %.c
\t$(CC) -c -o $@ $<
fail:
\t$(CC) -c -o broken.o broken.c
"""


def make_project(d):
    for name in "abcd":
        (d / f"{name}.c").write_text(f"int {name}(void) {{ return {ord(name)}; }}\n")
    (d / "main.c").write_text("int a(void), b(void), c(void), d(void);\n"
                              "int main(void) { return a() + b() + c() + d() - 394; }\n")
    (d / "broken.c").write_text("this is not C\n")
    (d / "Makefile").write_text(MAKEFILE.format(ze=ZE_BASIC))


@needs_ze
def test_make_j_on_a_small_project(tmp_path):
    need(ZE_BASIC)
    make_project(tmp_path)
    sources = sorted(f.name for f in tmp_path.iterdir())
    p = gputrace(["run", "-o", "build.json", "--summary-json", "s.json", "--", "make", "-j2"],
                 tmp_path, env=run_env(tmp_path))
    assert p.returncode == 0, p.stderr
    assert subprocess.run([tmp_path / "app"]).returncode == 0
    built = ["a.o", "b.o", "c.o", "d.o", "main.o", "app", "gpu.stamp"]
    # make, its shells, cc, cc1, as, collect2, ld: none of them left a file
    check_clean(tmp_path, sources + built + ["build.json", "s.json"])
    s = json.loads((tmp_path / "s.json").read_text())
    assert [e for e, _ in processes(s)] == ["ze_basic"]
    trace = load_exact(tmp_path / "build.json")
    # one process recorded: its own trace is the run's (moved, not copied)
    assert os.path.basename(trace["gputrace"]["exe"]) == "ze_basic"
    check_summary_json(s, expected_summary(trace))
    assert len(summary_blocks(p.stderr)) == 1

    # a failed build: make's status, and the (empty) run says so in one line
    p = gputrace(["run", "--", "make", "-j2", "fail"], tmp_path, env=run_env(tmp_path))
    assert p.returncode == 2
    assert "broken.c" in strip_gputrace(p.stderr)
    assert gputrace_lines(p.stderr) == [
        "gputrace: no process of the run recorded anything (no GPU API call gputrace "
        "knows): no trace written"]
    assert list((tmp_path / "tmp").iterdir()) == []


def pyenv_tree(root, program):
    """shims/python3 -> libexec/pyenv exec python3 -> versions/3.12/bin/python3,
    each a bash script reading its environment with readlink, dirname,
    basename and cat, as pyenv does."""
    (root / "shims").mkdir(parents=True)
    (root / "libexec").mkdir()
    (root / "versions" / "3.12" / "bin").mkdir(parents=True)
    (root / "version").write_text("3.12\n")
    shim = root / "shims" / "python3"
    shim.write_text('#!/bin/bash\nset -e\nprogram="${0##*/}"\n'
                    'export PYENV_ROOT="$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)"\n'
                    'exec "$PYENV_ROOT/libexec/pyenv" exec "$program" "$@"\n')
    pyenv = root / "libexec" / "pyenv"
    pyenv.write_text('#!/bin/bash\nset -e\n[ "$1" = exec ] && shift\nname=$(basename "$1")\n'
                     'shift\nversion=$(cat "$PYENV_ROOT/version")\n'
                     'bin="$(dirname "$(readlink -f "$PYENV_ROOT/versions/$version/bin/$name")")"\n'
                     'exec "$bin/$name" "$@"\n')
    shutil.copy(program, root / "versions" / "3.12" / "bin" / "python3")
    for f in (shim, pyenv):
        f.chmod(0o755)
    return root / "shims"


@needs_ze
@pytest.mark.sanitize
def test_pyenv_like_chain_of_wrappers(tmp_path):
    need(ZE_BASIC)
    shims = pyenv_tree(tmp_path / "pyenv", ZE_BASIC)
    work = tmp_path / "work"
    work.mkdir()
    env = run_env(tmp_path, {"PATH": f"{shims}:{os.environ['PATH']}"})
    plain = subprocess.run(["python3"], cwd=work, env=clean_env(
        {**sim_env(), "PATH": env["PATH"]}), capture_output=True, timeout=60)
    p = gputrace(["run", "--summary-json", "s.json", "--", "python3"], work,
                 env=env)
    assert (p.returncode, p.stdout) == (plain.returncode, plain.stdout) == \
        (0, ZE_BASIC_OUT)
    # bash twice, readlink, dirname, basename, cat: none of them left anything
    out = run_trace(work, r"gputrace-python3-\d{8}T\d{6}Z\.json")
    assert sorted(f.name for f in work.iterdir()) == sorted([out.name, "s.json"])
    assert list((tmp_path / "tmp").iterdir()) == []
    s = json.loads((work / "s.json").read_text())
    assert [e for e, _ in processes(s)] == ["python3"]
    assert s["totals"]["kernels"]["count"] == 7
    check_summary_json(s, expected_summary(load_exact(out)))


ZE_BASIC_OUT = (b"device: gputrace simulated GPU\n"
                b"list: copy HtoD, vector_add 4x1x1 groups of 64x1x1, fill 32768 bytes, barrier,"
                b" scale 8x2x1 groups of 32x1x1, copy DtoH\n"
                b"iteration 0: 65536 bytes checksum 78f9845180d82325 ok\n"
                b"iteration 1: 65536 bytes checksum 487ef771b1faa325 ok\n"
                b"iteration 2: 65536 bytes checksum 9e1317ec0672a325 ok\n"
                b"immediate: imm_kernel 2x1x1 groups of 16x1x1, copy 65536 bytes checksum "
                b"9e1317ec0672a325 ok\n"
                b"ze_basic: ok\n")


# --- per-process files, on request ------------------------------------------

def spawn_job(n):
    """A shell running `spawn leaf` n times: with GPUTRACE_PLUGIN_CONFIG
    clitest:3,exe=spawn only the leaves record (3 kernels each)."""
    return ["sh", "-c", "; ".join(f"{SPAWN} leaf {i}" for i in range(n))]


def run_plugin_job(tmp_path, *opts, n=2):
    need(PLUGIN_DIR / "libclitest.so")
    need(SPAWN)
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return gputrace(["run", "--plugin-path", PLUGIN_DIR, *opts, "--"] + spawn_job(n), tmp_path,
                    env=plugin_env("3,exe=spawn", {"TMPDIR": str(tmp_path / "tmp")}))


def test_per_process_folder_keeps_each_process_trace(tmp_path):
    p = run_plugin_job(tmp_path, "-o", "all.json.gz", "--per-process", "procs",
                       "--summary-json", "s.json", n=3)
    assert p.returncode == 0, p.stderr
    kept = trace_files(tmp_path / "procs")
    # the leaves only, named %e-%p, compressed as OUT is; the shell left none
    assert len(kept) == 3 and all(re.fullmatch(r"spawn-\d+\.json\.gz", f.name) for f in kept)
    merged = load_exact(tmp_path / "all.json.gz")
    assert sorted(i["path"] for i in merged["gputrace"]["inputs"]) == sorted(map(str, kept))
    assert len([e for e in merged["traceEvents"] if e.get("name") == "cli_kernel"]) == 9
    s = json.loads((tmp_path / "s.json").read_text())
    check_summary_json(s, expected_summary(merged))
    assert len(s["processes"]) == 3
    check_clean(tmp_path, ["all.json.gz", "procs", "s.json"])


def test_template_with_pid_gives_per_process_files_and_one_summary(tmp_path):
    # --summary-json is a template too: %e is the command's name
    p = run_plugin_job(tmp_path, "-o", "tr-%e-%p.json", "--summary-json", "s-%e.json", n=2)
    assert p.returncode == 0, p.stderr
    files = [f for f in trace_files(tmp_path) if f.name != "s-sh.json"]
    assert len(files) == 2 and all(re.fullmatch(r"tr-spawn-\d+\.json", f.name) for f in files)
    # one summary, of both files
    blocks = summary_blocks(p.stderr)
    assert blocks == [f"gputrace summary: 2 traces: {' '.join(map(str, files))}"] or \
        blocks == [f"gputrace summary: 2 traces: {' '.join(map(str, reversed(files)))}"]
    s = json.loads((tmp_path / "s-sh.json").read_text())
    assert s["trace"]["path"] is None
    assert s["totals"]["kernels"]["count"] == 6 and len(s["processes"]) == 2
    assert {p["pid"] for p in s["processes"]} == \
        {int(load_exact(f)["gputrace"]["pid"]) for f in files}
    check_clean(tmp_path, [f.name for f in files] + ["s-sh.json"])


# t.gz: t.1.gz, a .gz name still (it was t.gz.1 until 2026-12-07)
@pytest.mark.parametrize("name, taken", [("t.json", "t.1.json"), ("t.gz", "t.1.gz")])
def test_existing_output_is_never_overwritten(tmp_path, name, taken):
    (tmp_path / name).write_text("mine\n")
    p = run_plugin_job(tmp_path, "-o", name, "--no-summary", n=1)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / name).read_text() == "mine\n"
    assert gputrace_lines(p.stderr) == [
        f"gputrace: {tmp_path}/{name} exists: the trace is {tmp_path}/{taken}"]
    assert len([e for e in load_exact(tmp_path / taken)["traceEvents"]
                if e.get("name") == "cli_kernel"]) == 3


# --- a bad setting is said once per run -------------------------------------

def test_bad_setting_said_once_per_run(tmp_path):
    p = run_plugin_job(tmp_path, "--no-summary", n=3)
    assert p.returncode == 0
    env = plugin_env("3,exe=spawn", {"TMPDIR": str(tmp_path / "tmp"),
                                     "GPUTRACE_BACKENDS": "opencl", "GPUTRACE_COLOUR": "1"})
    p = gputrace(["run", "-o", "t.json", "--no-summary", "--plugin-path", PLUGIN_DIR, "--"] +
                 spawn_job(3), tmp_path, env=env)
    assert p.returncode == 0, p.stderr
    lines = gputrace_lines(p.stderr)
    # 4 processes (the shell and 3 leaves), one line each for the run
    assert len([l for l in lines if "GPUTRACE_BACKENDS='opencl'" in l]) == 1, lines
    assert len([l for l in lines if "GPUTRACE_COLOUR" in l]) == 1, lines
    assert len(lines) == 2, lines
    # the processes ran with the default (all backends): the plug-in recorded
    assert len([e for e in load_exact(tmp_path / "t.json")["traceEvents"]
                if e.get("name") == "cli_kernel"]) == 9


def test_broken_plugin_said_once_per_run(tmp_path):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    shutil.copy(PLUGIN_DIR / "libclitest.so", plugins)
    (plugins / "text.so").write_text("not an ELF file\n")
    (tmp_path / "tmp").mkdir()
    p = gputrace(["run", "-o", "t.json", "--no-summary", "--plugin-path", plugins, "--"] +
                 spawn_job(3), tmp_path,
                 env=plugin_env("3,exe=spawn", {"TMPDIR": str(tmp_path / "tmp")}))
    assert p.returncode == 0, p.stderr
    lines = gputrace_lines(p.stderr)
    # every one of the 4 processes loads the plug-ins; the run says it once
    assert len([l for l in lines if "text.so" in l]) == 1, lines


@needs_ze
def test_a_process_that_cannot_list_its_trace_is_in_the_run(tmp_path):
    # ci_app's nofile=1 leaves one descriptor after its setup: the trace
    # takes it, and the open of the run's list fails (EMFILE). The run said
    # "no process of the run recorded anything" and left the trace in
    # t.json.parts/; now the library names its trace in one line, and the
    # run takes the unlisted file of its own parts folder.
    from ci_helpers import CI_APP
    need(CI_APP)
    out, sj = tmp_path / "t.json", tmp_path / "s.json"
    p = gputrace(["run", "--no-summary", "--summary-json", sj, "-o", out, "--", CI_APP,
                  "2", "64", "0", "1"], tmp_path, env=run_env(tmp_path))
    assert p.returncode == 0, p.stderr.decode()
    assert p.stdout == b"ci_app: 2 steps, gemm_f32 64 groups: ok\n"
    lines = gputrace_lines(p.stderr)
    assert len(lines) == 1, lines
    assert re.fullmatch(r"gputrace: cannot list this process's trace with gputrace run "
                        rf"\({tmp_path}/tmp/gputrace-run-\w+/traces: Too many open files\); "
                        rf"the trace is {out}\.parts/ci_app-\d+\.json", lines[0]), lines[0]
    check_clean(tmp_path, ["t.json", "s.json"])
    kernels = [e["name"] for e in load_exact(out)["traceEvents"] if e.get("cat") == "kernel"]
    assert sorted(kernels) == ["bias_add"] * 2 + ["gemm_f32"] * 2
    assert json.loads(sj.read_text())["totals"]["kernels"]["count"] == 4
