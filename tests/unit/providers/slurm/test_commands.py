"""The client tools run as real child processes: their environment, their timeout, and what their failures mean
(the error texts are a real Slurm's, from captures/)."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpubot.domain.errors import AuthFailed, InvalidRequest, NoAccess, QuotaExceeded, Transient
from gpubot.providers.slurm.commands import JobGone, SlurmCommands
from gpubot.providers.slurm.parsing import parse_submitted

CAPTURES = Path(__file__).parent / "captures"


def test_a_tool_sees_only_what_it_needs_of_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-secret")
    monkeypatch.setenv("DATABASE_URL", "postgresql://u:p@db/gpubot")
    env = SlurmCommands("lab", slurm_conf="/etc/lab/slurm.conf").run("env")
    seen = dict(line.split("=", 1) for line in env.splitlines())
    assert set(seen) == {"PATH", "TZ", "LC_ALL", "SLURM_CONF"}
    assert (seen["TZ"], seen["SLURM_CONF"]) == ("UTC", "/etc/lab/slurm.conf")
    assert "xoxb-secret" not in env


def test_bin_dir_comes_first(tmp_path) -> None:
    path = SlurmCommands("lab", bin_dir=str(tmp_path)).env()["PATH"]
    assert path.startswith(f"{tmp_path}:")


def test_standard_input_reaches_the_tool() -> None:
    assert SlurmCommands("lab").run("cat", stdin="#!/bin/bash\nsleep 1\n") == "#!/bin/bash\nsleep 1\n"


def test_a_tool_that_hangs_is_transient() -> None:
    with pytest.raises(Transient, match=r"did not answer within 0\.2s"):
        SlurmCommands("lab", timeout=0.2).run("sleep", "5")


def test_a_tool_that_is_not_installed_is_transient_and_says_what_to_install(tmp_path) -> None:
    with pytest.raises(Transient, match="slurm-client"):
        SlurmCommands("lab", bin_dir=str(tmp_path)).run("sbatch", "--version")


def test_a_failed_tool_keeps_the_clusters_words() -> None:
    with pytest.raises(InvalidRequest) as caught:
        SlurmCommands("lab").run("sh", "-c", f"cat {CAPTURES / 'sbatch_too_big.txt'} >&2; exit 1")
    assert caught.value.detail == "Requested node configuration is not available"


def test_attempt_hands_back_a_failure_unjudged() -> None:
    done = SlurmCommands("lab").attempt("sh", "-c", "echo no >&2; exit 3")
    assert (done.returncode, done.stderr) == (3, "no\n")


@pytest.mark.parametrize(("stderr", "error"), [
    ((CAPTURES / "show_job_gone.txt").read_text(), JobGone),
    ((CAPTURES / "update_job_gone.txt").read_text(), JobGone),
    ((CAPTURES / "sbatch_too_big.txt").read_text(), InvalidRequest),
    ("sbatch: error: Batch job submission failed: Requested time limit is invalid (missing or exceeds some limit)",
     InvalidRequest),
    ("sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified",
     InvalidRequest),
    ("sbatch: error: Batch job submission failed: Job violates accounting/QOS policy (job submit limit, user's "
     "size and/or time limits)", QuotaExceeded),
    ("sbatch: error: Invalid --uid specification", NoAccess),
    ("scontrol: error: Access/permission denied", AuthFailed),
    ("sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)", Transient),
    ('sbatch: error: Munge encode failed: Failed to access "/run/munge/munge.socket.2": No such file or directory',
     Transient),
    ("something nobody has seen", Transient),
])
def test_what_a_failure_means(stderr: str, error: type) -> None:
    assert type(SlurmCommands("lab").error("sbatch", stderr)) is error


def test_an_answer_the_parser_cannot_read_is_transient() -> None:
    with pytest.raises(Transient, match="unreadable answer from echo"):
        SlurmCommands("lab").read(parse_submitted, "echo", "Submitted batch job 42")
