"""Why a provider gave no offers, written by the probe as one line and read back by whoever words it for people:
`no answer within 5s`, `<kind>: <the provider's own words>` (kind as in domain.errors: auth, quota, …), or
`internal error: KeyError` (an adapter's bug)."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Failure", "internal_error", "no_answer", "provider_said", "read_failure"]

KINDS = ("no_capacity", "no_access", "quota", "auth", "rate_limited", "invalid", "transient", "error")
_NO_ANSWER = re.compile(r"no answer within (\d+(?:\.\d+)?)s")
_SAID = re.compile(r"(" + "|".join(KINDS) + r"|internal error): ?(.*)", re.DOTALL)


@dataclass(frozen=True)
class Failure:
    """One provider's failure read back: its kind (`no_answer`, `internal`, a ProviderError kind, or `other` for
    a line in no known form), the seconds waited (no_answer), and the words as given (the provider's, or the
    exception's name)."""

    kind: str
    seconds: float = 0.0
    detail: str = ""


def no_answer(timeout: float) -> str:
    """The provider did not answer within `timeout` seconds."""
    return f"no answer within {timeout:g}s"


def provider_said(kind: str, detail: str) -> str:
    """The provider refused or failed (`kind`, a ProviderError kind) and said `detail`."""
    return f"{kind}: {detail}"


def internal_error(name: str) -> str:
    """The adapter failed with an unexpected exception named `name` (a bug on our side)."""
    return f"internal error: {name}"


def read_failure(line: str) -> Failure:
    """A failure line as written above, read back into its parts."""
    if waited := _NO_ANSWER.fullmatch(line):
        return Failure("no_answer", seconds=float(waited.group(1)))
    if said := _SAID.fullmatch(line):
        kind = "internal" if said.group(1) == "internal error" else said.group(1)
        return Failure(kind, detail=said.group(2))
    return Failure("other", detail=line)
