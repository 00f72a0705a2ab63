"""The built wheel installs into a clean venv with pip and runs the wordcount example
with spark-submit, without the Makefile (issue 38, item 1), on the Python running the
tests and on the oldest Python streamlib supports (3.10) when it is on the machine."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import streamlib

ROOT = Path(__file__).resolve().parents[2]
OLDEST = os.environ.get("STREAMLIB_TEST_OLDEST_PYTHON", "python3.10")


def _pythons() -> list[str]:
    found = [sys.executable]
    oldest = shutil.which(OLDEST) and subprocess.run([OLDEST, "-c", "1"], capture_output=True).returncode == 0
    return found + ([OLDEST] if oldest else [])


def _run(command: list, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in command], capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, f"{command}:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    # Built from a copy of the tracked files: building in the clone would leave build/ behind.
    source = tmp_path_factory.mktemp("source")
    tracked = _run(["git", "ls-files"], cwd=ROOT).stdout.split()
    for name in tracked:
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    out = tmp_path_factory.mktemp("wheel")
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", out, source], timeout=600)
    (built,) = out.glob("streamlib-*.whl")
    return built


def test_the_wheel_holds_the_pth_the_helper_module_and_the_type_marker(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"streamlib-spark-path.pth", "_streamlib_spark_path.py", "streamlib/py.typed",
            "streamlib/versions.env", "streamlib/spark/jars/streamlib-placement.jar"} <= names
    assert wheel.name.startswith(f"streamlib-{streamlib.__version__}-")


@pytest.mark.slow
@pytest.mark.parametrize("python", _pythons())
def test_a_clean_venv_installs_the_wheel_and_runs_wordcount_with_spark_submit(wheel, python, tmp_path):
    venv = tmp_path / "venv"
    _run([python, "-m", "venv", venv], timeout=300)
    vpy = venv / "bin" / "python"
    version = _run([vpy, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"]).stdout.strip()
    # The tested set of dependencies and the Makefile's PySpark (numpy's and fastavro's
    # pins are for 3.11+ only: on 3.10 pip picks them within pyproject.toml's ranges).
    pyspark = re.search(r"^PYSPARK_VERSION \?= (\S+)$", (ROOT / "Makefile").read_text(), re.MULTILINE).group(1)
    pins = [line for line in (ROOT / "constraints.txt").read_text().splitlines()
            if not (version == "3.10" and line.startswith(("numpy==", "fastavro==")))] + [f"pyspark=={pyspark}"]
    (tmp_path / "constraints.txt").write_text("\n".join(pins) + "\n")
    _run([vpy, "-m", "pip", "install", "-q", "-c", tmp_path / "constraints.txt", wheel], timeout=1200)
    assert _run([vpy, "-m", "streamlib", "--version"]).stdout.strip() == f"streamlib {streamlib.__version__}"
    where = _run([vpy, "-c", "import streamlib; print(streamlib.__file__)"], cwd=tmp_path).stdout.strip()
    assert where.startswith(str(venv)), where
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_HOME")}
    env.update(PYSPARK_PYTHON=str(vpy), PYSPARK_DRIVER_PYTHON=str(vpy))
    example = ROOT / "examples" / "wordcount"
    done = _run([venv / "bin" / "spark-submit", "--master", "local[2]", "--conf", "spark.log.level=WARN",
                 example / "wordcount.py", "--input", example / "data" / "input.txt",
                 "--bootstrap", f"local://{tmp_path / 'log'}", "--state-dir", tmp_path / "state"],
                cwd=tmp_path, env=env, timeout=900)
    assert "top 10 words:" in done.stdout, done.stdout
