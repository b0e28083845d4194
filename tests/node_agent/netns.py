"""Two network namespaces joined by a veth pair, and real TCP traffic between them, for tests of tc shaping."""

from __future__ import annotations

import contextlib
import json
import random
import shutil
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator

import pytest

from tests.node_agent.real_cgroups import require_root

SECONDS, WARMUP = 2.5, 0.5
"""A flow's counting window and the warm-up before it."""
MBIT = 1_000_000
SINK = textwrap.dedent("""
    import json, socket, sys, threading, time
    port, seconds, warmup = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
    server = socket.socket(); server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("0.0.0.0", port)); server.listen(8); server.settimeout(0.2)
    counted = {}; lock = threading.Lock(); start = time.monotonic()
    print("ready", flush=True)
    def drain(conn, peer):
        conn.settimeout(0.2)
        while time.monotonic() - start < seconds:
            try:
                data = conn.recv(1 << 16)
            except socket.timeout:
                continue
            if not data:
                break
            if time.monotonic() - start >= warmup:
                with lock:
                    counted[peer] = counted.get(peer, 0) + len(data)
    threads = []
    while time.monotonic() - start < seconds:
        try:
            conn, (peer, _) = server.accept()
        except socket.timeout:
            continue
        threads.append(threading.Thread(target=drain, args=(conn, peer))); threads[-1].start()
    for thread in threads:
        thread.join()
    print(json.dumps({peer: n * 8 / (seconds - warmup) for peer, n in counted.items()}), flush=True)
""")
SOURCE = textwrap.dedent("""
    import socket, sys, threading, time
    destination, port, seconds, sources = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4:]
    payload = b"x" * (1 << 16); stop = time.monotonic() + seconds
    def push(source):
        conn = socket.create_connection((destination, port), source_address=(source, 0))
        conn.settimeout(0.5)
        while time.monotonic() < stop:
            try:
                conn.send(payload)
            except socket.timeout:
                pass
            except OSError:
                break
        conn.close()
    threads = [threading.Thread(target=push, args=(source,)) for source in sources]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
""")


def _ip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10)


@contextlib.contextmanager
def veth_namespaces(node_hosts: tuple[int, ...], peer_hosts: tuple[int, ...], prefix: int = 24
                    ) -> Iterator[tuple[str, str, str, str]]:
    """(node namespace, node veth, peer namespace, subnet "10.x.y"): the node side holds ``subnet.<h>`` for each
    of ``node_hosts``, the peer side each of ``peer_hosts``; both deleted afterwards (checked). Skips, saying
    why, without root, iproute2 or permission to add namespaces."""
    require_root("create network namespaces and configure tc")
    if shutil.which("ip") is None or shutil.which("tc") is None:
        pytest.skip("needs the ip and tc commands (iproute2)")
    tag = uuid.uuid4().hex[:6]
    node, peer, veth_node, veth_peer = f"kqn{tag}", f"kqp{tag}", f"kqv{tag}n", f"kqv{tag}p"
    subnet = f"10.{random.randint(200, 250)}.{random.randint(0, 255)}"
    made = []
    try:
        for ns in (node, peer):
            result = _ip("netns", "add", ns)
            if result.returncode != 0:
                pytest.skip(f"ip netns add is not allowed here: {result.stderr.strip()}")
            made.append(ns)
        steps = [("link", "add", veth_node, "netns", node, "type", "veth", "peer", "name", veth_peer, "netns", peer),
                 *(("-n", node, "addr", "add", f"{subnet}.{host}/{prefix}", "dev", veth_node) for host in node_hosts),
                 *(("-n", peer, "addr", "add", f"{subnet}.{host}/{prefix}", "dev", veth_peer) for host in peer_hosts)]
        steps += [("-n", ns, "link", "set", dev, "up") for ns, dev in ((node, veth_node), (peer, veth_peer),
                                                                       (node, "lo"), (peer, "lo"))]
        for args in steps:
            result = _ip(*args)
            assert result.returncode == 0, f"ip {' '.join(args)}: {result.stderr}"
        yield node, veth_node, peer, subnet
    finally:
        for ns in made:
            _ip("netns", "del", ns)
        left = set(_ip("netns", "list").stdout.split()) & set(made)
        assert not left, f"network namespaces left behind: {left}"


def traffic(flows: list[tuple[str, ...]]) -> dict[str, float]:
    """Run every (sender namespace, sink namespace, sink address, source addresses...) flow set at once; the
    goodput in bit/s per source address. The senders, started once the sinks are ready, outlast the sinks'
    counting window: a sender that stopped inside it would leave the window's end empty at rates whose socket
    buffer drains in a fraction of a second."""
    sinks, port = {}, random.randint(20000, 40000)
    try:
        for _, sink_ns, destination, *_ in flows:
            sink = subprocess.Popen(["ip", "netns", "exec", sink_ns, sys.executable, "-c", SINK, str(port),
                                     str(SECONDS + 1.0), str(WARMUP + 0.5)], stdout=subprocess.PIPE, text=True)
            sinks[destination] = sink
            assert sink.stdout.readline().strip() == "ready"
        senders = [subprocess.Popen(["ip", "netns", "exec", sender_ns, sys.executable, "-c", SOURCE, destination,
                                     str(port), str(SECONDS + 1.5), *sources])
                   for sender_ns, _, destination, *sources in flows]
        for sender in senders:
            assert sender.wait(timeout=30) == 0
        rates = {}
        for sink in sinks.values():
            rates.update(json.loads(sink.stdout.readline()))
            sink.wait(timeout=10)
        return rates
    finally:
        for sink in sinks.values():
            if sink.poll() is None:
                sink.kill()
                sink.wait()
