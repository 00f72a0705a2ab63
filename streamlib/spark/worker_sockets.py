"""Spark's Python workers acknowledge what the JVM sends them at once.

Spark's JVM writes a task's first messages to its Python worker in small pieces, on
a TCP socket with Nagle's algorithm on: a piece waits until the worker has
acknowledged the one before, and Linux delays that acknowledgement by up to 40 ms
when the worker has nothing to send back. Every Python task of a batch waited so,
about 40 ms before its first Arrow batch (a one-row ``mapInArrow`` job: 160 ms,
125 ms with :func:`quick_acks_to_jvm` at the task's start, 115 ms with
:func:`quick_acks` before the worker reads anything, as streamlib's daemon does).
"""
from __future__ import annotations

import os
import socket

_LOOPBACK = ("127.0.0.1", "::1", "::ffff:127.0.0.1")


def quick_acks(sock: socket.socket) -> None:
    """No delayed ACKs (``TCP_QUICKACK``, Linux) and no Nagle (``TCP_NODELAY``, for
    the worker's own small writes) on a TCP socket; setting ``TCP_QUICKACK`` also
    sends an ACK the kernel was holding back. The kernel may leave quick-ACK mode
    again, so this is for one task. Unix sockets have neither: no-op."""
    if sock.family not in (socket.AF_INET, socket.AF_INET6) or sock.type != socket.SOCK_STREAM:
        return
    if hasattr(socket, "TCP_QUICKACK"):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def quick_acks_to_jvm() -> int:
    """:func:`quick_acks` on this process's TCP connections to the local host (a
    Python worker's to its JVM: pyspark does not hand its socket to the task);
    returns how many sockets. Linux only (``/proc``); elsewhere 0."""
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return 0
    done = 0
    seen: set[str] = set()   # pyspark's worker holds each socket under three descriptors
    for fd in fds:
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")   # "socket:[<inode>]" for a socket
            if not target.startswith("socket:") or target in seen:
                continue
            seen.add(target)
            sock = socket.socket(fileno=os.dup(int(fd)))   # its own descriptor of the same socket
        except (OSError, ValueError):
            continue
        try:
            if sock.family in (socket.AF_INET, socket.AF_INET6) and sock.getpeername()[0] in _LOOPBACK:
                quick_acks(sock)
                done += 1
        except OSError:
            pass   # not connected
        finally:
            sock.close()
    return done
