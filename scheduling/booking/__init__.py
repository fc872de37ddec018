"""Booking use cases: book, cancel, release, extend, approvals, Replace, quotes and what a launch asks."""
