#!/usr/bin/env python3
"""gpubot's GPU telemetry agent: pushes each GPU's utilisation, temperature and memory to gpubot.

One file, standard library only (Python 3.8 or newer), so it runs on any rented machine as it is: gpubot
serves it at <public URL>/agent/gpubot-agent.py and writes its SHA-256 into each machine's start command,
which downloads it, checks the hash and runs it. `gpubot agent` runs this same code. It reads the GPUs with
nvidia-ml-py (`import pynvml`) when that is installed, else with `nvidia-smi`.

    GPUBOT_AGENT_TOKEN=<token> python3 gpubot-agent.py --url https://gpubot.example.com
    python3 gpubot-agent.py --url https://gpubot.example.com --token-file /opt/gpubot/token

The token comes from --token-file or GPUBOT_AGENT_TOKEN (--token works too, but every user of the machine
sees a process's command line). Every --interval seconds it sends
    POST <url>/api/telemetry   Authorization: Bearer <token>
    {"gpus": [{"index": 0, "util": 37.0, "temp_c": 71.0, "mem_used_mib": 1024.0, "mem_total_mib": 81920.0,
               "processes": 1, "process_mem_mib": 1010.0}]}
one entry per physical GPU, each field on its own: a field the GPU does not report (`[N/A]`, `[Not Supported]`,
NVML's NotSupported; utilisation on a MIG-enabled GPU) is left out, and `"mig": true` marks a GPU split into
MIG instances. A GPU reporting neither utilisation nor temperature is left out. `processes` is how many compute
processes hold the GPU (`nvidia-smi --query-compute-apps`, NVML's running compute processes) and
`process_mem_mib` their GPU memory; both are left out when the agent cannot tell (the query failed, a row it
cannot read, a process on a GPU it cannot place, NVML on a MIG-enabled GPU): unknown is never sent as 0.
and reads the answer: 2xx stored; 401 whose body says `"reason": "booking_ended"`: the booking ended, so it exits 0
(nothing restarts it); any other 401 (a token gpubot does not know, a proxy in the way), 429, 5xx or no network:
wait longer each time (up to 5 minutes, or the Retry-After gpubot gave) and try again; 409 the booking is not
active yet, keep going; any other answer is logged. Without a GPU driver it logs why and looks again every
minute. It never stops the machine and never exits for any of these: only the booking's end, SIGTERM/SIGINT or
a missing token end it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

__all__ = ["Agent", "NoGpu", "main", "parse_compute_apps", "parse_nvidia_smi", "post_batch", "read_gpus",
           "read_nvidia_smi", "read_nvml", "read_token"]

log = logging.getLogger("gpubot-agent")

TOKEN_ENV = "GPUBOT_AGENT_TOKEN"
TELEMETRY_PATH = "/api/telemetry"
NVIDIA_SMI = ["nvidia-smi",
              "--query-gpu=index,utilization.gpu,temperature.gpu,memory.used,memory.total,mig.mode.current",
              "--format=csv,noheader,nounits"]
LEGACY_NVIDIA_SMI = [NVIDIA_SMI[0], NVIDIA_SMI[1].replace(",mig.mode.current", ""), NVIDIA_SMI[2]]  # before R450
GPU_UUIDS = ["nvidia-smi", "--query-gpu=index,uuid", "--format=csv,noheader"]
COMPUTE_APPS = ["nvidia-smi", "--query-compute-apps=gpu_uuid,pid,used_memory", "--format=csv,noheader,nounits"]
NO_GPU_RETRY = 60.0  # seconds between looks for a GPU driver that is not there
MAX_BACKOFF = 300.0  # longest wait after failed pushes
HTTP_TIMEOUT = 15.0
RETRY_STATUSES = frozenset({401, 403, 408, 425, 429, 500, 502, 503, 504})
BOOKING_ENDED = "booking_ended"  # the reason in gpubot's 401 body after which the agent stops


class NoGpu(RuntimeError):
    """No GPU can be read on this machine (no driver, no nvidia-smi, no GPU listed)."""


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Never follow a redirect: the token would go wherever it points."""

    def redirect_request(self, *args, **kwargs):
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


# -- reading the GPUs ----------------------------------------------------------------------------------------
def read_gpus() -> list[dict]:
    """One reading per GPU: NVML when nvidia-ml-py is installed, else nvidia-smi; NoGpu when neither works."""
    try:
        return read_nvml()
    except NoGpu as nvml:
        try:
            return read_nvidia_smi()
        except NoGpu as smi:
            raise NoGpu(f"{smi} ({nvml})") from None


