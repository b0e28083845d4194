"""A real kube-apiserver and etcd on loopback, built from the Go module proxy, as envtest runs them.

There is no kubelet or controller-manager, and no scheduler runs unless one is started against it
(``koord bench bridge --versus kube-scheduler`` starts :data:`KUBE_SCHEDULER`): objects are stored and
validated, RBAC is enforced, bound pods stay Pending. That is what a scheduler bridge test needs. Two admission plugins
are off because nothing here would satisfy them: ServiceAccount (no controller creates default
service accounts) and TaintNodesByCondition (it taints every new Node ``not-ready`` until a kubelet
reports, so no pod could be scheduled on a Node created by hand).

The binaries are built on first use into ``~/.cache/koordstream/k8s/<version>-<build>/`` (``streams.cache``):
kube-apiserver and kube-scheduler from ``k8s.io/kubernetes`` at :data:`KUBERNETES_VERSION`, in one wrapper
module and one ``go build`` (so the packages they share are compiled once), whose go.mod replaces each
staging module (``k8s.io/api``, ``client-go``, ...) with a local folder that the module zip lacks, so a
wrapper module maps every such replace to the published ``v0.<minor>.<patch>``; etcd from
``go.etcd.io/etcd/server/v3`` at :data:`ETCD_VERSION` in a wrapper module of its own, so that its
grpc/otel versions do not mix with Kubernetes'. ``GOTOOLCHAIN=local`` and ``CGO_ENABLED=0`` as the
release builds use.

A started control plane keeps its state in a folder (``KOORD_HOME/kube``): certificates (``pki``),
etcd's data, both logs, ``kubeconfig`` for the admin (``system:masters``) and ``state.json`` with the
pids and ports, so ``koord kube down|status`` work from another process.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from streams import cache
from streams.broker.embedded import free_loopback_port
from streams.kube import pki as pki_files
from streams.supervision import pid_alive, wait_gone

KUBERNETES_VERSION = "v1.34.4"
ETCD_VERSION = "v3.6.16"
BUILD = 2
"""Revision of what :func:`binaries` builds, part of the cache entry: a changed build is made again."""
KUBE_COMMANDS = ("kube-apiserver", "kube-scheduler")
KUBE_SCHEDULER = "kube-scheduler"
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 20.0
ADMIN = ("admin", ("system:masters",))
SERVICE_CIDR = "10.0.0.0/24"


class MissingPrerequisite(RuntimeError):
    """Go is not installed: the control plane cannot be built here."""


def binaries() -> Path:
    """The folder holding ``kube-apiserver``, ``kube-scheduler`` and ``etcd``, built with Go on first use."""
    go = go_command("the local Kubernetes control plane")
    return cache.build_once(f"k8s/{KUBERNETES_VERSION}-{BUILD}", lambda folder: _build(go, folder))


def go_command(needed_by: str) -> str:
    """The path of ``go``, or :class:`MissingPrerequisite` saying that ``needed_by`` needs it."""
    go = shutil.which("go")
    if not go:
        raise MissingPrerequisite(f"{needed_by} is built from source and needs Go on PATH "
                                  "(Debian: apt-get install golang; Go 1.24 or newer)")
    return go


def _run_go(go: str, args: list[str], cwd: Path) -> str:
    env = {**os.environ, "GOTOOLCHAIN": "local", "CGO_ENABLED": "0", "GOFLAGS": "-mod=mod"}
    result = subprocess.run([go, *args], cwd=cwd, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"go {' '.join(args)} failed:\n{result.stdout[-2000:]}{result.stderr[-4000:]}")
    return result.stdout


def build_kubernetes(go: str, folder: Path, commands: tuple[str, ...]) -> None:
    """Build ``k8s.io/kubernetes/cmd/<command>`` at :data:`KUBERNETES_VERSION` into ``folder``, in a wrapper module
    whose go.mod replaces each staging module the module zip lacks with its published ``v0.<minor>.<patch>``."""
    with tempfile.TemporaryDirectory(prefix="koord-k8s-build-") as tmp:
        module = Path(tmp)
        staging = f"v0.{KUBERNETES_VERSION.removeprefix('v1.')}"
        upstream = json.loads(_run_go(go, ["mod", "download", "-json", f"k8s.io/kubernetes@{KUBERNETES_VERSION}"],
                                      module))["GoMod"]
        replaces = re.findall(r"^\s*(k8s\.io/[\w.-]+) => \./staging/", Path(upstream).read_text(), re.MULTILINE)
        (module / "go.mod").write_text("module local/kubernetes\n\ngo 1.24.0\n\n" + "".join(
            f"replace {name} => {name} {staging}\n" for name in replaces))
        packages = [f"k8s.io/kubernetes/cmd/{command}" for command in commands]
        _run_go(go, ["get", *(f"{package}@{KUBERNETES_VERSION}" for package in packages)], module)
        version = f"-X k8s.io/component-base/version.gitVersion={KUBERNETES_VERSION}"
        _run_go(go, ["build", "-trimpath", "-ldflags", f"-s -w {version}", "-o", f"{folder}/", *packages], module)


def _build(go: str, folder: Path) -> None:
    build_kubernetes(go, folder, KUBE_COMMANDS)
    with tempfile.TemporaryDirectory(prefix="koord-etcd-build-") as tmp:
        etcd = Path(tmp)
        (etcd / "go.mod").write_text("module local/etcd\n\ngo 1.25.0\n")
        _run_go(go, ["get", f"go.etcd.io/etcd/server/v3@{ETCD_VERSION}"], etcd)
        _run_go(go, ["build", "-trimpath", "-ldflags", "-s -w", "-o", str(folder / "etcd"),
                     "go.etcd.io/etcd/server/v3"], etcd)


@dataclasses.dataclass
class ControlPlane:
    """etcd and kube-apiserver with their state under ``directory``."""

    directory: Path
    processes: dict[str, subprocess.Popen] = dataclasses.field(default_factory=dict)
    """The children this object started (reaped on stop); another process stops them by pid."""

    @property
    def kubeconfig(self) -> Path:
        return self.directory / "kubeconfig"

    @property
    def state_file(self) -> Path:
        return self.directory / "state.json"

    @property
    def pki(self) -> pki_files.Pki:
        return pki_files.Pki(self.directory / "pki")

    def state(self) -> dict | None:
        try:
            return json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return None

    def running(self) -> bool:
        state = self.state()
        return bool(state) and all(pid_alive(pid) for pid in state["pids"].values())

    def start(self) -> dict:
        """Start etcd, then the API server; return the state once ``/readyz`` answers ok."""
        if self.running():
            raise RuntimeError(f"a control plane is already running from {self.directory}")
        folder = binaries()
        self.directory.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(self.directory / "etcd-data", ignore_errors=True)
        pki = pki_files.create(self.directory / "pki", dict([ADMIN]))
        etcd_port, peer_port, api_port = (free_loopback_port() for _ in range(3))
        etcd_url, peer_url = f"http://127.0.0.1:{etcd_port}", f"http://127.0.0.1:{peer_port}"
        pids: dict[str, int] = {}
        try:
            pids["etcd"] = self._spawn("etcd", [
                str(folder / "etcd"), "--name", "koord", "--data-dir", str(self.directory / "etcd-data"),
                "--listen-client-urls", etcd_url, "--advertise-client-urls", etcd_url,
                "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
                "--initial-cluster", f"koord={peer_url}", "--unsafe-no-fsync", "--log-level", "warn"])
            _wait_ok(f"{etcd_url}/health", None, "etcd", self.directory / "etcd.log")
            pids["kube-apiserver"] = self._spawn("kube-apiserver", self._apiserver_args(folder, etcd_url, api_port))
            server = f"https://127.0.0.1:{api_port}"
            _wait_ok(f"{server}/readyz", _client_context(pki, ADMIN[0]), "kube-apiserver",
                     self.directory / "kube-apiserver.log")
        except BaseException:
            self.stop()
            raise
        self.kubeconfig.write_text(kubeconfig(server, pki, ADMIN[0]))
        state = {"server": server, "etcd": etcd_url, "kubeconfig": str(self.kubeconfig), "pids": pids,
                 "version": KUBERNETES_VERSION}
        self.state_file.write_text(json.dumps(state, indent=2))
        return state

    def install(self, crds: Path, namespaces: tuple[str, ...] = ("koordinator-system",)) -> list[str]:
        """Create ``namespaces`` and every CustomResourceDefinition in ``crds/*.yaml`` (those already
        there are left as they are); returns the CRD names."""
        import yaml

        state = self.state()
        context = _client_context(self.pki, ADMIN[0])
        created = []

        def post(path: str, body: dict) -> None:
            request = urllib.request.Request(f"{state['server']}{path}", data=json.dumps(body).encode(), method="POST",
                                             headers={"Content-Type": "application/json"})
            try:
                urllib.request.urlopen(request, context=context, timeout=30).close()
            except urllib.error.HTTPError as error:
                if error.code != 409:
                    raise RuntimeError(f"POST {path}: HTTP {error.code}: {error.read()[:500]!r}") from None

        for namespace in namespaces:
            post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        for path in sorted(crds.glob("*.yaml")):
            crd = yaml.safe_load(path.read_text())
            post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
            created.append(crd["metadata"]["name"])
        return created

    def stop(self) -> None:
        """SIGTERM the API server before etcd, then SIGKILL what is left after :data:`STOP_TIMEOUT_S`."""
        state = self.state() or {"pids": {name: proc.pid for name, proc in self.processes.items()}}
        for name in ("kube-apiserver", "etcd"):
            self._stop_one(name, state["pids"].get(name))
        self.state_file.unlink(missing_ok=True)

    def _stop_one(self, name: str, pid: int | None) -> None:
        """SIGTERM one process (ours, or recorded in the state file by another), SIGKILL after the timeout."""
        proc = self.processes.pop(name, None)
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        elif pid and pid_alive(pid):
            os.kill(pid, signal.SIGTERM)
            if not wait_gone(pid, STOP_TIMEOUT_S):
                os.kill(pid, signal.SIGKILL)
                wait_gone(pid, 5)

    def stop_apiserver(self) -> None:
        """Stop only the API server (SIGTERM, then SIGKILL after :data:`STOP_TIMEOUT_S`); etcd keeps the
        objects, the certificates and the kubeconfig stay valid, so :meth:`start_apiserver` brings the same
        cluster back on the same address: what a client sees when the API server restarts."""
        state = self.state()
        self._stop_one("kube-apiserver", state["pids"].pop("kube-apiserver"))
        self.state_file.write_text(json.dumps(state, indent=2))

    def start_apiserver(self) -> dict:
        """Start the API server stopped by :meth:`stop_apiserver` again, on its port, against the same etcd."""
        state = self.state()
        if "kube-apiserver" in state["pids"]:
            raise RuntimeError(f"the API server of {self.directory} is running")
        port = int(state["server"].rsplit(":", 1)[1])
        state["pids"]["kube-apiserver"] = self._spawn("kube-apiserver",
                                                      self._apiserver_args(binaries(), state["etcd"], port))
        _wait_ok(f"{state['server']}/readyz", _client_context(self.pki, ADMIN[0]), "kube-apiserver",
                 self.directory / "kube-apiserver.log")
        self.state_file.write_text(json.dumps(state, indent=2))
        return state

    def _apiserver_args(self, folder: Path, etcd_url: str, api_port: int) -> list[str]:
        pki = self.pki
        cert, key = pki.serving
        sa_public, sa_private = pki.service_account
        return [
            str(folder / "kube-apiserver"), f"--etcd-servers={etcd_url}", "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1", f"--secure-port={api_port}", f"--cert-dir={pki.directory}",
            f"--tls-cert-file={cert}", f"--tls-private-key-file={key}", f"--client-ca-file={pki.ca}",
            "--authorization-mode=RBAC", f"--service-cluster-ip-range={SERVICE_CIDR}",
            f"--service-account-issuer=https://127.0.0.1:{api_port}/",
            f"--service-account-key-file={sa_public}", f"--service-account-signing-key-file={sa_private}",
            "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition", "--allow-privileged=true",
            f"--audit-log-path={self.directory / 'audit.log'}", f"--audit-policy-file={self._audit_policy()}"]

    def _spawn(self, name: str, args: list[str]) -> int:
        log = open(self.directory / f"{name}.log", "ab")
        proc = self.processes[name] = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                                                       stdin=subprocess.DEVNULL, start_new_session=True)
        return proc.pid

    def _audit_policy(self) -> Path:
        """Log every write (metadata level), so a test can show what a client changed or did not."""
        path = self.directory / "audit-policy.yaml"
        path.write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n"
                        "- level: Metadata\n  verbs: [create, update, patch, delete, deletecollection]\n"
                        "- level: None\n")
        return path


def kubeconfig(server: str, pki: pki_files.Pki, user: str) -> str:
    cert, key = pki.client(user)
    return json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "koord",
        "clusters": [{"name": "koord", "cluster": {"server": server, "certificate-authority": str(pki.ca)}}],
        "users": [{"name": user, "user": {"client-certificate": str(cert), "client-key": str(key)}}],
        "contexts": [{"name": "koord", "context": {"cluster": "koord", "user": user}}],
    }, indent=2)


def _client_context(pki: pki_files.Pki, user: str) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(pki.ca))
    context.load_cert_chain(*map(str, pki.client(user)))
    return context


def _wait_ok(url: str, context: ssl.SSLContext | None, name: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    last = ""
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2, context=context) as response:
                if response.status == 200:
                    return
        except OSError as error:
            last = str(error)
        time.sleep(0.2)
    tail = log.read_bytes()[-3000:].decode(errors="replace") if log.exists() else ""
    raise TimeoutError(f"{name} did not answer {url} within {START_TIMEOUT_S:.0f}s ({last}); {log}:\n{tail}")
