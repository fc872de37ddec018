"""Column types the tables share."""

from __future__ import annotations

from sqlalchemy import Column, Numeric

__all__ = ["money"]


def money(nullable: bool = True) -> Column:
    """An amount of money: exact decimals, six places."""
    return Column(Numeric(18, 6), nullable=nullable)
