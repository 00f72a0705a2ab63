"""A progress bar while a store catches up on its changelog (a restore).

Restores run inside Spark's Python workers, whose stderr Spark copies to its own: on a
local session whose driver writes to a terminal, that is the user's terminal, and the
driver says so by setting :data:`ENABLE` in the workers' environment
(:func:`streamlib.spark.session.show_restore_bars`). Elsewhere (a cluster's executor
logs, a test run) there is no bar. A restore shorter than :data:`DELAY_SECONDS`
shows nothing either.
"""
from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, Iterator

#: Environment variable that turns the bars on ("1") in Spark's Python workers.
ENABLE = "STREAMLIB_RESTORE_BARS"
DELAY_SECONDS = 2.0


@contextlib.contextmanager
def restore_bar(total: int, store: str) -> Iterator[Any]:
    """A tqdm bar of ``total`` changelog records for ``store`` (``update(n)`` as records
    are applied), or one that shows nothing when bars are off."""
    from tqdm import tqdm

    bar = tqdm(total=total, desc=f"restoring {store}", unit=" records", unit_scale=True,
               delay=DELAY_SECONDS, leave=False, file=sys.stderr, disable=os.environ.get(ENABLE) != "1")
    try:
        yield bar
    finally:
        bar.close()
