"""Errors of the producer adapters."""

from streamfs.algorithms.registry import LabelError


class InputDataError(ValueError):
    """Data the worker would refuse (values, labels, dtypes, shapes, names), found before it was
    published: the message names the columns, rows or labels at fault."""


class InputLabelError(InputDataError, LabelError):
    """Labels the algorithm cannot use (missing, continuous, a class too many...), found
    before they were published."""


class InputFileError(InputDataError):
    """A data file that cannot be read; the message names the file and where (line, column)."""


class NamesParameter:
    """A refusal whose message names a parameter of the Python API (``parameter``), which
    another caller spells otherwise: :meth:`said_as` gives the message with its spelling
    (the command line's option), ``str()`` the Python API's."""

    parameter: str

    def said_as(self, spelling: str) -> str:
        raise NotImplementedError


class BlockBytesTooSmall(NamesParameter, ValueError):
    """A payload budget per message (``block_bytes``) the caller chose that is smaller than one
    item of the stream (a column of a feature stream, an instance of an instance stream),
    which would then travel in a message of its own, over the budget. ``smallest`` is the
    smallest budget under which every item fits."""

    parameter = "block_bytes"

    def __init__(self, given: int, smallest: int, item: str) -> None:
        self.given, self.smallest, self.item = given, smallest, item
        super().__init__(self.said_as("block_bytes"))

    def said_as(self, option: str) -> str:
        """The message, naming the budget as the caller spells it (``--block-bytes``)."""
        return (f"{option} {self.given} is smaller than one {self.item} of this stream "
                f"({self.smallest} bytes): the smallest {option} that works is {self.smallest}")


class BlockBytesOverLimit(NamesParameter, ValueError):
    """A payload budget per message (``block_bytes``) over the record limit that the topic and
    the worker take."""

    parameter = "block_bytes"

    def __init__(self, given: int, record_limit: int) -> None:
        self.given, self.record_limit = given, record_limit
        super().__init__(self.said_as("block_bytes"))

    def said_as(self, option: str) -> str:
        """The message, naming the budget as the caller spells it (``--block-bytes``)."""
        return (f"{option} must be between 1 and the record limit of {self.record_limit} "
                f"bytes, got {self.given}")


class LooksZeroBased(NamesParameter, InputFileError):
    """An index 0 in a LIBSVM file read as 1-based (``zero_based=False``): the file is likely
    0-based. ``where`` is the file, line and token; ``after`` a note to end the message with."""

    parameter = "zero_based"

    def __init__(self, where: str, after: str = "") -> None:
        self.where, self.after = where, after
        super().__init__(self.said_as("zero_based=True or 'auto'"))

    def said_as(self, spelling: str) -> str:
        """The message, saying how to read the file 0-based as the caller does
        (``--zero-based``)."""
        return (f"{self.where} (the file looks 0-based: read it with {spelling}){self.after}")


class StreamLeftOpen(RuntimeError):
    """A publish stopped after some of a stream's messages were delivered: the stream stays
    open without ``close``. ``messages_sent`` says how many were delivered, in order, before
    the first that failed; ``delivered_after`` how many queued behind a refused delivery went
    out all the same (the worker refuses them: a sequence gap). The cause (the bad data, or the
    failed delivery) is chained as ``__cause__``."""

    def __init__(self, stream: str, messages_sent: int, cause: BaseException, *,
                 after: int = 0) -> None:
        self.stream = stream
        self.messages_sent = messages_sent
        self.delivered_after = after
        super().__init__(left_open_message(
            cause, stream, messages_sent,
            "publish it again with replace=True, or under another stream id", after))


class PublishInterrupted(KeyboardInterrupt):
    """Ctrl-C during a publish, raised once the messages in flight settled or a short wait
    for them passed: ``messages_sent`` says how many the broker acknowledged (not how many
    were handed to the client), ``unsettled`` how many were still unanswered (a broker that
    does not answer; it may hold some of them)."""

    def __init__(self, stream: str, messages_sent: int, unsettled: int = 0) -> None:
        super().__init__(f"{messages_sent} message(s) of stream {stream!r} were published")
        self.stream = stream
        self.messages_sent = messages_sent
        self.unsettled = unsettled


def left_open_message(cause: BaseException | str, stream: str, sent: int, retry: str,
                      after: int = 0) -> str:
    """What a publish stopped part way says: why, how many messages went out (and how many
    after a refused one), and ``retry``."""
    behind = (f", and {after} queued behind the refused one, which the worker refuses as a "
              "sequence gap" if after else "")
    return (f"{cause} ({sent} message(s) of stream {stream!r} were already published{behind}; "
            f"it stays open without 'close': {retry})")
