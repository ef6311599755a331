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


def test_every_figure_file_is_described_and_found_among_its_notebooks_outputs():
    # an alt text and a gallery caption say what each figure shows: a new figure file needs its
    # words in docs/site_content.py, and its notebook must display it (the gallery links there)
    for folder in sorted(p for p in (ROOT / "figures").iterdir() if p.is_dir()):
        stems = {p.stem for p in folder.glob("*.png")}
        nb = ROOT / "notebooks" / f"{folder.name}.ipynb"
        shown = {f.stem for f in build.figure_outputs(folder.name, json.loads(nb.read_text()))}
        assert stems <= shown, f"{folder.name}: figures not matched to an output: {sorted(stems - shown)}"
        for stem in stems:
            spec = build.site_content.figure_spec(folder.name, stem)
            assert spec is not None and len(spec.shows) > 20, f"{folder.name}/{stem}.png: no description"


def test_gallery_has_one_card_per_figure_with_the_verdicts_it_supports():
    with open(ROOT / "figures" / "claims_ledger.csv", newline="") as f:
        ledger = list(csv.DictReader(f))
    cards = build.gallery_cards(ledger, "")
    assert len(cards) == len(list((ROOT / "figures").glob("*/*.png")))
    fig1a = next(c for n, c in cards if "fig1a_figs5-7_rounds.png" in c)
    n = sum(r["notebook"] == "02_fedsum_main" and "Fig. 1(a)" in r["where"] for r in ledger)
    assert n > 0 and f"supports {n} claim rows" in fig1a
    assert 'href="notebooks/02_fedsum_main.html#fig-fig1a_figs5-7_rounds"' in fig1a


def test_paper_pages_count_verdicts_from_the_ledger_and_cite_only_known_arxiv_ids():
    with open(ROOT / "figures" / "claims_ledger.csv", newline="") as f:
        ledger = list(csv.DictReader(f))
    sources = "\n".join(p.read_text() for p in (ROOT / "fedlib").rglob("*.py"))
    for paper in build.site_content.PAPERS:
        rows = [r for r in ledger if r["paper"] == paper.key]
        page = build.paper_page(paper, ledger)
        assert f"{len(rows)} claim rows" in page
        assert "| all | " in page and page.count("| [") >= len({r['notebook'] for r in rows})
        # never an invented identifier: each arXiv id is one the package's docstrings cite
        assert paper.arxiv is None or f"arXiv:{paper.arxiv}" in sources, paper.key
        assert paper.arxiv is None or f"eprint = {{{paper.arxiv}}}" in build.cite_page()


def test_api_index_groups_every_public_module_once(tmp_path):
    pytest.importorskip("sphinx", reason="the docs extra: pip install -e '.[docs]'")
    build.api_pages(tmp_path)
    index = (tmp_path / "api" / "index.md").read_text()
    for m in build.public_modules():
        assert index.count(f"| [`{m}`]({m}.md) |") == 1, m
    assert "## Internals" in index
    assert "`fedsum`" in (tmp_path / "api" / "fedlib.algorithms.fedsum.md").read_text()


def test_split_setting_separates_the_profile():
    assert build.split_setting("MNIST, P1, quick profile (MNIST, K = 5)") == \
        ("MNIST, P1", "quick profile (MNIST, K = 5)")
    assert build.split_setting("no profile here") == ("no profile here", "")
    # a toy's setting without a profile: cut at the first comma outside parentheses
    assert build.split_setting("uniform (4 of 16), least squares n = 8000, d = 50") == \
        ("uniform (4 of 16)", "least squares n = 8000, d = 50")


def _ledger() -> list[dict[str, str]]:
    with open(ROOT / "figures" / "claims_ledger.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_no_ledger_row_is_counted_by_two_figures():
    """The gallery's "supports N claim rows": a row rests on one figure at most (two figures that
    both claimed all of notebook 09's rows counted them twice)."""
    ledger = _ledger()
    seen: dict[int, str] = {}
    for notebook, figures in build.site_content.FIGURES.items():
        for stem, spec in figures.items():
            for r in build.supported_rows(notebook, spec, ledger):
                i = ledger.index(r)
                assert i not in seen, f"row {i} ({r['claim']}) under {seen.get(i)} and {notebook}/{stem}"
                seen[i] = f"{notebook}/{stem}"
    for notebook in ("01_participation_delays", "04_focus_toy", "09_real_availability"):
        rows = [r for r in ledger if r["notebook"] == notebook]
        assert all(ledger.index(r) in seen for r in rows), notebook     # every row on its figure


def test_the_scope_note_counts_claims_and_splits_the_untested_rows():
    """What the counts are is said beside them, from the rows: distinct claims, and the "not tested"
    rows not run here against those run and set aside (their cause names no "not run here")."""
    from fedlib.claims import NOT_TESTED, was_run
    ledger = _ledger()
    note = build.scope_note(ledger)
    untested = [r for r in ledger if r["verdict"] == NOT_TESTED]
    not_run = sum(not was_run(r["cause"]) for r in untested)
    claims = len({(r["paper"], r["where"], r["claim"]) for r in ledger})
    assert f"{len(ledger)} rows ask {claims} distinct" in note
    assert f"Of the {len(untested)} not tested, {not_run} were not run here" in note
    assert f"and {len(untested) - not_run} were run and set aside" in note and 0 < not_run < len(untested)
    import html
    assert html.escape(note) in build.landing_page("# fedlib\n\nA library.", "start", ledger, {})


def test_a_rows_expander_says_what_is_compared_and_why_it_holds():
    row = {"notebook": "02_x", "paper": "FedSUM", "where": "Fig. 1", "quote": "q", "setting": "s",
           "claim": "c", "verdict": "holds", "direction": "", "effect": "3", "ci_low": "1", "ci_high": "5",
           "threshold": "0", "margin": "1", "seeds": "5", "cause": "",
           "numbers": "A vs B (lower is better): seed 0: 1 vs 4"}
    html_ = build.claims_table([row], "")
    assert "<b>Compared:</b> A vs B (lower is better)" in html_
    assert "the 95% interval [1, 5] lies above the threshold 0" in html_
    untested = {**row, "verdict": "not tested", "effect": "", "ci_low": "", "ci_high": "", "cause": "not run"}
    html_ = build.claims_table([untested], "")
    assert "no interval: the comparison was not made" in html_ and "[, ]" not in html_


def test_module_summaries_show_no_roles_and_keep_abbreviations():
    assert build.module_summary("fedlib.delays").endswith("and their bounds (App. F).")
    assert ":class:" not in build.module_summary("fedlib.participation")
    assert "`Schedule`" in build.module_summary("fedlib.participation")


def test_a_notebook_page_says_how_to_reproduce_it_with_its_stores_numbers():
    import json as json_
    note = build.reproduce_note("08_amplified_fedavg")
    metas = list((ROOT / "results" / "08_amplified_fedavg" / "quick").glob("*/meta.json"))
    hours = sum(float(json_.loads(m.read_text()).get("run_seconds") or 0) for m in metas) / 3600
    assert "`make figures NB=08_amplified_fedavg`" in note and f"its {len(metas)} committed runs" in note
    assert f"took {hours:.1f} hours" in note and "`make campaign NB=08_amplified_fedavg`" in note
    assert "computes everything it shows" in build.reproduce_note("04_focus_toy")
