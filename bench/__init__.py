"""Benchmarks: each figure measured against a floor measured in the same run, printed as a table.

Run with `make bench` (or `python -m bench`); see docs/benchmarks.md.
"""
