"""Listening sockets read from ``/proc`` (:mod:`tests.support.listeners`)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from tests.support import listeners

TCP = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 111 1 0 100 0 0 10 0
   1: 0100007F:0035 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 222 1 0 100 0 0 10 0
   2: 0100007F:A1B2 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 333 1 0 20 4 30 10 -1
"""
TCP6 = """  sl  local_address                         remote_address                        st tx_queue rx_queue
   0: 00000000000000000000000000000000:1F91 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 444 1 0
   1: 00000000000000000000000001000000:1F92 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 555 1 0
   2: 0000000000000000FFFF00000100007F:1F93 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 666 1 0
"""


def test_only_listening_sockets_are_read_with_their_address_port_and_inode() -> None:
    found = listeners.parse(TCP) + listeners.parse(TCP6)
    assert [(s.address, s.port, s.inode) for s in found] == [
        ("0.0.0.0", 8080, 111),
        ("127.0.0.1", 53, 222),
        ("::", 8081, 444),
        ("::1", 8082, 555),
        ("::ffff:127.0.0.1", 8083, 666),
    ]
    assert [s.loopback for s in found] == [False, True, False, True, True]
    assert [s.text for s in found][::2] == ["0.0.0.0:8080", "[::]:8081", "[::ffff:127.0.0.1]:8083"]


def test_this_process_s_own_listening_socket_is_found_by_its_inode(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        pid = os.getpid()
        host = listeners.in_host([pid])[pid]
        own = listeners.in_own([pid])[pid]
    assert [(x.address, x.port) for x in host] == [("127.0.0.1", port)] and own == host
    assert os.getpid() not in listeners.descendants(pid)
