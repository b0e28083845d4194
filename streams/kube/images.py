"""The two images a local node needs, written by Python from Debian's ``busybox-static``: no registry.

Each is a docker-archive tar (``manifest.json`` with ``RepoTags``, one config, one layer) that
``ctr -n k8s.io images import`` reads: one layer holding ``/bin/busybox`` and a symlink per applet
(``busybox --list``), ``/etc/passwd`` and ``/etc/group`` for root, and the empty ``/dev``, ``/proc``,
``/sys`` and ``/tmp`` runc mounts onto. The pause image runs ``busybox sleep`` for as long as the sandbox
lives: containerd stops a sandbox with SIGKILL, so pause's signal handling is not needed.
"""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import tarfile
from pathlib import Path

BUSYBOX = Path("/bin/busybox")
PAUSE_IMAGE = "koord.local/pause:3.10"
BUSYBOX_IMAGE = "koord.local/busybox:1.35"
PAUSE_SECONDS = "2147483647"


def _layer(busybox: Path) -> bytes:
    applets = subprocess.run([str(busybox), "--list"], capture_output=True, text=True, check=True).stdout.split()
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for folder in ("bin", "dev", "etc", "proc", "sys", "tmp", "root"):
            info = tarfile.TarInfo(folder)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if folder == "tmp" else 0o755
            tar.addfile(info)
        data = busybox.read_bytes()
        info = tarfile.TarInfo("bin/busybox")
        info.size, info.mode = len(data), 0o755
        tar.addfile(info, io.BytesIO(data))
        for applet in sorted(set(applets) - {"busybox"}):
            link = tarfile.TarInfo(f"bin/{applet}")
            link.type, link.linkname = tarfile.SYMTYPE, "busybox"
            tar.addfile(link)
        for name, text in (("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n"), ("etc/group", "root:x:0:\n")):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(text), 0o644
            tar.addfile(info, io.BytesIO(text.encode()))
    return out.getvalue()


def docker_archive(path: Path, tag: str, entrypoint: list[str], busybox: Path = BUSYBOX) -> Path:
    """Write the image ``tag`` (busybox and ``entrypoint``) as a docker-archive tar at ``path``."""
    layer = _layer(busybox)
    diff_id = "sha256:" + hashlib.sha256(layer).hexdigest()
    config = json.dumps({
        "architecture": "amd64", "os": "linux",
        "config": {"Entrypoint": entrypoint, "Env": ["PATH=/bin"], "WorkingDir": "/"},
        "rootfs": {"type": "layers", "diff_ids": [diff_id]}, "history": [{"created_by": "koordstream"}],
    }).encode()
    config_name = hashlib.sha256(config).hexdigest() + ".json"
    manifest = json.dumps([{"Config": config_name, "RepoTags": [tag], "Layers": ["layer.tar"]}]).encode()
    with tarfile.open(path, "w") as tar:
        for name, data in ((config_name, config), ("layer.tar", layer), ("manifest.json", manifest)):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return path


def write_all(folder: Path) -> dict[str, Path]:
    """Both images' archives in ``folder``: image name -> tar."""
    folder.mkdir(parents=True, exist_ok=True)
    return {PAUSE_IMAGE: docker_archive(folder / "pause.tar", PAUSE_IMAGE, ["/bin/sleep", PAUSE_SECONDS]),
            BUSYBOX_IMAGE: docker_archive(folder / "busybox.tar", BUSYBOX_IMAGE, ["/bin/sh"])}
