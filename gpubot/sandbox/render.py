"""Block Kit as terminal text: what a person would read in Slack."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["Button", "render_call", "render_message"]

Button = Callable[[dict], str]  # a button element → how it is shown


def _plain_button(element: dict) -> str:
    return f"[{_text_of(element)}]"


def _text_of(obj) -> str:
    if isinstance(obj, dict):
        return obj.get("text", "") if isinstance(obj.get("text"), str) else _text_of(obj.get("text"))
    return str(obj or "")


def render_message(text: str, blocks: list | None, button: Button = _plain_button) -> str:
    """A message's blocks as lines of text (its fallback text when it has no blocks); `button` shows each
    button (`[Release]` unless told otherwise; an empty string leaves it out)."""
    if not blocks:
        return text
    lines: list[str] = []
    for block in blocks:
        kind = block.get("type")
        if kind in ("section", "header"):
            lines.append(_text_of(block))
        elif kind == "context":
            lines.append("  " + " ".join(_text_of(e) for e in block.get("elements", [])))
        elif kind == "actions":
            buttons = [shown for shown in map(button, block.get("elements", [])) if shown]
            lines.append("  " + " ".join(buttons) if buttons else "")
        elif kind == "divider":
            lines.append("  ———")
        elif kind == "image":
            lines.append(f"  (image: {block.get('alt_text', '')})")
    return "\n".join(line for line in lines if line)


def _as_slack_shows(text: str) -> str:
    """Slack's three escapes shown as the characters they stand for, as a Slack client does."""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def render_call(method: str, args: dict, button: Button = _plain_button) -> str | None:
    """One Web API call as a person would see it, or None for calls with nothing to show."""
    import json

    blocks = args.get("blocks")
    if isinstance(blocks, str):
        blocks = json.loads(blocks or "[]")
    body = _as_slack_shows(render_message(args.get("text", ""), blocks, button))
    if method == "chat.postMessage":
        where = "DM" if str(args.get("channel", "")).startswith(("U", "D")) else f"#{args.get('channel')}"
        return f"[{where}] {body}"
    if method == "chat.update":
        return f"[updated] {body}"
    if method == "response_url":
        return f"(only you) {body}"
    if method in ("views.open", "views.publish"):
        return f"({method}: a view opened)"
    return None
