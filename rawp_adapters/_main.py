"""The ``rawp-adapters`` console script. ``serve --stdio --warm`` goes to the warm
launcher, which imports the standard library only; everything else to the command line
proper."""

from __future__ import annotations

import sys

WARM = ("serve", "--stdio", "--warm")


def main() -> int:
    argv = sys.argv[1:]
    if all(word in argv for word in WARM):
        from rawp_adapters._warm._launch import launch

        code = launch(argv)
        if code is not None:
            return code
    from rawp_adapters.cli import main as command

    return command(argv)
