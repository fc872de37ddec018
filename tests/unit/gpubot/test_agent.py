"""The agent file: standard library only, nvidia-smi parsing, and what it does with each answer (no network)."""

from __future__ import annotations

import ast
import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from gpubot import agent
from gpubot.agent import NVIDIA_SMI, Agent, NoGpu, parse_nvidia_smi, read_gpus, read_nvidia_smi, read_token
from gpubot.edge import telemetry_batch

SOURCE = Path(agent.__file__).read_text(encoding="utf-8")


def test_the_agent_imports_only_the_standard_library_and_optionally_pynvml() -> None:
    tree = ast.parse(SOURCE)
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module}
    assert imported - sys.stdlib_module_names == {"pynvml"}


def test_the_agent_parses_as_python_3_8() -> None:
    ast.parse(SOURCE, feature_version=(3, 8))  # what Ubuntu 20.04 and AutoDL's base images ship


CAPTURES = Path(__file__).parents[2] / "captures" / "nvidia_smi_rows.txt"


def _captured() -> dict[str, list[str]]:
    """The real rows of tests/captures/nvidia_smi_rows.txt (source noted there), by capture file."""
    rows: dict[str, list[str]] = {}
    current = ""
    for line in CAPTURES.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            current = line[3:].rsplit("/", 1)[-1].removesuffix(".txt")
            rows[current] = []
        elif line.startswith("line "):
            rows[current].append(line.split(": ", 1)[1])
    return rows


def test_nvidia_smi_lines_become_readings_the_bot_accepts() -> None:
    text = "0, 37, 71, 1024, 81920\n1, 0, 35, [N/A], [N/A]\n2, [N/A], 40, 1, 2\n3, [N/A], [N/A], 1, 2\nnot a gpu line\n"
    readings = parse_nvidia_smi(text)
    assert readings == [
        {"index": 0, "util": 37.0, "temp_c": 71.0, "mem_used_mib": 1024.0, "mem_total_mib": 81920.0},
        {"index": 1, "util": 0.0, "temp_c": 35.0},
        {"index": 2, "temp_c": 40.0, "mem_used_mib": 1.0, "mem_total_mib": 2.0}]
    assert [r.index for r in telemetry_batch(json.dumps({"gpus": readings}).encode()).readings()] == [0, 1, 2]


@pytest.mark.parametrize("capture", sorted(c for c in _captured() if "mig" not in c))
def test_real_rows_of_gpus_without_mig_keep_every_field(capture: str) -> None:
    for row in _captured()[capture]:
        [reading] = parse_nvidia_smi(row)
        assert set(reading) == {"index", "util", "temp_c", "mem_used_mib", "mem_total_mib"}, row
        assert 0 <= reading["util"] <= 100 and reading["mem_used_mib"] <= reading["mem_total_mib"]
        assert telemetry_batch(json.dumps({"gpus": [reading]}).encode()).readings()[0].util == reading["util"]


def test_real_rows_of_mig_gpus_keep_temperature_and_memory_without_utilisation() -> None:
    h100, h200 = _captured()["linux-x86_64__nvidia-h100-mig__590.48.01"], \
        _captured()["linux-x86_64__nvidia-h200-mig__590.48.01"]
    assert parse_nvidia_smi(h100[1]) == [{"index": 0, "temp_c": 53.0, "mem_used_mib": 11125.0,
                                          "mem_total_mib": 81559.0, "mig": True}]
    for row in h100 + h200:
        [reading] = parse_nvidia_smi(row)
        assert "util" not in reading and reading["mig"] is True and reading["temp_c"] > 0, row
        [accepted] = telemetry_batch(json.dumps({"gpus": [reading]}).encode()).readings()
        assert accepted.util is None and accepted.temp_c == reading["temp_c"]


def test_drivers_590_to_610_are_among_the_captures() -> None:
    drivers = {c.rsplit("__", 1)[1] for c in _captured()}
    assert {"590.48.01", "610.57.04"} <= drivers


