"""The /gpu text as the grammar reads it: Slack's user mentions become bare ids, nothing else changes."""

from __future__ import annotations

import pytest
from gpubot.bot.listeners.commands import with_bare_user_ids


@pytest.mark.parametrize(("text", "expected"), [
    ("admin budget set <@U123ABC> 5", "admin budget set U123ABC 5"),
    ("admin budget set <@U123ABC|alice smith> 5", "admin budget set U123ABC 5"),
    ("admin budget set user:<@W0AB12|bob> 5", "admin budget set user:W0AB12 5"),
    ("book a100x1 1h --note 'ask <@UEVE> or <@UBOB|bob>'", "book a100x1 1h --note 'ask UEVE or UBOB'"),
    ("book a100x1 1h --note 'see <!channel> and <#C1|gpu>'", "book a100x1 1h --note 'see <!channel> and <#C1|gpu>'"),
])
def test_user_mentions_become_bare_ids(text: str, expected: str) -> None:
    assert with_bare_user_ids(text) == expected
