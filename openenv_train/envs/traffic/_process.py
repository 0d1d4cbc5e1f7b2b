"""The host's side of one simulation: the driver process (libsumo) and its JSON-lines pipe, with its limits."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import IO, Any

from ...core import OpenEnvTrainError
from ..process_group import kill_process_group

__all__ = ["SimulationDied", "SimulationProcess", "sumo_home"]

_DRIVER = str(Path(__file__).with_name("_driver.py"))
_MAX_REPLY_BYTES = 4 * 2**20
_LOG_TAIL_BYTES = 2000


class SimulationDied(OpenEnvTrainError, RuntimeError):
    """The simulation's process exited or stopped answering; the episode needs a reset."""


def sumo_home() -> str:
    """SUMO's folder: ``SUMO_HOME`` where it holds SUMO's programs, else the ``eclipse-sumo`` package's own (its
    programs, tools and data), found without importing it (importing it, or libsumo, sets ``SUMO_HOME``).

    Raises:
        ModuleNotFoundError: neither is there (the message gives the install line).
    """
    home = os.environ.get("SUMO_HOME")
    if home and os.path.isdir(os.path.join(home, "bin")):
        return home
    spec = importlib.util.find_spec("sumo")
    if spec is not None and spec.submodule_search_locations:
        return str(list(spec.submodule_search_locations)[0])
    if home:  # libsumo's own data folder (sumo-data) serves the simulation
        return home
    raise ModuleNotFoundError("SUMO is not installed and SUMO_HOME is not set: pip install 'openenv-train[traffic]'")


class SimulationProcess:
    """One driver process holding one libsumo simulation: :meth:`start` it, send it :meth:`request` s,
    :meth:`close` it. The driver limits its own address space (2 GiB); a request that gets no answer in time
    kills it. Pipes only: nothing listens on a port."""

    def __init__(self, process: asyncio.subprocess.Process, log: IO[bytes]) -> None:
        self._process, self._log = process, log

    @classmethod
    async def start(cls, timeout_s: float = 60.0) -> SimulationProcess:
        """A new driver, ready for a ``start`` request.

        Raises:
            SimulationDied: the driver did not come up (the message holds its error output).
        """
        log = tempfile.TemporaryFile()  # SUMO's own messages: a file, so a full pipe never blocks the simulation
        env = {**os.environ, "SUMO_HOME": sumo_home()}
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-I", _DRIVER, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=log, env=env, start_new_session=True, limit=_MAX_REPLY_BYTES)
        driver = cls(process, log)
        await driver._reply(timeout_s)
        return driver

    async def request(self, message: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Send one request and wait up to ``timeout_s`` for its reply.

        Raises:
            SimulationDied: no reply in time, or the driver exited (it is closed).
        """
        stdin = self._process.stdin
        if stdin is None or self._process.returncode is not None:
            raise SimulationDied("the simulation has exited; call reset() to start another")
        try:
            stdin.write((json.dumps(message) + "\n").encode())
            await stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            tail = self._tail()
            await self.close()
            raise SimulationDied(f"the simulation has exited ({tail}); call reset()") from None
        return await self._reply(timeout_s)

    async def _reply(self, timeout_s: float) -> dict[str, Any]:
        assert self._process.stdout is not None
        try:
            line = await asyncio.wait_for(self._process.stdout.readline(), timeout_s)
        except TimeoutError:
            await self.close()
            raise SimulationDied(f"the simulation did not answer in {timeout_s:g} s; it was killed: call reset()") \
                from None
        if not line:
            await self._process.wait()
            tail = self._tail()
            await self.close()
            raise SimulationDied(f"the simulation exited: {tail}")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def _tail(self) -> str:
        if self._log.closed:
            return "no output"
        self._log.seek(0, os.SEEK_END)
        self._log.seek(max(0, self._log.tell() - _LOG_TAIL_BYTES))
        return self._log.read().decode(errors="replace").strip() or "no output"

    @property
    def alive(self) -> bool:
        return self._process.returncode is None

    async def close(self) -> None:
        """Kill the driver's process group and reap it."""
        await kill_process_group(self._process)
        self._log.close()
