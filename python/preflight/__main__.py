"""The ``preflight`` command of the wheel (console script) and
``python -m preflight``: the command line of the Rust crate
(``preflight::cli``), run in this process by the extension, so output, exit
status and Ctrl-C (130) are those of the cargo-built binary."""

from __future__ import annotations

import signal
import sys
from typing import Optional, Sequence


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs ``preflight`` with ``argv`` (default: this process's arguments)
    and returns its exit status."""
    try:
        # Ctrl-C as for the binary: the default action (killed by SIGINT)
        # until `check` installs its own handler, which exits 130.
        try:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
        except ValueError:
            pass  # not the main thread: leave signals alone
        from ._preflight import run_cli

        args = list(sys.argv[1:] if argv is None else argv)
        # Rust writes to the file descriptors directly: what Python has
        # buffered goes first.
        sys.stdout.flush()
        sys.stderr.flush()
        # "preflight" as argv[0]: clap names the program after it in usage
        # messages, as the binary's.
        return run_cli(["preflight", *args])
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
