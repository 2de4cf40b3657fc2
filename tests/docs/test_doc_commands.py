"""Every command line of README.md and docs/guides/*.md runs in a test, or is listed here with the
reason it cannot; a documented command therefore cannot break unnoticed.

A command line is a line of a fenced ``bash`` block (``\\``-continued lines joined, comments
dropped), or a line starting with ``imagenet-cp``, ``make``, ``python`` or ``pytest`` in an
unlabelled fenced block. ``test_every_command_line_is_run_or_listed`` (fast) fails on a command
line that is neither runnable here nor in :data:`NOT_RUN`, and on a :data:`NOT_RUN` entry that no
document holds any more. ``test_doc_commands_run`` (``beam``) runs each document's commands in
order in one workspace per document:

- ``imagenet-cp ...`` runs in-process (``scripts.cli.main``) after :func:`adapt`: inputs named in the
  docs are replaced by small stand-ins (:func:`prepare_workspace`), paths under ``/data/`` land in
  the workspace, every build gets ``--limit 1 --workers 1`` (and ImageNet-P ``--preset ultrafast``
  where the line names no preset). The outputs' layout, the options and the command sequence are
  the documented ones;
- ``make ...`` is expanded by ``make -n -o install`` (what make would run, without installing a
  virtual environment) and each ``imagenet-cp`` line of the expansion runs as above.
"""
from __future__ import annotations

import contextlib
import io
import re
import shlex
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs" / "guides").glob("*.md"))]
RUNNABLE = ("imagenet-cp ", "make ")
COMMAND_WORDS = ("imagenet-cp", "make", "python", "pytest")
BUILDS = ("build-c", "build-p", "build-vcr")

_CLUSTER = "needs a cluster runner (Dataflow, Flink or Spark) and its credentials; not available in a test"
_S3 = ("needs an S3 endpoint; the same commands run against a local S3 server in "
       "tests/pipelines/beam/test_object_store.py")
_POOL = ("needs a Beam worker pool started beside the build; tests/pipelines/beam/test_portable_runner.py "
         "starts one and runs this build")
_SUITE = "runs the test suite, which holds this harness"
_A_O = ("needs a filter run over a candidate pool and a person's review; tests/pipelines/beam/"
        "test_adversarial_filter.py runs filter-a, filter-o, package-a and verify on a real pool")
_SYNOPSIS = "a synopsis with [optional] arguments, not a command line"
_HARNESS = ("runs on the hosts of tests/cluster/harness.py (root, network and mount namespaces); "
            "tests/cluster/test_flink.py starts them and runs these commands there")
_FLINK = ("runs on the hosts of a Flink cluster: tests/cluster/harness.py's FlinkDeployment starts these "
          "commands on its hosts, and tests/cluster/test_flink.py builds with them")
_SPARK = ("runs on the hosts of a Spark standalone cluster: tests/cluster/harness.py --engine spark starts these "
          "commands on its hosts (by hand, not in CI)")

