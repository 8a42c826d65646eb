"""The suite's free ports come from below the kernel's ephemeral range, where no outgoing
connection's source port can take them before their server listens."""

from __future__ import annotations

import socket

from tests.support.servers import _ephemeral_start, free_port


def test_a_free_port_is_below_the_ephemeral_range_and_can_be_bound() -> None:
    ports = {free_port() for _ in range(20)}
    assert all(1024 < port < _ephemeral_start() for port in ports), ports
    assert len(ports) > 1  # drawn, not a fixed port
    port = ports.pop()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", port))
