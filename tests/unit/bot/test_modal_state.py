"""What the bot remembers of an open modal: a quote is shown only for the latest pick, with the latest hash."""

from __future__ import annotations

from gpubot.bot.modal_state import ModalStates


def test_only_the_latest_pick_is_latest_and_the_opening_choice_until_someone_picks():
    modals = ModalStates()
    assert modals.is_latest("V1", None)
    modals.picked("V1", ("h100", "1"))
    modals.picked("V1", ("h100", "2"))
    assert modals.is_latest("V1", ("h100", "2"))
    assert not modals.is_latest("V1", ("h100", "1")) and not modals.is_latest("V1", None)
    assert modals.is_latest("V2", None)


def test_the_hash_is_the_one_the_apps_latest_update_returned():
    modals = ModalStates()
    assert modals.hash_of("V1") is None
    modals.updated("V1", "h.1")
    modals.updated("V1", None)  # an answer without a hash forgets nothing
    modals.updated("V1", "h.2")
    assert modals.hash_of("V1") == "h.2" and modals.hash_of("V2") is None
