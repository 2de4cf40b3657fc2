"""The SDK worker boot of a worker host: Beam's container contract, as the boot program of Beam's
SDK container implements it, for a worker pool started with ``--container_executable``.

The pool runs ``boot.py --id=ID --provision_endpoint=URL --control_endpoint=URL
--logging_endpoint=URL --artifact_endpoint=URL``. The boot asks the provisioning service of the
job for the pipeline options (the object store's endpoint and keys among them) and starts
``apache_beam.runners.worker.sdk_worker_main`` with them, so that nothing but the installed
package and the options reaches the worker. The worker's output goes to its own log file under
``$HOME/worker-logs`` (the pool gives it a pipe that nobody reads).
"""
import argparse
import os
import sys

import grpc
from apache_beam.portability.api import beam_provision_api_pb2, beam_provision_api_pb2_grpc, endpoints_pb2
from google.protobuf import json_format, text_format


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("id", "provision_endpoint", "control_endpoint", "logging_endpoint", "artifact_endpoint"):
        parser.add_argument(f"--{name}", required=name != "artifact_endpoint")
    args = parser.parse_args(argv)
    with grpc.insecure_channel(args.provision_endpoint) as channel:
        info = beam_provision_api_pb2_grpc.ProvisionServiceStub(channel).GetProvisionInfo(
            beam_provision_api_pb2.GetProvisionInfoRequest(), metadata=[("worker_id", args.id)], timeout=60).info
    logs = os.path.join(os.path.expanduser("~"), "worker-logs")
    os.makedirs(logs, exist_ok=True)
    semi_persistent = os.path.join(os.path.expanduser("~"), "worker-state", args.id)
    os.makedirs(semi_persistent, exist_ok=True)
    env = dict(os.environ,
               WORKER_ID=args.id,
               PIPELINE_OPTIONS=json_format.MessageToJson(info.pipeline_options),
               CONTROL_API_SERVICE_DESCRIPTOR=text_format.MessageToString(
                   endpoints_pb2.ApiServiceDescriptor(url=args.control_endpoint)),
               LOGGING_API_SERVICE_DESCRIPTOR=text_format.MessageToString(
                   endpoints_pb2.ApiServiceDescriptor(url=args.logging_endpoint)),
               SEMI_PERSISTENT_DIRECTORY=semi_persistent,
               RUNNER_CAPABILITIES=" ".join(info.runner_capabilities))
    log = open(os.path.join(logs, f"{args.id}.log"), "ab")
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    os.execve(sys.executable, [sys.executable, "-m", "apache_beam.runners.worker.sdk_worker_main"], env)
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(main())
