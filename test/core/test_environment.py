"""The library names itself in the injection variables (CUDA, NVTX, ITT) of a
process that does not have them, without setenv (inject/injection.c: a copy
of environ in pages of its own, so a process that records nothing makes no
malloc). The program must not tell the difference: its own setenv, unsetenv,
putenv and getenv work as untraced, and its children inherit the result,
also when the environment or the library's path does not fit that copy and
setenv takes over. A process whose environment fits uses no malloc before
main."""
import os
import subprocess

import pytest

from conftest import BUILD, LIB, PRELOAD, clean_env, default_signals, need

APP = BUILD / "test" / "core" / "env_app"
OURS = ("CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH", "INTEL_LIBITTNOTIFY64",
        "GPUTRACE_INJECTED")


def env_app(n, preload=None, extra=None):
    need(APP)
    env = clean_env(extra or {})
    for k in OURS:
        env.pop(k, None)
    if preload is not None:
        env.update({"LD_PRELOAD": preload, "GPUTRACE_SUMMARY": "0"})
    p = subprocess.run([str(APP), str(n)], env=env, capture_output=True, timeout=60,
                       preexec_fn=default_signals)
    assert p.returncode == 0, p.stdout.decode() + p.stderr.decode()
    return p.stdout.decode().splitlines()


def expect(lib, n, heap="untouched"):
    # a sanitizer's malloc is not glibc's: its heap is not seen
    heap = "untouched" if os.environ.get("SANITIZE") else heap
    return [f"heap {heap}", f"cuda {lib}", f"nvtx {lib}", f"itt {lib}", "injected 1",
            f"set {n + 1}", "nvtx after unset -", f"child {lib} put {'v0' if n else '-'}"]


def preload_with(lib):
    """PRELOAD (a sanitizer's runtime first, maybe) with our library at lib."""
    return " ".join(PRELOAD.split()[:-1] + [str(lib)])


@pytest.mark.sanitize
@pytest.mark.parametrize("n", [0, 300])
def test_program_works_its_environment_as_untraced(n):
    assert env_app(n) == ["heap untouched", "cuda -", "nvtx -", "itt -", "injected -",
                          f"set {n + 1}", "nvtx after unset -",
                          f"child - put {'v0' if n else '-'}"]
    assert env_app(n, PRELOAD) == expect(LIB.resolve(), n)


@pytest.mark.sanitize
def test_environment_too_big_for_the_copy():
    # more variables than the copy holds (2000 pointers): setenv does it all
    big = {f"BIG_{i}": "x" for i in range(2500)}
    assert env_app(100, PRELOAD, big) == expect(LIB.resolve(), 100, "used")


@pytest.mark.sanitize
def test_library_path_too_long_for_the_copy(tmp_path):
    # a path over the copy's 1 KiB of text: the variables naming it go to setenv
    d = tmp_path
    while len(str(d)) < 1200:
        d = d / ("d" * 100)
    d.mkdir(parents=True)
    lib = d / "libgputrace.so"
    lib.symlink_to(LIB.resolve())
    assert env_app(10, preload_with(lib)) == expect(lib, 10, "used")
