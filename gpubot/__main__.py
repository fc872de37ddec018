"""`python -m gpubot` runs the CLI."""

from gpubot.cli import main

main()
