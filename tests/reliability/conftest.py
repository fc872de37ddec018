"""The reliability suites: short by default (make test), full with GPUBOT_RELIABILITY=full (make reliability).
Their figures are printed at the end of the run by tests/reporting.py, whichever worker measured them."""