#: Command lines that are not run here, with the reason.
NOT_RUN = {
    "sudo python tests/cluster/harness.py --images 200 --faults worker,jobmanager --stall-minutes 1": _HARNESS,
    "FLINK_CONF_DIR=$HOME/flink-conf $FLINK_HOME/bin/jobmanager.sh start-foreground": _FLINK,
    "FLINK_CONF_DIR=$HOME/flink-conf $FLINK_HOME/bin/taskmanager.sh start-foreground": _FLINK,
    "python -m apache_beam.runners.worker.worker_pool_main --service_port=50000 "
    "--container_executable=$HOME/boot.py": _FLINK,
    "imagenet-cp build-c --input s3://imagenet-cp/input/sample_img_val.tar --output s3://imagenet-cp/release "
    "--corruptions gaussian_noise,contrast --severities 1,2 --commit-every 25 -- --runner=FlinkRunner "
    "--flink_master=jobmanager:8081 --flink_version=1.19 --parallelism=2 --environment_type=EXTERNAL "
    "--environment_config=localhost:50000 --job_server_timeout=86400 --s3_endpoint_url=http://store:5000 "
    "--s3_region_name=us-east-1 --s3_access_key_id=KEY --s3_secret_access_key=SECRET": _FLINK,
    "$SPARK_HOME/bin/spark-class org.apache.spark.deploy.master.Master --host sparkmaster --port 7077": _SPARK,
    "$SPARK_HOME/bin/spark-class org.apache.spark.deploy.worker.Worker spark://sparkmaster:7077 "
    "--host sparkworker1 --cores 1 --memory 1g": _SPARK,
    'java $OPENS -Dspark.executor.extraClassPath=$JAR -Dspark.driver.host=driver -cp '
    '"$SPARK_HOME/jars/slf4j-api-2.0.7.jar:$JAR:$SPARK_HOME/jars/*" org.apache.beam.runners.spark.SparkJobServerDriver '
    "--spark-master-url spark://sparkmaster:7077 --job-port 8099 --artifact-port 8098 --expansion-port 8097": _SPARK,
    "imagenet-cp build-c --input s3://imagenet-cp/input/sample_img_val.tar --output s3://imagenet-cp/release "
    "--corruptions gaussian_noise,contrast --severities 1,2 -- --runner=PortableRunner --job_endpoint=localhost:8099 "
    "--environment_type=EXTERNAL --environment_config=localhost:50000 --files_to_stage=$JAR "
    "--environment_cache_millis=600000 --job_server_timeout=86400 --s3_endpoint_url=http://store:5000 "
    "--s3_region_name=us-east-1 --s3_access_key_id=KEY --s3_secret_access_key=SECRET": _SPARK,
    "make test": _SUITE,
    'pytest -q -m "not beam" tests': _SUITE,
    "pytest -q -m beam tests": _SUITE,
    "imagenet-cp build-c --input gs://BUCKET/ILSVRC2012_img_val.tar --output gs://BUCKET/imagenet-c -- "
    "--runner=DataflowRunner --project=PROJECT --region=REGION --temp_location=gs://BUCKET/tmp "
    "--setup_file=./setup.py --max_num_workers=64": _CLUSTER,
    "make build-imagenet-c INPUT=gs://BUCKET/ILSVRC2012_img_val.tar OUTPUT=gs://BUCKET/imagenet-c "
    "BEAM_ARGS='--runner=DataflowRunner --project=PROJECT --region=REGION --temp_location=gs://BUCKET/tmp "
    "--setup_file=./setup.py'": _CLUSTER + " (tests/scripts/test_make_beam_args.py checks the expansion)",
    "make build-imagenet-p INPUT=s3://BUCKET/ILSVRC2012_img_val.tar OUTPUT=s3://BUCKET/imagenet-p "
    "BEAM_ARGS='--runner=FlinkRunner --flink_master=jobmanager:8081 --flink_version=1.19 --parallelism=64 "
    "--environment_type=EXTERNAL --environment_config=localhost:50000 --job_server_timeout=86400'":
        _CLUSTER + " (tests/scripts/test_make_beam_args.py checks the expansion)",
    "imagenet-cp verify gs://BUCKET/imagenet-c": "needs a Google Cloud Storage bucket",
    "imagenet-cp build-c --input s3://BUCKET/ILSVRC2012_img_val.tar --output s3://BUCKET/imagenet-c -- "
    "--runner=FlinkRunner --flink_master=JOBMANAGER:8081 --flink_version=1.19 --parallelism=64 "
    "--environment_type=EXTERNAL --environment_config=localhost:50000 --job_server_timeout=86400 "
    "--s3_region_name=REGION": _CLUSTER,
    "imagenet-cp build-c --input s3://BUCKET/ILSVRC2012_img_val.tar --output s3://BUCKET/imagenet-c -- "
    "--runner=PortableRunner --job_endpoint=localhost:8099 --environment_type=EXTERNAL "
    "--environment_config=localhost:50000 --files_to_stage=JOB_SERVER_JAR --environment_cache_millis=600000 "
    "--job_server_timeout=86400 --s3_region_name=REGION": _CLUSTER,
    'S3="--s3_endpoint_url=https://s3.example.org --s3_region_name=eu-west-1"': _S3,
    "imagenet-cp build-c --input s3://BUCKET/ILSVRC2012_img_val.tar --output s3://BUCKET/imagenet-c -- $S3": _S3,
    "imagenet-cp verify s3://BUCKET/imagenet-c -- $S3": _S3,
    "imagenet-cp package s3://BUCKET/imagenet-c -- $S3": _S3,
    "imagenet-cp evaluate --release s3://BUCKET/imagenet-c --model resnet50.onnx -- $S3": _S3,
    "PYTHONPATH=$PWD python -m apache_beam.runners.worker.worker_pool_main --service_port=50000 &": _POOL,
    "imagenet-cp build-c --output out/c --corruptions fog --severities 1,3 -- --runner=PortableRunner "
    "--job_endpoint=embed --environment_type=EXTERNAL --environment_config=localhost:50000": _POOL,
    "imagenet-cp filter-a --candidates pool/ --model models/lite0.onnx [--model models/resnet50.onnx] "
    "--output runs/a [--classes imagenet_a|all|FILE] [--threshold 0.15] [--cap 15] [--min-size PX] "
    "[--metadata meta.jsonl] [--exemplars train/] [--workers N] [-- BEAM OPTIONS]": _SYNOPSIS,
    "imagenet-cp filter-o --candidates pool22k/ --model models/lite0.onnx --output runs/o [--msp-cut 0.5] "
    "[--cap 10]": _SYNOPSIS,
    "imagenet-cp package-a --filtered runs/a --accepted reviews.jsonl --output release/imagenet-a": _A_O,
    "imagenet-cp verify release/imagenet-a": _A_O,
    "imagenet-cp evaluate --release release/imagenet-o --in-distribution ILSVRC2012_img_val.tar --model M.onnx "
    "--output evaluations/imagenet-o": ("needs an ImageNet-O release made by filter-o and package-o; "
                                        "tests/pipelines/beam/test_evaluate_imagenet_o.py builds one and runs "
                                        "this evaluation"),
    "imagenet-cp evaluate --release out/vcr --model resnet50.onnx [--human humans.csv] [--bins 20 "
    "--smoothing 0.04 --empty-bin zero|drop --knots left|centre]": _SYNOPSIS,
}

