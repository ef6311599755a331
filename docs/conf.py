"""Sphinx configuration of the fedlib companion site (built by ``docs/build.py``; see its docstring).

Stack: Sphinx with MyST-NB (renders the committed notebooks from their stored outputs, never
executing them), the PyData theme (the theme of the numpy, pandas and scikit-learn docs), autodoc
with napoleon for the Google-style docstrings, and MathJax 3 (Apache 2.0) served from the site
itself (the copy that the PyPI package ``sphinx-mathjax-offline`` carries), so that no page loads
anything from the network.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

project = "fedlib"
author = "the fedlib developers"
copyright = "the fedlib developers"

from fedlib import __version__  # noqa: E402

version = release = __version__
extensions = ["myst_nb", "sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.mathjax",
              "sphinx.ext.viewcode"]

# notebooks: rendered from their committed outputs
nb_execution_mode = "off"
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3
exclude_patterns = ["_build", "**.ipynb_checkpoints"]

# docstrings: Google style with type hints in the signature
napoleon_google_docstring = True
napoleon_numpy_docstring = False
# the algorithms list their options (name (default ...): what it does) as a section of its own
napoleon_custom_sections = [("Options", "params_style")]
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"members": True}

# MathJax 3 with SVG output, from the site's own _static/mathjax (copied there by docs/build.py)
mathjax_path = "mathjax/tex-svg.js"
mathjax3_config = {"svg": {"fontCache": "global"}}

html_theme = "pydata_sphinx_theme"
html_title = f"fedlib {release}"
html_static_path = ["_static"]
html_css_files = ["fedlib.css"]
html_js_files = ["ledger.js", "zoom.js"]
html_show_sourcelink = False
html_copy_source = False
# search results without page summaries: a summary is fetched from the result page, which a browser
# refuses for pages opened from disk (file://)
html_show_search_summary = False
# the theme reads its colour mode from here; left empty, every page logs an error
html_context = {"default_mode": "auto"}
html_theme_options = {
    "navigation_with_keys": False,
    "show_prev_next": True,
    "navbar_end": ["theme-switcher"],
    "footer_start": ["copyright"],
    "footer_end": [],
    # the wide pages (the ledger, the gallery) use the whole width: no page table of contents
    "secondary_sidebar_items": {"**": ["page-toc"], "ledger": [], "gallery": [], "index": []},
}
# no left sidebar on the pages that are one table, one grid or the landing page
html_sidebars = {"ledger": [], "gallery": [], "index": [], "notebooks/[0-9]*": [], "papers/*": []}


def _generated_static(app, config):
    """The generated sources' ``_static`` (MathJax, copied there by ``docs/build.py``) is served
    beside ``docs/_static``: relative entries of ``html_static_path`` are read from this folder."""
    generated = Path(app.srcdir) / "_static"
    if generated.is_dir():
        config.html_static_path = [*config.html_static_path, str(generated)]


def setup(app):
    app.connect("config-inited", _generated_static)
    return {"parallel_read_safe": True}
