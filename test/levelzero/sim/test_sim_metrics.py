"""The simulated device's metrics (zet) and Sysman (zes), checked without the tracer
against the contract in test/levelzero/sim/README.md ("Metrics", "Sysman")."""
import pathlib
import re

import pytest

from conftest import BUILD, ZE_SIM, need, run, sim_env

PROBE = BUILD / "test" / "levelzero" / "sim" / "sim_metrics_probe"
UNINITIALIZED, INVALID_ARGUMENT, IN_USE = 0x78000001, 0x78000004, 0x78000006

if not pathlib.Path("/usr/include/level_zero/ze_api.h").exists():
    pytest.skip("Level Zero headers (libze-dev) not installed: ze_sim is not built",
                allow_module_level=True)


def probe(env=None):
    for p in (ZE_SIM, PROBE):
        need(p)
    r = run([PROBE], traced=False, env=sim_env(env))
    assert r.returncode == 0, (r.stdout, r.stderr)
    return dict(re.findall(r"(\w+)=(\S+)", r.stdout.decode()))


def test_refused_without_the_environment():
    """As a driver does: no ZET_ENABLE_METRICS / ZES_ENABLE_SYSMAN before zeInit, no
    metrics and no Sysman."""
    out = probe()
    assert int(out["metrics"], 16) == UNINITIALIZED and out["groups"] == "0"
    assert int(out["sysman"], 16) == UNINITIALIZED and out["domains"] == "0"
    assert "probe" not in out


def test_contract_with_the_environment():
    out = probe({"ZET_ENABLE_METRICS": "1", "ZES_ENABLE_SYSMAN": "1"})
    assert out["sysman"] == "0x0" and out["domains"] == "1"
    assert out["metrics"] == "0x0" and out["groups"] == "2"
    # one group per domain, groups active before use, query pools only of event-based groups
    assert int(out["activate_same_domain"], 16) == INVALID_ARGUMENT
    assert int(out["streamer_inactive"], 16) == INVALID_ARGUMENT
    assert int(out["query_pool_time_only"], 16) == INVALID_ARGUMENT
    assert int(out["query_pool_time_only_active"], 16) == INVALID_ARGUMENT
    assert out["streamer_period"] == "10000"  # [in,out]: the minimum period
    assert int(out["streamer_twice"], 16) == IN_USE
    assert out["query_before"] == "0x1"  # NOT_READY before its end ran
    assert out["query_values"] == "8"  # one report of ComputeBasic's 8 metrics
    assert out["query_window_holds_kernel"] == "1"
    # 640 work-items of the 2048 lanes, over the kernel's own time
    assert float(out["EuThreadOccupancy"]) == pytest.approx(31.25, abs=0.01)
    assert int(out["other_group_data"], 16) == INVALID_ARGUMENT
    assert out["probe"] == "ok"


def test_knobs_a_device_without_metrics_and_a_driver_initialized_earlier():
    """ZE_SIM_METRIC_GROUPS=0: a device whose driver offers no metric groups (a count of
    0, not an error). ZE_SIM_INITIALIZED_EARLIER=1: metrics and Sysman refused as when
    the variables came after the driver's first zeInit, whatever the environment says."""
    on = {"ZET_ENABLE_METRICS": "1", "ZES_ENABLE_SYSMAN": "1"}
    out = probe(dict(on, ZE_SIM_METRIC_GROUPS="0"))
    assert out["metrics"] == "0x0" and out["groups"] == "0" and out["domains"] == "1"
    out = probe(dict(on, ZE_SIM_INITIALIZED_EARLIER="1"))
    assert int(out["metrics"], 16) == UNINITIALIZED and out["groups"] == "0"
    assert int(out["sysman"], 16) == UNINITIALIZED and out["domains"] == "0"


def test_forbidden_tools_abort(tmp_path):
    """ZE_SIM_FORBID_TOOLS=1 (the proof tests use that nothing called zet or zes) aborts
    loudly at the first call."""
    need(PROBE)
    r = run([PROBE], traced=False, env=sim_env({"ZE_SIM_FORBID_TOOLS": "1"}))
    assert r.returncode != 0
    assert b"ZE_SIM_FORBID_TOOLS" in r.stderr