#: Run command lines whose exit status is not 0, with the reason.
EXIT_STATUS = {
    "imagenet-cp build-c --input /data/val --output out/rb5k --image-ids robustbench-5000":
        (1, "the stand-in input holds 2 of the list's 5,000 ids: the others are listed failures"),
}


def command_lines(path: Path) -> list[str]:
    """The command lines of one document, in order."""
    lines = []
    for match in re.finditer(r"^```(\w*)\n(.*?)^```", path.read_text(), re.S | re.M):
        language, body = match.group(1), re.sub(r"\\\n\s*", " ", match.group(2))
        if language not in ("bash", "sh", ""):
            continue
        for line in body.splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip() if not line.lstrip().startswith("#") else ""
            line = re.sub(r"\s+", " ", line)
            if line and (language != "" or line.split(" ")[0] in COMMAND_WORDS):
                lines.append(line)
    return lines


def test_every_command_line_is_run_or_listed():
    found = {line: path.name for path in DOCUMENTS for line in command_lines(path)}
    neither = [f"{name}: {line}" for line, name in found.items()
               if line not in NOT_RUN and not line.startswith(RUNNABLE)]
    assert not neither, "command lines neither run nor listed in NOT_RUN:\n" + "\n".join(neither)
    stale = [line for line in NOT_RUN if line not in found]
    assert not stale, "NOT_RUN entries no document holds:\n" + "\n".join(stale)
    assert set(EXIT_STATUS) <= set(found), set(EXIT_STATUS) - set(found)
    assert sum(line.startswith(RUNNABLE) and line not in NOT_RUN for line in found) >= 20


# --- running -----------------------------------------------------------------------------------

