"""One clear line on stderr for every failure a user can cause; Beam imported only after the
arguments are checked; no library log noise at the default verbosity."""
import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.cli import main
from scripts.errors import describe

REPO = Path(__file__).resolve().parents[2]


def _cli(*argv, env=None, timeout=300):
    code = ("import sys; from scripts.cli import main; rc = main(sys.argv[1:]); "
            "print('beam imported' if 'apache_beam' in sys.modules else 'beam not imported'); sys.exit(rc)")
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})}, timeout=timeout)


def test_describe_gives_one_actionable_line():
    assert describe(OSError(errno.ENOSPC, "No space left on device", "/out/x.JPEG")) == \
        "disk full (no space left on device): /out/x.JPEG"
    assert describe(PermissionError(errno.EACCES, "Permission denied", "/out")) == "permission denied: /out"
    wrapped = RuntimeError("Pipeline failed.\nTraceback (most recent call last):\n  File \"x.py\", line 1\n"
                           "OSError: [Errno 28] No space left on device: '/out/.tmp/abc' [while running 'Write']")
    assert describe(wrapped) == "disk full (no space left on device): /out/.tmp/abc"
    inner = RuntimeError("Traceback (most recent call last):\n  File \"y\"\nKeyError: 'fog'\n")
    assert describe(inner) == "KeyError: 'fog'"
    try:
        try:
            open("/nonexistent/folder/file")
        except OSError as err:
            raise RuntimeError("wrapped") from err
    except RuntimeError as outer:
        assert describe(outer) == "no such file or folder: /nonexistent/folder/file"


@pytest.mark.parametrize("argv,message", [
    (["--severities", "9"], "severities must be a non-empty subset"),
    (["--corruptions", "fog,nope"], "unknown or empty corruption selection ['nope']"),
    (["--input", "/nonexistent/val"], "--input /nonexistent/val: no such file or folder"),
    (["--limit", "-1"], "--limit must be >= 0"),
    (["--workers", "0"], "--workers must be >= 1"),
    (["--commit-every", "0"], "--commit-every must be >= 1"),
    (["--image-ids", "/nonexistent/ids.txt"], "no such file or folder"),
])
def test_argument_errors_are_one_line_before_beam(tmp_path, argv, message):
    result = _cli("build-c", "--output", str(tmp_path / "out"), *argv)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [result.stderr.strip()] and message in result.stderr
    assert result.stdout.strip() == "beam not imported"
    assert not (tmp_path / "out").exists()


def test_build_p_argument_errors_before_beam(tmp_path):
    result = _cli("build-p", "--output", str(tmp_path / "out"), "--perturbations", "nope")
    assert result.returncode == 2 and "nope" in result.stderr and result.stdout.strip() == "beam not imported"


def test_default_verbosity_has_no_library_noise(tmp_path):
    import tempfile

    logs = set(Path(tempfile.gettempdir()).glob("imagenet-cp-workers-*.log"))
    result = _cli("build-c", "--output", str(tmp_path / "out"), "--corruptions", "contrast", "--severities", "1",
                  "--workers", "1", "--limit", "2")
    assert result.returncode == 0, result.stderr
    for noise in ("apitools", "semi_persistent", "Logging handler", "WARNING", "INFO", "Traceback"):
        assert noise not in result.stderr, result.stderr
    assert set(Path(tempfile.gettempdir()).glob("imagenet-cp-workers-*.log")) <= logs  # removed after success


def test_output_under_a_file_is_one_line(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    assert main(["build-c", "--output", str(tmp_path / "file"), "--corruptions", "contrast"]) == 2
    assert "is a file" in capsys.readouterr().err
    assert main(["verify", str(tmp_path / "file")]) == 1
    assert main(["package", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "is not a release folder" in err


def _mount_tmpfs(path: Path, options: str) -> bool:
    path.mkdir()
    return os.geteuid() == 0 and subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)],
                                               capture_output=True).returncode == 0


def test_full_disk_and_read_only_output_are_one_line(tmp_path):
    full, read_only = tmp_path / "full", tmp_path / "ro"
    if not (_mount_tmpfs(full, "size=160k") and _mount_tmpfs(read_only, "size=1m,ro")):
        subprocess.run(["umount", str(full)], capture_output=True)
        pytest.skip("needs root and tmpfs mounts to make a full and a read-only file system")
    try:
        for folder, message, codes in ((full, "disk", (1, 3)), (read_only, "read-only file system", (1, 2))):
            result = _cli("build-c", "--output", str(folder / "out"), "--corruptions", "contrast,fog",
                          "--severities", "1,2", "--workers", "1")
            lines = [line for line in result.stderr.strip().splitlines() if not line.startswith("progress")]
            assert result.returncode in codes and len(lines) == 1 and message in lines[0], result.stderr
            assert "Traceback" not in result.stderr
    finally:
        for folder in (full, read_only):
            subprocess.run(["umount", str(folder)], capture_output=True)



def test_evaluate_argument_errors_before_beam(tmp_path):
    result = _cli("evaluate", "--release", str(tmp_path / "missing"), "--model", str(tmp_path / "m.onnx"))
    assert result.returncode == 2 and "--release" in result.stderr and "no such file or folder" in result.stderr
    assert result.stdout.strip() == "beam not imported"


GRPC_CALLS = """
import json, time
from concurrent import futures
import grpc
from scripts.errors import describe

def slow(request, context):
    time.sleep(1)
    return request

server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(
    "test.Slow", {"Call": grpc.unary_unary_rpc_method_handler(slow)})])
port = server.add_insecure_port("127.0.0.1:0")
server.start()
lines = []
with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
    try:
        channel.unary_unary("/test.Slow/Call")(b"x", timeout=0.05)
    except grpc.RpcError as late:
        try:
            raise RuntimeError("the job failed") from late
        except RuntimeError as wrapped:
            lines.append(describe(wrapped))
server.stop(0)
with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
    try:
        channel.unary_unary("/test.Slow/Call")(b"x", timeout=5)
    except grpc.RpcError as refused:
        lines.append(describe(refused))
print(json.dumps(lines))
"""


def test_a_grpc_error_is_its_status_in_one_line_and_a_job_service_deadline_says_which_option():
    """Real gRPC calls (in a child process: gRPC's threads and a later fork of this one do not mix):
    one past its deadline (what Beam's PortableRunner meets when a job outlives
    --job_server_timeout) and one to a closed port give one line each, not the error's repr."""
    import json

    from scripts.errors import JOB_SERVICE_DEADLINE_HINT, describe

    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", GRPC_CALLS], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(repo),
                                                                                   os.environ.get("PYTHONPATH")]))))
    assert done.returncode == 0, done.stderr[-1500:]
    late, refused = json.loads(done.stdout.strip().splitlines()[-1])
    assert late == f"gRPC DEADLINE_EXCEEDED: Deadline Exceeded ({JOB_SERVICE_DEADLINE_HINT})"
    assert refused.startswith("gRPC UNAVAILABLE: ") and "\n" not in refused
    assert describe(RuntimeError("wrapped")) == "RuntimeError: wrapped"