def read_nvml() -> list[dict]:
    """Readings through NVML (nvidia-ml-py)."""
    try:
        import pynvml as nv
    except ImportError:
        raise NoGpu("nvidia-ml-py is not installed") from None
    try:
        nv.nvmlInit()
    except Exception as exc:  # NVMLError, or a library that cannot be loaded at all
        raise NoGpu(f"NVML: {exc}") from None
    try:
        readings = [_nvml_reading(nv, index) for index in range(nv.nvmlDeviceGetCount())]
    except Exception as exc:
        raise NoGpu(f"NVML: {exc}") from None
    finally:
        nv.nvmlShutdown()
    found = [reading for reading in readings if reading is not None]
    if not found:
        raise NoGpu("NVML gave neither utilisation nor temperature of any GPU")
    return found


def _nvml_reading(nv, index: int) -> dict | None:
    """One physical GPU's reading, each field on its own: a field NVML cannot give (NotSupported on a MIG-enabled
    GPU's utilisation) is left out; None when neither utilisation nor temperature can be read."""
    handle = nv.nvmlDeviceGetHandleByIndex(index)
    reading: dict = {"index": index}
    util = _nvml_field(nv, lambda: float(nv.nvmlDeviceGetUtilizationRates(handle).gpu))
    temp = _nvml_field(nv, lambda: float(nv.nvmlDeviceGetTemperature(handle, nv.NVML_TEMPERATURE_GPU)))
    memory = _nvml_field(nv, lambda: nv.nvmlDeviceGetMemoryInfo(handle))
    mig = _nvml_field(nv, lambda: nv.nvmlDeviceGetMigMode(handle)[0])
    # On a MIG-enabled GPU's own handle NVML lists processes only to privileged callers: an empty list there
    # may hide running jobs, so the count is unknown (nvidia-smi's rows say so instead: [Insufficient Permissions]).
    listing = getattr(nv, "nvmlDeviceGetComputeRunningProcesses", None)  # absent from very old nvidia-ml-py
    running = None if listing is None or mig == getattr(nv, "NVML_DEVICE_MIG_ENABLE", 1) else _nvml_field(
        nv, lambda: listing(handle))
    if running is not None:
        reading["processes"] = len(running)
        used = [getattr(process, "usedGpuMemory", None) for process in running]
        if all(isinstance(b, int) for b in used):  # None: not available (Windows WDDM)
            reading["process_mem_mib"] = sum(used) / 2**20
    if util is not None:
        reading["util"] = util
    if temp is not None:
        reading["temp_c"] = temp
    if memory is not None:
        reading.update(mem_used_mib=memory.used / 2**20, mem_total_mib=memory.total / 2**20)
    if mig == getattr(nv, "NVML_DEVICE_MIG_ENABLE", 1):
        reading["mig"] = True
    return reading if "util" in reading or "temp_c" in reading else None


def _nvml_field(nv, read):
    """What `read` returns, or None when NVML cannot give that field (NotSupported, NoPermission, …)."""
    try:
        return read()
    except nv.NVMLError:
        return None


def read_nvidia_smi(run=subprocess.run) -> list[dict]:
    """Readings from `nvidia-smi --query-gpu=… --format=csv,noheader,nounits`."""
    try:
        done = run(NVIDIA_SMI, capture_output=True, text=True, timeout=20)
    except FileNotFoundError:
        raise NoGpu("nvidia-smi is not installed") from None
    except subprocess.TimeoutExpired:
        raise NoGpu("nvidia-smi did not answer within 20 s") from None
    except OSError as exc:
        raise NoGpu(f"nvidia-smi could not run: {exc}") from None
    if done.returncode != 0 and "mig.mode.current" in done.stdout + done.stderr:
        done = run(LEGACY_NVIDIA_SMI, capture_output=True, text=True, timeout=20)
    if done.returncode != 0:
        said = (done.stdout.strip() or done.stderr.strip() or "no output").splitlines()[0]
        raise NoGpu(f"nvidia-smi failed (exit {done.returncode}): {said[:200]}")
    readings = parse_nvidia_smi(done.stdout)
    if not readings:
        raise NoGpu("nvidia-smi listed no GPU")
    held = parse_compute_apps(_smi_output(run, GPU_UUIDS), _smi_output(run, COMPUTE_APPS))
    for reading in readings:
        if reading["index"] in held:
            count, memory = held[reading["index"]]
            reading["processes"] = count
            if memory is not None:
                reading["process_mem_mib"] = memory
    return readings