def prepare_workspace(folder: Path) -> None:
    """The stand-ins for the inputs the docs name: ImageNet val folders (the bundled sample; the
    ``/data/val`` one also holds 2 RobustBench ids), an id file, a tar (not named
    ``ILSVRC2012_img_val.tar``, whose size and hash are checked), CIFAR and Tiny-ImageNet folders.
    A release the docs call ``OUTPUT`` is built by :func:`prepare_release` where a document uses it."""
    from pipelines.inputs.families import write_cifar_sample, write_tinyimagenet_sample
    from pipelines.install.sample import write_sample
    from schemas.image_ids import named_id_list_bytes

    val = Path(write_sample(str(folder / "data" / "imagenet" / "val")))
    shutil.copytree(val, folder / "data" / "val")
    sample = sorted(val.rglob("*.JPEG"))
    for key, source in zip(named_id_list_bytes("robustbench-5000").decode().split()[:2], sample):
        (folder / "data" / "val" / key).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, folder / "data" / "val" / key)
    (folder / "my_ids.txt").write_text("".join(f"{p.parent.name}/{p.name}\n" for p in sample[:2]))
    with tarfile.open(folder / "val-sample.tar", "w") as tar:
        for path in sample:
            tar.add(path, arcname=path.name)
    write_cifar_sample(str(folder / "data"))
    write_tinyimagenet_sample(str(folder / "data"))


def prepare_release(folder: Path) -> None:
    """``OUTPUT``: a small ImageNet-C release of the bundled sample, for lines that act on a release."""
    from scripts.cli import main

    with contextlib.redirect_stdout(io.StringIO()):
        assert main(adapt(["build-c", "--output", str(folder / "OUTPUT"), "--corruptions", "fog",
                           "--severities", "1"])) == 0


def adapt(argv: list[str]) -> list[str]:
    """The documented ``imagenet-cp`` arguments, pointed at the stand-ins and made small."""
    own, beam = (argv[:argv.index("--")], argv[argv.index("--"):]) if "--" in argv else (argv, [])
    own = ["val-sample.tar" if a == "ILSVRC2012_img_val.tar" else a.replace("/data/", "data/", 1)
           if a.startswith("/data/") else a for a in own]
    if own and own[0] in BUILDS:
        for option, value in (("--limit", "1"), ("--workers", "1")):
            if option in own:
                own[own.index(option) + 1] = value
            else:
                own += [option, value]
        if own[0] == "build-p" and "--preset" not in own:
            own += ["--preset", "ultrafast"]
    return own + beam


def cli_argvs(line: str, workspace: Path) -> list[list[str]]:
    """The ``imagenet-cp`` argument lists one documented line runs (a make line may run several)."""
    if line.startswith("imagenet-cp "):
        return [shlex.split(line)[1:]]
    expansion = subprocess.run(["make", "-n", "-o", "install", "-f", str(REPO / "Makefile"),
                                *shlex.split(line)[1:]], cwd=workspace, capture_output=True, text=True,
                               timeout=60)
    assert expansion.returncode == 0, f"{line}: {expansion.stderr}"
    argvs = [shlex.split(part)[1:] for part in expansion.stdout.splitlines() if "imagenet-cp " in part]
    assert argvs, f"{line}: make runs no imagenet-cp command:\n{expansion.stdout}"
    return argvs


def run_line(line: str, workspace: Path) -> tuple[int, str]:
    from scripts.cli import main

    code, log = 0, io.StringIO()
    for argv in cli_argvs(line, workspace):
        with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
            code = main(adapt(argv))
        if code:
            break
    return code, log.getvalue()


def runnable_lines(document: Path) -> list[str]:
    return [line for line in command_lines(document) if line.startswith(RUNNABLE) and line not in NOT_RUN]


RUN_DOCUMENTS = [document for document in DOCUMENTS if runnable_lines(document)]


@pytest.mark.beam
@pytest.mark.parametrize("document", RUN_DOCUMENTS, ids=[p.name for p in RUN_DOCUMENTS])
def test_doc_commands_run(document, tmp_path, monkeypatch):
    lines = runnable_lines(document)
    prepare_workspace(tmp_path)
    if any("OUTPUT" in shlex.split(line) for line in lines):
        prepare_release(tmp_path)
    monkeypatch.chdir(tmp_path)
    for line in lines:
        expected, _ = EXIT_STATUS.get(line, (0, ""))
        code, log = run_line(line, tmp_path)
        assert code == expected, f"{document.name}: `{line}` exited {code}, expected {expected}:\n{log[-3000:]}"
