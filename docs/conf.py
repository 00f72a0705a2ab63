"""Sphinx configuration of streamlib's documentation (``make docs``: warnings are errors)."""
import os
import sys

sys.path.insert(0, os.path.abspath(".."))

project = "streamlib"
author = "streamlib developers"
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",       # numpydoc-style docstrings (Parameters, Returns, Examples)
    "myst_parser",               # pages in Markdown
]
napoleon_google_docstring = False
napoleon_numpy_docstring = True
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": False}
# Streams imports pyspark lazily; documenting it needs pyspark importable (it is a dependency).
myst_heading_anchors = 3
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build"]
html_theme = "alabaster"
html_title = "streamlib"
nitpicky = False
