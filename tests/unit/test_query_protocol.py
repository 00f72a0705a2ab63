"""The query endpoint's request reader (httptools) and answers, over a socket pair."""
from __future__ import annotations

import socket
import threading

import pytest

from streamlib.query.protocol import MAX_LINE, BadRequest, RequestReader, response


@pytest.fixture
def pair():
    server, client = socket.socketpair()
    server.settimeout(5)
    yield server, client
    server.close()
    client.close()


def test_pipelined_requests_are_read_in_order_with_their_token_and_keep_alive(pair):
    server, client = pair
    client.sendall(b"GET /stores/a HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\n\r\n"
                   b"GET /stores/b?x=1 HTTP/1.0\r\n\r\n")
    reader = RequestReader()
    first = reader.next(server, 5)
    assert (first.method, first.target, first.authorization, first.keep_alive) == (b"GET", "/stores/a", "Bearer t", True)
    assert reader.requests   # the second was read with the first
    second = reader.next(server, 5)
    assert (second.target, second.authorization, second.keep_alive) == ("/stores/b?x=1", None, False)


def test_a_request_in_pieces_is_one_request_and_a_close_between_requests_is_none(pair):
    server, client = pair
    reader = RequestReader()
    client.sendall(b"GET /sto")
    client.sendall(b"res HTTP/1.1\r\nAuthori")
    client.sendall(b"zation: Bearer s\r\n\r\n")
    request = reader.next(server, 5)
    assert (request.target, request.authorization) == ("/stores", "Bearer s")
    client.shutdown(socket.SHUT_WR)
    assert reader.next(server, 5) is None


def test_a_close_mid_request_is_a_disconnect(pair):
    server, client = pair
    client.sendall(b"GET /stores HTTP/1.1\r\n")
    client.shutdown(socket.SHUT_WR)
    with pytest.raises(ConnectionResetError):
        RequestReader().next(server, 5)


@pytest.mark.parametrize("data, status", [
    (b"GET /" + b"k" * (MAX_LINE + 10) + b" HTTP/1.1\r\n\r\n", 414),
    (b"GET / HTTP/1.1\r\n" + b"X-Long: " + b"v" * (5 * MAX_LINE), 431),
    (b"garbage\r\n\r\n", 400),
])
def test_bad_requests_are_refused_with_their_status(pair, data, status):
    server, client = pair

    def send():
        try:
            client.sendall(data)
        except OSError:   # the reader refused before it read everything
            pass

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    with pytest.raises(BadRequest) as refused:
        reader = RequestReader()
        while True:
            reader.next(server, 5)
    assert refused.value.status == status
    server.close()   # ends a sender still blocked
    client.shutdown(socket.SHUT_RDWR)
    sender.join(5)


def test_requests_before_a_bad_one_are_served_first(pair):
    server, client = pair
    client.sendall(b"GET /a HTTP/1.1\r\n\r\nnonsense\r\n\r\n")
    reader = RequestReader()
    assert reader.next(server, 5).target == "/a"
    with pytest.raises(BadRequest):
        reader.next(server, 5)


def test_a_request_sent_too_slowly_times_out(pair):
    server, client = pair
    client.sendall(b"GET / HTTP/1.1\r\n")
    with pytest.raises(TimeoutError):
        RequestReader().next(server, 0.2)


def test_an_answer_has_its_length_and_says_when_it_closes():
    data = response(503, "application/json", b"{}", {"Retry-After": "1"}, close=True)
    head, body = data.split(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "HTTP/1.1 503 Service Unavailable" and body == b"{}"
    assert {"Content-Length: 2", "Retry-After: 1", "Connection: close", "Content-Type: application/json"} <= set(lines)
    assert "Connection: close" not in response(200, "text/plain", b"", {}, close=False).decode()
