"""Budget rules on plain data: who sees which budget."""

from __future__ import annotations

import pytest
from gpubot.domain.budget import visible_to


@pytest.mark.parametrize(("scope", "user", "admin", "shown"), [
    ("team", "UALICE", False, True),
    ("project:llm", "UALICE", False, True),
    ("user:UALICE", "UALICE", False, True),
    ("user:UBOB", "UALICE", False, False),
    ("user:UBOB", "UADMIN", True, True),
])
def test_a_person_sees_the_team_every_project_and_their_own_budget(scope, user, admin, shown):
    assert visible_to(scope, user, admin) is shown
