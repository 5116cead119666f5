"""How the commands of ``streamfs`` end: their exit codes, and the error that is a mistake
of the user's."""

from __future__ import annotations

import click


#: exit codes (README "Exit codes")
EXIT_KAFKA = 1  # Kafka did not take the stream, or a client error
EXIT_USAGE = 2  # bad input file, algorithm, parameter, labels or stream id: nothing published
EXIT_TIMEOUT = 3  # watch --timeout passed (before the final result, with --until-final)
EXIT_REJECTED = 4  # watch: the worker dead-lettered the stream's input
EXIT_RUN_REPLACED = 5  # watch --run N --until-final: run N was replaced before its final result
EXIT_NO_MEMORY = 71  # sysexits' EX_OSERR: the data as read needs more memory than there is
# interrupted: 128 + the signal (interrupting_signal), the shell's code: 130 Ctrl-C (SIGINT),
# 143 SIGTERM (produce, which says what it published first)
EXIT_BROKEN_PIPE = 141  # stdout's reader went away (`| head`): 128 + SIGPIPE, as the shell says


class UsageProblem(click.ClickException):
    """A mistake of the user's (input file, algorithm, parameters, labels, stream id): exit 2,
    one line, nothing published."""

    exit_code = EXIT_USAGE
