"""Everyday spellings of numbers in a `/gpu` command, rewritten to the digits the grammar reads.

- Chinese numerals from 一 to 九十九 (and 两, 零) become digits: `四卡` → `4卡`, `两个小时` → `2个小时`.
- A half: `半小时` / `半个小时` → `0.5小时`, `一个半小时` / `1个半小时` → `1.5小时`, `一天半` → `1.5天`;
  `half an hour` / `half-hour` → `0.5 hour`, `an hour and a half` / `one and a half hours` → `1.5 hour`.
- English number words one to twelve, and `a` / `an` before a unit: `an hour` → `1 hour`, `two days` → `2 days`.
- Minutes after hours without their unit: `6h30` → `6h30m`, `6小时30` → `6小时30分`.

Each rewrite is applied only where the grammar asks whether a word is a duration or a GPU count, so a word that
is neither (a GPU name, a project) is never changed. The units themselves are `grammar_durations`'s.
"""

from __future__ import annotations

import re

__all__ = ["CARD_WORDS", "card_count", "spoken_duration", "zh_digits"]

_ZH_DIGIT = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "兩": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7,
             "八": 8, "九": 9}
_ZH_NUMBER = re.compile(r"[一二两兩三四五六七八九]?十[一二三四五六七八九]?|[零〇一二两兩三四五六七八九]")
_EN_NUMBER = {"a": "1", "an": "1", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
              "seven": "7", "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12"}
CARD_WORDS = ("张卡", "块卡", "張卡", "塊卡", "张", "張", "块", "塊", "卡")  # longest first
_CARD = re.compile(r"^([0-9]{1,6})\s*(?:" + "|".join(CARD_WORDS) + r")$")
_HOURS = r"h|hr|hrs|hour|hours|小时|个小时|小時|個小時|钟头|个钟头"
_HALF_AFTER_NUMBER = re.compile(
    r"(?:^|(?<=[^0-9.]))([0-9]+)\s*(?:个|個)?半\s*(" + _HOURS + r"|天|日|分钟|分鐘|星期|周)")
_UNIT_THEN_HALF = re.compile(r"(?:^|(?<=[^0-9.]))([0-9]+)\s*(" + _HOURS + r"|天|日)\s*半$")
_HALF = re.compile(r"(?:^|(?<=[^0-9.]))半\s*(?:个|個)?\s*(" + _HOURS + r"|天|日|分钟|分鐘)")
_TRAILING_MINUTES = re.compile(r"^([0-9]+)\s*(h|hr|hrs|小时|小時)([0-9]{1,2})$")
_EN_HALF = re.compile(r"^half\s+(?:1\s+)?([a-z]+)$")
_EN_AND_A_HALF = re.compile(r"^([0-9]+)\s+(?:and\s+1\s+half\s+([a-z]+)|([a-z]+)\s+and\s+1\s+half)$")


def _zh_value(numeral: str) -> int:
    tens, _, ones = numeral.partition("十")
    if "十" not in numeral:
        return _ZH_DIGIT[numeral]
    return (_ZH_DIGIT[tens] if tens else 1) * 10 + (_ZH_DIGIT[ones] if ones else 0)


def zh_digits(text: str) -> str:
    """The text with each Chinese numeral (一 to 九十九, 两, 零) written in digits: `四卡` → `4卡`."""
    return _ZH_NUMBER.sub(lambda found: str(_zh_value(found.group())), text)


def card_count(word: str) -> int | None:
    """The count of a Chinese count word (`4卡`, `四张`, `8块`, `两张卡`), or None when it is none."""
    found = _CARD.match(zh_digits(word.strip()))
    return int(found[1]) if found else None


def _english(text: str) -> str:
    words = " ".join(_EN_NUMBER.get(word, word) for word in re.split(r"[\s-]+", text))
    if found := _EN_HALF.match(words):
        return f"0.5 {found[1]}"
    if found := _EN_AND_A_HALF.match(words):
        return f"{found[1]}.5 {found[2] or found[3]}"
    return words


def _chinese(text: str) -> str:
    if "半" not in text:
        return _TRAILING_MINUTES.sub(_with_minutes, zh_digits(text))
    text = _HALF_AFTER_NUMBER.sub(lambda found: f"{found[1]}.5{found[2]}", zh_digits(text))
    text = _UNIT_THEN_HALF.sub(lambda found: f"{found[1]}.5{found[2]}", text)
    text = _HALF.sub(lambda found: f"0.5{found[1]}", text)
    return _TRAILING_MINUTES.sub(_with_minutes, text)


def _with_minutes(found: re.Match) -> str:
    return f"{found[1]}{found[2]}{found[3]}{'m' if found[2].isascii() else '分'}"


def spoken_duration(text: str) -> str:
    """A lowercased duration word as the grammar reads it: `一个半小时` → `1.5小时`, `half an hour` → `0.5 hour`,
    `6h30` → `6h30m`; any other text comes back as it was (lowercased words joined by single spaces)."""
    return _chinese(_english(text.strip()) if text.isascii() else text.strip())