def test_nvidia_smi_is_asked_for_the_documented_query() -> None:
    asked = []

    def run(argv, **options):
        asked.append(argv)
        return subprocess.CompletedProcess(argv, 0, "0, 5, 50, 1, 2, Disabled\n", "")

    assert read_nvidia_smi(run) == [{"index": 0, "util": 5.0, "temp_c": 50.0, "mem_used_mib": 1.0,
                                     "mem_total_mib": 2.0}]  # the process queries got GPU rows: unknown
    assert asked[0] == ["nvidia-smi",
                        "--query-gpu=index,utilization.gpu,temperature.gpu,memory.used,memory.total,mig.mode.current",
                        "--format=csv,noheader,nounits"] == NVIDIA_SMI
    assert asked[1:] == [["nvidia-smi", "--query-gpu=index,uuid", "--format=csv,noheader"],
                         ["nvidia-smi", "--query-compute-apps=gpu_uuid,pid,used_memory",
                          "--format=csv,noheader,nounits"]]


def test_a_driver_without_the_mig_field_is_asked_again_without_it() -> None:
    asked = []

    def run(argv, **options):
        asked.append(argv[1])
        if "mig.mode.current" in argv[1]:
            return subprocess.CompletedProcess(argv, 2, 'Field "mig.mode.current" is not a valid field to query.', "")
        return subprocess.CompletedProcess(argv, 0, "0, 5, 50, 1, 2\n", "")

    assert read_nvidia_smi(run)[0]["util"] == 5.0 and len([a for a in asked if "utilization" in a]) == 2


class FakeNvml:
    """A stand-in for nvidia-ml-py (third-party, not ours): one MIG-enabled H100 whose utilisation is NotSupported,
    as NVML answers on MIG devices, and one ordinary GPU."""

    NVML_TEMPERATURE_GPU, NVML_DEVICE_MIG_ENABLE = 0, 1

    class NVMLError(Exception):
        pass

    class NVMLError_NotSupported(NVMLError):
        pass

    def __init__(self, unreadable: bool = False) -> None:
        self.unreadable, self.shut = unreadable, False

    def nvmlInit(self) -> None: ...

    def nvmlShutdown(self) -> None:
        self.shut = True

    def nvmlDeviceGetCount(self) -> int:
        return 2

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        return index

    def nvmlDeviceGetUtilizationRates(self, handle: int):
        if handle == 0 or self.unreadable:
            raise self.NVMLError_NotSupported("Not Supported")
        return type("Rates", (), {"gpu": 37})()

    def nvmlDeviceGetTemperature(self, handle: int, sensor: int) -> int:
        if self.unreadable:
            raise self.NVMLError_NotSupported("Not Supported")
        return 91 if handle == 0 else 60

    def nvmlDeviceGetMemoryInfo(self, handle: int):
        return type("Memory", (), {"used": 11125 * 2**20, "total": 81559 * 2**20})()

    def nvmlDeviceGetMigMode(self, handle: int) -> tuple[int, int]:
        if handle == 1:
            raise self.NVMLError_NotSupported("Not Supported")
        return (1, 1)

    def nvmlDeviceGetComputeRunningProcesses(self, handle: int) -> list:
        """Two processes on the ordinary GPU; on the MIG-enabled one (not asked) a list that may hide jobs."""
        return [type("Process", (), {"pid": pid, "usedGpuMemory": mib * 2**20})() for pid, mib in ((7, 1024),
                                                                                                 (8, 512))]


def test_nvml_reads_each_field_on_its_own_and_reports_mig_per_physical_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    nvml = FakeNvml()
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    assert agent.read_nvml() == [
        {"index": 0, "temp_c": 91.0, "mem_used_mib": 11125.0, "mem_total_mib": 81559.0, "mig": True},
        {"index": 1, "util": 37.0, "temp_c": 60.0, "mem_used_mib": 11125.0, "mem_total_mib": 81559.0,
         "processes": 2, "process_mem_mib": 1536.0}]
    assert nvml.shut


def test_nvml_without_utilisation_or_temperature_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml(unreadable=True))
    with pytest.raises(NoGpu, match="neither utilisation nor temperature"):
        agent.read_nvml()


@pytest.mark.parametrize(("outcome", "reason"), [
    (FileNotFoundError(), "nvidia-smi is not installed"),
    (subprocess.CompletedProcess(NVIDIA_SMI, 9, "NVIDIA-SMI has failed because it couldn't communicate with "
                                                "the NVIDIA driver.\n", ""), "exit 9"),
    (subprocess.CompletedProcess(NVIDIA_SMI, 0, "", ""), "listed no GPU"),
])
def test_a_machine_without_a_usable_gpu_is_no_gpu(outcome, reason: str) -> None:
    def run(argv, **options):
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    with pytest.raises(NoGpu, match=reason):
        read_nvidia_smi(run)


