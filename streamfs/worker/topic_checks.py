"""Whether the worker's topics are still the ones it was assigned: the broker's descriptions
read, what changed named, and what each change means for the streams said.

The worker asks every ``TOPIC_CHECK_SECONDS`` (and after a failed transaction, and when the
process stood still): a topic deleted while it runs fails nothing by itself (the consumer just
stops getting its messages), and one made again under the same name would be read on from the
old topic's offsets or, for a changelog, written on without the state it held.
"""

from __future__ import annotations

import concurrent.futures
from typing import Any

from streamfs.topics import TopicMismatch, partitions_added_advice


def described_topics(described: dict[str, Any], wait: float = 0.0
                     ) -> dict[str, tuple[int, str] | None]:
    """The answers among the topic descriptions ``described`` (``{name: future}``, as the
    admin client's ``describe_topics`` gives them), waiting up to ``wait`` seconds:
    ``{name: (partitions, topic id)}``, None for a topic that does not exist. A topic without
    an answer, or whose answer is another error, is left out: nothing is known of it."""
    from confluent_kafka import KafkaError, KafkaException

    concurrent.futures.wait(list(described.values()), timeout=wait)
    found: dict[str, tuple[int, str] | None] = {}
    for name, future in described.items():
        if not future.done():
            continue
        try:
            desc = future.result()
        except KafkaException as exc:
            if exc.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                found[name] = None
            continue
        found[name] = (len(desc.partitions), str(desc.topic_id))
    return found


def topic_changes(partitions: dict[str, int], ids: dict[str, str],
                  found: dict[str, tuple[int, str] | None]) -> list[str]:
    """What is wrong with the worker's topics (``{topic: partitions}``) as the broker describes
    them now: ``found`` maps a topic to its partition count and id, or to None if it does not
    exist (a topic the broker did not answer for is left out: nothing is known of it); ``ids``
    holds the ids the input topics had when their partitions were assigned.

    >>> topic_changes({"a": 8, "b": 1}, {"a": "X"}, {"a": (8, "Y"), "b": None})
    ["'a' was deleted and re-created (topic id X when its partitions were assigned, Y now)", "'b' does not exist"]
    """
    problems = []
    for name, expected in partitions.items():
        if name not in found:
            continue
        if found[name] is None:
            problems.append(f"{name!r} does not exist")
            continue
        count, topic_id = found[name]
        if count != expected:
            problems.append(f"{name!r} has {count} partition(s), the catalogue asks for "
                            f"{expected}")
        elif name in ids and topic_id != ids[name]:
            problems.append(f"{name!r} was deleted and re-created (topic id {ids[name]} when its "
                            f"partitions were assigned, {topic_id} now)")
    return problems


def changed_while_running(problems: list[str], found: dict[str, tuple[int, str] | None],
                          partitions: dict[str, int],
                          changelog_ids: dict[str, str]) -> TopicMismatch:
    """The error that stops a worker whose topics changed (``problems``, from
    :func:`topic_changes` over ``found``), saying what the change means for the streams and
    what to do: an input topic made again is read from its beginning with the state kept; a
    changelog made again (same partition count, another id than ``changelog_ids``) lost the
    state of its streams; added partitions need the catalogue changed; a deleted topic must be
    made again.

    >>> print(changed_while_running(["'in' does not exist"], {"in": None}, {"in": 8}, {}))
    ... # doctest: +ELLIPSIS
    a topic of this worker changed while it ran: 'in' does not exist. Nothing that needs it ...
    """
    said = "; ".join(problems)
    remade = [name for name, was in changelog_ids.items()
              if found.get(name) is not None
              and found[name][0] == partitions[name] and found[name][1] != was]
    if not remade and all("re-created" in line for line in problems):  # inputs only
        return TopicMismatch(
            f"a topic of this worker changed while it ran: {said}. The "
            "worker stops rather than read the new topic from the old topic's offsets (its "
            "first messages would be skipped). Start the worker again: it reads the new "
            "topic from its beginning, with the streams' state kept (messages already "
            "applied are skipped, closed streams refuse theirs)")
    if remade:
        return TopicMismatch(
            f"a topic of this worker changed while it ran: {said}. The "
            "state of the streams on a changelog made again is gone (the new topic holds "
            "only what was written since); the worker stops rather than write on. Start it "
            "again: it goes on with what the changelogs hold, and those streams must be "
            "published again (streamfs produce --replace): their later messages are "
            "refused")
    grown = [name for name, now in found.items() if now is not None
             and name in partitions and now[0] > partitions[name]]
    if grown:
        return TopicMismatch(f"a topic of this worker changed while it ran: {said}. Nothing "
                             f"that needs it was committed since. "
                             f"{partitions_added_advice(grown)}")
    return TopicMismatch(
        f"a topic of this worker changed while it ran: {said}. Nothing "
        "that needs it was committed since. Run `streamfs topics create` and start the "
        "worker again: it goes on from the last committed batch. A deleted input topic "
        "took its messages with it, and streams whose changelog was deleted lost their "
        "state and must be published again")
