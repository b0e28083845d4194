"""A real node beside the local control plane: containerd, the bridge CNI and kubelet, under one folder.

``koord kube up --node`` starts it after kube-apiserver and etcd. containerd, runc, the CNI plugins and
busybox come from Debian's packages, installed with apt-get when missing (as ``.ci/postgres-up`` does
for PostgreSQL); kubelet is built from the Go module proxy (``streams.kube.kubelet``); the pause and
busybox images are written by Python (``streams.kube.images``) and imported with ``ctr``. The files are
in ``streams.kube.nodefiles``.

kubelet authenticates with a client certificate of the control plane's CA for ``system:node:<name>``
in ``system:nodes``; the API server has no Node authorizer, so a ClusterRoleBinding
(``deploy/kubernetes/local-node-rbac.yaml``) gives that group the ``system:node`` ClusterRole (what the
Node authorizer grants, without its per-node narrowing). The node agent gets ``node-agent.kubeconfig``
(user ``koord-node-agent``), bound to the ClusterRole its DaemonSet's service account has
(``deploy/kubernetes/node-agent.yaml``), for ``koord node-agent --kube-api``.

There is one local node per machine: its bridge, pod subnet and cgroup root are host-wide names.
:meth:`LocalNode.stop` removes what the node made: it stops kubelet, kills every process in the pod
cgroups, stops containerd and the shims it started (their sockets in ``/run/containerd/s`` too),
unmounts every mount under the folder (rootfs overlays, sandbox ``/dev/shm``, network namespaces,
kubelet's rshared root), deletes the bridge, the pod cgroups and libcni's cached results.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from streams.kube import images, kubelet, nodefiles
from streams.kube import pki as pki_files
from streams.kube.controlplane import ADMIN, MissingPrerequisite, kubeconfig
from streams.broker.embedded import free_loopback_port
from streams.supervision import pid_alive, wait_gone

NODE_NAME = "koord-node"
PACKAGES = ("containerd", "runc", "containernetworking-plugins", "busybox-static")
NEEDED = {"containerd": Path("/usr/bin/containerd"), "runc": Path("/usr/sbin/runc"),
          "containernetworking-plugins": nodefiles.CNI_BIN / "bridge", "busybox-static": images.BUSYBOX}
"""The file each Debian package brings that the node runs."""
CGROUP_FS = Path("/sys/fs/cgroup")
SHIM_SOCKETS = Path("/run/containerd/s")
CNI_CACHE = Path("/var/lib/cni/results")
READY_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 20.0
MAX_SOCKET_PATH = 100
"""A unix socket path is at most 107 bytes; containerd adds ``.ttrpc`` to its socket's."""
NODE_RBAC = Path(__file__).resolve().parents[2] / "deploy" / "kubernetes" / "local-node-rbac.yaml"
"""The ClusterRoleBindings that let kubelet (group ``system:nodes``) act as a node and the node agent
(:data:`NODE_AGENT_USER`) hold the ClusterRole of :data:`NODE_AGENT_RBAC`."""
NODE_AGENT_RBAC = NODE_RBAC.with_name("node-agent.yaml")
NODE_AGENT_USER = "koord-node-agent"
"""The node agent's identity on the local control plane (``node-agent.kubeconfig`` in the node's folder)."""


class NodeRefused(RuntimeError):
    """The machine refused something the node needs (its message is the command's and the error's)."""


def ensure_packages() -> None:
    """Install the Debian packages whose files are missing (``apt-get``, as root or with sudo)."""
    missing = [package for package, path in NEEDED.items() if not path.exists()]
    if not missing:
        return
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    if not shutil.which("apt-get"):
        raise MissingPrerequisite(f"a local node needs the Debian packages {', '.join(missing)} and there is no apt-get")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for args in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing]):
        result = subprocess.run(sudo + args, env=env, capture_output=True, text=True)
        if result.returncode != 0:
            raise MissingPrerequisite(f"{' '.join(args)} failed: {result.stderr[-2000:]}")


def v1_hierarchies() -> list[Path]:
    """The cgroup v1 hierarchies mounted below ``/sys/fs/cgroup`` (kubelet's cgroupfs driver uses each)."""
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split(" - ")
        if len(fields) == 2 and fields[1].split()[0] == "cgroup":
            mount_point = Path(line.split()[4])
            if mount_point.parent == CGROUP_FS:
                found.append(mount_point)
    return sorted(found)


