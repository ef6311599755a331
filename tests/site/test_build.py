"""``docs/build.py``: how the README, the notebooks and the ledger become the site's sources."""

from __future__ import annotations

import csv
import json

import pytest

from ..site_helpers import ROOT, docs_build

build = docs_build()


def test_readme_sections_split_on_level_two_headings_outside_code():
    text = "# Title\nintro\n## A\none\n```bash\n## not a heading\n```\n## B\ntwo\n"
    preamble, sections = build.readme_sections(text)
    assert preamble == "# Title\nintro"
    assert [t for t, _ in sections] == ["A", "B"]
    assert "## not a heading" in sections[0][1]


def test_links_to_repository_files_point_at_the_sites_pages():
    md = ("[ledger](figures/claims_ledger.csv), [t](figures/02_fedsum_main/claims.md), "
          "[m](fedlib/claims.py), [web](https://flower.ai), [b](benchmarks/README.md), ![i](x.png)")
    out = build.rewrite_links(md, depth=1)
    assert "[ledger](../ledger.md)" in out
    assert "[t](../notebooks/02_fedsum_main.ipynb)" in out
    assert "[m](../api/fedlib.claims.md)" in out
    assert "[web](https://flower.ai)" in out
    # a file the site does not carry keeps its text and says where it is: nothing silently dropped
    assert "b (`benchmarks/README.md` in the repository)" in out
    assert "![i](x.png)" in out
    assert build.rewrite_links("[l](figures/claims_ledger.md)", depth=0) == "[l](ledger.md)"


def test_notebook_links_point_at_html_in_outputs_and_at_sources_in_cells():
    assert build.notebook_target("../figures/claims_ledger.md", html=True) == "../ledger.html"
    assert build.notebook_target("../figures/claims_ledger.md", html=False) == "../ledger.md"
    assert build.notebook_target("../figures/03_fedsum_ablations/claims.md", html=True) == \
        "03_fedsum_ablations.html"
    assert build.notebook_target("https://example.org/a.md", html=True) == "https://example.org/a.md"
    nb = {"cells": [
        {"cell_type": "markdown", "source": ["see [the ledger](../figures/claims_ledger.md)"]},
        {"cell_type": "code", "source": "", "outputs": [
            {"output_type": "display_data",
             "data": {"text/markdown": ["[l](../figures/claims_ledger.md)"]}}]}]}
    out = build.notebook_for_site(nb)
    assert out["cells"][0]["source"] == "see [the ledger](../ledger.md)"
    assert out["cells"][1]["outputs"][0]["data"]["text/markdown"] == "[l](../ledger.html)"


def test_promote_raises_subsection_headings_outside_code():
    assert build.promote("### A\n```\n### code\n```\n#### B") == "## A\n```\n### code\n```\n### B"


def test_ledger_page_has_one_row_per_claim_and_names_missing_columns(tmp_path):
    ledger = ROOT / "figures" / "claims_ledger.csv"
    with open(ledger, newline="") as f:
        n = sum(1 for _ in csv.DictReader(f))
    page = build.ledger_page(ledger)
    assert page.count('<tr class="claim"') == n and f"{n} of {n} rows" in page
    bad = tmp_path / "bad.csv"
    bad.write_text("notebook,paper\n01,FedSUM\n")
    with pytest.raises(ValueError, match="ledger columns .*'where'"):
        build.ledger_page(bad)


def test_public_modules_are_every_module_not_private():
    mods = build.public_modules()
    assert {"fedlib", "fedlib.claims", "fedlib.algorithms.fedsum", "fedlib.studies.real"} <= set(mods)
    assert not [m for m in mods if any(part.startswith("_") for part in m.split("."))]


def test_sources_hold_every_readme_section_every_notebook_and_mathjax(tmp_path):
    pytest.importorskip("sphinx", reason="the docs extra: pip install -e '.[docs]'")
    src = tmp_path / "src"
    build.write_sources(src)
    _, sections = build.readme_sections((ROOT / "README.md").read_text())
    pages = "\n".join(p.read_text() for p in src.rglob("*.md"))
    missing = [t for t, _ in sections if f"# {t}\n" not in pages]
    assert not missing, f"README sections without a page: {missing}"
    notebooks = sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert sorted(p.name for p in (src / "notebooks").glob("*.ipynb")) == notebooks
    for name in notebooks:   # same cells, outputs kept
        a = json.loads((ROOT / "notebooks" / name).read_text())
        b = json.loads((src / "notebooks" / name).read_text())
        assert len(a["cells"]) == len(b["cells"])
        def outputs(nb):
            return [len(c.get("outputs", [])) for c in nb["cells"]]
        assert outputs(a) == outputs(b)
    assert (src / "_static" / "mathjax" / "tex-svg.js").stat().st_size > 1_000_000
