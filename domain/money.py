"""Money as Decimal: conversion between currencies, rounding and display."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import ROUND_HALF_UP, Decimal

from babel.numbers import format_currency, get_currency_precision

__all__ = ["CENT", "convert", "format_money", "to_decimal"]

CENT = Decimal("0.01")


def to_decimal(value: object) -> Decimal:
    """Decimal from an int, str, Decimal or float (floats go through their shortest repr)."""
    if isinstance(value, Decimal):
        return value
    return Decimal(str(value))


def convert(amount: Decimal, currency: str, team_currency: str, fx: Mapping[str, Decimal]) -> Decimal:
    """Convert `amount` in `currency` into the team currency; fx[c] is one unit of c in team currency."""
    if currency == team_currency:
        return amount
    if currency not in fx:
        raise KeyError(f"no [fx] rate for {currency} (team currency {team_currency})")
    return amount * to_decimal(fx[currency])


def format_money(amount: Decimal, currency: str = "USD", locale: str = "en") -> str:
    """`$1,234.50` in English, rounded half-up to the currency's digits, with the symbol the reader's language
    (a Babel locale: `en`, `zh_CN`) gives it, so yuan and yen never share `¥`: English writes CN¥ and ¥,
    Chinese ¥ and JP¥."""
    digits = Decimal(1).scaleb(-get_currency_precision(currency))
    rounded = to_decimal(amount).quantize(digits, rounding=ROUND_HALF_UP)
    if rounded == 0:
        rounded = abs(rounded)  # never `-$0.00`
    return format_currency(rounded, currency, locale=locale)
