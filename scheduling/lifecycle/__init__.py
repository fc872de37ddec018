"""A machine's life after launch: billing, expiry, idle reclaim, health, telemetry, reconcile, the providers' own cost
figures checked against ours."""
