"""The configuration files of a local node: containerd's, the bridge CNI network's and kubelet's.

Everything containerd and kubelet keep lives under the node's folder: containerd's root, state, socket,
network namespaces (``netns_mounts_under_state_dir``) and the CNI IP allocations (host-local's
``dataDir``); kubelet's root dir and pod logs. Two things containerd 1.6 places itself: the shims'
sockets in ``/run/containerd/s/<sha256 of address+namespace+id>`` and libcni's result cache in
``/var/lib/cni/results``; both are named after this node's own containers and removed with them.

kubelet: ``cgroupfs`` driver with its pods under ``cgroupRoot`` (:data:`CGROUP_ROOT`, so they never mix
with a machine's own ``kubepods``), client-certificate authentication towards the API server, x509
authentication and AlwaysAllow authorisation on its own port, on loopback. Disk-pressure eviction is
off (a development disk is often fuller than kubelet's 10% default) and memory eviction at 100Mi.
"""

from __future__ import annotations

import json
from pathlib import Path

CNI_BIN = Path("/usr/lib/cni")
"""Where Debian's ``containernetworking-plugins`` installs the plugins."""
CGROUP_ROOT = "/koordstream"
CAP_SYS_RESOURCE = 24
BRIDGE = "koord0"
POD_SUBNET = "10.88.0.0/24"


def containerd_config(folder: Path, socket: Path, pause_image: str, restrict_oom_score_adj: bool) -> str:
    """containerd 1.6's config (version 2) with every path under ``folder`` (runc's state too).

    ``restrict_oom_score_adj``: keep every container's ``oom_score_adj`` at or above containerd's own.
    Lowering it needs CAP_SYS_RESOURCE; without that capability runc's ``nsexec`` fails every sandbox
    ("failed to update /proc/self/oom_score_adj: Permission denied", kubelet asks -998 for pause)."""
    runc = 'plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc'
    return f"""version = 2
root = "{folder / 'root'}"
state = "{folder / 'state'}"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "{socket}"

[ttrpc]
  address = "{socket}.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = "{folder / 'opt'}"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{pause_image}"
  netns_mounts_under_state_dir = true
  restrict_oom_score_adj = {str(restrict_oom_score_adj).lower()}
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
  [{runc}]
    runtime_type = "io.containerd.runc.v2"
  [{runc}.options]
    SystemdCgroup = false
    Root = "{folder / 'runc'}"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{CNI_BIN}"
    conf_dir = "{folder.parent / 'cni'}"
    max_conf_num = 1
"""


def has_capability(bit: int, status: Path = Path("/proc/self/status")) -> bool:
    """Whether this process's effective capabilities (``CapEff`` of ``/proc/self/status``) hold ``bit``."""
    for line in status.read_text().splitlines():
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) >> bit & 1)
    return False


def cni_config(ipam_dir: Path) -> str:
    """One bridge network (:data:`BRIDGE`, :data:`POD_SUBNET`, the bridge as gateway, no masquerading:
    pods talk to the node and to each other, which is what the node's tests need)."""
    return json.dumps({
        "cniVersion": "1.0.0", "name": "koordstream",
        "plugins": [{"type": "bridge", "bridge": BRIDGE, "isGateway": True, "ipMasq": False, "hairpinMode": True,
                     "ipam": {"type": "host-local", "dataDir": str(ipam_dir), "ranges": [[{"subnet": POD_SUBNET}]],
                              "routes": [{"dst": "0.0.0.0/0"}]}}],
    }, indent=2)


def kubelet_config(folder: Path, socket: Path, ca: Path, port: int, healthz_port: int) -> str:
    return json.dumps({
        "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
        "address": "127.0.0.1", "port": port, "readOnlyPort": 0, "healthzBindAddress": "127.0.0.1",
        "healthzPort": healthz_port,
        "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": False},
                           "x509": {"clientCAFile": str(ca)}},
        "authorization": {"mode": "AlwaysAllow"},
        "cgroupDriver": "cgroupfs", "cgroupRoot": CGROUP_ROOT, "cgroupsPerQOS": True,
        "containerRuntimeEndpoint": f"unix://{socket}",
        "failSwapOn": False, "failCgroupV1": False, "resolvConf": "", "podLogsDir": str(folder / "pod-logs"),
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "0%", "imagefs.available": "0%",
                         "nodefs.inodesFree": "0%", "imagefs.inodesFree": "0%"},
        "imageGCHighThresholdPercent": 100, "serializeImagePulls": False,
        "nodeStatusReportFrequency": "10s", "nodeStatusUpdateFrequency": "10s", "syncFrequency": "10s",
        "fileCheckFrequency": "10s", "registerNode": True, "enableServer": True,
    }, indent=2)
