"""The documentation site (docs/, built by ``make docs``) and the README: their Python
code blocks run as written, the reference pages cover what they claim to, nothing links
outside the repository, and Sphinx builds the site without a warning."""
from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from streamlib import StreamsConfig
from streamlib.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.parts)
# Markdown files whose links must stay inside the repository (README too).
LINKED = PAGES + [ROOT / "README.md"]
_PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def python_blocks(page: Path) -> list[str]:
    return _PYTHON_BLOCK.findall(page.read_text(encoding="utf-8"))


def _pages_with_code() -> list[Path]:
    """Pages with Python blocks (the README's tour runs in tests/spark/test_examples_cli_bugs.py)."""
    return [p for p in PAGES if python_blocks(p)]


@pytest.mark.parametrize("page", _pages_with_code(), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_code_blocks_of_a_page_run_in_order(page, tmp_path):
    """Each page's blocks run top to bottom in one fresh interpreter, in an empty directory
    (pages that run an application write their topics there)."""
    script = "\n".join(python_blocks(page))
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, f"{page.name}:\n{done.stderr[-3000:]}"


def test_describing_the_readme_tour_runs_none_of_it(tmp_path):
    tour = tmp_path / "tour.py"
    tour.write_text(python_blocks(ROOT / "README.md")[0])
    done = subprocess.run([sys.executable, "-m", "streamlib", "describe", str(tour)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert "Changelog: tour-counts-changelog (store: counts)" in done.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tour.py"], "describe ran the tour"


def test_the_configuration_page_documents_every_streams_config_field():
    page = (DOCS / "configuration.md").read_text(encoding="utf-8")
    missing = [f.name for f in dataclasses.fields(StreamsConfig) if f"| `{f.name}` |" not in page]
    assert not missing, f"docs/configuration.md lacks {missing}"


def test_the_cli_page_documents_every_command():
    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    commands = build_parser()._subparsers._group_actions[0].choices  # noqa: SLF001 - argparse has no API for it
    missing = [name for name in commands if f"| `{name}" not in page and f"`topics {name}" not in page]
    assert not missing, f"docs/cli.md lacks {missing}"
    for action in commands["topics"]._subparsers._group_actions[0].choices:  # noqa: SLF001
        assert f"| `topics {action}" in page


def test_every_dsl_class_has_an_api_page():
    import streamlib

    classes = [name for name in streamlib.__all__ if name[0].isupper() and not name.endswith("Error")
               and name != "Serde"]
    missing = [name for name in classes if not (DOCS / "api" / f"{name}.md").exists()]
    assert not missing, f"docs/api/ lacks pages for {missing}"


@pytest.mark.parametrize("page", LINKED, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_stay_inside_the_repository_and_resolve(page):
    for target in _LINK.findall(page.read_text(encoding="utf-8")):
        if target.startswith("#"):
            continue
        assert "://" not in target, f"{page.name} links outside the repository: {target}"
        path = (page.parent / target.split("#")[0]).resolve()
        assert path.is_relative_to(ROOT), f"{page.name} links outside the repository: {target}"
        assert path.exists(), f"{page.name} links to a missing file: {target}"


def test_sphinx_builds_the_site_without_warnings(tmp_path):
    done = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                           str(DOCS), str(tmp_path / "html")], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-5000:]
