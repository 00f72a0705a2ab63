"""One run of a fault-harness application: ``python runner.py WORKDIR TOPOLOGY``.

Processes everything available, then writes every store's content to
``WORKDIR/result.json`` and exits 0. The harness kills it (SIGKILL of its process
group) and starts it again until it gets that far.
"""
from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from streamlib import Streams, StreamsConfig  # noqa: E402
from streamlib.spark.session import get_or_create_session  # noqa: E402
from spark_session import TEST_CONF  # noqa: E402
from topologies import REGISTRY  # noqa: E402


def config_for(workdir: Path, overrides: dict) -> StreamsConfig:
    base = StreamsConfig(application_id="faults", bootstrap=f"local://{workdir / 'log'}",
                         state_dir=str(workdir / "state"))
    return replace(base, **overrides)


def main(workdir: str, name: str) -> int:
    spec = REGISTRY[name]
    spark = get_or_create_session("local[2]", "faults", TEST_CONF)
    spark.sparkContext.setLogLevel("ERROR")
    app = Streams(spec.build(), config_for(Path(workdir), spec.config), spark=spark)
    app.process_available()
    stores = {store: sorted([repr(k), repr(v)] for k, v in app.store(store).all()) for store in spec.stores}
    app.stop()
    (Path(workdir) / "result.json").write_text(json.dumps(stores))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
