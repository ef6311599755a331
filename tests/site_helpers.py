"""What the site tests share: where the built site is, and the docs builder as a module."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: the built site (``make docs``); FEDLIB_SITE points elsewhere
SITE = Path(os.environ.get("FEDLIB_SITE") or ROOT / "build" / "site")


def docs_build():
    """``docs/build.py`` imported as a module (it is a script, not part of the package)."""
    spec = importlib.util.spec_from_file_location("fedlib_docs_build", ROOT / "docs" / "build.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module
