"""The shapes Slack sends, checked at the edge before Bolt or a listener sees them (pydantic, with depth and size
limits): a signed payload that does not fit is a 400, never a 500 or a traceback."""

from __future__ import annotations

import json
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from gpubot.domain.telemetry import deeper_than as nested_deeper_than

__all__ = ["MAX_DEPTH", "deeper_than", "interaction_problem"]

MAX_DEPTH = 32  # Slack's deepest payloads (a modal's state values, rich text) stay under 12 levels

Id = Annotated[str, Field(min_length=1, max_length=64)]
Text = Annotated[str, Field(max_length=4000)]


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class User(_Open):
    """payload.user"""

    id: Id


class Action(_Open):
    """One entry of payload.actions."""

    action_id: Annotated[str, Field(min_length=1, max_length=255)]
    value: Text | None = None
    block_id: Annotated[str, Field(max_length=255)] | None = None


class SelectedOption(_Open):
    """The option a select element holds."""

    value: Text


class ElementState(_Open):
    """One input element's state in a modal."""

    value: Text | None = None
    selected_option: SelectedOption | None = None


class ViewState(_Open):
    """payload.view.state: block id → action id → the element's state."""

    values: dict[Annotated[str, Field(max_length=255)], dict[Annotated[str, Field(max_length=255)], ElementState]]


class View(_Open):
    """payload.view of a view_submission, or of a block_actions inside a modal."""

    id: Id
    type: Annotated[str, Field(min_length=1, max_length=32)]  # "modal"; Bolt reads it on every submission
    state: ViewState
    hash: Text | None = None
    callback_id: Annotated[str, Field(max_length=255)] | None = None


class ClosedView(_Open):
    """payload.view of a view_closed."""

    id: Id
    type: Annotated[str, Field(min_length=1, max_length=32)]


class BlockActions(_Open):
    """A button click or a select in a message or a modal."""

    type: Literal["block_actions"]
    user: User
    actions: Annotated[list[Action], Field(min_length=1, max_length=25)]
    view: View | None = None
    response_url: Text | None = None
    trigger_id: Text | None = None


class ViewSubmission(_Open):
    """A modal submitted."""

    type: Literal["view_submission"]
    user: User
    view: View
    trigger_id: Text | None = None


class ViewClosed(_Open):
    """A modal closed (notify_on_close)."""

    type: Literal["view_closed"]
    user: User
    view: ClosedView


class OtherInteraction(_Open):
    """Shortcuts, message actions, suggestions, legacy interactive messages and dialogs: a user at least."""

    type: Literal["block_suggestion", "shortcut", "message_action", "interactive_message", "dialog_submission"]
    user: User


_INTERACTION = TypeAdapter(Annotated[BlockActions | ViewSubmission | ViewClosed | OtherInteraction,
                                     Field(discriminator="type")])


def deeper_than(document: object, limit: int = MAX_DEPTH) -> bool:
    """True when lists and objects nest more than `limit` levels (the edge's limit by default)."""
    return nested_deeper_than(document, limit)


def interaction_problem(payload_text: str) -> str | None:
    """Why a signed interaction payload (the `payload=` form field) is not one Slack would send, or None."""
    try:
        payload = json.loads(payload_text)
    except RecursionError:
        return f"payload nested more than {MAX_DEPTH} levels"
    except ValueError:
        return "payload is not JSON"
    if deeper_than(payload):
        return f"payload nested more than {MAX_DEPTH} levels"
    try:
        _INTERACTION.validate_python(payload)
    except ValidationError as exc:
        first = exc.errors()[0]
        return f"payload {'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
    return None
