"""The reward server's transport joins the writes of one loop turn: what is
written reaches the peer whole and in order, also when the connection is closed
in the same turn (a ``Connection: close`` reply: headers, body, close)."""

from __future__ import annotations

import asyncio
import socket

from verifleet.reward.serve._protocol import CoalescingTransport


async def _exchange(close_in_same_turn: bool) -> bytes:
    loop = asyncio.get_running_loop()
    ours, theirs = socket.socketpair()
    transport, _ = await loop.connect_accepted_socket(asyncio.Protocol, ours)
    wrapped = CoalescingTransport(transport, loop)  # type: ignore[arg-type]
    wrapped.write(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n")
    wrapped.write(memoryview(b"hello"))
    if close_in_same_turn:
        wrapped.close()
    else:
        await asyncio.sleep(0.01)
        wrapped.write(b" again")
        await asyncio.sleep(0.01)
        wrapped.close()
    theirs.setblocking(False)
    received = b""
    while True:
        chunk = await loop.sock_recv(theirs, 65536)
        if not chunk:
            break
        received += chunk
    theirs.close()
    return received


def test_a_turns_writes_arrive_whole_and_in_order_before_the_close() -> None:
    head = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello"
    assert asyncio.run(_exchange(close_in_same_turn=True)) == head
    assert asyncio.run(_exchange(close_in_same_turn=False)) == head + b" again"
