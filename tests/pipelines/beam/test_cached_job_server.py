"""``--runner=FlinkRunner`` finds the Flink job server that ``make engines`` put in Beam's jar cache."""
from __future__ import annotations

from pipelines.beam.runner import with_cached_job_server

FLINK = ("--runner=FlinkRunner", "--flink_master=jobmanager:8081", "--flink_version=1.19")


def test_the_one_job_server_of_the_flink_version_in_the_cache_is_added(tmp_path):
    jar = tmp_path / "beam-runners-flink-1.19-job-server-2.62.0.jar"
    jar.write_bytes(b"jar")
    (tmp_path / "beam-runners-flink-1.20-job-server-2.62.0.jar").write_bytes(b"another Flink version")
    assert with_cached_job_server(FLINK, str(tmp_path)) == (*FLINK, f"--flink_job_server_jar={jar}")


def test_an_explicit_jar_another_runner_or_no_single_match_leaves_the_options_as_given(tmp_path):
    explicit = (*FLINK, "--flink_job_server_jar=/opt/flink-job-server.jar")
    spark = ("--runner=PortableRunner", "--job_endpoint=localhost:8099")
    (tmp_path / "beam-runners-flink-1.19-job-server-2.62.0.jar").write_bytes(b"jar")
    assert with_cached_job_server(explicit, str(tmp_path)) == explicit
    assert with_cached_job_server(spark, str(tmp_path)) == spark
    assert with_cached_job_server(FLINK, str(tmp_path / "empty")) == FLINK
    (tmp_path / "beam-runners-flink-1.19-job-server-2.63.0.jar").write_bytes(b"a second one")
    assert with_cached_job_server(FLINK, str(tmp_path)) == FLINK  # which one is not ours to guess
