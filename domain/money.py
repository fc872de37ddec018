"""Money as Decimal: conversion between currencies, rounding and display."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import ROUND_HALF_UP, Decimal

__all__ = ["CENT", "convert", "format_money", "to_decimal"]

CENT = Decimal("0.01")
_SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£", "CNY": "¥", "JPY": "¥"}


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


def format_money(amount: Decimal, currency: str = "USD") -> str:
    """`$1,234.50` style, rounded half-up to the cent."""
    rounded = amount.quantize(CENT, rounding=ROUND_HALF_UP)
    symbol = _SYMBOLS.get(currency)
    sign = "-" if rounded < 0 else ""
    body = f"{abs(rounded):,.2f}"
    return f"{sign}{symbol}{body}" if symbol else f"{sign}{body} {currency}"
