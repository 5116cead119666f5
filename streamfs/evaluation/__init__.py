"""Offline evaluation of the streamfs selectors: protocols of the papers, metrics and reports.

Needs the ``eval`` extra (scikit-learn, matplotlib). Entry points: the click command
:data:`streamfs.evaluation.command.evaluate` and ``python -m streamfs.evaluation.all``.
"""
