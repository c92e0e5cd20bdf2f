"""The wheel's `preflight` command (console script) and `python -m
preflight`, run as a user runs them: the same output and exit status as the
cargo-built binary, stdin and stdout passed through byte for byte, Ctrl-C
exiting 130; and the package's metadata agreeing with the crate's."""

import importlib.metadata
import os
import pathlib
import re
import signal
import subprocess
import sys
import time

import pyarrow as pa
import pytest

import preflight

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCHEMA = "columns:\n  label: {kind: class, num_classes: 3}\n"
# The console script pip wrote beside this interpreter.
SCRIPT = pathlib.Path(sys.executable).parent / "preflight"


def commands():
    """The two ways the wheel runs the CLI."""
    return [[str(SCRIPT)], [sys.executable, "-m", "preflight"]]


@pytest.fixture
def data(tmp_path):
    (tmp_path / "s.yaml").write_text(SCHEMA)
    (tmp_path / "good.csv").write_text("label\n0\n1\n2\n")
    (tmp_path / "bad.csv").write_text("label\n0\n3\n1\n-1\n")
    return tmp_path


def run(cmd, cwd, **kw):
    return subprocess.run(cmd, cwd=cwd, capture_output=True, **kw)


def timeless(out):
    """Output with the human summary's wall time, "(0.01 s)", taken out."""
    return re.sub(rb"\(\d+\.\d+ s\)", b"(TIME s)", out)


@pytest.mark.parametrize("how", ["script", "module"])
def test_exit_codes_and_output_are_the_binarys(data, how):
    cmd = commands()[0 if how == "script" else 1]
    binary = os.environ.get("PREFLIGHT_BIN")
    cases = [
        (["check", "-s", "s.yaml", "good.csv"], 0),
        (["check", "-s", "s.yaml", "bad.csv", "--format", "json"], 1),
        (["check", "-s", "s.yaml", "bad.csv", "--format", "github"], 1),
        (["check", "-s", "missing.yaml", "good.csv"], 2),
        (["check", "--no-such-flag"], 2),
        (["merge"], 2),
        (["--version"], 0),
    ]
    for args, code in cases:
        got = run(cmd + args, data)
        assert got.returncode == code, (args, got.stderr)
        if binary:
            want = run([binary] + args, data)
            assert (got.returncode, timeless(got.stdout), got.stderr) == (
                want.returncode,
                timeless(want.stdout),
                want.stderr,
            ), args
    assert b"bad.csv:1: 3" in run(cmd + ["check", "-s", "s.yaml", "bad.csv"], data).stdout


def test_python_output_buffered_before_the_cli_comes_first(data):
    # Python's buffered stdout is flushed before Rust writes to fd 1.
    code = "import sys, preflight.__main__ as m; print('before'); sys.exit(m.main(['schema', 's.yaml']))"
    got = run([sys.executable, "-c", code], data)
    assert got.returncode == 0
    assert got.stdout.startswith(b"before\nversion: 1\ncolumns:"), got.stdout


def test_pass_through_copies_stdin_to_stdout_byte_for_byte(data):
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, pa.schema([("label", pa.int64())])) as w:
        for k in range(5):
            w.write_batch(pa.record_batch({"label": pa.array([k % 3] * 1000, pa.int64())}))
    stream = sink.getvalue().to_pybytes()
    for cmd in commands():
        got = run(cmd + ["check", "-s", "s.yaml", "-", "--pass-through"], data, input=stream)
        assert got.returncode == 0, got.stderr
        assert got.stdout == stream
        assert b"ok: every rule holds" in got.stderr


def interrupted(cmd, cwd, **kw):
    """Sends SIGINT once the command runs; returns (exit code, stdout, seconds to exit)."""
    child = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, **kw)
    time.sleep(1.0)  # past the interpreter's start, into the Rust code
    sent = time.monotonic()
    child.send_signal(signal.SIGINT)
    out, _ = child.communicate(timeout=10)
    return child.returncode, out, time.monotonic() - sent


# Ctrl-C in the middle of a scan is tested on the cargo-built binary
# (tests/cli/hostile.rs); through the wheel, whose optimised build can finish
# any scan of test size before a signal arrives, the deterministic case is a
# run blocked on stdin: the same handler, the same exit.


def test_ctrl_c_exits_130_while_blocked_on_stdin(data):
    r, w = os.pipe()
    try:
        code, out, took = interrupted(
            [sys.executable, "-m", "preflight", "check", "-s", "s.yaml", "-", "--pass-through"], data, stdin=r
        )
    finally:
        os.close(r)
        os.close(w)
    assert code == 130
    assert out == b""
    assert took < 3.0


def test_version_is_the_crates_and_the_distributions():
    # Installed as the distribution data-preflight; the module is `preflight`.
    assert preflight.__version__ == importlib.metadata.version("data-preflight")
    assert importlib.metadata.packages_distributions()["preflight"] == ["data-preflight"]
    cargo = (ROOT / "Cargo.toml").read_text()
    assert f'[workspace.package]\nversion = "{preflight.__version__}"' in cargo
    out = run([str(SCRIPT), "--version"], ROOT).stdout.decode()
    assert out.startswith(f"preflight {preflight.__version__} (")
    assert "features: cli" in out


def test_root_and_python_pyprojects_agree():
    import tomllib

    root = tomllib.loads((ROOT / "pyproject.toml").read_text())
    sub = tomllib.loads((ROOT / "python" / "pyproject.toml").read_text())
    assert root["build-system"] == sub["build-system"]
    paths = {"readme"}
    assert {k: v for k, v in root["project"].items() if k not in paths} == {
        k: v for k, v in sub["project"].items() if k not in paths
    }
    assert root["project"]["scripts"] == {"preflight": "preflight.__main__:main"}
    rm, sm = root["tool"]["maturin"], sub["tool"]["maturin"]
    assert (rm["manifest-path"], rm["python-source"]) == ("python/Cargo.toml", "python")
    assert (sm["manifest-path"], sm["python-source"]) == ("Cargo.toml", ".")
    strip = {"manifest-path", "python-source"}
    assert {k: v for k, v in rm.items() if k not in strip} == {k: v for k, v in sm.items() if k not in strip}
