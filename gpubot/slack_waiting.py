"""What a Slack request that came while Slack had not authorised the bot waits as (gpubot/slack_auth.py): a slash
command or a button click is acked at once and waits in the inbox, its sender told through its response_url; a
modal submission, whose ack must carry the answer, is refused in the modal (it stays open, so nothing typed is
lost) with why, to be submitted again."""

from __future__ import annotations

import json

from slack_bolt import BoltResponse

from gpubot.bot.i18n import N_, Translator
from gpubot.slack_auth import SlackAuth

__all__ = ["SUBMIT_AGAIN", "kind_of", "refuse_submission", "waiting_for"]

SUBMIT_AGAIN = N_("⏳ Slack is not letting gpubot act right now, so this was not submitted. Please submit it again "
                  "in a minute.")
SUBMISSION_WAIT = 1.5  # seconds a submission waits for a look at the token (Slack wants its ack within 3 s)


def kind_of(body: object, command: str) -> str | None:
    """`command` for our slash command, else the interaction's type (block_actions, view_submission, …)."""
    if not isinstance(body, dict):
        return None
    if body.get("command") == command:
        return "command"
    kind = body.get("type")
    return kind if isinstance(kind, str) else None


def waiting_for(body: dict) -> tuple[str, str | None, str]:
    """(sender, response_url, what to call it) of a slash command or button click that waits for Slack."""
    if "command" in body:
        return (str(body.get("user_id", "")), body.get("response_url"),
                f"{body.get('command', '')} {body.get('text', '')}".strip())
    user = body.get("user") if isinstance(body.get("user"), dict) else {}
    actions = body.get("actions") if isinstance(body.get("actions"), list) else []
    action = actions[0] if actions and isinstance(actions[0], dict) else {}
    label = action.get("text", {}).get("text") if isinstance(action.get("text"), dict) else None
    url = body.get("response_url")
    return str(user.get("id", "")), url if isinstance(url, str) else None, str(label or action.get("action_id", ""))


def refuse_submission(auth: SlackAuth, body: dict, tr: Translator) -> BoltResponse | None:
    """None when Slack authorises the bot within SUBMISSION_WAIT (the submission runs now); else the ack that keeps
    the modal open with why, on its first input (a look at the token goes on in the background)."""
    if auth.authorised() or auth.check_within(SUBMISSION_WAIT):
        return None
    view = body.get("view") if isinstance(body.get("view"), dict) else {}
    blocks = [b for b in view.get("blocks") or [] if isinstance(b, dict) and b.get("type") == "input"]
    answer: dict = {"response_action": "errors",
                    "errors": {str(blocks[0].get("block_id", "")): tr.gettext(SUBMIT_AGAIN)[:150]}} if blocks else {}
    return BoltResponse(status=200, body=json.dumps(answer, ensure_ascii=False) if answer else "",
                        headers={"content-type": "application/json"} if answer else {})
