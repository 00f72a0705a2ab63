"""application_server_spark_nice: the local Spark JVM yields the cores to the driver."""
import os
import signal

import pytest

from streamlib import StreamsConfig
from streamlib.query import priority

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="Linux /proc only")


def _nice(pid: int) -> int:
    return os.getpriority(os.PRIO_PROCESS, pid)


def _spawn(*argv: str) -> int:
    """A process of its own group (killed with its children by :func:`_kill`)."""
    return os.posix_spawnp(argv[0], list(argv), os.environ, setpgroup=0)


def _kill(pid: int) -> None:
    os.killpg(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


@pytest.fixture
def child():
    """A child process that runs until killed (its comm is ``sleep``)."""
    pid = _spawn("sleep", "60")
    try:
        yield pid
    finally:
        _kill(pid)


def test_children_with_the_name_are_reniced_once(child):
    before = _nice(child)
    assert priority.renice_children(3, names=("sleep",)) >= 1
    assert _nice(child) == min(19, before + 3)
    assert priority.renice_children(3, names=("sleep",)) == 0   # once per child
    assert _nice(child) == min(19, before + 3)


def test_other_children_and_zero_are_left_alone(child):
    before = _nice(child)
    assert priority.renice_children(0, names=("sleep",)) == 0
    assert priority.renice_children(5, names=("no-such-process",)) == 0
    assert _nice(child) == before


def test_not_a_child_is_left_alone():
    shell = _spawn("sh", "-c", "sleep 60; :")   # sleep is the shell's child, not ours
    try:
        assert priority.renice_children(4, names=("sleep",)) == 0
    finally:
        _kill(shell)


@pytest.mark.parametrize("bad", [-1, 20, True, 1.5])
def test_config_checks_the_value(bad):
    with pytest.raises(ValueError, match="application_server_spark_nice"):
        StreamsConfig(application_id="a", bootstrap="local:///tmp/x", application_server_spark_nice=bad)
