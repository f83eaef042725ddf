"""A short libFuzzer run of each harness (a few seconds each) from the
committed corpus, plus every corpus file once: what the parser and the JSON
escaper must never do (crash, overflow, invalid JSON, a lossy round trip)
fails the suite. Longer runs: see test/README.md."""
import pathlib
import re
import shutil
import subprocess

import pytest

from conftest import BUILD, SANITIZE

HERE = pathlib.Path(__file__).resolve().parent
SECONDS = 3


def harness(name):
    path = BUILD / "test" / "fuzz" / name
    if not path.exists():
        if not (shutil.which("clang-14") or shutil.which("clang")):
            pytest.skip("no clang with libFuzzer: harnesses not built (apt-get install clang-14)")
        raise AssertionError(f"{path} not built (run make)")
    return path


@pytest.mark.skipif(SANITIZE != "", reason="the harnesses carry their own sanitizers")
@pytest.mark.parametrize("name", ["config", "template", "json"])
def test_fuzz_briefly(tmp_path, name):
    exe = harness("fuzz_" + name)
    corpus = HERE / "corpus" / name
    # every committed input once: a regression run
    files = sorted(str(p) for p in corpus.iterdir())
    rerun = subprocess.run([str(exe)] + files, capture_output=True, timeout=60)
    assert rerun.returncode == 0, rerun.stderr.decode(errors="replace")[-3000:]
    # then new inputs for a few seconds (new finds go to tmp, not the repo)
    work = tmp_path / "corpus"
    work.mkdir()
    r = subprocess.run([str(exe), f"-max_total_time={SECONDS}", "-print_final_stats=1",
                        f"-artifact_prefix={tmp_path}/", str(work), str(corpus)],
                       capture_output=True, timeout=SECONDS + 60)
    err = r.stderr.decode(errors="replace")
    assert r.returncode == 0, err[-3000:]
    runs = int(re.search(r"stat::number_of_executed_units: (\d+)", err).group(1))
    assert runs > 1000, err[-2000:]
    print(f"fuzz_{name}: {runs} runs in {SECONDS} s, nothing found")
