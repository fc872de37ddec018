"""The adapter's reading of job states and its sbatch line, on what a real Slurm printed (captures/), replayed at
the process seam. States the test cluster cannot reach on demand (a node failure, a preemption) are the captured
records with the state changed; the live behaviour is in tests/integration/providers/test_slurm.py."""

from __future__ import annotations

import pwd
import subprocess
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from gpubot.domain.errors import InvalidRequest, NoAccess, PastTimeLimit, Transient
from gpubot.domain.model import Instance, Offer, OfferRequest
from gpubot.domain.ports import AgentLaunch, LaunchSpec
from gpubot.providers.slurm.commands import SlurmCommands
from gpubot.providers.slurm.config import slurm_config
from gpubot.providers.slurm.parsing import parse_nodes
from gpubot.providers.slurm.provider import SlurmProvider, availability

CAPTURES = Path(__file__).parent / "captures"
ALICE = pwd.struct_passwd(("alice", "x", 1001, 1002, "", "/home/alice", "/bin/bash"))


def captured(name: str) -> str:
    return (CAPTURES / name).read_text()


class Replay:
    """Answers each tool call with a captured output, keyed by the command's first words; records the calls."""

    def __init__(self, answers: dict[tuple[str, ...], tuple[int, str, str]]) -> None:
        self.answers, self.calls = answers, []

    def __call__(self, args, input=None, **_kwargs) -> subprocess.CompletedProcess:
        self.calls.append((args, input))
        for key, (rc, out, err) in self.answers.items():
            if tuple(args[:len(key)]) == key:
                return subprocess.CompletedProcess(args, rc, out, err)
        raise AssertionError(f"no answer for {args}")


def provider(answers: dict, **config) -> tuple[SlurmProvider, Replay]:
    replay = Replay(answers)
    raw = {"kind": "slurm", "partition": "gpu", "gpu_types": {"a100": "a100", "h100": "h100"},
           "prices": {"a100": "0.90", "h100": "1.80"}, "users": {"U0ALICE001": "alice"}, **config}
    users = {"alice": ALICE}
    return SlurmProvider("lab", slurm_config(raw, "lab"), commands=SlurmCommands("lab", tool=replay),
                         users=users.__getitem__, euid=lambda: 0), replay


def job(capture: str, **states: str) -> tuple[int, str, str]:
    text = captured(capture)
    for old, new in states.items():
        text = text.replace(f"JobState={old}", f"JobState={new}")
    return 0, text, ""


SHOW_JOB = ("scontrol", "-o", "show", "job", "-d")
GONE = (1, "", captured("show_job_gone.txt"))


def test_offers_count_the_free_gpus_of_the_type() -> None:
    lab, _ = provider({("scontrol", "-o", "show", "node"): (0, captured("node_busy.txt"), "")})
    [two] = lab.offers(OfferRequest("a100", 2))
    assert (two.provider, two.region, two.count, two.available) == ("lab", "gpu", 2, True)
    assert (two.price_per_gpu_hour, two.currency, two.ref) == (Decimal("0.90"), "USD", "gpu:a100")
    assert [(o.available, o.queued) for o in lab.offers(OfferRequest("a100", 3))] == [(True, True)]
    assert [(o.available, o.queued) for o in lab.offers(OfferRequest("h100", 1))] == [(True, True)]
    assert lab.offers(OfferRequest("l4", 1)) == [] and lab.offers(OfferRequest("a100", 1, spot=True)) == []
    assert lab.offers(OfferRequest("a100", 1, region="elsewhere")) == []


def test_a_full_node_offers_its_gpus_with_a_wait_in_slurms_queue() -> None:
    lab, replay = provider({("scontrol", "-o", "show", "node"): (0, captured("node_full.txt"), "")})
    [four] = lab.offers(OfferRequest("a100", 4))
    assert (four.available, four.queued, four.price_per_gpu_hour) == (True, True, Decimal("0.90"))
    assert [a[0] for a, _ in replay.calls] == ["scontrol"]  # a shape the node holds: no --test-only
    free, _ = provider({("scontrol", "-o", "show", "node"): (0, captured("node_busy.txt"), "")})
    assert [(o.available, o.queued) for o in free.offers(OfferRequest("a100", 2))] == [(True, False)]
    assert [(o.available, o.queued) for o in free.offers(OfferRequest("a100", 4))] == [(True, True)]


