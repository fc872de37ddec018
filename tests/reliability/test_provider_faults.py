"""Provider faults (issue #7): a storm of bookings while the AutoDL, Lambda and RunPod fakes inject every fault.

No exception escapes the engine, no booking is left acquiring, every booking ends placed, or failed with an
on-call alert (or is refused at once with a message), nothing launched by a lost response keeps running, and
the circuit breaker of a provider in an outage opens and closes again.
"""

from __future__ import annotations

import pytest

from tests.reliability.fault_storm import Storm
from tests.reliability.figures import FULL, record, size

BOOKINGS = size(short=30, full=300)


@pytest.mark.timeout(1800 if FULL else 300)
def test_a_storm_of_faults_ends_every_booking_cleanly(tmp_path):
    storm = Storm(tmp_path, seed=11)
    try:
        tally = storm.run(BOOKINGS)
    finally:
        storm.close()
    faults = ", ".join(f"{kind} {n}" for kind, n in sorted(tally.faults.items()))
    record("faults", f"bookings {tally.bookings}; faults injected: {faults}")
    record("faults", f"placed {tally.placed}, failed with alert {tally.failed_with_alert}, failed silently "
                     f"{tally.failed_silently}, refused with a message {tally.refused_with_message}, stuck "
                     f"acquiring {tally.stuck_acquiring}, unhandled exceptions {len(tally.unhandled)}")
    changes = ", ".join(f"{change} {n}" for change, n in sorted(tally.breaker_changes.items()))
    record("faults", f"orphans from lost responses terminated {tally.orphans_terminated}, leaked "
                     f"{tally.leaked}; breaker changes: {changes}")
    assert tally.unhandled == []
    assert tally.stuck_acquiring == 0 and tally.failed_silently == 0 and tally.leaked == 0
    assert tally.placed + tally.failed_with_alert + tally.refused_with_message == tally.bookings
    assert tally.breaker_changes["closed→open"] >= 1 and tally.breaker_changes["half_open→closed"] >= 1
