"""Spark's Python workers acknowledge what the JVM sends them at once.

Spark's JVM writes a task's first messages to its Python worker in small pieces, on
a TCP socket with Nagle's algorithm on: a piece waits until the worker has
acknowledged the one before, and Linux delays that acknowledgement by up to 40 ms
when the worker has nothing to send back. Every Python task of a batch waited so,
about 40 ms before its first Arrow batch (a one-row ``mapInArrow`` job: 160 ms,
115 ms with :func:`quick_acks` on the worker's connection before it reads its task).

Only the worker's own connection to its JVM is touched, by streamlib's daemon
(:mod:`streamlib.spark.daemon`), which is handed that connection: never another
socket of the process, whose owner (a user function, a library) chose its options.
"""
from __future__ import annotations

import os
import socket
from typing import BinaryIO, Callable


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


def quick_acks_on_file(stream: BinaryIO) -> None:
    """:func:`quick_acks` on the socket a file object reads (pyspark hands its worker
    function the connection as files over a duplicate of the socket's descriptor).
    Anything that is not a socket is left alone."""
    try:
        sock = socket.socket(fileno=os.dup(stream.fileno()))
    except OSError:
        return
    try:
        quick_acks(sock)
    except OSError:
        pass   # not a TCP connection after all
    finally:
        sock.close()   # its own descriptor: the connection stays open


def with_quick_acks(run_task: Callable[[BinaryIO, BinaryIO], None]) -> Callable[[BinaryIO, BinaryIO], None]:
    """pyspark's worker entry ``main(infile, outfile)``, which runs one task read from
    the JVM connection behind ``infile`` (again for each task of a reused worker), with
    :func:`quick_acks` on that connection first."""

    def run(infile: BinaryIO, outfile: BinaryIO) -> None:
        quick_acks_on_file(infile)
        run_task(infile, outfile)

    return run
