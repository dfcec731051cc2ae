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
    "sphinx.ext.intersphinx",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "sphinx_copybutton",
]

templates_path = []
exclude_patterns = ["_build"]
master_doc = "index"

autodoc_member_order = "bysource"
autodoc_typehints = "description"

# Every cross-reference must resolve (the build runs with -W -n).
nitpicky = True
# The type variable of the constructors that return their own class
# (RoundRobinDistributor.from_list(...) is a RoundRobinDistributor): a
# private name, documented by the methods' prose.
nitpick_ignore = [("py:class", "pylighthouse.distributors._Self"),
                  ("py:class", "pylighthouse.distributors._BinPack"),
                  ("py:class", "pylighthouse.bestfit._BestFit")]

# Links into the Python documentation. The build must not need the network,
# so the inventory is a short local list of the standard-library names these
# pages mention (Sphinx's plain-text inventory format): add a line there
# when a page refers to another one.
intersphinx_mapping = {
    "python": ("https://docs.python.org/3", "python-inventory.txt"),
}

# The copy button leaves out prompts and the output of examples.
copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True

# -- Options for HTML output -------------------------------------------------

html_theme = "furo"
html_title = f"pylighthouse {release}"
html_static_path = []
