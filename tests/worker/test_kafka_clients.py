"""The worker's client settings, without a broker: what its guarantees rest on (the exactly-once
behaviour itself is tested against the broker in test_exactly_once.py)."""

from streamfs.settings import Settings
from streamfs.worker.kafka_clients import (TXN_CALL_SECONDS, consumer_config, fetch_config,
                                           producer_config)


def _settings(**overrides) -> Settings:
    return Settings(bootstrap_servers="localhost:9092", **overrides)  # not the environment's


def test_the_consumer_reads_committed_input_and_never_commits_on_its_own():
    config = consumer_config(_settings(app_id="app"), error_cb=print)
    assert config["group.id"] == "app" and config["isolation.level"] == "read_committed"
    assert config["enable.auto.commit"] is False and config["enable.auto.offset.store"] is False
    assert config["auto.offset.reset"] == "earliest"  # a new group reads every stream
    assert "group.instance.id" not in config  # dynamic membership unless an id is set
    assert {k: config[k] for k in fetch_config(_settings().max_message_bytes)} == fetch_config(
        _settings().max_message_bytes)


def test_a_static_member_sends_its_instance_id():
    config = consumer_config(_settings(instance_id="worker-1"), error_cb=print)
    assert config["group.instance.id"] == "worker-1"


def test_a_fetch_takes_the_largest_message_the_worker_accepts():
    config = fetch_config(16 * 2**20)
    assert config["max.partition.fetch.bytes"] > 16 * 2**20
    assert config["fetch.max.bytes"] >= config["max.partition.fetch.bytes"]


def test_every_producer_has_its_own_transactional_id_under_the_app_id():
    s = _settings(app_id="app")
    ids = {producer_config(s, logger=None)["transactional.id"] for _ in range(3)}
    assert len(ids) == 3 and all(i.startswith("app-") for i in ids)


def test_a_record_times_out_within_its_transaction():
    for timeout in (5.0, 60.0):
        config = producer_config(_settings(transaction_timeout=timeout), logger=None)
        assert config["transaction.timeout.ms"] == int(timeout * 1000)
        assert config["message.timeout.ms"] == int(min(TXN_CALL_SECONDS, timeout) * 1000)
    # a deleted topic fails the transaction instead of coming back with the broker's defaults
    assert config["allow.auto.create.topics"] is False
