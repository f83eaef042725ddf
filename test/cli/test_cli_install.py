"""`make install PREFIX=...`: the installed command finds its library in
$PREFIX/lib and its tool in $PREFIX/libexec/gputrace, also when run by
name through PATH, with nothing else set."""
import json
import os
import subprocess

from cli_helpers import LIB, PLUGIN_DIR, gputrace, load_exact
from conftest import BUILD, ROOT, SAN_PRELOAD, SANITIZE, clean_env, need


def test_installed_command_works(tmp_path):
    prefix = tmp_path / "prefix"
    args = ["make", "-s", "-C", str(ROOT), "install", f"PREFIX={prefix}", f"BUILD={BUILD}"]
    if SANITIZE:
        args.append(f"SANITIZE={SANITIZE}")
    p = subprocess.run(args, capture_output=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    bin_ = prefix / "bin" / "gputrace"
    for f in (bin_, prefix / "lib" / "libgputrace.so",
              prefix / "libexec" / "gputrace" / "gputrace-tool"):
        assert os.access(f, os.X_OK), f
    schema = prefix / "share" / "gputrace" / "summary.schema.json"
    assert schema.read_bytes() == (ROOT / "scripts" / "summary.schema.json").read_bytes()

    need(PLUGIN_DIR / "libclitest.so")
    env = clean_env({"PATH": f"{prefix / 'bin'}:{os.environ['PATH']}",
                     "GPUTRACE_PLUGIN_CONFIG": "clitest:2"})
    if SAN_PRELOAD:
        env["LD_PRELOAD"] = " ".join(SAN_PRELOAD)
    work = tmp_path / "work"
    work.mkdir()
    run = subprocess.run(["gputrace", "run", "--no-summary", "-o", "t.json", "--plugin-path",
                          str(PLUGIN_DIR), "--", "sh", "-c", 'echo "$LD_PRELOAD"'],
                         cwd=work, env=env, capture_output=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.decode().split()[-1] == str(prefix / "lib" / "libgputrace.so")
    trace = load_exact(work / "t.json")
    assert len([e for e in trace["traceEvents"] if e.get("name") == "cli_kernel"]) == 2
    s = subprocess.run(["gputrace", "summary", "--json", "-", "t.json"], cwd=work, env=env,
                       capture_output=True, timeout=60)
    assert s.returncode == 0, s.stderr
    assert json.loads(s.stdout)["totals"]["kernels"]["count"] == 2
    m = subprocess.run(["gputrace", "merge", "-o", "m.json", "t.json"], cwd=work, env=env,
                       capture_output=True, timeout=60)
    assert m.returncode == 0, m.stderr
    assert load_exact(work / "m.json")["gputrace"]["merged"] is True