@pytest.mark.parametrize(("capture", "gpu", "count", "expected"), [
    ("node_idle.txt", "a100", 4, (True, False)),
    ("node_full.txt", "a100", 1, (True, True)),
    ("node_full.txt", "h100", 4, (True, True)),
    ("node_busy.txt", "h100", 1, (True, True)),
    ("node_busy.txt", "a100", 2, (True, False)),
    ("node_busy.txt", "a100", 5, (False, False)),  # no node holds five (the provider refuses it before asking)
])
def test_availability_is_free_now_or_held_by_an_open_node(capture, gpu, count, expected) -> None:
    assert availability(parse_nodes(captured(capture)), gpu, count) == expected


def test_a_full_node_that_is_drained_offers_nothing() -> None:
    drained = parse_nodes(captured("node_full.txt").replace("State=MIXED", "State=MIXED+DRAIN"))
    assert availability(drained, "a100", 4) == (False, False)


def test_a_shape_no_node_holds_is_refused_in_the_clusters_words() -> None:
    lab, replay = provider({("scontrol", "-o", "show", "node"): (0, captured("node_idle.txt"), ""),
                            ("sbatch", "--test-only"): (1, "", captured("test_only_too_big.txt"))})
    with pytest.raises(InvalidRequest) as caught:
        lab.offers(OfferRequest("a100", 5))
    assert caught.value.detail == ("Requested node configuration is not available (the most gpu:a100 one node of "
                                   "partition gpu has is 4)")
    [test_only] = [a for a, _ in replay.calls if a[0] == "sbatch"]
    assert test_only[1:] == ["--test-only", "--partition=gpu", "--nodes=1", "--gres=gpu:a100:5", "--time=1",
                             "--wrap=true"]


def test_a_cluster_that_cannot_answer_is_not_taken_for_a_refusal() -> None:
    lab, _ = provider({("scontrol", "-o", "show", "node"): (0, captured("node_idle.txt"), ""),
                       ("sbatch", "--test-only"): (1, "", "sbatch: error: Batch job submission failed: Unable to "
                                                          "contact slurm controller (connect failure)")})
    with pytest.raises(Transient):
        lab.offers(OfferRequest("a100", 5))


def test_a_drained_node_offers_nothing_free() -> None:
    drained = captured("node_idle.txt").replace("State=IDLE", "State=IDLE+DRAIN")
    lab, _ = provider({("scontrol", "-o", "show", "node"): (0, drained, "")})
    assert [(o.available, o.queued) for o in lab.offers(OfferRequest("a100", 1))] == [(False, False)]


def test_a_running_job_is_ready_with_its_node_and_gpus() -> None:
    lab, _ = provider({SHOW_JOB: job("job_running.txt")})
    found = lab.describe(Instance("lab", "1", "gpubot-42-ab12cd34"))
    assert (found.status, found.ready, found.ssh) == ("running", True,
                                                  "ssh gpubot-alice@gpunode1  # gpu:a100:2(IDX:0-1)")
    assert (found.gpu, found.count, found.stopped_at) == ("a100", 2, None)
    assert (found.extra["gres"], found.extra["gpu_indices"], found.extra["node"]) == (
        "gpu:a100:2(IDX:0-1)", (0, 1), "gpunode1")
    assert found.extra["end"] == datetime(2026, 12, 1, 22, 1, 17, tzinfo=UTC)


def test_ssh_goes_through_the_login_node_when_there_is_one() -> None:
    lab, _ = provider({SHOW_JOB: job("job_running.txt")}, ssh_jump="login.lab")
    assert lab.describe(Instance("lab", "1", "x")).ssh == ("ssh -J gpubot-alice@login.lab gpubot-alice@gpunode1  "
                                                                 "# gpu:a100:2(IDX:0-1)")


