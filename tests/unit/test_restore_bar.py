"""The bar of a long restore: driven by the changelog records a store catches up on, and
shown only where the driver turned it on (a local session on a terminal)."""
import contextlib
import shutil
import time

from streamlib.state import restore_bar as bars
from test_state_restore import backend, open_copy, run  # noqa: F401 - the fixture is used by name


def test_a_restore_moves_the_bar_over_every_changelog_record(tmp_path, backend, monkeypatch):  # noqa: F811
    with open_copy(tmp_path, backend) as stores:
        for batch in range(3):
            run(stores, batch, [(b"k%d" % i, b"%d" % batch) for i in range(10)])
    shutil.rmtree(tmp_path / "a")
    seen = []

    @contextlib.contextmanager
    def recording(total, store):
        class Bar:
            def update(self, n):
                seen.append(n)
        seen.append(("total", total, store))
        yield Bar()

    monkeypatch.setattr("streamlib.state.store.restore_bar", recording)
    with open_copy(tmp_path, backend) as stores:
        stores.begin(3)
    assert seen[0] == ("total", 30, "counts") and sum(seen[1:]) == 30


def test_the_bar_shows_only_when_turned_on_and_after_its_delay(capsys, monkeypatch):
    monkeypatch.setattr(bars, "DELAY_SECONDS", 0.05)
    monkeypatch.delenv(bars.ENABLE, raising=False)
    with bars.restore_bar(100, "counts") as bar:
        time.sleep(0.1)
        bar.update(50)
    assert capsys.readouterr().err == ""
    monkeypatch.setenv(bars.ENABLE, "1")
    with bars.restore_bar(100, "counts") as bar:
        time.sleep(0.1)
        bar.update(50)
    assert "restoring counts" in capsys.readouterr().err
