"""Fixtures of the command-line tests."""

from __future__ import annotations

import os

import pytest


@pytest.fixture
def cli_env(kafka_bootstrap, topic_prefix) -> dict:
    """The environment of a `streamfs` subprocess on this test's broker and topics."""
    return {**os.environ, "STREAMFS_BOOTSTRAP_SERVERS": kafka_bootstrap,
            "STREAMFS_TOPIC_PREFIX": topic_prefix}
