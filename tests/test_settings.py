"""Settings from the environment (no broker)."""

from __future__ import annotations

import pytest

from streamfs.settings import Settings


def test_the_app_id_follows_the_topic_prefix_unless_set(monkeypatch):
    """Two deployments on one cluster (two prefixes) get their own consumer group and
    changelogs by default; the default prefix keeps the app id 'streamfs'."""
    monkeypatch.delenv("STREAMFS_APP_ID", raising=False)
    monkeypatch.delenv("STREAMFS_TOPIC_PREFIX", raising=False)
    assert Settings.from_env().app_id == "streamfs"
    assert Settings.from_env(topic_prefix="staging.").app_id == "staging"
    monkeypatch.setenv("STREAMFS_TOPIC_PREFIX", "prod-")
    assert Settings.from_env().app_id == "prod"
    monkeypatch.setenv("STREAMFS_APP_ID", "mine")
    assert Settings.from_env().app_id == "mine"


@pytest.mark.parametrize("name,value,needle", [
    ("STREAMFS_BATCH_MS", "0", "STREAMFS_BATCH_MS must be more than 0"),
    ("STREAMFS_BATCH_MS", "inf", "STREAMFS_BATCH_MS must be more than 0"),
    ("STREAMFS_BATCH_MESSAGES", "0", "STREAMFS_BATCH_MESSAGES must be more than 0"),
    ("STREAMFS_MAX_MESSAGE_BYTES", "0", "STREAMFS_MAX_MESSAGE_BYTES must be more than 0"),
    ("STREAMFS_MAX_BUFFER_BYTES", "0", "STREAMFS_MAX_BUFFER_BYTES must be more than 0"),
    ("STREAMFS_SESSION_TIMEOUT", "0.5", "STREAMFS_SESSION_TIMEOUT must be 6 to 1800 seconds"),
    ("STREAMFS_TRANSACTION_TIMEOUT", "1000", "STREAMFS_TRANSACTION_TIMEOUT must be 1 to 900"),
    ("STREAMFS_BATCH_BYTES", "1.5", "STREAMFS_BATCH_BYTES must be a whole number"),
])
def test_settings_a_worker_cannot_run_with_are_refused_by_name(monkeypatch, name, value, needle):
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=needle):
        Settings.from_env()
