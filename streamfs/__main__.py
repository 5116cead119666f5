"""``python -m streamfs``: the ``streamfs`` command (for an environment without its script on
the PATH)."""

from streamfs.cli import main

if __name__ == "__main__":  # importing the module (a walk over the package) runs nothing
    main(prog_name="streamfs")
