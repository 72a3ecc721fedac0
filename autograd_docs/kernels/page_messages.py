"""A page's messages as the build receives them: read off the socket from the
child that runs the page (``page_runner.py``) into one queue per channel, as
jupyter_client's channels give nbclient a kernel's messages.
"""

from __future__ import annotations

import asyncio
import queue
import socket

from autograd_docs.kernels import wire


class Channel:
    """One of the client's channels: messages of one kind, as they arrive."""

    def __init__(self, reader: PageMessages, name: str) -> None:
        self._reader, self._name = reader, name

    async def get_msg(self, timeout: float | None = None) -> dict:
        return await self._reader.next(self._name, timeout)


class PageMessages:
    """Reads the child's JSON lines off the socket into a queue per channel.

    Asynchronous, as jupyter_client's channels are: nbclient waits on the shell
    reply (with the cell's timeout) and on IOPub at the same time, in one event
    loop. A message's parent id is replaced by the id the client gave the
    request it belongs to (``cell-<k>``), as a kernel echoes the request's id.
    """

    _END = None  # queued on both channels when the child closes the socket

    def __init__(self, results: socket.socket) -> None:
        results.setblocking(False)
        self._results = results
        self._buffer = b""
        self.finished = False  # the child sent everything (its "done" line)
        self.ended = False  # the socket is closed: finished, or the child died
        self._loop: asyncio.AbstractEventLoop | None = None
        self.queues: dict[str, asyncio.Queue] = {}
        # A line that broke the wire: raised to nbclient by the next read, not
        # left to asyncio, which would log it and let the cell time out.
        self.broken: wire.WireError | None = None

    async def next(self, channel: str, timeout: float | None) -> dict:
        if self._loop is None:  # nbclient's event loop, on its first read
            self._loop = asyncio.get_running_loop()
            self.queues = {"shell": asyncio.Queue(), "iopub": asyncio.Queue()}
            self._loop.add_reader(self._results.fileno(), self._read)
        waiting = self.queues[channel]
        try:
            msg = await asyncio.wait_for(waiting.get(), timeout)
        except TimeoutError:
            raise queue.Empty from None  # nbclient then times the cell out
        if msg is self._END:
            waiting.put_nowait(self._END)
            if self.broken is not None:
                raise self.broken
            raise queue.Empty  # nbclient then asks is_alive: it is not
        return msg

    def _read(self) -> None:
        try:
            data = self._results.recv(1 << 16)
        except (BlockingIOError, InterruptedError):
            return
        if not data:
            self._end()
            return
        *lines, self._buffer = (self._buffer + data).split(b"\n")
        for line in lines:
            try:
                cell, channel, msg = wire.read_page_message(line)
            except wire.WireError as error:
                self.broken = error
                self._end()
                return
            if channel == "done":
                self.finished = True
                continue
            msg["parent_header"]["msg_id"] = request_id(cell)
            self.queues[channel].put_nowait(msg)

    def _end(self) -> None:
        """No more messages: the child closed its socket, or broke the wire."""
        self.ended = True
        self.stop()
        for waiting in self.queues.values():
            waiting.put_nowait(self._END)

    def stop(self) -> None:
        """Stop reading (before the socket is closed)."""
        if self._loop is not None and not self._loop.is_closed():
            self._loop.remove_reader(self._results.fileno())


def request_id(cell: int) -> str:
    return "kernel-info" if cell == wire.KERNEL_INFO else f"cell-{cell}"