def test_a_pending_job_carries_slurms_reason_and_expected_start() -> None:
    lab, _ = provider({SHOW_JOB: job("job_pending.txt")})
    found = lab.describe(Instance("lab", "4", "gpubot-45-cd56ef78"))
    assert (found.status, found.ready, found.ssh, found.gpu, found.count) == ("pending", False, None, "h100", 2)
    assert (found.extra["reason"], found.extra["start"]) == ("Resources",
                                                             datetime(2026, 12, 1, 21, 59, 18, tzinfo=UTC))
    assert (found.waiting, found.expected_start) == ("Resources", datetime(2026, 12, 1, 21, 59, 18, tzinfo=UTC))


def test_a_job_behind_another_waits_for_priority_with_no_expected_start() -> None:
    lab, _ = provider({SHOW_JOB: job("job_pending_priority.txt")})
    found = lab.describe(Instance("lab", "4", "gpubot-53-5a4b3c2d"))
    assert (found.status, found.waiting, found.expected_start) == ("pending", "Priority", None)
    lab, _ = provider({SHOW_JOB: job("job_pending_full.txt")})
    found = lab.describe(Instance("lab", "3", "gpubot-52-9e8d7c6b"))
    assert (found.waiting, found.expected_start) == ("Resources", datetime(2026, 12, 5, 4, 52, 24, tzinfo=UTC))


@pytest.mark.parametrize(("capture", "state", "status"), [
    ("job_timeout.txt", "TIMEOUT", "terminated"), ("job_cancelled.txt", "CANCELLED", "terminated"),
    ("job_running.txt", "NODE_FAIL", "terminated"), ("job_running.txt", "PREEMPTED", "preempted"),
    ("job_running.txt", "COMPLETING", "terminated"), ("job_running.txt", "SUSPENDED", "suspended"),
    ("job_pending.txt", "REQUEUED", "pending"),
])
def test_ended_jobs_are_terminated_at_their_end_time(capture: str, state: str, status: str) -> None:
    original = captured(capture).split("JobState=")[1].split()[0]
    job_id = captured(capture).split("JobId=")[1].split()[0]
    lab, _ = provider({SHOW_JOB: job(capture, **{original: state})})
    found = lab.describe(Instance("lab", job_id, "gpubot-46-0a1b2c3d"))
    assert (found.status, found.ready, found.extra["state"]) == (status, False, state)
    ended = status in ("terminated", "preempted")
    assert found.stopped_at == (found.extra["end"] if ended else None)


def test_another_jobs_record_is_not_taken_for_this_one() -> None:
    lab, _ = provider({SHOW_JOB: job("job_running.txt")})
    assert lab.describe(Instance("lab", "2", "gpubot-43-aaaa")).status == "terminated"


def test_a_job_the_controller_forgot_is_terminated_and_cancelling_it_is_done() -> None:
    lab, _ = provider({SHOW_JOB: GONE, ("scancel",): (1, "", captured("update_job_gone.txt"))})
    gone = lab.describe(Instance("lab", "99999", "gpubot-9-aaaa", status="running", ready=True, ssh="ssh x"))
    assert (gone.status, gone.ready, gone.ssh) == ("terminated", False, None)
    lab.terminate(gone)


def test_list_owned_takes_gpubot_jobs_by_name_or_comment() -> None:
    listing = captured("jobs_all.txt").replace("JobName=gpubot-43-fill0000", "JobName=train") \
        .replace("JobName=gpubot-45-cd56ef78", "JobName=renamed-by-hand")
    lab, _ = provider({SHOW_JOB: (0, listing, "")})
    assert [(i.instance_id, i.name, i.status, i.extra["booking_id"]) for i in lab.list_owned()] == [
        ("1", "gpubot-42-ab12cd34", "running", 42), ("3", "gpubot-44-fill0000", "running", 44),
        ("4", "renamed-by-hand", "pending", 45)]


