"""A machine's life after launch: billing, expiry, idle reclaim, health, telemetry, reconcile."""
