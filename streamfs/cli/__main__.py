"""``python -m streamfs.cli``: the ``streamfs`` command, as ``python -m streamfs`` runs it
(ops and tests start it so, in the interpreter running them)."""

from streamfs.cli import main

if __name__ == "__main__":  # importing the module (a walk over the package) runs nothing
    main()