def test_without_nvml_or_nvidia_smi_the_reason_names_both(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails as if nvidia-ml-py were missing
    monkeypatch.setattr(agent, "read_nvidia_smi", lambda: (_ for _ in ()).throw(NoGpu("nvidia-smi is gone")))
    with pytest.raises(NoGpu, match=r"nvidia-smi is gone \(nvidia-ml-py is not installed\)"):
        read_gpus()


class Bot:
    """Answers each push with the next status (or raises the next OSError) and records the bodies."""

    def __init__(self, *answers: int | OSError) -> None:
        self.answers, self.bodies = list(answers), []

    def __call__(self, url: str, token: str, body: bytes) -> int:
        self.bodies.append((url, token, json.loads(body)))
        answer = self.answers.pop(0)
        if isinstance(answer, OSError):
            raise answer
        return answer


GPUS = [{"index": 0, "util": 0.0, "temp_c": 35.0}]
ENDED = (401, {"reason": "booking_ended"})


def run(bot: Bot, rounds: int | None = None, read=lambda: GPUS) -> tuple[int, list[float]]:
    waits: list[float] = []
    code = Agent("https://bot.example/", "gpa_secret", 15.0, read=read, post=bot, sleep=waits.append).run(rounds)
    return code, waits


def test_it_pushes_every_interval_and_stops_with_0_once_the_booking_ended() -> None:
    bot = Bot(204, 204, ENDED)
    assert run(bot) == (0, [15.0, 15.0])
    assert bot.bodies[0] == ("https://bot.example/api/telemetry", "gpa_secret", {"gpus": GPUS})


def test_network_errors_and_5xx_back_off_then_recover() -> None:
    bot = Bot(OSError("unreachable"), 503, 429, 204, 204)
    assert run(bot, rounds=5)[1] == [30.0, 60.0, 120.0, 15.0, 15.0]


def test_only_a_401_saying_the_booking_ended_stops_it_any_other_refusal_is_retried() -> None:
    bot = Bot((401, {"reason": "unknown_token"}), 401, (403, {}), 204, ENDED)
    assert run(bot) == (0, [30.0, 60.0, 120.0, 15.0])


def test_retry_after_is_honoured() -> None:
    bot = Bot((429, {"retry_after": 42.0}), (503, {"retry_after": 0.0}), (429, {"retry_after": 9999.0}), 204)
    assert run(bot, rounds=4)[1] == [42.0, 15.0, 300.0, 15.0]


def test_backoff_stops_at_five_minutes() -> None:
    assert max(run(Bot(*[OSError("down")] * 12), rounds=12)[1]) == 300.0


def test_a_booting_booking_and_a_refused_batch_keep_it_going() -> None:
    assert run(Bot(409, 409, 422, 204), rounds=4) == (0, [15.0] * 4)


def test_no_gpu_driver_is_logged_once_and_looked_for_every_minute(caplog: pytest.LogCaptureFixture) -> None:
    def read():
        raise NoGpu("nvidia-smi failed (exit 9): NVIDIA-SMI has failed")

    bot = Bot()
    assert run(bot, rounds=3, read=read) == (0, [60.0] * 3)
    assert bot.bodies == [] and sum("no GPU to read" in r.message for r in caplog.records) == 1


def test_the_token_never_reaches_the_log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="gpubot-agent")
    run(Bot(204, OSError("connection refused"), 503, 409, 301, 400, 204, ENDED))
    assert len(caplog.records) >= 8 and not [r for r in caplog.records if "gpa_secret" in r.getMessage()]


def test_the_token_comes_from_a_file_then_the_environment_then_the_option(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("gpa_from_file\n")
    assert read_token(str(tmp_path / "token"), "gpa_option", {"GPUBOT_AGENT_TOKEN": "gpa_env"}) == "gpa_from_file"
    assert read_token(None, "gpa_option", {"GPUBOT_AGENT_TOKEN": " gpa_env "}) == "gpa_env"
    assert read_token(None, "gpa_option", {}) == "gpa_option"
    assert read_token(None, None, {}) is None


def test_main_refuses_to_start_without_a_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GPUBOT_AGENT_TOKEN", raising=False)
    assert agent.main(["--url", "https://bot.example"]) == 2
