"""Replay: feed a trace of bookings through the real engine on a virtual clock, one policy at a time.

Import what you need from its modules (run, runner, setup): the package itself loads nothing, so reading a
`[replay]` table (setup) does not pull in the engine's whole replay machinery.
"""
