"""``python -m streamfs``: the ``streamfs`` command (for an environment without its script on
the PATH)."""

from streamfs.cli import main

main(prog_name="streamfs")