def _smi_output(run, command: list[str]) -> str | None:
    """What an nvidia-smi query printed, or None when it failed."""
    try:
        done = run(command, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def parse_compute_apps(uuids: str | None, apps: str | None) -> dict[int, tuple[int, float | None]]:
    """Per GPU index, how many compute processes hold it and their MiB (None when a row says `[N/A]`), from
    `--query-gpu=index,uuid` and `--query-compute-apps=gpu_uuid,pid,used_memory` (no header, no units). A GPU
    left out is unknown: either query failed, a row of it has no readable pid (`[Insufficient Permissions]`), or
    a row names a GPU not listed (then every GPU, as that process may hold any of them)."""
    if uuids is None or apps is None:
        return {}
    index_of = {}
    for line in uuids.splitlines():
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) == 2 and cells[0].isdigit() and cells[1].upper().startswith("GPU-"):
            index_of[cells[1].lower()] = int(cells[0])
    held: dict[int, tuple[int, float | None]] = {index: (0, 0.0) for index in index_of.values()}
    unreadable = set()
    for line in apps.splitlines():
        if not line.strip() or line.strip().lower() == "no running processes found":
            continue
        cells = [cell.strip() for cell in line.split(",")]
        index = index_of.get(cells[0].lower()) if len(cells) == 3 else None
        if index is None:
            return {}
        if not cells[1].isdigit():
            unreadable.add(index)
            continue
        count, memory = held[index]
        used = _number(cells[2])
        held[index] = (count + 1, None if memory is None or used is None else memory + used)
    return {index: value for index, value in held.items() if index not in unreadable}


def parse_nvidia_smi(text: str) -> list[dict]:
    """Readings from nvidia-smi's CSV lines (index, utilization.gpu, temperature.gpu, memory.used, memory.total and,
    from newer agents, mig.mode.current), each field on its own: `[N/A]` or `[Not Supported]` (a MIG-enabled GPU's
    utilisation) leaves that field out; a GPU with neither utilisation nor temperature is left out."""
    readings = []
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) not in (5, 6):
            continue
        index, util, temp, used, total = (_number(cell) for cell in cells[:5])
        if index is None or index != int(index) or (util is None and temp is None):
            continue
        reading: dict = {"index": int(index)}
        if util is not None:
            reading["util"] = util
        if temp is not None:
            reading["temp_c"] = temp
        if used is not None and total is not None:
            reading.update(mem_used_mib=used, mem_total_mib=total)
        if len(cells) == 6 and cells[5] == "Enabled":
            reading["mig"] = True
        readings.append(reading)
    return readings


def _number(text: str) -> float | None:
    """A cell's number; units nvidia-smi adds without `nounits` ("53 %", "11125 MiB") are dropped."""
    try:
        return float(text.split()[0]) if text.split() else None
    except ValueError:  # "[N/A]", "[Not Supported]"
        return None


