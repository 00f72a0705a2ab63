"""The default state directory is per machine (and user), never the working directory
an executor runs in (Spark's per-application work directory on a standalone cluster)."""
from __future__ import annotations

import os
import pickle

from streamlib import StreamsConfig
from streamlib.config import STATE_DIR_ENV, default_state_dir


def test_unset_state_dir_is_the_machines_default_resolved_where_it_is_used(tmp_path, monkeypatch):
    monkeypatch.delenv(STATE_DIR_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    config = StreamsConfig(application_id="wc")
    assert config.application_state_dir == str(tmp_path / "cache" / "streamlib" / "state" / "wc")
    # an executor unpickles the config and resolves the default on its own machine
    monkeypatch.setenv(STATE_DIR_ENV, str(tmp_path / "executor-disk"))
    shipped = pickle.loads(pickle.dumps(config))
    assert shipped.task_state_dir("1_0") == str(tmp_path / "executor-disk" / "wc" / "1_0")


def test_an_explicit_state_dir_wins(tmp_path, monkeypatch):
    monkeypatch.setenv(STATE_DIR_ENV, str(tmp_path / "env"))
    assert StreamsConfig(application_id="a", state_dir=str(tmp_path / "s")).application_state_dir == \
        str(tmp_path / "s" / "a")
    assert default_state_dir() == str(tmp_path / "env")
