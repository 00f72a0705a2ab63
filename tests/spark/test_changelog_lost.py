"""A changelog that lost committed records, together with the only copy that held them:
the restart stops with a clear error instead of restoring a store without them (the
positions the driver keeps per batch, streamlib.spark.changelog_positions)."""
from __future__ import annotations

import glob
import os
import shutil

import pytest

from streamlib import Serdes
from streamlib.errors import ChangelogLost
from engine import Workspace, python_count, wordcount_topology


def tear_last_frames(root, topic):
    """Cut a few bytes off the last frame of every partition of ``topic`` that has one."""
    for segment in glob.glob(os.path.join(root, topic, "*", "*.log")):
        if os.path.getsize(segment) > 5:
            with open(segment, "r+b") as f:
                f.truncate(os.path.getsize(segment) - 5)


def counts(workspace):
    return {word: n for word, n, _ in workspace.read("counts-out", value_serde=Serdes.long())}


def test_a_lost_changelog_tail_and_a_lost_state_directory_stop_the_restart(spark, tmp_path):
    workspace = Workspace(tmp_path)
    lines = ["a b a", "b c", "c d"]
    for line in lines[:2]:
        workspace.produce("lines", [(None, line)])
        workspace.run(spark, wordcount_topology()).stop()
    assert counts(workspace) == python_count(lines[:2])
    written = workspace.read("counts-out", value_serde=Serdes.long())
    tear_last_frames(str(tmp_path / "log"), "app-counts-changelog")
    shutil.rmtree(workspace.state_dir)
    workspace.produce("lines", [(None, lines[2])])
    with pytest.raises(ChangelogLost, match=r"store 'counts': changelog 'app-counts-changelog' partition \d+ "
                                            r"no longer holds offsets \d+ to \d+, which committed batches "
                                            r"wrote, and this copy holds none of it.*reset --application-id app"):
        workspace.run(spark, wordcount_topology())
    assert workspace.read("counts-out", value_serde=Serdes.long()) == written


def test_a_lost_state_directory_alone_restores_exactly(spark, tmp_path):
    workspace = Workspace(tmp_path)
    lines = ["a b a", "b c", "c d"]
    for i, line in enumerate(lines):
        workspace.produce("lines", [(None, line)])
        workspace.run(spark, wordcount_topology()).stop()
        if i == 1:
            shutil.rmtree(workspace.state_dir)
    assert counts(workspace) == python_count(lines)
