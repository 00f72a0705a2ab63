"""The notebooks run headless, top to bottom, in a fresh kernel, in place (what
``jupyter nbconvert --to notebook --execute --inplace`` does), and leave no files behind."""
from __future__ import annotations

import os
from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def _files(root: Path) -> set[str]:
    return {os.path.relpath(os.path.join(d, f), root) for d, _, files in os.walk(root) for f in files}


def test_live_wordcount_notebook_runs_in_place_plots_and_leaves_nothing_behind():
    before = _files(NOTEBOOKS)
    notebook = nbformat.read(NOTEBOOKS / "live_wordcount.ipynb", as_version=4)
    NotebookClient(notebook, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    assert _files(NOTEBOOKS) == before, "executing the notebook left files in notebooks/"
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "the: 100  fox: 40  dog: 40" in text
    assert "Spark partitions (one per store partition): 2" in text
    assert any("image/png" in o.get("data", {}) for o in outputs), "no chart was drawn"
