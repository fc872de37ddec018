"""Acquisition: probe every cloud, rank, launch, fall back; follow booting machines; preemption."""
