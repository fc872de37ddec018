"""The shapes Slack and the telemetry agents send, checked at the edge before Bolt, a listener or the engine sees
them (pydantic, with depth and size limits): a signed payload that does not fit is a 400 (a telemetry value out of
range a 422), never a 500 or a traceback."""

from __future__ import annotations

import json
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from gpubot.domain.ports import GpuReading
from gpubot.domain.telemetry import TelemetryRejected

__all__ = ["MAX_DEPTH", "MAX_GPUS", "PushedBatch", "deeper_than", "interaction_problem", "telemetry_batch"]

MAX_DEPTH = 32  # Slack's deepest payloads (a modal's state values, rich text) stay under 12 levels
MAX_GPUS = 64
MAX_PROCESSES = 100_000  # compute processes one GPU may report holding it
MAX_TELEMETRY_DEPTH = 8  # a batch is {"gpus": [{...}]}: three levels

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
    """True when lists and objects nest more than `limit` levels (checked without recursion)."""
    stack = [(document, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            if depth > limit:
                return True
            stack.extend((child, depth + 1) for child in (node.values() if isinstance(node, dict) else node))
    return False


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


# -- telemetry pushed by the agents (POST /api/telemetry) -------------------------------------------------------
class PushedGpu(BaseModel):
    """One entry of a pushed batch's `gpus`: numbers only (no strings, no booleans); other fields are ignored."""

    model_config = ConfigDict(strict=True)

    index: Annotated[int, Field(ge=0, le=MAX_GPUS - 1)]
    util: Annotated[float | None, Field(ge=0, le=100)] = None  # left out by a MIG-enabled GPU: unknown
    temp_c: Annotated[float | None, Field(ge=-20, le=150)] = None
    mem_used_mib: Annotated[float | None, Field(ge=0, le=10**7)] = None
    mem_total_mib: Annotated[float | None, Field(ge=0, le=10**7)] = None
    # left out when the agent cannot tell (older agents, a failed query): unknown, never "no process"
    processes: Annotated[int | None, Field(ge=0, le=MAX_PROCESSES)] = None
    process_mem_mib: Annotated[float | None, Field(ge=0, le=10**7)] = None


class PushedBatch(BaseModel):
    """A pushed batch: `{"gpus": [...], "batch_id": optional}`; a resent batch_id is stored once."""

    model_config = ConfigDict(strict=True)

    gpus: Annotated[list[PushedGpu], Field(min_length=1, max_length=MAX_GPUS)]
    batch_id: Annotated[str, Field(max_length=200)] | int | None = None

    def readings(self) -> list[GpuReading]:
        """The batch as the engine stores it."""
        return [GpuReading(g.index, g.util, g.temp_c, g.mem_used_mib, g.mem_total_mib, g.processes,
                           g.process_mem_mib) for g in self.gpus]

    def unreadable(self) -> int | None:
        """The first GPU giving neither utilisation nor temperature (nothing to store for it), if any."""
        return next((g.index for g in self.gpus if g.util is None and g.temp_c is None), None)


def telemetry_batch(body: bytes) -> PushedBatch:
    """A pushed body validated, or TelemetryRejected: 400 for malformed JSON or a wrong shape or type, 422 for a
    value out of range or more than MAX_GPUS GPUs."""
    try:
        document = json.loads(body)
    except RecursionError:
        raise TelemetryRejected(400, f"JSON nested more than {MAX_TELEMETRY_DEPTH} levels") from None
    except (ValueError, UnicodeDecodeError):
        raise TelemetryRejected(400, "malformed JSON") from None
    if deeper_than(document, MAX_TELEMETRY_DEPTH):
        raise TelemetryRejected(400, f"JSON nested more than {MAX_TELEMETRY_DEPTH} levels")
    try:
        batch = PushedBatch.model_validate(document)
    except ValidationError as exc:
        raise _rejection(exc.errors()) from None
    if (index := batch.unreadable()) is not None:
        raise TelemetryRejected(422, f"GPU {index} has neither util nor temp_c")
    return batch


def _rejection(errors: list[dict]) -> TelemetryRejected:
    """The refusal for the first problem; too many GPUs first, as it is checked before any entry."""
    if any(e["type"] == "too_long" and e["loc"] == ("gpus",) for e in errors):
        return TelemetryRejected(422, f"at most {MAX_GPUS} GPUs per batch")
    first = errors[0]
    loc = first["loc"]
    if loc[:1] == ("batch_id",):
        return TelemetryRejected(400, "batch_id must be a string (at most 200 characters) or an integer")
    if len(loc) <= 1:
        return TelemetryRejected(400, 'expected {"gpus": [{"index": 0, "util": 37, "temp_c": 71}, ...]}')
    if len(loc) == 2:
        return TelemetryRejected(400, "each entry of gpus must be an object")
    field = str(loc[2])
    if first["type"] in ("greater_than_equal", "less_than_equal"):
        low, high = _bounds(field)
        return TelemetryRejected(422, f"gpus[].{field}={first['input']} is out of range ({low:g}..{high:g})")
    return TelemetryRejected(400, f"gpus[].{field} must be a number")


def _bounds(field: str) -> tuple[float, float]:
    metadata = PushedGpu.model_fields[field].metadata
    low = next(m.ge for m in metadata if hasattr(m, "ge"))
    high = next(m.le for m in metadata if hasattr(m, "le"))
    return low, high
