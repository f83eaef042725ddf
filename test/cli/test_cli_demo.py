"""make demo (test/demo.sh), the README's first command: it traces the sample Level Zero
program on the simulated device and says where the trace is, with no warning of its own."""
import json
import os
import subprocess

from conftest import BUILD, ROOT, ZE_SIM, gputrace_env, need


def test_demo_says_where_its_trace_is_and_warns_of_nothing(tmp_path):
    need(ZE_SIM)
    need(BUILD / "test" / "apps" / "ze_basic")
    out = tmp_path / "demo"
    # GPUTRACE_DEMO_OUT is the demo's own setting: it reached the traced program, whose
    # library said "unknown variable GPUTRACE_DEMO_OUT" in the middle of the demo
    p = subprocess.run(["sh", str(ROOT / "test" / "demo.sh"), os.path.relpath(BUILD, ROOT)],
                       env=gputrace_env({"GPUTRACE_DEMO_OUT": str(out)}), capture_output=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    err, stdout = p.stderr.decode(), p.stdout.decode()
    assert "unknown variable" not in err and "is not valid" not in err, err
    traces = list(out.glob("demo-ze_basic-*.json"))
    assert len(traces) == 1
    assert f"== wrote {traces[0]} (" in stdout
    assert json.loads(traces[0].read_text())["gputrace"]["events_lost"] == 0