def processes_with(argument: str, program: str) -> list[int]:
    """Pids of the processes running ``program`` with ``argument`` among their arguments."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if args and os.path.basename(args[0].decode(errors="replace")) == program and argument.encode() in args:
            pids.append(int(entry.name))
    return pids


def mounts_under(folder: Path) -> list[str]:
    """Mount points at or below ``folder``, deepest first."""
    prefix = str(folder.resolve())
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if point == prefix or point.startswith(prefix + "/"):
            points.append(point)
    return sorted(set(points), key=lambda p: (-p.count("/"), p))


@dataclasses.dataclass
class LocalNode:
    """containerd and kubelet with their state in ``directory``, registered as ``name`` with the control
    plane whose certificates are in ``pki`` and whose API server is ``server``."""

    directory: Path
    pki: pki_files.Pki
    name: str = NODE_NAME
    children: dict[str, subprocess.Popen] = dataclasses.field(default_factory=dict)
    """The processes this object started (a process that exits early is seen by ``poll``)."""

    @property
    def state_file(self) -> Path:
        return self.directory / "node.json"

    @property
    def node_agent_kubeconfig(self) -> Path:
        return self.directory / "node-agent.kubeconfig"

    @property
    def socket(self) -> Path:
        return self.directory / "containerd" / "containerd.sock"

    def state(self) -> dict | None:
        try:
            return json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return None

    def running(self) -> bool:
        state = self.state()
        return bool(state) and all(pid_alive(pid) for pid in state["pids"].values())

    def ctr(self, *args: str, check: bool = True) -> str:
        """Run ``ctr`` against this node's containerd in the CRI namespace ``k8s.io``."""
        result = subprocess.run(["ctr", "--address", str(self.socket), "-n", "k8s.io", *args],
                                capture_output=True, text=True)
        if check and result.returncode != 0:
            raise NodeRefused(f"ctr {' '.join(args)} failed: {result.stderr.strip()}")
        return result.stdout

    def start(self, server: str) -> dict:
        """Start containerd, import the images, start kubelet; return the state once the Node is Ready."""
        if os.geteuid() != 0:
            raise MissingPrerequisite("a local node runs containerd and kubelet, which need root")
        if len(str(self.socket.resolve())) > MAX_SOCKET_PATH:
            raise MissingPrerequisite(f"containerd's socket {self.socket} would be longer than {MAX_SOCKET_PATH} "
                                      "characters: use a shorter KOORD_HOME")
        if (Path("/sys/class/net") / nodefiles.BRIDGE).exists():
            raise NodeRefused(f"the bridge {nodefiles.BRIDGE} exists: another local node runs on this machine "
                              "(`koord kube down` in its KOORD_HOME removes it)")
        ensure_packages()
        kubelet_binary = kubelet.binary()
        self.directory.mkdir(parents=True, exist_ok=True)
        pids: dict[str, int] = {}
        try:
            self._cgroup_root()
            archives = images.write_all(self.directory / "images")
            containerd_dir = self.directory / "containerd"
            cni_dir = self.directory / "cni"
            for folder in (containerd_dir, cni_dir, self.directory / "kubelet" / "pod-logs"):
                folder.mkdir(parents=True, exist_ok=True)
            (containerd_dir / "config.toml").write_text(
                nodefiles.containerd_config(containerd_dir, self.socket, images.PAUSE_IMAGE,
                                            not nodefiles.has_capability(nodefiles.CAP_SYS_RESOURCE)))
            (cni_dir / "10-koordstream.conflist").write_text(nodefiles.cni_config(self.directory / "cni-ipam"))
            pids["containerd"] = self._spawn("containerd", ["containerd", "--config", str(containerd_dir / "config.toml")])
            self._wait_containerd()
            for archive in archives.values():
                self.ctr("images", "import", "--snapshotter", "overlayfs", str(archive))
            pids["kubelet"] = self._spawn("kubelet", self._kubelet_args(kubelet_binary, server))
            state = {"name": self.name, "server": server, "socket": str(self.socket), "pids": pids,
                     "cgroupRoot": nodefiles.CGROUP_ROOT, "bridge": nodefiles.BRIDGE, "podSubnet": nodefiles.POD_SUBNET,
                     "nodeAgentKubeconfig": str(self.node_agent_kubeconfig)}
            self.state_file.write_text(json.dumps(state, indent=2))
            self._wait_ready(server)
        except BaseException:
            self.stop(pids)
            raise
        return state

    def stop(self, pids: dict[str, int] | None = None) -> None:
        """Remove every process, mount, network namespace, link and cgroup this node made (see the module)."""
        pids = pids if pids is not None else (self.state() or {}).get("pids", {})
        _terminate(pids.get("kubelet"))
        self._kill_pods()
        _terminate(pids.get("containerd"))
        for shim in processes_with(str(self.socket), "containerd-shim-runc-v2"):
            _terminate(shim)
        self._remove_shim_sockets()
        for point in mounts_under(self.directory):
            subprocess.run(["umount", "-l", point], capture_output=True)
        if (Path("/sys/class/net") / nodefiles.BRIDGE).exists():
            subprocess.run(["ip", "link", "delete", nodefiles.BRIDGE], capture_output=True)
        self._remove_cgroups()
        sandboxes = self.directory / "containerd" / "state" / "io.containerd.grpc.v1.cri" / "sandboxes"
        for sandbox in sandboxes.iterdir() if sandboxes.is_dir() else ():
            for cached in CNI_CACHE.glob(f"*-{sandbox.name}-*"):
                cached.unlink(missing_ok=True)
        for folder in ("containerd", "kubelet", "cni-ipam"):
            shutil.rmtree(self.directory / folder, ignore_errors=True)
        self.state_file.unlink(missing_ok=True)

    def _cgroup_root(self) -> None:
        """Create kubelet's ``cgroupRoot`` in every v1 hierarchy (kubelet requires it to exist); a new
        cpuset cgroup takes its parent's CPUs and memory nodes, as cgroup.clone_children would."""
        relative = nodefiles.CGROUP_ROOT.lstrip("/")
        for hierarchy in v1_hierarchies():
            folder = hierarchy / relative
            folder.mkdir(exist_ok=True)
            if (hierarchy / "cpuset.cpus").exists():
                for name in ("cpuset.cpus", "cpuset.mems"):
                    if not (folder / name).read_text().strip():
                        (folder / name).write_text((hierarchy / name).read_text())

    def _kill_pods(self) -> None:
        """SIGKILL every process left in the pod cgroups, until they are empty (at most 10 s)."""
        relative = nodefiles.CGROUP_ROOT.lstrip("/")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            left = set()
            for hierarchy in v1_hierarchies():
                for procs in (hierarchy / relative).rglob("cgroup.procs") if (hierarchy / relative).is_dir() else ():
                    try:
                        left.update(int(pid) for pid in procs.read_text().split())
                    except OSError:
                        continue
            if not left:
                return
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.1)

    def _remove_cgroups(self) -> None:
        relative = nodefiles.CGROUP_ROOT.lstrip("/")
        for hierarchy in v1_hierarchies():
            root = hierarchy / relative
            if not root.is_dir():
                continue
            folders = sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)) + [root]
            for folder in folders:
                for _ in range(50):
                    try:
                        folder.rmdir()
                        break
                    except FileNotFoundError:
                        break
                    except OSError:
                        time.sleep(0.1)

    def _remove_shim_sockets(self) -> None:
        """containerd 1.6 names a shim's socket ``sha256(<address>/<namespace>/<id>)``: remove those of the
        task bundles this node's containerd made."""
        tasks = self.directory / "containerd" / "state" / "io.containerd.runtime.v2.task"
        if not tasks.is_dir():
            return
        for namespace in tasks.iterdir():
            for bundle in namespace.iterdir():
                digest = hashlib.sha256(str(self.socket / namespace.name / bundle.name).encode()).hexdigest()
                (SHIM_SOCKETS / digest).unlink(missing_ok=True)
        for folder in (SHIM_SOCKETS, SHIM_SOCKETS.parent):
            try:
                folder.rmdir()
            except OSError:
                pass

    def _kubelet_args(self, binary: Path, server: str) -> list[str]:
        folder = self.directory / "kubelet"
        user = f"system:node:{self.name}"
        pki_files.issue_client(self.pki, user, ("system:nodes",))
        (folder / "kubeconfig").write_text(kubeconfig(server, self.pki, user))
        (folder / "config.json").write_text(nodefiles.kubelet_config(
            folder, self.socket, self.pki.ca, free_loopback_port(), free_loopback_port()))
        self.authorize_node_agent(server)
        return [str(binary), f"--config={folder / 'config.json'}", f"--kubeconfig={folder / 'kubeconfig'}",
                f"--root-dir={folder / 'root'}", f"--cert-dir={folder / 'pki'}", f"--hostname-override={self.name}",
                "--v=1"]

    def authorize_node_agent(self, server: str) -> Path:
        """Create the ClusterRole of :data:`NODE_AGENT_RBAC` and the bindings of :data:`NODE_RBAC` (existing
        ones are kept); write ``node-agent.kubeconfig`` with :data:`NODE_AGENT_USER`'s client certificate, for
        ``koord node-agent --kube-api``; return its path."""
        import yaml

        role = next(d for d in yaml.safe_load_all(NODE_AGENT_RBAC.read_text()) if d["kind"] == "ClusterRole")
        for kind, document in [("clusterroles", role)] + [
                ("clusterrolebindings", d) for d in yaml.safe_load_all(NODE_RBAC.read_text())]:
            try:
                self._api(server, f"/apis/rbac.authorization.k8s.io/v1/{kind}", document)
            except urllib.error.HTTPError as error:
                if error.code != 409:
                    raise
        pki_files.issue_client(self.pki, NODE_AGENT_USER)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.node_agent_kubeconfig.write_text(kubeconfig(server, self.pki, NODE_AGENT_USER))
        return self.node_agent_kubeconfig

    def _api(self, server: str, path: str, body: dict | None = None) -> dict:
        context = ssl.create_default_context(cafile=str(self.pki.ca))
        context.load_cert_chain(*map(str, self.pki.client(ADMIN[0])))
        request = urllib.request.Request(f"{server}{path}", data=None if body is None else json.dumps(body).encode(),
                                         method="GET" if body is None else "POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, context=context, timeout=30) as response:
            return json.loads(response.read())

    def _spawn(self, name: str, args: list[str]) -> int:
        log = open(self.directory / f"{name}.log", "ab")
        proc = self.children[name] = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                                                      stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        return proc.pid

    def _wait_containerd(self) -> None:
        deadline = time.monotonic() + 30
        last = ""
        while time.monotonic() < deadline:
            result = subprocess.run(["ctr", "--address", str(self.socket), "version"], capture_output=True, text=True)
            if result.returncode == 0:
                return
            last = result.stderr.strip()
            time.sleep(0.2)
        raise NodeRefused(f"containerd did not answer on {self.socket} within 30s ({last});"
                          f" {self.directory / 'containerd.log'}:\n{_tail(self.directory / 'containerd.log')}")

    def _wait_ready(self, server: str) -> None:
        """Wait until this kubelet reports the Node's Ready condition True (a heartbeat from after the start:
        the Node of an earlier run may still say Ready); on timeout the error carries kubelet's log tail."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 1))
        last = "not registered"
        while time.monotonic() < deadline:
            if self.children["kubelet"].poll() is not None:
                raise NodeRefused(f"kubelet exited; {self.directory / 'kubelet.log'}:\n"
                                  f"{_tail(self.directory / 'kubelet.log')}")
            try:
                node = self._api(server, f"/api/v1/nodes/{self.name}")
                ready = [c for c in node.get("status", {}).get("conditions", []) if c["type"] == "Ready"]
                if ready and ready[0]["status"] == "True" and ready[0].get("lastHeartbeatTime", "") >= since:
                    return
                last = ready[0].get("message", "") if ready else "no Ready condition"
            except urllib.error.HTTPError as error:
                last = f"HTTP {error.code}"
            time.sleep(0.5)
        raise NodeRefused(f"Node {self.name} not Ready within {READY_TIMEOUT_S:.0f}s ({last}); "
                          f"{self.directory / 'kubelet.log'}:\n{_tail(self.directory / 'kubelet.log')}")


def _terminate(pid: int | None) -> None:
    """SIGTERM ``pid``, SIGKILL after :data:`STOP_TIMEOUT_S`; reap it when it is our child."""
    if not pid or not pid_alive(pid):
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return
        except ChildProcessError:
            if not pid_alive(pid):
                return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        wait_gone(pid, 5)


def _tail(path: Path, size: int = 4000) -> str:
    return path.read_bytes()[-size:].decode(errors="replace") if path.exists() else ""
