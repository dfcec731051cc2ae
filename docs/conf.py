"""Sphinx configuration for the pylighthouse documentation."""

import os
import sys

sys.path.insert(0, os.path.abspath('..'))

import pylighthouse  # noqa: E402

# -- Project information -----------------------------------------------------

project = "pylighthouse"
author = "the pylighthouse authors"
copyright = "2018-2026, the pylighthouse authors"

# The short X.Y version and the full version, including any suffix.
release = pylighthouse.__version__
version = ".".join(release.split(".")[:2])

# -- General configuration ---------------------------------------------------

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
]

templates_path = []
exclude_patterns = ["_build"]
master_doc = "index"

autodoc_member_order = "bysource"
autodoc_typehints = "description"

nitpicky = False

# -- Options for HTML output -------------------------------------------------

html_theme = "alabaster"
html_static_path = []
