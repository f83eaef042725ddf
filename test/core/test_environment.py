"""The library names itself in the injection variables (CUDA, NVTX, ITT) of a
process that does not have them, without setenv (inject/injection.c: a copy
of environ in pages of its own, so a process that records nothing makes no
malloc). The program must not tell the difference: its own setenv, unsetenv,
putenv and getenv work as untraced, and its children inherit the result,
also when the environment or the library's path does not fit that copy and
setenv takes over, or when there is no environment at all. A process whose
environment fits uses no malloc before main."""
import functools
import os
import pathlib
import subprocess

import pytest

from conftest import BUILD, LIB, PRELOAD, clean_env, default_signals, need

APP = BUILD / "test" / "core" / "env_app"
OURS = ("CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH", "INTEL_LIBITTNOTIFY64",
        "GPUTRACE_INJECTED")


def env_app(args, preload=None, extra=None):
    need(APP)
    env = clean_env(extra or {})
    for k in OURS:
        env.pop(k, None)
    if preload is not None:
        env.update({"LD_PRELOAD": preload, "GPUTRACE_SUMMARY": "0"})
    p = subprocess.run([str(APP)] + [str(a) for a in args], env=env, capture_output=True,
                       timeout=60, preexec_fn=default_signals)
    assert p.returncode == 0, p.stdout.decode() + p.stderr.decode()
    return p.stdout.decode().splitlines()


def named(lib):
    """The path the library names itself by: as LD_PRELOAD spells it when
    absolute, else resolved."""
    lib = pathlib.Path(lib)
    return lib if lib.is_absolute() else lib.resolve()


OUR_LIB = named(PRELOAD.split()[-1])


@functools.lru_cache(maxsize=None)
def heap_untraced():
    """What an untraced env_app says of its heap before main: "untouched",
    except where a sanitizer's runtime itself allocates with glibc (UBSan)."""
    return env_app([0])[0]


def expect(lib, n, heap="heap untouched"):
    # a traced process can do no better than an untraced one
    if heap_untraced() != "heap untouched":
        heap = heap_untraced()
    # (ASan and TSan replace malloc: glibc's heap stays untouched under them)
    if os.environ.get("SANITIZE") in ("address", "thread"):
        heap = "heap untouched"
    return [heap, f"cuda {lib}", f"nvtx {lib}", f"itt {lib}", "injected 1",
            f"set {n + 1}", "nvtx after unset -",
            # a traced child names the library again in the variable unset
            f"child {lib} {lib} put {'v0' if n else '-'}"]


@pytest.mark.sanitize
@pytest.mark.parametrize("n", [0, 300])
def test_program_works_its_environment_as_untraced(n):
    assert env_app([n]) == [heap_untraced(), "cuda -", "nvtx -", "itt -", "injected -",
                            f"set {n + 1}", "nvtx after unset -",
                            f"child - - put {'v0' if n else '-'}"]
    assert env_app([n], PRELOAD) == expect(OUR_LIB, n)


@pytest.mark.sanitize
def test_environment_too_big_for_the_copy():
    # more variables than the copy holds (1919 pointers): setenv does it all
    big = {f"BIG_{i}": "x" for i in range(2500)}
    assert env_app([100], PRELOAD, big) == expect(OUR_LIB, 100, "heap used")


@pytest.mark.sanitize
def test_library_path_too_long_for_the_copy(tmp_path):
    # a path over the copy's 1 KiB of text: the variables naming it go to setenv
    d = tmp_path
    while len(str(d)) < 1200:
        d = d / ("d" * 100)
    d.mkdir(parents=True)
    lib = d / "libgputrace.so"
    lib.symlink_to(LIB.resolve())
    preload = " ".join(PRELOAD.split()[:-1] + [str(lib)])
    assert env_app([10], preload) == expect(lib, 10, "heap used")


@pytest.mark.skipif(bool(os.environ.get("SANITIZE")),
                    reason="a sanitized library cannot be dlopened by a plain program")
def test_loaded_into_a_process_without_environment():
    # clearenv() leaves environ NULL; the constructor then runs inside dlopen
    assert env_app(["--clear-then-load", LIB.resolve()]) == [
        f"cuda {LIB.resolve()}", f"itt {LIB.resolve()}"]


@pytest.mark.skipif(bool(os.environ.get("SANITIZE")),
                    reason="a sanitized library cannot be dlopened by a plain program")
def test_loaded_beside_a_thread_using_the_environment():
    # another thread may be inside setenv (glibc's lock): the library's variables
    # go through setenv too, not into a copy of environ made beside it
    assert env_app(["--load-beside-a-thread", LIB.resolve()]) == [
        "environ in the program", f"cuda {LIB.resolve()}", "kept kept", "thread ok"]
