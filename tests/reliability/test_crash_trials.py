"""Crash trials: SIGKILL `gpubot serve` at random moments of acquisition, booting, release and expiry (issues #4,
#7, #16).

After every restart (whose reconcile runs before serving): no instance runs at a fake cloud without an active
booking, no active booking lacks its instance, and at the end the ledger bills every instance-second the fake
clouds ran exactly once (within a scheduler tick), with no overlapping stretches, and every booking whose machine
became reachable got exactly one ready DM.
"""

from __future__ import annotations

import os

import pytest

from tests.reliability.crash_driver import CrashRig
from tests.reliability.figures import FULL, record, size

TRIALS = size(short=5, full=100)


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL needs POSIX")
@pytest.mark.timeout(3600 if FULL else 300)
def test_no_leak_no_loss_no_double_billing_across_random_kills(tmp_path):
    rig = CrashRig(tmp_path, seed=int(os.environ.get("GPUBOT_RELIABILITY_SEED", "7")))
    try:
        for _ in range(TRIALS):
            rig.trial()
        tally = rig.finish()
    finally:
        rig.close()
    kills = ", ".join(f"{kind} {n}" for kind, n in tally.kills.items())
    record("crash", f"trials {tally.trials} (SIGKILL during {kills}); instances launched {tally.instances}")
    record("crash", f"leaked instances {tally.leaked}, lost bookings {tally.lost}, unsettled restarts "
                    f"{tally.unsettled}, double-billed seconds {tally.double_billed_seconds:.1f}")
    record("crash", f"billing vs the fake clouds' run time: over-billed {len(tally.over_billed)}, under-billed "
                    f"{len(tally.under_billed)} instances (tolerance 1 tick = 1 s); largest gap {tally.max_gap:.2f} s")
    record("crash", f"bookings whose machine became reachable {tally.ready}: ready DM missing "
                    f"{len(tally.ready_dms_missing)}, sent twice {len(tally.ready_dms_doubled)}")
    assert tally.trials == TRIALS and tally.unsettled == 0
    assert (tally.leaked, tally.lost) == (0, 0)
    assert tally.double_billed_seconds == 0
    assert tally.over_billed == [] and tally.under_billed == []
    assert tally.kills["boot"] >= 1
    assert (tally.ready_dms_missing, tally.ready_dms_doubled) == ([], [])
