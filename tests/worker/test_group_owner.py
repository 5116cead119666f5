"""Two deployments (topic prefixes) in one group, against a real broker: the default app id of
``streamfs.`` and of ``streamfs`` is the same, and the second worker to start took part in the
first's group, restored its changelogs and refused its own new streams as already existing. A
worker now refuses to start in a group that has read another deployment's input topics."""

from __future__ import annotations

import uuid

import pytest

from confluent_kafka.admin import AdminClient

from streamfs.topics import load_catalogue

from .test_worker_acceptance import publish, wait_finals
from .workload import make_case

pytestmark = pytest.mark.kafka


def test_a_group_that_read_another_deployments_topics_is_refused(kafka_config, topic_prefix,
                                                                 make_worker):
    app_id = f"app-{uuid.uuid4().hex[:8]}"
    first = make_worker(topic_prefix, app_id)
    cases = [make_case(0, "saola", {}, prefix="g"),
             make_case(1, "ofs", {"n_features_to_select": 5}, prefix="g")]
    publish(kafka_config, topic_prefix, cases)
    wait_finals(kafka_config, topic_prefix, [c.stream for c in cases])  # offsets committed
    other = topic_prefix.rstrip(".")  # no dot: its topics are <prefix>features, ...
    second = make_worker(other, app_id)
    assert second.proc.wait(120) == 2, second.log_tail(20)
    # refused before it made its catalogue's topics: a mistyped prefix leaves none behind
    made = set(AdminClient(kafka_config).list_topics(timeout=30).topics)
    assert not made & {spec.name for spec in load_catalogue(other).values()}, made
    line = second.log_tail(5)
    assert (f"group {app_id!r} (the app id) has read '{topic_prefix}features', "
            f"'{topic_prefix}instances', not this deployment's topics") in line, line
    assert "Set STREAMFS_APP_ID" in line and "Traceback" not in second.log_path.read_text()
    # the first went on undisturbed: the second never joined its group
    assert "revoked" not in first.log_path.read_text(), first.log_tail(20)
    assert first.proc.poll() is None
    # a group of its own: it starts
    make_worker(other, f"{app_id}-2").wait_ready()


def test_a_new_app_id_on_processed_input_is_warned_of(kafka_config, topic_prefix, make_worker):
    """A second app id on the same prefix (a typo, or a changed setting) read every input
    from the beginning and published every stream's results again, second finals included,
    and nothing said so. A restart under the first app id says nothing."""
    app_id = f"app-{uuid.uuid4().hex[:8]}"
    first = make_worker(topic_prefix, app_id)
    cases = [make_case(0, "saola", {}, prefix="w")]
    publish(kafka_config, topic_prefix, cases)
    wait_finals(kafka_config, topic_prefix, [c.stream for c in cases])
    first.wait_ready()  # the final's batch committed and counted
    first.stop()
    warning = f"group {{!r}} (the app id) is new to this prefix's input, which " \
              f"'{topic_prefix}selected-features' shows was processed under another app id"
    again = make_worker(topic_prefix, app_id)
    again.wait_ready()
    typo = make_worker(topic_prefix, f"{app_id}-typo")
    typo.wait_ready()
    assert warning.format(f"{app_id}-typo") in typo.log_path.read_text(), typo.log_tail()
    # the topics it made are said (its changelogs), those it found are not
    assert (f"created topics {app_id}-typo-features-streams-changelog, "
            f"{app_id}-typo-instances-streams-changelog") in typo.log_path.read_text()
    assert "created topics" not in again.log_path.read_text(), again.log_tail()
    assert "is new to this prefix's input" not in again.log_path.read_text(), again.log_tail()
    assert "is new to this prefix's input" not in first.log_path.read_text(), first.log_tail()