# -- pushing -------------------------------------------------------------------------------------------------
def post_batch(url: str, token: str, body: bytes, timeout: float = HTTP_TIMEOUT) -> tuple[int, dict]:
    """POST one batch; the HTTP status and what a refusal said (`reason`, `retry_after` seconds). Network failures
    raise OSError (URLError is one)."""
    request = urllib.request.Request(url, data=body, method="POST", headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/json", "User-Agent": "gpubot-agent/1"})
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            return response.status, {}
    except urllib.error.HTTPError as exc:
        return exc.code, _refusal(exc)


def _refusal(exc: urllib.error.HTTPError) -> dict:
    """The `reason` of gpubot's JSON answer and its Retry-After header, where given."""
    said: dict = {}
    with contextlib.suppress(ValueError):
        said["retry_after"] = max(0.0, float((exc.headers or {}).get("Retry-After", "")))
    try:
        answer = json.loads(exc.read(4096) or b"{}")
    except (ValueError, OSError):
        answer = None
    if isinstance(answer, dict) and isinstance(answer.get("reason"), str):
        said["reason"] = answer["reason"]
    return said


class Agent:
    """The push loop: read, push, wait; `run` returns 0 once gpubot no longer accepts the token."""

    def __init__(self, url: str, token: str, interval: float, *, read=read_gpus, post=post_batch,
                 sleep=time.sleep) -> None:
        self.endpoint = url.rstrip("/") + TELEMETRY_PATH
        self.token, self.interval = token, interval
        self.read, self.post, self.sleep = read, post, sleep
        self.failures = 0
        self.pushed = 0
        self._last_problem = ""

    def run(self, rounds: int | None = None) -> int:
        """Push until the booking ends (exit code 0), or for `rounds` rounds."""
        done = 0
        while rounds is None or done < rounds:
            delay = self.step()
            if delay is None:
                return 0
            done += 1
            self.sleep(delay)
        return 0

    def step(self) -> float | None:
        """Read and push once; the seconds to wait before the next round, None when the booking ended."""
        try:
            gpus = self.read()
        except NoGpu as exc:
            self._problem(f"no GPU to read: {exc}; looking again every {NO_GPU_RETRY:g} s")
            return NO_GPU_RETRY
        body = json.dumps({"gpus": gpus}).encode()
        try:
            answer = self.post(self.endpoint, self.token, body)
        except OSError as exc:
            return self._backoff(f"cannot reach {self.endpoint}: {_reason(exc)}")
        status, said = answer if isinstance(answer, tuple) else (answer, {})
        return self._answered(status, said)

    def _answered(self, status: int, said: dict) -> float | None:
        if 200 <= status < 300:
            self.failures = 0
            self.pushed += 1
            if self.pushed == 1 or self._last_problem:
                log.info("pushing GPU readings to %s every %g s", self.endpoint, self.interval)
                self._last_problem = ""
            return self.interval
        if status == 401 and said.get("reason") == BOOKING_ENDED:
            log.info("the booking ended (gpubot said so): stopping")
            return None
        if status in RETRY_STATUSES:
            why = f" ({said['reason']})" if said.get("reason") else ""
            return self._backoff(f"gpubot answered HTTP {status}{why}", said.get("retry_after"))
        if status == 409:
            self._problem("the booking is not active yet; pushing again each round")
            return self.interval
        hint = " (a redirect: use gpubot's https:// address in --url)" if 300 <= status < 400 else ""
        self._problem(f"gpubot refused the readings with HTTP {status}{hint}")
        return self.interval

    def _backoff(self, problem: str, retry_after: float | None = None) -> float:
        self.failures += 1
        delay = min(self.interval * 2 ** min(self.failures, 16), MAX_BACKOFF)
        if retry_after is not None:  # gpubot said when: then (at least one interval on, at most 5 minutes)
            delay = min(max(retry_after, self.interval), MAX_BACKOFF)
        log.warning("%s; trying again in %g s", problem, delay)
        self._last_problem = problem
        return delay

    def _problem(self, problem: str) -> None:
        """Log a problem once, until it changes or goes away."""
        if problem != self._last_problem:
            log.warning("%s", problem)
            self._last_problem = problem


def _reason(exc: OSError) -> str:
    reason = getattr(exc, "reason", None) or exc
    return f"{type(reason).__name__}: {reason}"


# -- command line --------------------------------------------------------------------------------------------
def read_token(token_file: str | None, token: str | None, environ=os.environ) -> str | None:
    """The agent token: from the file if given, else GPUBOT_AGENT_TOKEN, else --token."""
    if token_file:
        with open(token_file, encoding="utf-8") as handle:
            return handle.read().strip() or None
    return environ.get(TOKEN_ENV, "").strip() or (token or "").strip() or None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpubot-agent", description="Push GPU telemetry to gpubot.")
    parser.add_argument("--url", required=True, help="gpubot's public URL (https://…)")
    parser.add_argument("--token-file", help="file holding the booking's agent token")
    parser.add_argument("--token", help=f"the token itself (visible to every user in the process list; prefer "
                                        f"--token-file or {TOKEN_ENV})")
    parser.add_argument("--interval", type=float, default=15.0, help="seconds between pushes (default 15)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the agent; the process exit code."""
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s gpubot-agent %(levelname)s %(message)s")
    try:
        token = read_token(args.token_file, args.token)
    except OSError as exc:
        log.error("cannot read the token file: %s", exc)
        return 2
    if not token:
        log.error("no agent token: give --token-file or set %s", TOKEN_ENV)
        return 2
    if args.interval <= 0:
        log.error("--interval must be positive")
        return 2
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        return Agent(args.url, token, args.interval).run()
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())
