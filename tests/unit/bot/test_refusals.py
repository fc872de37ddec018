"""Refusals the engine gives as facts, worded by the bot in English and 简体中文 (and their English for logs)."""

from __future__ import annotations

from decimal import Decimal

from gpubot.bot.i18n import ENGLISH, translator_for
from gpubot.bot.notices import render
from gpubot.bot.replies import user_error_text
from gpubot.domain.budget import Passed
from gpubot.domain.errors import NothingSells, OverBudget, Refused
from gpubot.domain.notices import ApprovalNeeded, LaunchHeld
from gpubot.domain.probe_failures import internal_error, no_answer, provider_said

ZH = translator_for("zh")
PASSED = (Passed("team", Decimal("36"), Decimal("20")), Passed("user:U1", Decimal("12.5"), Decimal("10")))


def test_an_over_budget_booking_names_each_budget_it_would_pass():
    refused = OverBudget(Decimal("16"), "USD", PASSED)
    english = ("⚠️ Over budget, so this booking (≈ $16.00) is refused: team would reach $36.00 of $20.00; user:U1 "
               "would reach $12.50 of $10.00, counting what is spent, running and already booked (scheduled, queued "
               "or waiting). Ask an admin to raise the budget.")
    assert user_error_text(refused) == english and f"⚠️ {refused}" == english
    assert user_error_text(refused, ZH) == (
        "⚠️ 超出预算，因此拒绝此预订（≈ US$16.00）：团队将达到 US$36.00（上限 US$20.00）；user:U1将达到 US$12.50"
        "（上限 US$10.00）（已计入已花费、运行中和已预订——预约、排队或等待中——的费用）。请联系管理员提高预算。")


def test_an_over_budget_extension_says_the_rule_and_who_can_pass_it():
    refused = OverBudget(Decimal("2"), "USD", PASSED[:1], extending="#4", mode="block")
    assert user_error_text(refused) == ("⚠️ Extending #4 would cost $2.00 more, and team would reach $36.00 of $20.00; "
                                        "so it is refused (over_budget = block). An admin can extend it.")
    assert user_error_text(refused, ZH) == ("⚠️ 为 #4 续期将多花费 US$2.00，且团队将达到 US$36.00（上限 US$20.00）；"
                                            "因此已拒绝（over_budget = block）。管理员可以为它续期。")


def test_the_per_person_gpu_cap_is_translated_with_its_numbers():
    refused = Refused("You already hold or wait for {held} GPUs; the team limit is {limit} per person. Release "
                      "something first (`/gpu status` lists your bookings).", held=6, limit=8)
    assert str(refused).startswith("You already hold or wait for 6 GPUs; the team limit is 8 per person.")
    assert user_error_text(refused, ZH) == (
        "⚠️ 你已持有或正在等待 6 张卡；团队上限为每人 8 张。请先释放一些（`/gpu status` 可列出你的预订）。")


def test_nothing_sells_names_the_largest_shape_that_does():
    refused = NothingSells("a100", 16, "A100 40GB", largest=8)
    assert user_error_text(refused) == ("⚠️ No configured cloud sells more than 8× A100 40GB in one machine; book "
                                        "`a100x8`, or split the work over several bookings.") == f"⚠️ {refused}"
    assert user_error_text(refused, ZH) == ("⚠️ 没有已配置的云平台单台机器提供超过 8× A100 40GB；请预订 `a100x8`，"
                                            "或将任务拆分到多个预订。")
    filtered = NothingSells("a100", 16, "A100 40GB", largest=8, filtered=True)
    assert "在这些筛选条件下" in user_error_text(filtered, ZH)


def test_nothing_sells_at_all_says_why_each_cloud_could_not_in_words_and_keeps_the_providers_own():
    failures = [("lambda", no_answer(5)), ("runpod", provider_said("auth", "bad key <@U1>")),
                ("aws", internal_error("KeyError")), ("gcp", "down <!here>")]
    refused = NothingSells("b200", 1, "B200", failures=failures)
    assert user_error_text(refused) == (
        "⚠️ No configured cloud offers 1× B200. (lambda: no answer within 5s; runpod: credentials refused, saying "
        "“bad key &lt;@U1&gt;”; aws: failed on our side (`KeyError`); gcp: said “down &lt;!here&gt;”) Try "
        "`/gpu prices` to see what can be booked.")
    assert user_error_text(refused, ZH) == (
        "⚠️ 没有已配置的云平台提供 1× B200。（lambda：5 秒内无应答；runpod：凭证被拒绝，云平台原话：“bad key "
        "&lt;@U1&gt;”；aws：gpubot 内部出错（`KeyError`）；gcp：云平台原话：“down &lt;!here&gt;”）试试 `/gpu prices` "
        "查看可以预订的配置。")


def test_admins_and_the_owner_read_the_budgets_passed_in_their_language():
    ask = ApprovalNeeded(to="UADMIN", booking_id=4, gpu="a100", count=4, owner="U1", passed=PASSED[:1],
                         currency="USD")
    assert "is over budget: team would reach $36.00 of $20.00." in render(ask, ENGLISH).message["text"]
    assert "团队将达到 US$36.00（上限 US$20.00）" in render(ask, ZH).message["text"]
    held = LaunchHeld(to="U1", booking_id=4, gpu="a100", count=4, passed=PASSED[:1], currency="USD")
    assert render(held, ENGLISH).booking_line == ("Over budget at launch: team would reach $36.00 of $20.00. Waiting "
                                                  "for an admin.")


def test_an_ask_owed_before_the_budgets_were_facts_shows_its_english_reason():
    ask = ApprovalNeeded(to="UADMIN", booking_id=4, gpu="a100", count=4, owner="U1", why="team would reach $9 of $5")
    assert "team would reach $9 of $5" in render(ask, ZH).message["text"]


def test_a_price_cap_that_leaves_everything_out_says_what_the_cheapest_is():
    refused = NothingSells("a100", 4, "A100 40GB", filtered=True, max_price=Decimal("1"),
                           cheapest=Decimal("1.5"), cheapest_at="a a-1", currency="USD")
    assert user_error_text(refused) == (
        "⚠️ No configured cloud offers 4× A100 40GB at $1.00 per GPU-hour or less; the cheapest is $1.50 on a a-1. "
        "Book with `--max-price 1.5` or more, or without `--max-price`.")
    assert user_error_text(refused, ZH) == (
        "⚠️ 没有已配置的云平台以每卡每小时 US$1.00 或更低的价格提供 4× A100 40GB；最便宜的是 a a-1 上的 US$1.50。"
        "请用 `--max-price 1.5` 或更高的价格预订，或去掉 `--max-price`。")
    odd = NothingSells("a100", 1, "A100 40GB", max_price=Decimal("1"), cheapest=Decimal("1.4231"),
                       cheapest_at="b b-1", currency="USD")
    assert "`--max-price 1.43`" in user_error_text(odd)  # rounded up, so that it admits the offer
