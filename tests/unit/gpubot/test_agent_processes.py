"""The agent's compute-process count per GPU (`nvidia-smi --query-compute-apps`, NVML's running processes): real
captured rows, and unknown never sent as 0."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpubot import agent
from gpubot.agent import COMPUTE_APPS, GPU_UUIDS, NVIDIA_SMI, parse_compute_apps, read_nvidia_smi
from gpubot.edge import telemetry_batch

CAPTURES = Path(__file__).parents[2] / "captures" / "nvidia_smi_compute_apps.txt"
UUID = "GPU-00000000-0000-0000-0000-000000000000"


def _captured() -> dict[str, dict]:
    """tests/captures/nvidia_smi_compute_apps.txt (source noted there): per capture, its `index, uuid` line and
    the rows of each state (idle, load)."""
    found: dict[str, dict] = {}
    current: dict = {}
    for line in CAPTURES.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            current = found.setdefault(line[3:].rsplit("/", 1)[-1].removesuffix(".txt"), {"idle": [], "load": []})
        elif line.startswith("gpu line "):
            current["gpu"] = line.split(": ", 1)[1]
        elif line.startswith(("idle line ", "load line ")):
            current[line.split()[0]].append(line.split(": ", 1)[1])
    return found


@pytest.mark.parametrize("capture", sorted(_captured()))
def test_real_compute_apps_rows_become_counts_the_bot_accepts(capture: str) -> None:
    got = _captured()[capture]
    for state in ("idle", "load"):
        rows = got[state]
        held = parse_compute_apps(got["gpu"] + "\n", "".join(f"{row}\n" for row in rows))
        memory = [row.rsplit(", ", 1)[1] for row in rows]
        expected = None if "[N/A]" in memory else sum(float(m.split()[0]) for m in memory)
        assert held == {0: (len(rows), expected)}, (capture, state)
        reading = {"index": 0, "util": 0.0, "processes": held[0][0]}
        if held[0][1] is not None:
            reading["process_mem_mib"] = held[0][1]
        [accepted] = telemetry_batch(json.dumps({"gpus": [reading]}).encode()).readings()
        assert accepted.processes == len(rows) and accepted.process_mem_mib == expected


def test_the_captures_hold_idle_gpus_loaded_gpus_mig_and_windows() -> None:
    got = _captured()
    assert any(not c["idle"] for c in got.values()) and all(c["load"] for c in got.values())
    assert any("mig" in name for name in got) and any(name.startswith("windows") for name in got)


def test_unknown_is_left_out_never_zero() -> None:
    uuids = f"0, {UUID}\n1, GPU-11111111-0000-0000-0000-000000000001\n"
    assert parse_compute_apps(uuids, "") == {0: (0, 0.0), 1: (0, 0.0)}
    assert parse_compute_apps(None, "") == {} == parse_compute_apps(uuids, None)  # a query failed
    unreadable = f"{UUID}, [Insufficient Permissions], [Insufficient Permissions]\n"  # MIG in a container
    assert parse_compute_apps(uuids, unreadable) == {1: (0, 0.0)}
    elsewhere = "MIG-22222222-0000-0000-0000-000000000002, 41, 10\n"  # a process on a GPU not listed: any may hold it
    assert parse_compute_apps(uuids, elsewhere) == {}
    assert parse_compute_apps(uuids, "garbage\n") == {}
    assert parse_compute_apps(f"0, {UUID.lower()}\n", f"{UUID}, 41, [N/A]\n{UUID}, 42, 10\n") == {0: (2, None)}


def _smi(answers: dict[str, subprocess.CompletedProcess | Exception]):
    def run(argv, **options):
        answer = answers[argv[1]]
        if isinstance(answer, Exception):
            raise answer
        return answer
    return run


def _done(stdout: str, code: int = 0) -> subprocess.CompletedProcess:
    return subprocess.CompletedProcess([], code, stdout, "")


def test_nvidia_smi_readings_carry_the_counts_and_leave_them_out_when_a_query_fails() -> None:
    gpus = "0, 0, 40, 5, 80, Disabled\n1, 90, 60, 900, 80, Disabled\n"
    uuids = f"0, {UUID}\n1, GPU-11111111-0000-0000-0000-000000000001\n"
    apps = "GPU-11111111-0000-0000-0000-000000000001, 4242, 870\n"
    readings = read_nvidia_smi(_smi({NVIDIA_SMI[1]: _done(gpus), GPU_UUIDS[1]: _done(uuids),
                                     COMPUTE_APPS[1]: _done(apps)}))
    assert [(r["processes"], r["process_mem_mib"]) for r in readings] == [(0, 0.0), (1, 870.0)]
    for failed in (_done("", 6), subprocess.TimeoutExpired("nvidia-smi", 20)):
        readings = read_nvidia_smi(_smi({NVIDIA_SMI[1]: _done(gpus), GPU_UUIDS[1]: _done(uuids),
                                         COMPUTE_APPS[1]: failed}))
        assert not any("processes" in r for r in readings) and readings[1]["util"] == 90.0


class MigNvml:
    """nvidia-ml-py (third-party) on one MIG-enabled GPU: its own handle lists no process to an unprivileged caller."""

    NVML_TEMPERATURE_GPU, NVML_DEVICE_MIG_ENABLE = 0, 1

    class NVMLError(Exception):
        pass

    def nvmlInit(self) -> None: ...

    def nvmlShutdown(self) -> None: ...

    def nvmlDeviceGetCount(self) -> int:
        return 1

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        return index

    def nvmlDeviceGetUtilizationRates(self, handle: int):
        raise self.NVMLError("Not Supported")

    def nvmlDeviceGetTemperature(self, handle: int, sensor: int) -> int:
        return 50

    def nvmlDeviceGetMemoryInfo(self, handle: int):
        raise self.NVMLError("Not Supported")

    def nvmlDeviceGetMigMode(self, handle: int) -> tuple[int, int]:
        return (1, 1)

    def nvmlDeviceGetComputeRunningProcesses(self, handle: int) -> list:
        return []


def test_nvml_on_a_mig_enabled_gpu_leaves_the_count_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", MigNvml())
    assert agent.read_nvml() == [{"index": 0, "temp_c": 50.0, "mig": True}]
