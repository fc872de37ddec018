"""Progress lines: each step the engine reports as facts, worded for the booking message in English and 简体中文."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from gpubot.bot.i18n import ENGLISH, translator_for
from gpubot.bot.notices import render
from gpubot.domain.notices import BookingGaveUp, BookingProgress, ProgressStep, StepKind, from_record, to_record
from gpubot.domain.progress_for_operators import trail_text

ZH = translator_for("zh")
WHERE = {"provider": "lambda", "region": "us-east-1"}


def _line(*trail: ProgressStep, tr=ENGLISH, queued: bool = False, notes: tuple[ProgressStep, ...] = ()) -> str:
    notice = BookingProgress(to="U1", booking_id=3, gpu="a100", count=4, trail=trail, queued=queued, notes=notes)
    return render(notice, tr).booking_line


def _failed(outcome: str, provider: str = "lambda", region: str = "us-east-1") -> ProgressStep:
    return ProgressStep(StepKind.LAUNCH_FAILED, provider=provider, region=region, outcome=outcome)


def test_a_trail_of_fallbacks_is_joined_by_arrows_in_both_languages():
    trail = (_failed("no_capacity"), ProgressStep(StepKind.OVER_BUDGET, provider="aws", region="us-west-2"),
             ProgressStep(StepKind.LAUNCHING, provider="runpod", region="eu-1"))
    assert _line(*trail) == "lambda us-east-1: no capacity → aws us-west-2: over budget → runpod eu-1: launching…"
    assert _line(*trail, tr=ZH) == "lambda us-east-1：库存不足 → aws us-west-2：超出预算 → runpod eu-1：正在启动…"


@pytest.mark.parametrize(("outcome", "english", "chinese"), [
    ("no_access", "no access to that pool", "无权使用该资源池"), ("rate_limited", "rate limited", "请求过于频繁"),
    ("quota", "quota exceeded", "超出配额"), ("auth", "credentials refused", "凭证被拒绝"),
    ("invalid", "request rejected", "请求被拒绝"), ("transient", "error", "出错")])
def test_each_launch_failure_is_named_by_its_kind(outcome, english, chinese):
    assert _line(_failed(outcome)) == f"lambda us-east-1: {english}"
    assert _line(_failed(outcome), tr=ZH) == f"lambda us-east-1：{chinese}"


def test_an_error_of_no_known_kind_is_shown_in_the_providers_own_words():
    failed = ProgressStep(StepKind.LAUNCH_FAILED, provider="standby", region="us-east-1", outcome="error",
                          detail="main.tf:20: InvalidParameterValue: <gpu> is not sold here")
    assert _line(failed) == ("standby us-east-1: error (main.tf:20: InvalidParameterValue: &lt;gpu&gt; is not sold "
                             "here)")
    assert _line(failed, tr=ZH).startswith("standby us-east-1：出错（main.tf:20: ")
    owed = BookingProgress(to="U1", booking_id=3, gpu="v100", count=1, trail=(failed,))
    assert from_record(to_record(owed)).trail == (failed,)


@pytest.mark.parametrize(("what", "english", "chinese"), [
    ("owners", "only AMIs owned by amazon, self may boot there", "那里只能启动由 amazon、self 拥有的 AMI"),
    ("projects", "only images of the projects amazon, self may boot there", "那里只能启动项目 amazon、self 中的镜像")])
def test_a_refused_image_names_itself_and_what_is_allowed(what, english, chinese):
    refused = ProgressStep(StepKind.LAUNCH_FAILED, provider="aws", region="us-east-1", outcome="image_refused",
                           detail="ami-<1>", allowed=("amazon", "self"), then=what)
    assert _line(refused) == f"aws us-east-1: image ami-&lt;1&gt; refused: {english}"
    assert _line(refused, tr=ZH) == f"aws us-east-1：镜像 ami-&lt;1&gt; 被拒绝：{chinese}"
    owed = BookingProgress(to="U1", booking_id=3, gpu="a10g", count=1, trail=(refused,))
    assert from_record(to_record(owed)).trail == (refused,)


def test_looking_booting_and_ready_steps():
    assert _line(ProgressStep(StepKind.LOOKING)) == "Looking for capacity…"
    assert _line(ProgressStep(StepKind.LOOKING), tr=ZH) == "正在寻找可用的卡…"
    booting = ProgressStep(StepKind.BOOTING, elapsed=timedelta(minutes=2, seconds=10), **WHERE)
    assert _line(booting) == "booting on lambda us-east-1 · 2m10s"
    assert _line(booting, tr=ZH) == "正在 lambda us-east-1 上启动 · 2 分钟 10 秒"
    ready = ProgressStep(StepKind.READY, elapsed=timedelta(minutes=2, seconds=10), checks=5, **WHERE)
    assert _line(ready) == "lambda us-east-1: ready after 2m10s (5 checks)"
    assert _line(ready, tr=ZH) == "lambda us-east-1：2 分钟 10 秒后就绪（检查 5 次）"
    assert _line(ProgressStep(StepKind.READY, elapsed=timedelta(seconds=40), checks=1, **WHERE)) == \
        "lambda us-east-1: ready after 40s (1 check)"
    assert _line(ProgressStep(StepKind.READY, **WHERE), tr=ZH) == "lambda us-east-1：已就绪"


def test_a_job_waiting_in_the_providers_own_queue_shows_its_reason_and_expected_start():
    lab = {"provider": "lab", "region": "gpu"}
    estimated = ProgressStep(StepKind.BOOTING, elapsed=timedelta(seconds=40), outcome="Resources",
                             at=datetime(2026, 12, 5, 4, 49, 37, tzinfo=UTC), limit=timedelta(minutes=4, seconds=20),
                             **lab)
    assert _line(estimated) == ("waiting in lab gpu's queue (Resources), expected to start 2026-12-05 04:49 UTC "
                                "(in 4m20s) · 40s")
    assert _line(estimated, tr=ZH) == ("在 lab gpu 排队中（Resources），预计 2026-12-05 04:49 UTC 开始"
                                       "（4 分钟 20 秒后） · 40 秒")
    unknown = ProgressStep(StepKind.BOOTING, elapsed=timedelta(seconds=3), outcome="Priority", **lab)
    assert _line(unknown) == "waiting in lab gpu's queue (Priority), expected start unknown · 3s"
    assert _line(unknown, tr=ZH) == "在 lab gpu 排队中（Priority），预计开始时间未知 · 3 秒"
    older = ProgressStep(StepKind.BOOTING, elapsed=timedelta(seconds=40), outcome="Resources",
                         limit=timedelta(minutes=4, seconds=20), **lab)  # owed before steps carried the time
    assert _line(older) == "waiting in lab gpu's queue (Resources), expected to start in 4m20s · 40s"
    assert _line(older, tr=ZH) == "在 lab gpu 排队中（Resources），预计 4 分钟 20 秒后开始 · 40 秒"
    assert from_record(to_record(BookingProgress(to="U1", booking_id=3, gpu="a100", count=4, trail=(estimated,)))
                       ).trail == (estimated,)
    assert trail_text([estimated, unknown]) == (
        "waiting in lab gpu's queue (Resources), expected to start 2026-12-05 04:49 UTC · 40s; "
        "waiting in lab gpu's queue (Priority), expected start unknown · 3s")


def test_a_machine_given_up_while_booting_says_why_and_what_was_billed():
    stuck = ProgressStep(StepKind.BOOT_ABANDONED, outcome="not_ready", elapsed=timedelta(minutes=15),
                         limit=timedelta(minutes=15), **WHERE)
    assert _line(stuck) == ("lambda us-east-1 was not reachable after 15m; it was terminated (its 15m of booting "
                            "are billed)")
    assert _line(stuck, tr=ZH) == "lambda us-east-1 在 15 分钟后仍无法连接；已终止（启动用时 15 分钟，已计费）"
    burst = ProgressStep(StepKind.BOOT_ABANDONED, outcome="burst", elapsed=timedelta(minutes=10),
                         limit=timedelta(minutes=10), provider="lab", region="gpu")
    assert _line(burst) == "lab gpu still had the job in its queue after 10m; it was cancelled (its 10m are billed)"
    assert _line(burst, tr=ZH) == "lab gpu 的作业排队 10 分钟后仍未开始，已取消（已计费 10 分钟）"
    gone = ProgressStep(StepKind.BOOT_ABANDONED, outcome="vanished", elapsed=timedelta(minutes=3), **WHERE)
    assert _line(gone, tr=ZH) == "lambda us-east-1 在启动期间丢失了实例；已计费 3 分钟"


def test_a_job_given_up_in_a_queue_that_bills_nothing_says_nothing_was_billed():
    """On a provider that bills nothing while queued (Slurm), a job cancelled before it started cost nothing."""
    waited = ProgressStep(StepKind.BOOT_ABANDONED, outcome="queue_timeout", elapsed=timedelta(0),
                          limit=timedelta(hours=4), provider="lab", region="gpu")
    assert _line(waited) == "lab gpu still had the job in its queue after 4h; it was cancelled (nothing was billed)"
    assert _line(waited, tr=ZH) == "lab gpu 的作业排队 4 小时后仍未开始，已取消（未产生任何费用）"
    assert trail_text([waited]) == _line(waited)
    burst = ProgressStep(StepKind.BOOT_ABANDONED, outcome="burst", elapsed=timedelta(0),
                         limit=timedelta(minutes=10), provider="lab", region="gpu")
    assert _line(burst) == "lab gpu still had the job in its queue after 10m; it was cancelled (nothing was billed)"
    gone = ProgressStep(StepKind.BOOT_ABANDONED, outcome="vanished", elapsed=timedelta(0), provider="lab",
                        region="gpu")
    assert _line(gone) == trail_text([gone]) == "lab gpu dropped the job before it started; nothing was billed"
    assert _line(gone, tr=ZH) == "lab gpu 在作业开始前将其丢弃；未产生任何费用"


def test_a_queued_round_shows_its_trail_and_the_expected_wait_below():
    wait = ProgressStep(StepKind.WAIT, gpu="A100 40GB", elapsed=timedelta(minutes=42), samples=9, days=14,
                        night=timedelta(minutes=5), night_samples=4, suggest_night=True)
    assert _line(_failed("no_capacity"), queued=True, notes=(wait,)) == (
        "Queued: lambda us-east-1: no capacity. Retrying automatically.\n"
        "Expected wait for A100 40GB at this hour: 42m (median of 9 in the last 14 days). At night it was 5m "
        "(median of 4): consider `--night`.")
    assert _line(_failed("no_capacity"), tr=ZH, queued=True, notes=(wait,)) == (
        "排队中：lambda us-east-1：库存不足。将自动重试。\n"
        "此时段 A100 40GB 的预计等待：42 分钟（最近 14 天 9 次的中位数）。"
        "夜间为 5 分钟（4 次的中位数）：可考虑 `--night`。")
    nothing = ProgressStep(StepKind.WAIT, gpu="A100 40GB", days=14)
    assert _line(queued=True, notes=(nothing,), tr=ZH) == (
        "排队中：没有匹配的报价。将自动重试。\n最近 14 天的此时段没有获取到过 A100 40GB。")


@pytest.mark.parametrize(("landed", "english", "chinese"), [
    (("rtx4090", 4), "It has 1.7× less GPU memory: use mixed precision (bf16/fp16) and gradient accumulation over 2 "
                     "steps (per-step batch ÷ 2) to keep the effective batch size.",
     "显存少了 1.7 倍：请使用混合精度（bf16/fp16）并做 2 步梯度累积（每步批大小 ÷ 2），以保持有效批大小。"),
    (("h100", 1), "It has 2× less GPU memory", "显存少了 2 倍"),
    (("h100", 4), "As much GPU memory or more: your batch settings carry over; throughput will differ.",
     "显存相同或更多：批大小设置可以沿用；吞吐量会有所不同。"),
])
def test_landing_on_another_shape_gives_advice_below_the_trail(landed, english, chinese):
    ready = ProgressStep(StepKind.READY, **WHERE)
    advice = ProgressStep(StepKind.ADVICE, gpu=landed[0], count=landed[1], wanted_gpu="a100", wanted_count=4)
    shown = _line(ready, notes=(advice,))
    assert shown.startswith("lambda us-east-1: ready\nLanded on ") and english in shown
    assert "instead of your first choice 4× A100 40GB (160 GiB)." in shown
    in_chinese = _line(ready, notes=(advice,), tr=ZH)
    assert "而非首选的 4× A100 40GB（160 GiB）。" in in_chinese and chinese in in_chinese


def test_an_interrupted_booking_says_what_it_cost_and_what_follows():
    closed = ProgressStep(StepKind.INTERRUPTED, provider="aws", elapsed=timedelta(hours=2), cost=Decimal("7.5"),
                          currency="USD", then="requeue", other=8, limit=timedelta(hours=4))
    assert _line(closed) == ("Interrupted: aws took the machine back after 2h; it cost $7.50. #8 resumes it for the "
                             "remaining 4h.")
    assert _line(closed, tr=ZH) == "已中断：aws 在 2 小时后收回了实例；费用 US$7.50。#8 将接续剩余的 4 小时。"
    ended = ProgressStep(StepKind.INTERRUPTED, provider="aws", elapsed=timedelta(hours=2), cost=Decimal("7.5"),
                         currency="USD", then="nothing_left", limit=timedelta(minutes=5))
    assert _line(ended).endswith("it cost $7.50. Only 5m of it was left, so it has ended.")
    resumes = ProgressStep(StepKind.RESUMES, provider="aws", other=7, limit=timedelta(hours=4))
    assert _line(resumes) == "Resumes #7, which aws interrupted: queued for the remaining 4h."
    assert _line(resumes, tr=ZH) == "接续被 aws 中断的 #7：已排队，时长为剩余的 4 小时。"


def test_recovery_after_a_restart():
    assert _line(ProgressStep(StepKind.RECOVERED), tr=ZH) == "重启后已恢复：实例已启动；正在检查是否可以连接。"
    assert _line(ProgressStep(StepKind.REQUEUED)) == "Interrupted while acquiring; queued to try again."
    assert _line(ProgressStep(StepKind.REQUEUED), tr=ZH) == "获取过程中被中断；已重新排队再试。"


def test_a_vendors_region_name_cannot_mention_anyone():
    shown = _line(_failed("no_capacity", provider="<!channel>", region="a&b"))
    assert shown == "&lt;!channel&gt; a&amp;b: no capacity"


def test_a_row_owed_before_progress_was_data_still_renders_its_english_line():
    old = {"type": "BookingProgress", "fields": {"to": "U1", "booking_id": 3, "gpu": "a100", "count": 4,
                                                 "state": "acquiring", "step": 9, "provider": "", "region": "",
                                                 "trail": {"$tuple": ["sim sim-1: launching… <@U2>"]}}}
    notice = from_record(old)
    assert render(notice, ZH).booking_line == "sim sim-1: launching… &lt;@U2&gt;"
    assert from_record(to_record(notice)) == notice


def test_a_gave_up_dm_words_its_trail_in_the_readers_language():
    gave_up = BookingGaveUp(to="U1", booking_id=3, gpu="a100", count=4, trail=(_failed("quota"),))
    assert render(gave_up, ZH).booking_line == "已放弃：lambda us-east-1：超出配额"
    assert render(gave_up, ENGLISH).booking_line == "Gave up: lambda us-east-1: quota exceeded"


def _advice(wanted: tuple[str, int], landed: tuple[str, int]) -> str:
    return _line(ProgressStep(StepKind.READY, **WHERE), notes=(ProgressStep(
        StepKind.ADVICE, gpu=landed[0], count=landed[1], wanted_gpu=wanted[0], wanted_count=wanted[1]),))


def test_less_memory_asks_for_mixed_precision_and_the_accumulation_multiplier():
    # 4× A100 40GB = 160 GiB; 2× RTX 4090 24GB = 48 GiB: 160/48 = 3.33 → accumulate over 4 steps
    text = _advice(("a100", 4), ("rtx4090", 2))
    assert "2× RTX 4090 24GB (48 GiB)" in text and "4× A100 40GB (160 GiB)" in text
    assert "mixed precision" in text and "gradient accumulation over 4 steps" in text
    assert "3.3× less GPU memory" in text


def test_fewer_gpus_with_as_much_memory_keeps_the_batch_by_a_count_multiplier():
    # 4× A100 40GB (160 GiB) → 2× H100 80GB (160 GiB): half the GPUs, same memory
    text = _advice(("a100", 4), ("h100", 2))
    assert "raise the per-GPU batch ×2 or accumulate gradients over 2 steps" in text


def test_more_memory_carries_the_settings_over_and_an_unknown_gpu_asks_to_check():
    assert "carry over" in _advice(("a100", 2), ("a100-80g", 2))  # 80 GiB → 160 GiB, same GPU count
    assert _advice(("a100", 2), ("nonsense", 2)).endswith("Check that your run fits its memory.")


def test_an_hour_without_launches_suggests_night_when_nights_had_some():
    wait = ProgressStep(StepKind.WAIT, gpu="A100 40GB", days=14, night=timedelta(minutes=3), night_samples=1,
                        suggest_night=True)
    assert _line(notes=(wait,)) == ("\nNo A100 40GB was acquired at this hour in the last 14 days. At night it was "
                                    "3m (median of 1): consider `--night`.")
    assert _line(notes=(ProgressStep(StepKind.WAIT, gpu="A100 40GB", elapsed=timedelta(seconds=20), samples=3,
                                     days=14),)).endswith("at this hour: under 1m (median of 3 in the last 14 days).")


def test_a_booking_waiting_for_a_cheaper_offer_says_what_it_waits_for_what_it_could_take_now_and_until_when():
    step = ProgressStep(StepKind.CHEAPER, provider="west", region="west-1", cost=Decimal("1.60"), currency="USD",
                        elapsed=timedelta(minutes=45), at=datetime(2026, 3, 2, 11, 0, tzinfo=UTC),
                        other_provider="east", other_price=Decimal("2.48"))
    english = _line(step, queued=True)
    assert english.startswith("Queued: waiting for west west-1 at $1.60/GPU-h, expected free in 45m, rather than "
                              "east at $2.48/GPU-h now; if it is not free by ")
    assert english.endswith("(acquire.wait_for_cheaper), this booking takes the best offer free then. Retrying "
                            "automatically.")
    assert "11:00" in english
    chinese = _line(step, tr=ZH, queued=True)
    assert "west west-1（每卡每小时 US$1.60）" in chinese and "east（每卡每小时 US$2.48）" in chinese
    owed = BookingProgress(to="U1", booking_id=3, gpu="a100", count=4, trail=(step,), queued=True)
    assert from_record(to_record(owed)).trail == (step,)
    assert trail_text([step]) == ("waiting for west west-1 at 1.60/GPU-h (expected free in 45m) rather than east at "
                                  "2.48/GPU-h, until 2026-03-02 11:00 UTC")