def spec(**changes) -> LaunchSpec:
    agent = AgentLaunch("https://bot.example", "https://bot.example/agent.py", "a" * 64, "tok-secret")
    fields = {"owner": "U0ALICE001", "duration": timedelta(minutes=4, seconds=10), "agent": agent, **changes}
    return LaunchSpec(42, "gpubot-42-ab12cd34", **fields)


def test_a_launch_submits_the_holder_as_the_person() -> None:
    lab, replay = provider({("sbatch",): (0, "1\n", ""), ("scontrol", "-o", "show", "partition"):
                            (0, captured("partition.txt"), ""), SHOW_JOB: job("job_running.txt")}, account="ml")
    offer = Offer("lab", "gpu", "a100", 2, 0, "USD", ref="gpu:a100")
    launched = lab.launch(offer, spec())
    assert (launched.instance_id, launched.status, launched.ready) == ("1", "running", True)
    [(args, script)] = [(a, i) for a, i in replay.calls if a[0] == "sbatch"]
    assert args[1:] == ["--parsable", "--job-name=gpubot-42-ab12cd34", "--comment=gpubot-booking=42",
                        "--partition=gpu", "--nodes=1", "--gres=gpu:a100:2", "--time=5", "--account=ml",
                        "--chdir=/tmp", "--output=/dev/null", "--export=NONE", "--uid=1001", "--gid=1002"]
    assert script.startswith("#!/bin/bash\n# gpubot holder") and "tok-secret" in script
    assert not any("tok-secret" in a for a in args)


def test_the_person_gpubot_runs_as_needs_no_uid() -> None:
    lab, replay = provider({("sbatch",): (0, "1\n", ""), ("scontrol", "-o", "show", "partition"):
                            (0, captured("partition.txt"), ""), SHOW_JOB: job("job_running.txt")})
    lab._euid = lambda: ALICE.pw_uid
    lab.launch(Offer("lab", "gpu", "a100", 2, 0, "USD"), spec())
    assert not [a for a, _ in replay.calls if a[0] == "sbatch" and any(x.startswith("--uid") for x in a)]


def test_a_job_still_unknown_just_after_submit_comes_back_pending() -> None:
    lab, _ = provider({("sbatch",): (0, "8\n", ""), ("scontrol", "-o", "show", "partition"):
                       (0, captured("partition.txt"), ""), SHOW_JOB: (1, "", "Socket timed out on send/recv")})
    launched = lab.launch(Offer("lab", "gpu", "h100", 1, 0, "USD"), spec())
    assert (launched.instance_id, launched.status, launched.extra["cluster_user"]) == ("8", "pending", "alice")


@pytest.mark.parametrize("owner", ["U0BOB00001", None])
def test_someone_with_no_cluster_user_is_refused_before_anything_runs(owner: str | None) -> None:
    lab, replay = provider({})
    with pytest.raises(NoAccess, match="no user on this cluster"):
        lab.launch(Offer("lab", "gpu", "a100", 1, 0, "USD"), spec(owner=owner))
    assert replay.calls == []


def test_a_cluster_user_missing_on_this_host_is_refused() -> None:
    lab, _ = provider({("scontrol", "-o", "show", "partition"): (0, captured("partition.txt"), "")},
                      users={"U0ALICE001": "nobody-here"})
    with pytest.raises(NoAccess, match="does not exist on the host"):
        lab.launch(Offer("lab", "gpu", "a100", 1, 0, "USD"), spec())


def test_longer_than_max_time_is_refused_before_submitting() -> None:
    lab, replay = provider({("scontrol", "-o", "show", "partition"): (0, captured("partition.txt"), "")})
    with pytest.raises(PastTimeLimit) as caught:
        lab.launch(Offer("lab", "gpu", "a100", 1, 0, "USD"), spec(duration=timedelta(minutes=10, seconds=1)))
    assert (caught.value.limit, caught.value.asked) == (timedelta(minutes=10), timedelta(minutes=11))
    assert not [a for a, _ in replay.calls if a[0] == "sbatch"]
