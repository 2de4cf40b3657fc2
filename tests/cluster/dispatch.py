"""A worker pool front for several worker hosts: what a cluster's resource manager does for a job.

Beam's job service asks one address for workers (``--environment_type=EXTERNAL
--environment_config=HOST:PORT``). This service listens there and hands each ``StartWorker``
request to the worker pools of the hosts in turn, so that the job's SDK workers are spread over
them; the request carries the job service's own endpoints, which every host reaches. Usage:
``python dispatch.py --port 50000 --pools worker1:50000,worker2:50000``.
"""
import argparse
import itertools
import sys
import threading
import time
from concurrent import futures

import grpc
from apache_beam.portability.api import beam_fn_api_pb2, beam_fn_api_pb2_grpc


class Dispatcher(beam_fn_api_pb2_grpc.BeamFnExternalWorkerPoolServicer):
    """Round-robin ``StartWorker`` over ``pools``; ``StopWorker`` goes where the worker started."""

    def __init__(self, pools):
        self._stubs = {pool: beam_fn_api_pb2_grpc.BeamFnExternalWorkerPoolStub(grpc.insecure_channel(pool))
                       for pool in pools}
        self._turn = itertools.cycle(pools)
        self._placed = {}
        self._lock = threading.Lock()

    def StartWorker(self, request, context):
        with self._lock:
            pool = next(self._turn)
            self._placed[request.worker_id] = pool
        print(f"worker {request.worker_id} -> {pool}", flush=True)
        try:
            return self._stubs[pool].StartWorker(request, timeout=60)
        except grpc.RpcError as err:
            return beam_fn_api_pb2.StartWorkerResponse(error=f"worker pool {pool}: {err.code().name}")

    def StopWorker(self, request, context):
        with self._lock:
            pool = self._placed.pop(request.worker_id, None)
        if pool is not None:
            try:
                return self._stubs[pool].StopWorker(request, timeout=10)
            except grpc.RpcError as err:
                return beam_fn_api_pb2.StopWorkerResponse(error=f"worker pool {pool}: {err.code().name}")
        return beam_fn_api_pb2.StopWorkerResponse()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pools", required=True, help="comma-separated HOST:PORT of the hosts' worker pools")
    args = parser.parse_args(argv)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
    beam_fn_api_pb2_grpc.add_BeamFnExternalWorkerPoolServicer_to_server(Dispatcher(args.pools.split(",")), server)
    server.add_insecure_port(f"[::]:{args.port}")
    server.start()
    print(f"dispatching workers over {args.pools} on port {args.port}", flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
