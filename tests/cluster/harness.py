"""Hosts that share nothing but a network and an object store, on one Linux machine (root).

Each host is a network namespace (``ip netns``) holding a veth link to a bridge, plus a mount and
UTS namespace of its own (``unshare``): its own hostname, ``/etc/hosts``, ``/tmp`` and home. The
host sees neither the checkout nor the driver's files: the checkout, the harness's folder, the
home and the project of an editable install are covered by empty file systems. What a worker image
would provide is visible, read-only, under ``~/.image``: the Python installation and the
third-party packages of the venv that runs the harness (the project's own entries hidden). Each
host then makes a fresh venv in its home and installs the project into it from a wheel built from
the tree, so a host runs the project only as the package a cluster would install.

The harness process itself (the "console") has a veth of its own on the bridge, to reach the store
and to read the hosts' logs.

Run by hand: ``sudo python tests/cluster/harness.py --images 200`` builds a release across the
hosts, kills one worker host at about a third, resumes, and compares the digest with a local build
(see ``--help``). The tests in this folder use the same classes.
"""
from __future__ import annotations

import argparse
import collections
import io
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
HOME = "/root"
"""Each host's home, its own folder bound there."""
VENV = f"{HOME}/venv"
IMAGE = f"{HOME}/.image"
"""What a worker image provides, read-only: ``python`` (the base installation) and ``site`` (the
third-party packages)."""
STORE_PORT, JOB_PORT, POOL_PORT, DISPATCH_PORT = 5000, 8099, 50000, 50100
BUCKET = "imagenet-cp"
JOB_SERVER_TIMEOUT = 86400
"""``--job_server_timeout`` of the builds: Beam's PortableRunner opens a job's state and message
streams with it as their deadline, so a job running longer than it (default 300 s) fails in the driver."""
KEYS = {"AWS_ACCESS_KEY_ID": "cluster", "AWS_SECRET_ACCESS_KEY": "cluster-secret"}

_SETUP = r"""
set -eu
mount --make-rprivate /
mount -t tmpfs -o size=1m,mode=755 image "$H/image"
mkdir "$H/image/site" "$H/image/python"
mount --bind "$SITE" "$H/image/site"; mount -o remount,bind,ro "$H/image/site"
mount --bind "$PYBASE" "$H/image/python"; mount -o remount,bind,ro "$H/image/python"
for extra in $EXTRA; do
  mkdir "$H/image/${extra%%=*}"
  mount --bind "${extra#*=}" "$H/image/${extra%%=*}"; mount -o remount,bind,ro "$H/image/${extra%%=*}"
done
mount --bind "$H/hosts" /etc/hosts
hostname "$NAME"
mount --bind "$H/home" "$HOMEDIR"
mkdir -p "$HOMEDIR/.image"
mount --move "$H/image" "$HOMEDIR/.image"
if [ -d "$HOMEDIR/.image/jars" ]; then
  mkdir -p "$HOMEDIR/.apache_beam/cache/jars"; mount --bind "$HOMEDIR/.image/jars" "$HOMEDIR/.apache_beam/cache/jars"
fi
mount --bind "$H/tmp" /tmp
for hidden in $HIDE; do
  if [ -d "$hidden" ]; then mount -t tmpfs -o size=1m,mode=755 hidden "$hidden"; fi
done
for entry in "$HOMEDIR"/.image/site/*imagenet_cp* "$HOMEDIR"/.image/site/*imagenet-cp*; do
  if [ -d "$entry" ]; then mount -t tmpfs -o size=1m,ro hidden "$entry";
  elif [ -e "$entry" ]; then mount --bind /dev/null "$entry"; fi
done
if [ ! -x "$PYBASE/bin/python3" ]; then mkdir -p "$PYBASE"; mount --bind "$HOMEDIR/.image/python" "$PYBASE"; fi
echo ready
exec sleep infinity
"""


class ClusterError(RuntimeError):
    """A host or service of the harness did not come up."""


def run(command: Sequence[str], check: bool = True, **kwargs) -> subprocess.CompletedProcess:
    """A root-namespace command (``ip ...``), output captured; a failure raises with its stderr."""
    done = subprocess.run(list(command), capture_output=True, text=True, **kwargs)
    if check and done.returncode:
        raise ClusterError(f"{' '.join(command)}: exit {done.returncode}: {done.stderr.strip()[-500:]}")
    return done


def free_subnet(number: int) -> str:
    """The first three octets of a /24 in 198.18.0.0/15 (RFC 2544's benchmarking range, never routed)
    that no address or route of this machine overlaps, starting from ``number``: the console's link
    must not capture the machine's own traffic."""
    import ipaddress
    import re
    listed = run(["ip", "-4", "-o", "addr", "show"]).stdout + run(["ip", "-4", "route", "show", "table", "all"]).stdout
    taken = [ipaddress.ip_network(text, strict=False)
             for text in re.findall(r"\b(\d+\.\d+\.\d+\.\d+(?:/\d+)?)", listed)]
    for step in range(512):
        index = (number + step) % 512
        candidate = ipaddress.ip_network(f"198.{18 + index // 256}.{index % 256}.0/24")
        if not any(candidate.overlaps(net) for net in taken if net.prefixlen > 0):
            return str(candidate.network_address).rsplit(".", 1)[0]
    raise ClusterError("no free /24 in 198.18.0.0/15 for the hosts' bridge")


def site_packages() -> str:
    """The third-party packages of the Python that runs the harness (its venv's site-packages)."""
    return sysconfig.get_paths()["purelib"]


def editable_project() -> Optional[str]:
    """The folder of an editable install of imagenet-cp in :func:`site_packages`, if any."""
    for info in Path(site_packages()).glob("imagenet_cp-*.dist-info"):
        direct = info / "direct_url.json"
        if direct.is_file():
            url = json.loads(direct.read_text()).get("url", "")
            if url.startswith("file://"):
                return url[len("file://"):]
    return None


def build_wheel(into: Path) -> Path:
    """A wheel of the project built from a copy of the tree (``git ls-files`` plus the frost
    textures that ``fetch-assets`` put in ``transforms/_assets``), nothing written into the checkout."""
    source = into / "source"
    listed = run(["git", "ls-files", "-z"], cwd=REPO).stdout.split("\0")
    assets = [p.relative_to(REPO).as_posix() for p in (REPO / "transforms" / "_assets").rglob("*") if p.is_file()]
    for relative in filter(None, listed + assets):
        if (REPO / relative).is_file():
            (source / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / relative, source / relative)
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
         "-w", str(into / "wheel"), str(source)], cwd=into)
    wheels = sorted((into / "wheel").glob("imagenet_cp-*.whl"))
    if len(wheels) != 1:
        raise ClusterError(f"expected one imagenet-cp wheel in {into / 'wheel'}, found {len(wheels)}")
    shutil.rmtree(source)
    return wheels[0]


