"""Hosts of their own on one machine: Linux network namespaces joined by a bridge.

Each host is a network namespace with its own addresses on a private /24; a switch namespace
holds the bridge and one port per host; this process (the test) reaches every host through one
more port, with the subnet's first address. Cutting a host's link takes its port down: its
processes live on, unreachable, as on a machine whose cable was pulled.

Needs root and iproute2 (``ip``), as CI and the project's machines have; ``unavailable()`` says
why not otherwise. Everything is named with a random tag and removed by ``close()``, which also
kills whatever still runs in the namespaces.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import random
import shutil
import subprocess
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if check and result.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {result.stderr.strip()}")
    return result


def unavailable() -> str | None:
    """Why network namespaces cannot be made here, or None when they can."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None or shutil.which("setpriv") is None:
        return "network namespaces need iproute2's ip (and util-linux's setpriv)"
    probe = f"tcprobe{uuid.uuid4().hex[:6]}"
    made = _ip("netns", "add", probe, check=False)
    _ip("netns", "del", probe, check=False)
    if made.returncode != 0:
        return f"cannot make a network namespace here: {made.stderr.strip()}"
    return None


def _free_subnet() -> ipaddress.IPv4Network:
    """A /24 in 10.0.0.0/8 that no address or route of this machine touches."""
    used = _ip("-4", "route").stdout + _ip("-4", "addr").stdout
    for _ in range(100):
        net = ipaddress.IPv4Network(f"10.{random.randint(200, 250)}.{random.randint(0, 255)}.0/24")
        if f"10.{net.network_address.packed[1]}." not in used:
            return net
    raise RuntimeError("no free 10.x subnet for the test's hosts")


class Lab:
    """Hosts on one private subnet. ``add(name, count)`` makes a host with ``count`` addresses."""

    def __init__(self) -> None:
        self.tag = f"tm{uuid.uuid4().hex[:4]}"
        self.subnet = _free_subnet()
        self._addresses = iter(self.subnet.hosts())
        self.gateway = str(next(self._addresses))  # this process's own address on the subnet
        self.addresses: dict[str, list[str]] = {}
        self._ports: dict[str, str] = {}  # host -> its port's name in the switch
        self._namespaces: list[str] = []
        self._root_port = f"{self.tag}r"
        self._switch = f"{self.tag}-sw"
        try:
            self._namespace("sw")
            self._up(self._switch, "lo")
            _ip("-n", self._switch, "link", "add", "br0", "type", "bridge")
            self._up(self._switch, "br0")
            self._plug(self._root_port, None, [self.gateway])
        except BaseException:
            self.close()
            raise

    def add(self, name: str, count: int = 1) -> list[str]:
        namespace = self._namespace(name)
        self._up(namespace, "lo")
        addresses = [str(next(self._addresses)) for _ in range(count)]
        link = f"{self.tag}{len(self._ports)}"
        self._plug(link, namespace, addresses)
        self._ports[name] = f"{link}p"
        self.addresses[name] = addresses
        return addresses

    def address(self, name: str) -> str:
        return self.addresses[name][0]

    def launcher(self, name: str) -> list[str]:
        """The prefix that runs a command on host ``name``."""
        return ["ip", "netns", "exec", f"{self.tag}-{name}"]

    def name_hosts(self, names: dict[str, str]) -> None:
        """Host names every host resolves (``name -> address``): ``ip netns exec`` puts
        /etc/netns/NAMESPACE/hosts in place of /etc/hosts for what it runs."""
        lines = "".join(f"{address} {name}\n" for name, address in names.items())
        for namespace in self._namespaces:
            folder = Path("/etc/netns") / namespace
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "hosts").write_text(f"127.0.0.1 localhost\n{lines}")

    def cut(self, name: str) -> None:
        """Pull host ``name``'s cable: its port in the switch goes down."""
        _ip("-n", self._switch, "link", "set", self._ports[name], "down")

    def mend(self, name: str) -> None:
        _ip("-n", self._switch, "link", "set", self._ports[name], "up")

    def close(self) -> None:
        """Kill what still runs in the namespaces, then remove them (their links go with them)."""
        for namespace in reversed(self._namespaces):
            for pid in _ip("netns", "pids", namespace, check=False).stdout.split():
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(pid), 9)
            _ip("netns", "del", namespace, check=False)
            shutil.rmtree(Path("/etc/netns") / namespace, ignore_errors=True)
        # The root end of a veth pair goes when its peer's namespace does; this is belt and braces.
        _ip("link", "del", self._root_port, check=False)

    # --- plumbing ---------------------------------------------------------------------------

    def _namespace(self, name: str) -> str:
        namespace = f"{self.tag}-{name}"
        _ip("netns", "add", namespace)
        self._namespaces.append(namespace)
        return namespace

    @staticmethod
    def _up(namespace: str, link: str) -> None:
        _ip("-n", namespace, "link", "set", link, "up")

    def _plug(self, link: str, namespace: str | None, addresses: Sequence[str]) -> None:
        """A veth pair: ``link`` in ``namespace`` (None: this one) with ``addresses``, its peer
        ``link + 'p'`` a port of the switch's bridge."""
        peer = f"{link}p"
        _ip("link", "add", link, "type", "veth", "peer", "name", peer)
        _ip("link", "set", peer, "netns", self._switch)
        _ip("-n", self._switch, "link", "set", peer, "master", "br0")
        self._up(self._switch, peer)
        where = ["-n", namespace] if namespace else []
        if namespace:
            _ip("link", "set", link, "netns", namespace)
        prefix = self.subnet.prefixlen
        for address in addresses:
            _ip(*where, "addr", "add", f"{address}/{prefix}", "dev", link)
        _ip(*where, "link", "set", link, "up")


@contextlib.contextmanager
def lab() -> Iterator[Lab]:
    made = Lab()
    try:
        yield made
    finally:
        made.close()
