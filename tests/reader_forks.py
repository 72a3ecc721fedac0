"""Runs downloads in a reader's Python, each in a process forked from one that imported torch.

This file runs under the reader's interpreter (``test_downloaded_notebooks``
makes it: torch, numpy, matplotlib and ipykernel, nothing of this project), so it
imports only what that interpreter has. Two commands:

``serve SOCKET``
    Import torch (what a reader's first cell imports) and ipykernel (what every
    notebook's kernel runs on), then, per request on the Unix socket (one JSON
    line), fork: the child changes to the request's folder and becomes either a
    stock ipykernel on the request's connection file, or the script run as
    ``python script.py`` with its output in two files. The server answers the
    child's pid, then its exit code when it ends. One process, no threads: it
    polls for ended children between requests, so it forks with no lock held.

``kernel SOCKET CONNECTION_FILE``
    What the kernelspec starts in place of ``python -m ipykernel_launcher``: it
    asks the server for a kernel, passes SIGINT and SIGTERM on to it, and exits
    when it does, with its code, as a kernel process would.
"""

import json
import os
import signal
import socket
import sys


def _run(request: dict) -> int:
    """In the child: be the kernel or the script the request asks for."""
    os.chdir(request["folder"])
    os.environ.update(request.get("env", {}))
    if "kernel" in request:
        from ipykernel.kernelapp import IPKernelApp

        IPKernelApp.launch_instance(argv=["-f", request["kernel"]])
        return 0
    import runpy

    for number, name in ((1, "stdout"), (2, "stderr")):
        os.dup2(os.open(request[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC), number)
    sys.argv = [request["script"]]
    sys.path[0] = os.path.dirname(os.path.abspath(request["script"]))  # as `python script.py`
    try:
        runpy.run_path(request["script"], run_name="__main__")
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
        return 1
    return 0


def serve(path: str) -> None:
    import torch  # noqa: F401  every child starts with it imported
    from ipykernel import kernelapp  # noqa: F401

    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen()
    listener.settimeout(0.02)
    waiting: dict[int, socket.socket] = {}
    print("ready", flush=True)
    while True:
        try:
            connection, _ = listener.accept()
        except TimeoutError:
            connection = None
        if connection is not None:
            connection.settimeout(None)
            request = json.loads(connection.makefile().readline())
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                listener.close()
                connection.close()
                code = 1
                try:
                    code = _run(request)
                except BaseException:  # os._exit below would end it unsaid
                    import traceback

                    traceback.print_exc()
                finally:
                    sys.stdout.flush()
                    sys.stderr.flush()
                    os._exit(code)
            connection.sendall(json.dumps({"pid": pid}).encode() + b"\n")
            waiting[pid] = connection
        while waiting:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            if pid in waiting:
                answer = {"returncode": os.waitstatus_to_exitcode(status)}
                waiting.pop(pid).sendall(json.dumps(answer).encode() + b"\n")


def ask(path: str, request: dict):
    """Send ``request`` to the server: the child's pid, and a reader of its exit."""
    connection = socket.socket(socket.AF_UNIX)
    connection.connect(path)
    connection.sendall(json.dumps(request).encode() + b"\n")
    answers = connection.makefile()
    pid = json.loads(answers.readline())["pid"]

    def returncode() -> int:
        line = answers.readline()
        return json.loads(line)["returncode"] if line else 1

    return pid, returncode


def kernel(path: str, connection_file: str) -> None:
    pid, returncode = ask(path, {"folder": os.getcwd(), "kernel": connection_file})
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda received, _frame: os.kill(pid, received))
    sys.exit(returncode())


if __name__ == "__main__":
    command, *arguments = sys.argv[1:]
    {"serve": serve, "kernel": kernel}[command](*arguments)