@dataclass
class Host:
    """One host: a network namespace with a mount and UTS namespace of its own.

    Attributes
    ----------
    cluster : Cluster
        The cluster it belongs to.
    name, ip : str
        Its hostname and address on the bridge.
    folder : Path
        Its files as the console sees them (``home``, ``tmp``); the host sees ``home`` as ``/root``.
    """

    cluster: "Cluster"
    name: str
    ip: str
    folder: Path
    netns: str = ""
    link: str = ""
    anchor: Optional[subprocess.Popen] = None
    services: list = field(default_factory=list)
    killed_processes: int = 0

    @property
    def home(self) -> Path:
        """The host's home as the console sees it."""
        return self.folder / "home"

    def command(self, argv: Sequence[str], env: Optional[dict] = None) -> list[str]:
        """``argv`` as run inside the host, in its home, with a clean environment and its venv first."""
        environment = {"HOME": HOME, "PATH": f"{VENV}/bin:/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
                       "TMPDIR": "/tmp", **(env or {})}
        return (["nsenter", "-t", str(self.anchor.pid), "-m", "-u", "-n", "--", "/usr/bin/env", "-i"]
                + [f"{k}={v}" for k, v in environment.items()]
                + ["/bin/sh", "-c", f'cd {HOME} && exec "$@"', "sh", *argv])

    def run(self, argv: Sequence[str], env: Optional[dict] = None, timeout: float = 600,
            check: bool = False) -> subprocess.CompletedProcess:
        """Run ``argv`` in the host and wait; stdout and stderr captured as text."""
        done = subprocess.run(self.command(argv, env), capture_output=True, text=True, timeout=timeout)
        if check and done.returncode:
            raise ClusterError(f"{self.name}: {' '.join(argv)}: exit {done.returncode}: "
                               f"{(done.stderr or done.stdout).strip()[-1500:]}")
        return done

    def start(self, argv: Sequence[str], log: str, env: Optional[dict] = None) -> subprocess.Popen:
        """Start a service in the host, its output in ``~/<log>`` of the host."""
        with open(self.home / log, "ab") as stream:
            process = subprocess.Popen(self.command(argv, env), stdout=stream, stderr=subprocess.STDOUT,
                                       start_new_session=True)
        self.services.append(process)
        return process

    def processes(self) -> list[int]:
        """Every process in the host's network namespace (services, their workers, anything run)."""
        inode = os.stat(f"/run/netns/{self.netns}").st_ino
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if os.stat(entry / "ns" / "net").st_ino == inode:
                        found.append(int(entry.name))
                except OSError:  # gone already
                    continue
        return found

    def kill(self) -> int:
        """SIGKILL every process of the host (the anchor of its namespaces too); the number killed."""
        pids = self.processes()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for process in self.services + ([self.anchor] if self.anchor else []):
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                pass
        self.services.clear()
        self.anchor = None
        return len(pids)

    def cut(self) -> None:
        """Take the host's link to the bridge down (its processes keep running)."""
        run(["ip", "-n", self.cluster.switch, "link", "set", self.link, "down"])

    def restore(self) -> None:
        """Bring the host's link up again."""
        run(["ip", "-n", self.cluster.switch, "link", "set", self.link, "up"])

    def wait_port(self, port: int, process: subprocess.Popen, log: str, timeout: float = 90,
                  local: bool = False) -> None:
        """Wait until something listens on the host's ``port``: the console connects to it, or
        (``local``: a service that binds ``localhost`` only) a probe inside the host does."""
        import socket
        probe = ("import socket, sys, time\nfor _ in range(%d):\n    try:\n"
                 "        socket.create_connection(('localhost', %d), timeout=1).close(); sys.exit(0)\n"
                 "    except OSError: time.sleep(0.3)\nsys.exit(1)" % (int(timeout / 0.3), port))
        deadline = time.monotonic() + timeout
        while True:
            try:
                if local:
                    if self.run([f"{VENV}/bin/python", "-S", "-c", probe], timeout=timeout + 10).returncode:
                        raise OSError("no answer on localhost")
                else:
                    socket.create_connection((self.ip, port), timeout=1).close()
                return
            except OSError as err:
                if local or process.poll() is not None or time.monotonic() > deadline:
                    tail = (self.home / log).read_text(errors="replace")[-1500:]
                    raise ClusterError(f"{self.name}: nothing listens on port {port} ({err}): {tail}") from None
                time.sleep(0.3)

    def install(self, wheel: Path) -> None:
        """A fresh venv in the host's home, the image's packages beside it, the project from ``wheel``."""
        shutil.copy2(wheel, self.home / wheel.name)
        self.run([f"{self.cluster.python_base}/bin/python3", "-m", "venv", "--without-pip", VENV], check=True)
        purelib = self.run([f"{VENV}/bin/python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                           check=True).stdout.strip()
        (self.home / Path(purelib).relative_to(HOME) / "image-site.pth").write_text(f"{IMAGE}/site\n")
        self.run([f"{VENV}/bin/python", "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--no-cache-dir", "--ignore-installed",
                  "--disable-pip-version-check", f"{HOME}/{wheel.name}"], check=True)


class Cluster:
    """A bridge, the console's link to it, and hosts added with :meth:`add`.

    Parameters
    ----------
    folder : Path
        Where the hosts' files live (each host sees only its own, under its home and ``/tmp``).
    hide : sequence of str
        More folders every host must not see (the checkout, the harness folder, the console's home
        and the editable project are always hidden).
    image : mapping of str to str
        More of the worker image: each folder is visible read-only at ``~/.image/NAME`` of every
        host (an engine's distribution; ``jars``, Beam's jar cache, is also at the host's
        ``~/.apache_beam/cache/jars``).
    """

    def __init__(self, folder: Path, hide: Sequence[str] = (), image: Optional[dict] = None):
        self.folder = Path(folder)
        self.image = {name: os.path.realpath(path) for name, path in (image or {}).items()}
        self.id = uuid.uuid4().hex[:6]
        self.subnet = free_subnet(int(self.id, 16))
        self.switch = f"icp{self.id}sw"
        self.hosts: dict[str, Host] = {}
        self.python_base = sys.base_prefix
        hidden = [str(REPO), str(self.folder), os.path.expanduser("~"), "/var/tmp", *hide]
        hidden = [p for p in hidden if os.path.realpath(p) != HOME]  # each host's own home is bound there
        if editable_project():
            hidden.append(editable_project())
        self.hide = sorted({os.path.realpath(p) for p in hidden}, key=len)
        if any(" " in p for p in self.hide + [site_packages(), self.python_base, str(self.folder), *self.image.values()]):
            raise ClusterError("the harness needs paths without spaces")
        self._console = f"icp{self.id}c0"
        self._next = itertools.count(2)
        try:
            run(["ip", "netns", "add", self.switch])
            run(["ip", "-n", self.switch, "link", "add", "br0", "type", "bridge"])
            run(["ip", "-n", self.switch, "link", "set", "br0", "up"])
            run(["ip", "link", "add", self._console, "type", "veth", "peer", "name", f"icp{self.id}c1"])
            run(["ip", "link", "set", f"icp{self.id}c1", "netns", self.switch])
            run(["ip", "-n", self.switch, "link", "set", f"icp{self.id}c1", "master", "br0", "up"])
            run(["ip", "addr", "add", f"{self.subnet}.1/24", "dev", self._console])
            run(["ip", "link", "set", self._console, "up"])
        except ClusterError:
            self.close()
            raise

    def add(self, name: str) -> Host:
        """Make a host: its namespaces, its link, its files; returns it once its namespaces are set up."""
        index = next(self._next)
        host = Host(self, name, f"{self.subnet}.{index}", self.folder / name, f"icp{self.id}-{name}",
                    f"icp{self.id}h{index}")
        for sub in ("home", "tmp", "image"):
            (host.folder / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(host.folder / "tmp", 0o1777)
        self.hosts[name] = host
        run(["ip", "netns", "add", host.netns])
        run(["ip", "link", "add", host.link, "type", "veth", "peer", "name", f"icp{self.id}p{index}"])
        run(["ip", "link", "set", host.link, "netns", self.switch])
        run(["ip", "-n", self.switch, "link", "set", host.link, "master", "br0", "up"])
        run(["ip", "link", "set", f"icp{self.id}p{index}", "netns", host.netns])
        run(["ip", "-n", host.netns, "link", "set", f"icp{self.id}p{index}", "name", "eth0"])
        run(["ip", "-n", host.netns, "addr", "add", f"{host.ip}/24", "dev", "eth0"])
        run(["ip", "-n", host.netns, "link", "set", "eth0", "up"])
        run(["ip", "-n", host.netns, "link", "set", "lo", "up"])
        self._write_hosts_files()
        self.start_anchor(host)
        return host

    def start_anchor(self, host: Host) -> None:
        """The process holding the host's mount and UTS namespaces (``sleep``, after the mounts)."""
        env = {"H": str(host.folder), "SITE": site_packages(), "PYBASE": self.python_base, "NAME": host.name,
               "HOMEDIR": HOME, "HIDE": " ".join(self.hide),
               "EXTRA": " ".join(f"{name}={path}" for name, path in self.image.items()),
               "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
        host.anchor = subprocess.Popen(["ip", "netns", "exec", host.netns, "unshare", "--mount", "--uts",
                                        "--propagation", "private", "/bin/sh", "-c", _SETUP],
                                       env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                       start_new_session=True)
        line = host.anchor.stdout.readline().strip()
        if line != "ready":
            host.anchor.kill()
            raise ClusterError(f"{host.name}: its namespaces were not set up: {host.anchor.stderr.read()[-800:]}")

    def _write_hosts_files(self) -> None:
        lines = ["127.0.0.1 localhost", f"{self.subnet}.1 console"]
        lines += [f"{h.ip} {h.name}" for h in self.hosts.values()]
        for host in self.hosts.values():
            (host.folder / "hosts").write_text("\n".join(lines) + "\n")

    def close(self) -> None:
        """Kill every process of every host and remove the namespaces and links (safe to call twice)."""
        for host in self.hosts.values():
            if os.path.exists(f"/run/netns/{host.netns}"):
                host.kill()
                run(["ip", "netns", "del", host.netns], check=False)
        if os.path.exists(f"/run/netns/{self.switch}"):
            run(["ip", "netns", "del", self.switch], check=False)
        run(["ip", "link", "del", self._console], check=False)
        self.hosts.clear()


def cluster_supported() -> Optional[str]:
    """None when this machine can make hosts, else why not (one line)."""
    if os.geteuid() != 0:
        return "the cluster harness needs root (network and mount namespaces)"
    for tool in ("ip", "unshare", "nsenter"):
        if shutil.which(tool) is None:
            return f"the cluster harness needs `{tool}`"
    probe = f"icpprobe{os.getpid()}"
    done = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if done.returncode:
        return f"`ip netns add` does not work here: {done.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


class Deployment:
    """A store host (moto's S3 server), worker hosts (Beam worker pools) and a driver host (a job
    service started on its own, a worker pool front spreading workers over the hosts, the CLI).

    Parameters
    ----------
    cluster : Cluster
        Where the hosts are made.
    wheel : Path
        The project's wheel, installed on the driver and every worker host.
    workers : int
        Worker hosts.
    """

    def __init__(self, cluster: Cluster, wheel: Path, workers: int = 2):
        self.cluster = cluster
        self.store = cluster.add("store")
        self.driver = cluster.add("driver")
        self.workers = [cluster.add(f"worker{i + 1}") for i in range(workers)]
        self.install(wheel)
        for host in self.workers:
            self.start_pool(host)
        self.start_driver_services()

    def install(self, wheel: Path) -> None:
        """The store's venv (the image's packages only), the project on the driver and the workers,
        and the store started."""
        self.store.run([f"{self.cluster.python_base}/bin/python3", "-m", "venv", "--without-pip", VENV], check=True)
        purelib = self.store.run([f"{VENV}/bin/python", "-c",
                                  "import sysconfig; print(sysconfig.get_paths()['purelib'])"], check=True).stdout
        (self.store.home / Path(purelib.strip()).relative_to(HOME) / "image-site.pth").write_text(f"{IMAGE}/site\n")
        for host in [self.driver, *self.workers]:
            host.install(wheel)
        self.start_store()

    # --- services ------------------------------------------------------------------------------

    def start_store(self) -> None:
        process = self.store.start([f"{VENV}/bin/python", "-m", "moto.server", "-H", "0.0.0.0", "-p",
                                    str(STORE_PORT)], "moto.log")
        self.store.wait_port(STORE_PORT, process, "moto.log")
        self.s3().create_bucket(Bucket=BUCKET)

    def start_pool(self, host: Host) -> None:
        """A Beam worker pool on ``host`` whose workers boot through ``boot.py`` (the container contract)."""
        boot = host.home / "boot.py"
        boot.write_text(f"#!{VENV}/bin/python\n" + (HERE / "boot.py").read_text())
        boot.chmod(0o755)
        process = host.start([f"{VENV}/bin/python", "-m", "apache_beam.runners.worker.worker_pool_main",
                              f"--service_port={POOL_PORT}", f"--container_executable={HOME}/boot.py"], "pool.log")
        host.wait_port(POOL_PORT, process, "pool.log")

    def start_driver_services(self) -> None:
        """The job service and the worker pool front on the driver host."""
        job = self.driver.start([f"{VENV}/bin/python", "-m", "apache_beam.runners.portability.local_job_service_main",
                                 f"--port={JOB_PORT}"], "job-service.log")
        self.driver.wait_port(JOB_PORT, job, "job-service.log", local=True)
        shutil.copy2(HERE / "dispatch.py", self.driver.home / "dispatch.py")
        pools = ",".join(f"{host.name}:{POOL_PORT}" for host in self.workers)
        front = self.driver.start([f"{VENV}/bin/python", f"{HOME}/dispatch.py", f"--port={DISPATCH_PORT}",
                                   f"--pools={pools}"], "dispatch.log")
        self.driver.wait_port(DISPATCH_PORT, front, "dispatch.log")

    # --- the store and the CLI -----------------------------------------------------------------

    @property
    def endpoint(self) -> str:
        return f"http://store:{STORE_PORT}"

    def s3(self):
        """A boto3 client of the store, from the console."""
        import boto3
        return boto3.client("s3", endpoint_url=f"http://{self.store.ip}:{STORE_PORT}", region_name="us-east-1",
                            aws_access_key_id=KEYS["AWS_ACCESS_KEY_ID"],
                            aws_secret_access_key=KEYS["AWS_SECRET_ACCESS_KEY"])

    def store_options(self) -> list[str]:
        """The object store's Beam options, as the driver and (through the job) the workers get them."""
        return [f"--s3_endpoint_url={self.endpoint}", "--s3_region_name=us-east-1",
                f"--s3_access_key_id={KEYS['AWS_ACCESS_KEY_ID']}",
                f"--s3_secret_access_key={KEYS['AWS_SECRET_ACCESS_KEY']}"]

    def beam_options(self) -> list[str]:
        """The Beam options of a build on the worker hosts: the job service of the driver host, the
        worker pool front, the store. (Beam's local job service asks for one SDK worker per job
        whatever ``--direct_num_workers`` says: ``FnApiRunner.run_via_runner_api`` never reads it.)"""
        return ["--runner=PortableRunner", f"--job_endpoint=localhost:{JOB_PORT}", "--environment_type=EXTERNAL",
                f"--environment_config=localhost:{DISPATCH_PORT}", f"--job_server_timeout={JOB_SERVER_TIMEOUT}",
                *self.store_options()]

    def cli(self, args: Sequence[str], timeout: float = 900) -> subprocess.CompletedProcess:
        """``imagenet-cp ARGS`` on the driver host."""
        return self.driver.run([f"{VENV}/bin/imagenet-cp", *args], timeout=timeout)

    def objects(self, prefix: str) -> dict[str, bytes]:
        """Every object below ``s3://BUCKET/prefix/``: relative key -> bytes."""
        client, found = self.s3(), {}
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix + "/"):
            for item in page.get("Contents", []):
                found[item["Key"][len(prefix) + 1:]] = client.get_object(Bucket=BUCKET, Key=item["Key"])["Body"].read()
        return found

    def count(self, prefix: str) -> int:
        """Objects below ``s3://BUCKET/prefix/``."""
        client, total = self.s3(), 0
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix + "/"):
            total += len(page.get("Contents", []))
        return total

    bucket = BUCKET

    def cli_command(self, args: Sequence[str]) -> list[str]:
        """The argv of ``imagenet-cp ARGS`` on the driver host (for :meth:`Host.command`)."""
        return [f"{VENV}/bin/imagenet-cp", *args]

    @staticmethod
    def tar_images(path: Path) -> int:
        """Members of an input tar."""
        with tarfile.open(path) as archive:
            return len(archive.getmembers())

    @staticmethod
    def runs_a_worker(host: Host, ever: bool = False) -> bool:
        """Whether an SDK worker runs on ``host`` now (``ever``: has run there, by its log)."""
        if ever:
            return any((host.home / "worker-logs").glob("*.log"))
        for pid in host.processes():
            try:
                if b"sdk_worker_main" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    return True
            except OSError:
                continue
        return False

    def committed_by_host(self, prefix: str, seen: Optional[dict] = None) -> dict[str, int]:
        """Outputs in the committed parts of a build in progress into ``s3://BUCKET/prefix`` (its
        ledger), by the host that made each part. ``seen`` (ledger key -> (host, outputs)) keeps
        the entries read by earlier calls: only new ones are read, and parts the build has removed
        since (it seals the release) still count."""
        client, seen = self.s3(), {} if seen is None else seen
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=f"{prefix}/.parts/ledger/"):
            for item in page.get("Contents", []):
                if item["Key"] in seen:
                    continue
                try:
                    entry = json.loads(client.get_object(Bucket=BUCKET, Key=item["Key"])["Body"].read())
                except client.exceptions.NoSuchKey:  # the build sealed the release meanwhile
                    continue
                seen[item["Key"]] = (entry.get("host", "?"), entry["records"] if entry.get("bytes") else 0)
        done = collections.Counter()
        for host, outputs in seen.values():
            done[host] += outputs
        return dict(done)

    def busy_worker(self) -> Host:
        """The one worker host running the job's SDK worker (Beam's own job service runs a job on one)."""
        busy = [host for host in self.workers if self.runs_a_worker(host)]
        if len(busy) != 1:
            raise ClusterError(f"expected the job's worker on one host, found {[h.name for h in busy]}")
        return busy[0]

    def build_with_a_fault(self, args: Sequence[str], prefix: str, outputs: int,
                           fault: Optional[Callable[[Host], None]], fraction: float = 1 / 3, timeout: float = 1800,
                           target: Optional[Callable[[], Host]] = None
                           ) -> tuple[Optional[Host], subprocess.CompletedProcess]:
        """Run ``imagenet-cp ARGS`` on the driver; once ``fraction`` of ``outputs`` is committed into
        ``s3://BUCKET/prefix``, call ``fault`` on the host ``target`` names (default:
        :meth:`busy_worker`). Returns that host (None: the build ended first, or no fault) and the
        finished command. :attr:`committed_split` keeps the outputs of every part seen committed, by
        host (the build removes the parts when it seals the release)."""
        build = subprocess.Popen(self.driver.command(self.cli_command(args)), stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        struck, deadline, seen = None, time.monotonic() + timeout, {}
        try:
            while build.poll() is None and time.monotonic() < deadline:
                split = self.committed_split = self.committed_by_host(prefix, seen)
                if fault is not None and struck is None and sum(split.values()) >= outputs * fraction:
                    struck = (target or self.busy_worker)()
                    fault(struck)
                time.sleep(0.2)
            out, err = build.communicate(timeout=max(1.0, deadline - time.monotonic()))
        finally:
            if build.poll() is None:
                build.kill()
        return struck, subprocess.CompletedProcess(build.args, build.returncode, out, err)

    def build_killing_a_worker_host(self, args: Sequence[str], prefix: str,
                                    outputs: int) -> tuple[Optional[Host], subprocess.CompletedProcess]:
        """:meth:`build_with_a_fault`: SIGKILL every process of the worker host at a third."""
        def kill(host: Host) -> None:
            host.killed_processes = host.kill()

        return self.build_with_a_fault(args, prefix, outputs, kill)

    def build_with_a_cut(self, args: Sequence[str], prefix: str, outputs: int,
                         seconds: float) -> tuple[Optional[Host], subprocess.CompletedProcess]:
        """:meth:`build_with_a_fault`: the worker host's link down for ``seconds`` at a third, then up."""
        def cut(host: Host) -> None:
            host.cut()
            try:
                time.sleep(seconds)
            finally:
                host.restore()

        return self.build_with_a_fault(args, prefix, outputs, cut)

    def lose_for_good(self, host: Host) -> None:
        """After a build that lost ``host`` (its link down): the host as one that never came back
        and was replaced: its processes killed, its link up, its worker pool started anew."""
        host.kill()
        host.restore()
        self.restart_worker(host)

    def restart_worker(self, host: Host) -> None:
        """A killed worker host again: its namespaces anew (same files), its worker pool."""
        self.cluster.start_anchor(host)
        self.start_pool(host)


def engine_versions() -> dict[str, str]:
    """``engines/versions.sh``: the engines' versions that ``make engines`` installs."""
    pairs = (line.split("=", 1) for line in (REPO / "engines" / "versions.sh").read_text().splitlines()
             if "=" in line and not line.lstrip().startswith("#"))
    return {key.strip(): value.strip() for key, value in pairs}


ENGINES = REPO / ".engines"
"""Where ``make engines`` puts Flink and Spark (its ``ENGINES``)."""
JAR_CACHE = Path(os.path.expanduser("~/.apache_beam/cache/jars"))
"""Beam's jar cache, where ``make engines`` puts the job servers (its ``JAR_CACHE``) and the CLI looks
(``pipelines.beam.runner.JAR_CACHE``; the harness imports nothing of the project at start)."""


def flink_home() -> Path:
    return ENGINES / f"flink-{engine_versions()['FLINK_RELEASE']}"


def spark_home() -> Path:
    return ENGINES / f"spark-{engine_versions()['SPARK_RELEASE']}"


def job_server_jar(runner: str) -> str:
    """The name of Beam's job server jar for ``runner`` (``flink``, ``spark``) in Beam's jar cache."""
    versions = engine_versions()
    module = f"flink-{versions['FLINK_VERSION']}" if runner == "flink" else "spark-3"
    return f"beam-runners-{module}-job-server-{versions['BEAM_JAVA_VERSION']}.jar"


def engine_supported(engine: str) -> Optional[str]:
    """None when ``make engines`` installed ``engine`` (``flink``, ``spark``) and Beam's job server
    for it here, else why not (one line)."""
    if shutil.which("java") is None:
        return f"the {engine.title()} cluster needs `java` (Java 17)"
    home, script = (flink_home(), "jobmanager.sh") if engine == "flink" else (spark_home(), "spark-class")
    if not (home / "bin" / script).is_file() or not (JAR_CACHE / job_server_jar(engine)).is_file():
        return f"{engine.title()} and Beam's {engine.title()} job server are not installed: run `make engines`"
    return None


REST_PORT = 8081
"""The JobManager's REST port (the Flink master of ``--flink_master``)."""


class FlinkDeployment(Deployment):
    """A Flink session cluster: a JobManager host, TaskManager hosts each with a Beam worker pool
    beside it, the store host, and a driver host whose CLI runs Beam's ``FlinkRunner`` (which starts
    Beam's Flink job server on the driver and submits the job to the JobManager).

    The distribution and the job server jar come from ``make engines`` and are part of the worker
    image (``~/.image/flink``, ``~/.apache_beam/cache/jars``). Each TaskManager has ``slots`` task
    slots and the cluster spreads a job's subtasks evenly over them; a job restarts up to
    ``attempts`` times after a failure (Flink's ``fixed-delay`` strategy), so a job of parallelism
    ``len(taskmanagers)`` can finish on the hosts left after one is lost.
    """

    def __init__(self, cluster: Cluster, wheel: Path, taskmanagers: int = 2, slots: int = 2, attempts: int = 3):
        self.cluster = cluster
        self.slots, self.attempts = slots, attempts
        self.store = cluster.add("store")
        self.jobmanager = cluster.add("jobmanager")
        self.driver = cluster.add("driver")
        self.workers = [cluster.add(f"taskmanager{i + 1}") for i in range(taskmanagers)]
        self.install(wheel)
        for host in [self.jobmanager, *self.workers]:
            self.write_flink_config(host)
        self.start_jobmanager()
        for host in self.workers:
            self.start_pool(host)
            self.start_taskmanager(host)
        self.wait_taskmanagers(len(self.workers))

    @staticmethod
    def image() -> dict:
        """What the worker image holds beyond Python: the Flink distribution and Beam's jar cache."""
        return {"flink": str(flink_home()), "jars": str(JAR_CACHE)}

    def write_flink_config(self, host: Host) -> None:
        """``~/flink-conf`` of ``host``: the distribution's config with the cluster's addresses."""
        import yaml
        conf = host.home / "flink-conf"
        shutil.copytree(flink_home() / "conf", conf, dirs_exist_ok=True)
        default = yaml.safe_load((conf / "config.yaml").read_text())
        settings = {
            "env.java.opts.all": default["env"]["java"]["opts"]["all"],
            "jobmanager.rpc.address": self.jobmanager.name, "jobmanager.bind-host": "0.0.0.0",
            "rest.address": self.jobmanager.name, "rest.bind-address": "0.0.0.0", "rest.port": REST_PORT,
            "jobmanager.memory.process.size": "1024m",
            "taskmanager.host": host.name, "taskmanager.bind-host": "0.0.0.0",
            "taskmanager.numberOfTaskSlots": self.slots, "taskmanager.memory.process.size": "1536m",
            "cluster.evenly-spread-out-slots": True, "parallelism.default": 1,
            "restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.attempts": self.attempts,
            "restart-strategy.fixed-delay.delay": "2 s",
            "heartbeat.interval": 2000, "heartbeat.timeout": 10000,  # a lost TaskManager is noticed in 10 s
            "io.tmp.dirs": "/tmp",
        }
        (conf / "config.yaml").write_text("".join(f"{key}: {json.dumps(value)}\n" for key, value in settings.items()))

    def flink_env(self) -> dict:
        return {"FLINK_CONF_DIR": f"{HOME}/flink-conf", "FLINK_LOG_DIR": f"{HOME}/flink-log"}

    def start_jobmanager(self) -> None:
        process = self.jobmanager.start([f"{IMAGE}/flink/bin/jobmanager.sh", "start-foreground"], "jobmanager.log",
                                        env=self.flink_env())
        self.jobmanager.wait_port(REST_PORT, process, "jobmanager.log", timeout=120)

    def start_taskmanager(self, host: Host) -> None:
        host.start([f"{IMAGE}/flink/bin/taskmanager.sh", "start-foreground"], "taskmanager.log", env=self.flink_env())

    def wait_taskmanagers(self, count: int, timeout: float = 120) -> None:
        """Wait until ``count`` TaskManagers are registered with the JobManager."""
        deadline = time.monotonic() + timeout
        while len(self.rest("/taskmanagers").get("taskmanagers", [])) < count:
            if time.monotonic() > deadline:
                tail = (self.workers[0].home / "taskmanager.log").read_text(errors="replace")[-1500:]
                raise ClusterError(f"fewer than {count} TaskManagers registered in {timeout:g} s: {tail}")
            time.sleep(0.5)

    def rest(self, path: str) -> dict:
        """A GET of Flink's REST API on the JobManager, from the console."""
        import urllib.request
        with urllib.request.urlopen(f"http://{self.jobmanager.ip}:{REST_PORT}{path}", timeout=10) as answer:
            return json.loads(answer.read())

    def beam_options(self) -> list[str]:
        """The Beam options of a build on the Flink cluster, as the driver host gives them (the CLI
        finds the job server in the driver's jar cache)."""
        versions = engine_versions()
        return ["--runner=FlinkRunner", f"--flink_master={self.jobmanager.name}:{REST_PORT}",
                f"--flink_version={versions['FLINK_VERSION']}",
                f"--parallelism={len(self.workers)}", "--environment_type=EXTERNAL",
                f"--environment_config=localhost:{POOL_PORT}", f"--job_server_timeout={JOB_SERVER_TIMEOUT}",
                *self.store_options()]

    def latest_job(self) -> Optional[str]:
        """The id of the job the JobManager started last (None: no job yet)."""
        jobs = sorted(self.rest("/jobs/overview")["jobs"], key=lambda job: job["start-time"])
        return jobs[-1]["jid"] if jobs else None

    def engine_split(self) -> dict[str, int]:
        """Records the subtasks of the latest job read, by TaskManager host (Flink's REST API:
        ``/jobs/ID/vertices/VID/taskmanagers``), over the job's vertices."""
        jid, split = self.latest_job(), collections.Counter()
        if jid is None:
            return {}
        for vertex in self.rest(f"/jobs/{jid}")["vertices"]:
            for manager in self.rest(f"/jobs/{jid}/vertices/{vertex['id']}/taskmanagers")["taskmanagers"]:
                host = manager.get("host") or manager.get("endpoint", "?")
                split[host.split(":")[0]] += manager["metrics"]["read-records"]
        return dict(split)

    def failures(self) -> list[str]:
        """The failures Flink recovered from or failed with in the latest job, oldest first: each as
        ``<exception> on <TaskManager host>`` (its REST API's exception history)."""
        jid = self.latest_job()
        if jid is None:
            return []
        entries = self.rest(f"/jobs/{jid}/exceptions")["exceptionHistory"]["entries"]
        where = (lambda entry: (entry.get("location") or entry.get("taskManagerLocation") or "?").split(":")[0])
        return [f"{entry['exceptionName'].rsplit('.', 1)[-1]} on {where(entry)}"
                for entry in sorted(entries, key=lambda entry: entry["timestamp"])]

    def restart_worker(self, host: Host) -> None:
        """A killed TaskManager host again: its namespaces anew (same files), its pool, its TaskManager."""
        self.cluster.start_anchor(host)
        self.start_pool(host)
        self.start_taskmanager(host)
        self.wait_taskmanagers(len(self.workers))

    def restart_jobmanager(self) -> None:
        """A killed JobManager host again (its TaskManagers register with it anew)."""
        self.cluster.start_anchor(self.jobmanager)
        self.start_jobmanager()
        self.wait_taskmanagers(len(self.workers))


MASTER_PORT, SPARK_JOB_PORT = 7077, 8099
JAVA17_OPENS = ["-XX:+IgnoreUnrecognizedVMOptions", "-Djdk.reflect.useDirectMethodHandle=false"] + [
    f"--add-opens=java.base/{package}=ALL-UNNAMED" for package in (
        "java.lang", "java.lang.invoke", "java.lang.reflect", "java.io", "java.net", "java.nio", "java.util",
        "java.util.concurrent", "java.util.concurrent.atomic", "jdk.internal.ref", "sun.nio.ch", "sun.nio.cs",
        "sun.security.action", "sun.util.calendar")]
"""The module opens Spark's own launcher gives a JVM on Java 17 (``spark-class`` adds them for the
master and the workers; the job server is started with ``java`` and needs them given)."""
_SPARK_LOG4J = """rootLogger.level = info
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss.SSS} %p %c{1}: %m%n%ex
"""


class SparkDeployment(Deployment):
    """A Spark standalone cluster: a master host, worker hosts each with a Beam worker pool beside
    it, the store host, and a driver host running Beam's Spark job server (the Spark driver: the
    SparkContext lives in it) and the CLI (``--runner=PortableRunner --job_endpoint=localhost:8099``).

    Spark's distribution and the job server jar come from ``make engines``. The job server jar
    holds Beam's runner, not Spark: it runs with Spark's jars on its class path, is the one file
    the job stages to the executors (``--files_to_stage``), and goes first on their class path
    (``spark.executor.extraClassPath``: Spark's own Guava 14 would otherwise shadow the Guava that
    Beam's file systems need).
    """

    def __init__(self, cluster: Cluster, wheel: Path, workers: int = 2, cores: int = 1):
        self.cluster, self.cores = cluster, cores
        self.store = cluster.add("store")
        self.master = cluster.add("sparkmaster")
        self.driver = cluster.add("driver")
        self.workers = [cluster.add(f"sparkworker{i + 1}") for i in range(workers)]
        self.install(wheel)
        process = self.master.start([f"{IMAGE}/spark/bin/spark-class", "org.apache.spark.deploy.master.Master",
                                     "--host", self.master.name, "--port", str(MASTER_PORT), "--webui-port", "8080"],
                                    "master.log")
        self.master.wait_port(MASTER_PORT, process, "master.log", timeout=120)
        for host in self.workers:
            self.start_pool(host)
            self.start_spark_worker(host)
        self.wait_spark_workers(len(self.workers))
        self.start_job_server()

    @staticmethod
    def image() -> dict:
        """What the worker image holds beyond Python: the Spark distribution and Beam's jar cache."""
        return {"spark": str(spark_home()), "jars": str(JAR_CACHE)}

    @property
    def jar(self) -> str:
        return f"{HOME}/.apache_beam/cache/jars/{job_server_jar('spark')}"

    def start_spark_worker(self, host: Host) -> None:
        host.start([f"{IMAGE}/spark/bin/spark-class", "org.apache.spark.deploy.worker.Worker",
                    f"spark://{self.master.name}:{MASTER_PORT}", "--host", host.name, "--cores", str(self.cores),
                    "--memory", "1g", "--work-dir", f"{HOME}/spark-work"], "spark-worker.log")

    def wait_spark_workers(self, count: int, timeout: float = 120) -> None:
        import urllib.request
        deadline = time.monotonic() + timeout
        while True:
            with urllib.request.urlopen(f"http://{self.master.ip}:8080/json/", timeout=10) as answer:
                alive = [w for w in json.loads(answer.read())["workers"] if w["state"] == "ALIVE"]
            if len(alive) >= count:
                return
            if time.monotonic() > deadline:
                raise ClusterError(f"fewer than {count} Spark workers alive in {timeout:g} s")
            time.sleep(0.5)

    def start_job_server(self) -> None:
        """Beam's Spark job server on the driver host, its event log in ``~/spark-events``."""
        (self.driver.home / "log4j2.properties").write_text(_SPARK_LOG4J)
        (self.driver.home / "spark-events").mkdir(exist_ok=True)
        jars = f"{IMAGE}/spark/jars"
        process = self.driver.start(
            ["java", *JAVA17_OPENS, f"-Dlog4j.configurationFile={HOME}/log4j2.properties",
             f"-Dspark.executor.extraClassPath={self.jar}", f"-Dspark.driver.host={self.driver.name}",
             "-Dspark.eventLog.enabled=true", f"-Dspark.eventLog.dir={HOME}/spark-events",
             "-cp", f"{jars}/slf4j-api-2.0.7.jar:{self.jar}:{jars}/*",
             "org.apache.beam.runners.spark.SparkJobServerDriver",
             "--spark-master-url", f"spark://{self.master.name}:{MASTER_PORT}", "--job-port", str(SPARK_JOB_PORT),
             "--artifact-port", "8098", "--expansion-port", "8097"], "job-server.log")
        self.driver.wait_port(SPARK_JOB_PORT, process, "job-server.log", timeout=120, local=True)

    def beam_options(self) -> list[str]:
        """The Beam options of a build on the Spark cluster, as the driver host gives them."""
        return ["--runner=PortableRunner", f"--job_endpoint=localhost:{SPARK_JOB_PORT}", "--environment_type=EXTERNAL",
                f"--environment_config=localhost:{POOL_PORT}", f"--files_to_stage={self.jar}",
                "--environment_cache_millis=600000", f"--job_server_timeout={JOB_SERVER_TIMEOUT}",
                *self.store_options()]

    def engine_split(self) -> dict[str, int]:
        """Tasks of the latest application, by the host of their executor (Spark's event log)."""
        logs = sorted((self.driver.home / "spark-events").glob("app-*"))
        split = collections.Counter()
        for line in (logs[-1].read_text().splitlines() if logs else []):
            event = json.loads(line)
            if event.get("Event") == "SparkListenerTaskEnd":
                split[event["Task Info"]["Host"]] += 1
        return dict(split)

    def restart_worker(self, host: Host) -> None:
        self.cluster.start_anchor(host)
        self.start_pool(host)
        self.start_spark_worker(host)
        self.wait_spark_workers(len(self.workers))


def write_input_tar(path: Path, images: int, seed: int = 34) -> Path:
    """A tar in the layout of ``ILSVRC2012_img_val.tar`` (flat ``ILSVRC2012_val_%08d.JPEG``) of
    ``images`` synthetic photographs: the first eight are the bundled sample's, then smooth random
    images of varied sizes (``numpy.random.default_rng(seed)``)."""
    import numpy as np
    from PIL import Image

    sys.path.insert(0, str(REPO))
    from pipelines.install.sample import write_sample

    with tempfile.TemporaryDirectory() as scratch:
        sample = sorted(Path(write_sample(scratch)).glob("*/*.JPEG"))
        members = [(p.name, p.read_bytes()) for p in sample[:images]]
        rng = np.random.default_rng(seed)
        taken = {name for name, _ in members}
        number = 1
        while len(members) < images:
            name = f"ILSVRC2012_val_{number:08d}.JPEG"
            number += 1
            if name in taken:
                continue
            height, width = int(rng.integers(240, 400)), int(rng.integers(240, 400))
            coarse = rng.integers(0, 256, (6, 6, 3), dtype=np.uint8)
            image = Image.fromarray(coarse).resize((width, height), Image.BICUBIC)
            noisy = np.clip(np.asarray(image, np.int16) + rng.integers(-12, 13, (height, width, 3)), 0, 255)
            buffer = io.BytesIO()
            Image.fromarray(noisy.astype(np.uint8)).save(buffer, format="JPEG", quality=90)
            members.append((name, buffer.getvalue()))
    with tarfile.open(path, "w") as archive:
        for name, data in sorted(members):
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            archive.addfile(info, io.BytesIO(data))
    return path


CORRUPTIONS, SEVERITIES = "gaussian_noise,contrast", "1,2"
"""The config of the tests' builds."""
OUTPUTS_PER_IMAGE = 5
"""Outputs per image of that config: the clean one and 2 corruptions x 2 severities."""


def errors(stderr: str) -> list[str]:
    """The lines of a command's stderr that are not progress, resume or note lines."""
    return [line for line in stderr.strip().splitlines() if not line.startswith(("progress: ", "resuming: ", "note: "))]


def digest_of(text: str) -> str:
    """The hex digest of the CLI's last line ``release digest (sha256 of SHA256SUMS): <hex>``."""
    lines = [line for line in text.splitlines() if line.startswith("release digest")]
    if not lines:
        raise AssertionError(f"no release digest line in: {text[-800:]}")
    return lines[-1].rsplit(" ", 1)[1]


def files(root: Path) -> dict[str, bytes]:
    """Every file below ``root``: relative path -> bytes."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _resumed(done: subprocess.CompletedProcess) -> str:
    lines = [line for line in done.stderr.splitlines() if line.startswith("resuming:")]
    return lines[0] if lines else "no resume"


def _run_job_service(deployment: Deployment, args, build: list, outputs: int, say) -> bool:
    """Beam's own job service: a worker host killed at a third, the rerun, verify, (``--cut``) a cut."""
    options, expected, ok = ["--", *deployment.beam_options()], args.expected, True
    killed, first = deployment.build_killing_a_worker_host(
        [*build, "--output", f"s3://{BUCKET}/release", *options], "release", outputs)
    say(f"first run, {killed.name if killed else 'no host'} killed ({killed.killed_processes if killed else 0} "
        f"processes) at a third: exit {first.returncode}: {_last_line(first.stderr)}")
    rerun = deployment.cli([*build, "--output", f"s3://{BUCKET}/release", *options])
    hosts = [h.name for h in deployment.workers if h is not killed and deployment.runs_a_worker(h, ever=True)]
    say(f"rerun on {', '.join(hosts)}: exit {rerun.returncode}: {_resumed(rerun)}; {_last_line(rerun.stdout)}")
    ok &= _last_line(rerun.stdout) == expected
    verify = deployment.cli(["verify", f"s3://{BUCKET}/release", "--", *deployment.store_options()])
    say(f"verify on the store: exit {verify.returncode}: {_last_line(verify.stdout)}")
    ok &= verify.returncode == 0
    if killed:
        deployment.restart_worker(killed)
    if args.cut:
        cut, run_ = deployment.build_with_a_cut([*build, "--output", f"s3://{BUCKET}/release-cut", *options],
                                                "release-cut", outputs, args.cut)
        say(f"{cut.name if cut else 'no host'}'s network cut for {args.cut:g}s at a third: exit "
            f"{run_.returncode}: {_last_line(run_.stderr if run_.returncode else run_.stdout)}")
        if run_.returncode:
            run_ = deployment.cli([*build, "--output", f"s3://{BUCKET}/release-cut", *options])
            say(f"rerun: exit {run_.returncode}: {_resumed(run_)}; {_last_line(run_.stdout)}")
        ok &= _last_line(run_.stdout) == expected
    return ok


def _run_engine(deployment: Deployment, args, build: list, outputs: int, say) -> bool:
    """A Flink or Spark cluster: a build and how it was spread, then each fault of ``--faults`` at a
    third of a build of its own (with the rerun where the build stopped), then verify."""
    options, expected = ["--", *deployment.beam_options()], args.expected
    console_store = [f"--s3_endpoint_url=http://{deployment.store.ip}:{STORE_PORT}", *deployment.store_options()[1:]]
    began = time.monotonic()
    local = subprocess.run([sys.executable, "-m", "scripts.cli", *build, "--output", f"s3://{BUCKET}/release-local",
                            "--", *console_store], cwd=REPO, capture_output=True, text=True,
                           env=dict(os.environ, PYTHONPATH=str(REPO)))
    say(f"local build into the store ({os.cpu_count()} workers, on the console): exit {local.returncode} in "
        f"{time.monotonic() - began:.1f}s")
    began = time.monotonic()
    _, done = deployment.build_with_a_fault([*build, "--output", f"s3://{BUCKET}/release", *options], "release",
                                       outputs, None)
    say(f"build on {args.engine}: exit {done.returncode} in {time.monotonic() - began:.1f}s: {_last_line(done.stdout)}")
    say(f"outputs of the committed parts by host: {deployment.committed_split}; "
        f"the engine's split by host: {deployment.engine_split()}")
    ok = _last_line(done.stdout) == expected
    for fault in filter(None, args.faults.split(",")):
        prefix = f"release-{fault}"
        coordinator = fault == "jobmanager"  # Flink's (main() refuses it for Spark)
        target = deployment.jobmanager if coordinator else deployment.workers[0]

        def kill(host: Host) -> None:
            host.killed_processes = host.kill()

        began = time.monotonic()
        struck, first = deployment.build_with_a_fault([*build, "--output", f"s3://{BUCKET}/{prefix}", *options], prefix,
                                                 outputs, kill, target=lambda: target)
        restarts = "" if coordinator or not isinstance(deployment, FlinkDeployment) else \
            f" (the failures Flink recovered from or failed with: {deployment.failures() or 'none'})"
        say(f"{target.name} killed ({target.killed_processes} processes) at a third: exit {first.returncode} in "
            f"{time.monotonic() - began:.1f}s{restarts}: "
            f"{_last_line(first.stderr if first.returncode else first.stdout)}")
        if struck is not None:
            deployment.restart_jobmanager() if coordinator else deployment.restart_worker(struck)
        if first.returncode:
            first = deployment.cli([*build, "--output", f"s3://{BUCKET}/{prefix}", *options])
            say(f"rerun: exit {first.returncode}: {_resumed(first)}; {_last_line(first.stdout)}")
        ok &= _last_line(first.stdout) == expected
    verify = deployment.cli(["verify", f"s3://{BUCKET}/release", "--", *deployment.store_options()])
    say(f"verify on the store: exit {verify.returncode}: {_last_line(verify.stdout)}")
    return ok and verify.returncode == 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Build a release across hosts on a Flink cluster, a Spark cluster or Beam's own job service,
    and compare it with a local build.

    ``--engine flink`` (the default) or ``spark``: a build and how it was spread over the hosts,
    then each fault of ``--faults`` (a TaskManager or Spark worker host, the JobManager) at a
    third of a build of its own, with the rerun where the build stopped. ``--engine
    job-service``: a worker host killed at a third, the rerun, ``--cut``. Then ``verify`` on the
    store. Prints one line per step; exit 0 when every digest matches the local build's."""
    parser = argparse.ArgumentParser(
        description=" ".join(main.__doc__.split("\n\n")[0].split()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example (root, after `make engines`): a Flink cluster of a JobManager host and two TaskManager hosts,\n"
               "a TaskManager host and then the JobManager host killed at a third of a build:\n"
               "  sudo python tests/cluster/harness.py --images 200 --faults worker,jobmanager --stall-minutes 1")
    parser.add_argument("--engine", choices=("flink", "spark", "job-service"), default="flink",
                        help="flink: a JobManager host and two TaskManager hosts; spark: a Spark standalone master "
                             "and two workers (`make engines` installs both); job-service: Beam's own job "
                             "service, one worker host a job (default flink)")
    parser.add_argument("--images", type=int, default=200, help="images of the input tar (default 200)")
    parser.add_argument("--corruptions", default="gaussian_noise,contrast")
    parser.add_argument("--severities", default="1,2")
    parser.add_argument("--commit-every", type=int, default=25, help="the builds' --commit-every (default 25)")
    parser.add_argument("--slots", type=int, default=2, help="flink: task slots of each TaskManager (default 2: "
                        "a job of parallelism 2 can restart on the host left after one is lost)")
    parser.add_argument("--faults", default="worker",
                        help="flink, spark: comma-separated faults, each in a build of its own: worker (the "
                             "first TaskManager or Spark worker host killed), jobmanager (flink) (default "
                             "worker; '' for none)")
    parser.add_argument("--cut", type=float, default=0, metavar="SECONDS",
                        help="job-service: also cut the worker host's network for SECONDS during a build (Beam's "
                             "workers give up a silent connection after 20 s + 300 s of keepalive)")
    parser.add_argument("--stall-minutes", type=float, metavar="M",
                        help="the builds' --stall-minutes (default: the CLI's, 30): with a --cut longer than "
                             "Beam's timeouts, the build stops after M minutes without a commit")
    parser.add_argument("--folder", help="where the hosts' files go (default: a new temporary folder, removed)")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a killed run still removes its hosts
    known = {"flink": {"worker", "jobmanager"}, "spark": {"worker"}}.get(args.engine, set())
    unknown = set(filter(None, args.faults.split(","))) - known if args.engine != "job-service" else set()
    if unknown:
        parser.error(f"--faults {','.join(sorted(unknown))}: not a fault of --engine {args.engine}")
    reason = cluster_supported() or (engine_supported(args.engine) if args.engine != "job-service" else None)
    if reason:
        print(f"error: {reason}", file=sys.stderr)
        return 2
    folder = Path(args.folder or tempfile.mkdtemp(prefix="imagenet-cp-cluster-"))
    folder.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()

    def say(text: str) -> None:
        print(f"[{time.monotonic() - started:6.1f}s] {text}", flush=True)

    tar = write_input_tar(folder / "sample_img_val.tar", args.images)
    config = ["--corruptions", args.corruptions, "--severities", args.severities]
    outputs = args.images * (1 + len(args.corruptions.split(",")) * len(args.severities.split(",")))
    began = time.monotonic()
    local = subprocess.run([sys.executable, "-m", "scripts.cli", "build-c", "--input", str(tar), "--output",
                            str(folder / "local-release"), *config], cwd=REPO, capture_output=True, text=True,
                           env=dict(os.environ, PYTHONPATH=str(REPO)))
    if local.returncode:
        print(f"error: the local build failed: {_last_line(local.stderr)}", file=sys.stderr)
        return 1
    args.expected = _last_line(local.stdout)
    say(f"local build ({os.cpu_count()} workers) in {time.monotonic() - began:.1f}s: {args.expected}")
    wheel = build_wheel(folder / "build")
    kind = {"flink": FlinkDeployment, "spark": SparkDeployment}.get(args.engine)
    cluster = Cluster(folder / "hosts", image=kind.image() if kind else None)
    try:
        if kind is FlinkDeployment:
            deployment = FlinkDeployment(cluster, wheel, slots=args.slots)
        else:
            deployment = kind(cluster, wheel) if kind else Deployment(cluster, wheel)
        say(f"hosts up: {', '.join(f'{h.name} {h.ip}' for h in cluster.hosts.values())}")
        deployment.s3().upload_file(str(tar), BUCKET, "input/sample_img_val.tar")
        build = ["build-c", "--input", f"s3://{BUCKET}/input/sample_img_val.tar", *config,
                 "--commit-every", str(args.commit_every)]
        if args.stall_minutes is not None:
            build += ["--stall-minutes", f"{args.stall_minutes:g}"]
        ok = (_run_engine if kind else _run_job_service)(deployment, args, build, outputs, say)
    finally:
        cluster.close()
        if not args.folder:
            shutil.rmtree(folder, ignore_errors=True)
    say("every release has the local build's digest" if ok else "error: a digest differs from the local build's")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
