"""A short libFuzzer run of each harness (a few seconds each) from the
committed corpus, plus every corpus file once: what the parser and the JSON
escaper must never do (crash, overflow, invalid JSON, a lossy round trip)
fails the suite. Longer runs: see test/README.md."""
import os
import pathlib
import re
import shutil
import subprocess

import pytest

from conftest import BUILD, SANITIZE, run_fresh

HERE = pathlib.Path(__file__).resolve().parent
SECONDS = 3


def harness(name):
    path = BUILD / "test" / "fuzz" / name
    if not path.exists():
        if not (shutil.which("clang-14") or shutil.which("clang")):
            pytest.skip("no clang with libFuzzer: harnesses not built (apt-get install clang-14)")
        raise AssertionError(f"{path} not built (run make)")
    return path


def fuzz_briefly(tmp_path, exe, corpus, env=None):
    """Every committed input once (a regression run), then new inputs for a
    few seconds (new finds go to tmp, not the repo). libFuzzer's own bounds
    hold: -rss_limit_mb (2 GiB) and -malloc_limit_mb, measured on the
    harness alone (run_fresh)."""
    files = sorted(str(p) for p in corpus.iterdir())
    rerun = run_fresh([exe, "-rss_limit_mb=2048", f"-artifact_prefix={tmp_path}/"] + files,
                      capture_output=True, timeout=60, env=env, cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr.decode(errors="replace")[-3000:]
    work = tmp_path / "corpus"
    work.mkdir()
    r = run_fresh([exe, f"-max_total_time={SECONDS}", "-print_final_stats=1", "-rss_limit_mb=2048",
                   f"-artifact_prefix={tmp_path}/", work, corpus],
                  capture_output=True, timeout=SECONDS + 60, env=env, cwd=tmp_path)
    err = r.stderr.decode(errors="replace")
    assert r.returncode == 0, err[-3000:]
    return int(re.search(r"stat::number_of_executed_units: (\d+)", err).group(1)), err


@pytest.mark.skipif(SANITIZE != "", reason="the harnesses carry their own sanitizers")
@pytest.mark.parametrize("name", ["config", "template", "json", "expr"])
def test_fuzz_briefly(tmp_path, name):
    runs, err = fuzz_briefly(tmp_path, harness("fuzz_" + name), HERE / "corpus" / name)
    assert runs > 1000, err[-2000:]
    print(f"fuzz_{name}: {runs} runs in {SECONDS} s, nothing found")


@pytest.mark.skipif(SANITIZE != "", reason="the harnesses carry their own sanitizers")
def test_fuzz_memory_bound_holds(tmp_path):
    """A harness that takes 3 GiB still fails its test: the bound measures
    the harness, and it is not switched off."""
    env = dict(os.environ, GT_FUZZ_BALLOON_MB="3072")
    with pytest.raises(AssertionError) as failed:
        fuzz_briefly(tmp_path, harness("fuzz_config"), HERE / "corpus" / "config", env=env)
    assert "libFuzzer: out-of-memory" in str(failed.value), str(failed.value)[-2000:]
