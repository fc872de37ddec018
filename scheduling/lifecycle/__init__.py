"""A machine's life after launch: expiry, idle reclaim, health, telemetry, reconcile, the providers' own cost
figures checked against ours."""
