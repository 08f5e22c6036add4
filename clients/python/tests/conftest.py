"""Fixtures: live `ebb serve` processes on the embedded backend.

The ebb binary is built from the repository into a temporary directory
once per run (EBB_BIN names a built one instead). Each server gets a fresh
data directory and a free loopback port, and the fixtures wait for its
/readyz before a test runs. Their logs are printed when a server fails to
start.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import os
import secrets
import socket
import subprocess
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any, Optional

import httpx
import pytest

import ebb_client

REPO = Path(__file__).resolve().parents[3]

# The clients read these as the ebb command does; the tests name their
# server and token themselves.
for _var in ("EBB_SERVER", "EBB_TOKEN"):
    os.environ.pop(_var, None)


@pytest.fixture(scope="session")
def ebb_bin(tmp_path_factory: pytest.TempPathFactory) -> str:
    given = os.environ.get("EBB_BIN")
    if given:
        return given
    out = tmp_path_factory.mktemp("bin") / "ebb"
    go = os.environ.get("GO", "go")
    subprocess.run([go, "build", "-o", str(out), "./cmd/ebb"], cwd=REPO, check=True)
    return str(out)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One `ebb serve` process; url is where it listens, hot_url its hot listener (with hot)."""

    def __init__(self, binary: str, workdir: Path, args: list[str], hot: bool = False) -> None:
        self.workdir = workdir
        self.data = workdir / "data"
        self.log = workdir / "serve.log"
        # A port picked here may be taken before the server binds it: try
        # another one then.
        for _ in range(5):
            port = _free_port()
            self.url = f"http://127.0.0.1:{port}"
            cmd = [binary, "serve", "--addr", f"127.0.0.1:{port}", "--data", str(self.data), *args]
            if hot:
                hot_port = _free_port()
                self.hot_url = f"http://127.0.0.1:{hot_port}"
                cmd += ["--hot-addr", f"127.0.0.1:{hot_port}"]
            with open(self.log, "wb") as log:
                self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
            if self._wait():
                return
            self.stop()
            if "address already in use" not in self.log.read_text():
                break
        raise RuntimeError(f"ebb serve did not start:\n{self.log.read_text()}")

    def _wait(self, timeout: float = 60.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                if httpx.get(self.url + "/readyz", timeout=1.0).status_code == 200:
                    return True
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        return False

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture(scope="session")
def server(ebb_bin: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server without an auth file, with a hot listener too."""
    s = Server(ebb_bin, tmp_path_factory.mktemp("serve"), [], hot=True)
    yield s
    s.stop()


TOKENS = {
    "admin": ["admin"],
    "events": ["index:events_scoped"],
    "reader": ["read:table:shared"],
    "metrics": ["metrics"],
}


@pytest.fixture(scope="session")
def auth_server(ebb_bin: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, str]]]:
    """A server with an auth file, and a token of each name in TOKENS."""
    work = tmp_path_factory.mktemp("serve-auth")
    tokens = {name: secrets.token_hex(24) for name in TOKENS}
    lines = ["tokens:"]
    for name, scopes in TOKENS.items():
        quoted = ", ".join(f'"{s}"' for s in scopes)
        lines += [f'  - token: "{tokens[name]}"', f"    name: {name}", f"    scopes: [{quoted}]"]
    auth = work / "auth.yaml"
    auth.write_text("\n".join(lines) + "\n")
    auth.chmod(0o600)
    s = Server(ebb_bin, work, ["--auth-file", str(auth)])
    yield s, tokens
    s.stop()


@pytest.fixture(scope="session")
def full_server(ebb_bin: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server whose disk counts as full: a free-space floor no disk reaches."""
    s = Server(ebb_bin, tmp_path_factory.mktemp("serve-full"), ["--min-free-bytes", str(2**62)])
    yield s
    s.stop()


class SyncAsync:
    """Drives an AsyncClient through the sync client's calls.

    Each coroutine method runs to completion on one event loop, and each
    async iterator is drained into an iterator, so that one test body
    checks both clients, method by method.
    """

    def __init__(self, client: ebb_client.AsyncClient, loop: asyncio.AbstractEventLoop) -> None:
        self._client = client
        self._loop = loop

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if inspect.isasyncgenfunction(attr):

            def drain(*args: Any, **kw: Any) -> Iterator[Any]:
                async def collect() -> list[Any]:
                    return [x async for x in attr(*args, **kw)]

                return iter(self._loop.run_until_complete(collect()))

            return drain
        if inspect.iscoroutinefunction(attr):

            def run(*args: Any, **kw: Any) -> Any:
                return self._loop.run_until_complete(attr(*args, **kw))

            return run
        return attr


def make_client(kind: str, url: str, token: Optional[str] = None, **kw: Any) -> tuple[Any, Any]:
    """A client of kind "sync" or "async" (wrapped in SyncAsync), and its closer."""
    if kind == "sync":
        c = ebb_client.Client(url, token=token, **kw)
        return c, c.close
    loop = asyncio.new_event_loop()
    ac = ebb_client.AsyncClient(url, token=token, **kw)

    def close() -> None:
        loop.run_until_complete(ac.aclose())
        loop.close()

    return SyncAsync(ac, loop), close


@pytest.fixture(params=["sync-json", "sync-msgpack", "async-json", "async-msgpack"])
def client(request: pytest.FixtureRequest, server: Server) -> Iterator[Any]:
    """Each client, with JSON and with MessagePack reads."""
    kind, enc = request.param.split("-")
    c, close = make_client(kind, server.url, msgpack=(enc == "msgpack"))
    c.kind = request.param
    yield c
    close()


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    return request.param


def create_index(client: Any, name: str, retention: timedelta = timedelta(hours=2)) -> Any:
    """An index of 1 h shards and 1 min partitions, the tests' usual one."""
    return client.create_index(
        name,
        table_bucket=timedelta(hours=1),
        partition_bucket=timedelta(minutes=1),
        retention=retention,
    )


_counter = iter(range(1_000_000))


@pytest.fixture
def name(request: pytest.FixtureRequest) -> str:
    """A name no other test uses on the shared server: a letter, then digits."""
    return f"t{next(_counter)}_{os.getpid() % 1000}"


# Every public method of both clients must be called by the suite: each is
# wrapped here to record its calls, and a whole run (no -k, -m or paths
# given, every test passed) fails when one was never called.
CALLED: set[tuple[str, str]] = set()


def _record(cls: type, kind: str) -> None:
    for attr, fn in list(vars(cls).items()):
        if attr.startswith("_") or not callable(fn):
            continue
        if inspect.isasyncgenfunction(fn):

            @functools.wraps(fn)
            async def agen(*a: Any, __fn: Any = fn, __name: str = attr, **kw: Any) -> Any:
                CALLED.add((kind, __name))
                async for x in __fn(*a, **kw):
                    yield x

            setattr(cls, attr, agen)
        elif inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def coro(*a: Any, __fn: Any = fn, __name: str = attr, **kw: Any) -> Any:
                CALLED.add((kind, __name))
                return await __fn(*a, **kw)

            setattr(cls, attr, coro)
        else:

            @functools.wraps(fn)
            def plain(*a: Any, __fn: Any = fn, __name: str = attr, **kw: Any) -> Any:
                CALLED.add((kind, __name))
                return __fn(*a, **kw)

            setattr(cls, attr, plain)


_record(ebb_client.Client, "sync")
_record(ebb_client.AsyncClient, "async")


def _public(cls: type) -> set[str]:
    return {a for a, fn in vars(cls).items() if not a.startswith("_") and callable(fn)}


_narrowed = False


def pytest_deselected(items: list[pytest.Item]) -> None:
    global _narrowed
    _narrowed = True


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    whole = not _narrowed and session.config.args == session.config.getini("testpaths")
    if not whole or exitstatus != 0 or session.testsfailed:
        return
    missing = sorted(
        f"{kind} {name}"
        for kind, cls in (("sync", ebb_client.Client), ("async", ebb_client.AsyncClient))
        for name in _public(cls)
        if (kind, name) not in CALLED
    )
    if missing:
        print("\nclient methods no test called:\n  " + "\n  ".join(missing))
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
