"""Errors of the producer adapters."""


class InputFileError(ValueError):
    """A data file that cannot be read; the message names the file and where (line, column)."""
