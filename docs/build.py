"""Build the companion's static site from the committed sources, executing nothing.

``python docs/build.py [--out build/site]`` lays out a Sphinx source tree under
``build/site-src/`` (the notebooks with their committed outputs, pages cut from the README, the
claims ledger as a filterable table, one API page per public module, a local copy of MathJax) and
runs ``sphinx-build -W`` on it with ``docs/conf.py``, so that any warning (a broken reference, a
missing image, a docstring that does not parse) fails the build. Nothing is fetched: the notebooks
are rendered from their stored outputs and MathJax is served from the site itself.
"""

from __future__ import annotations

import argparse
import base64
import csv
import hashlib
import html
import importlib
import importlib.util
import json
import pkgutil
import re
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS))
import site_content  # noqa: E402  (docs/site_content.py: the words no file computes)

#: the README section (``## `` heading) that heads the notebooks' index; every other section becomes
#: a guide page of its kind (``site_content.GUIDE_KINDS``), or the contributing page
NOTEBOOK_SECTION = "Notebooks"
#: the README section whose ``### Algorithms`` subsection holds the algorithms' table
ALGORITHMS_IN = "Sweeps, the results store, verification"
#: ledger columns shown in the site's table (all of ``fedlib.claims.LEDGER_COLUMNS`` but the setting,
#: which is long and the same for most rows of a notebook: it is shown on hover of the claim)
LEDGER_SHOWN = ("notebook", "paper", "where", "quote", "claim", "verdict", "direction", "effect", "ci_low",
                "ci_high", "threshold", "margin", "seeds", "cause")


#: a Markdown link ``[text](target)`` that is not an image
_LINK = re.compile(r"(?<!!)\[([^\]]+)\]\(([^)\s]+)\)")


def slug(title: str) -> str:
    """A file name for a README section title: lower case, words joined by ``-``."""
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def readme_sections(text: str) -> tuple[str, list[tuple[str, str]]]:
    """Split the README into its preamble (before the first ``## ``) and its ``## `` sections.

    Headings inside fenced code blocks are not headings. Returns ``(preamble, [(title, body)])``
    where ``body`` holds the lines after the heading up to the next one.
    """
    preamble: list[str] = []
    sections: list[tuple[str, list[str]]] = []
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and line.startswith("## "):
            sections.append((line[3:].strip(), []))
            continue
        (sections[-1][1] if sections else preamble).append(line)
    return "\n".join(preamble), [(t, "\n".join(b).strip("\n")) for t, b in sections]


def site_target(target: str, depth: int) -> str | None:
    """Where a README link to a repository file points in the site, relative to a page ``depth``
    folders below the source root, or None when the site has no page for that file.

    ``figures/claims_ledger.*`` -> the ledger page; ``figures/NN_name/...`` and
    ``notebooks/NN_name.*`` -> that notebook's page; ``fedlib/x/y.py`` -> the API page of
    ``fedlib.x.y``.
    """
    up = "../" * depth
    if re.fullmatch(r"figures/claims_ledger\.(csv|md)", target):
        return f"{up}ledger.md"
    m = re.fullmatch(r"(?:figures|notebooks)/(\d\d_[a-z0-9_]+)(?:/.*|\.ipynb|\.py)?", target)
    if m and (ROOT / "notebooks" / f"{m.group(1)}.ipynb").exists():
        return f"{up}notebooks/{m.group(1)}.ipynb"
    m = re.fullmatch(r"(fedlib(?:/\w+)*)(?:/__init__)?\.py", target)
    if m:
        return f"{up}api/{m.group(1).replace('/', '.')}.md"
    return None


def notebook_target(target: str, html: bool) -> str:
    """A link written in a notebook (relative to ``notebooks/``, as JupyterLab follows it) as it
    points from the notebook's page: to a page of the site where there is one (``.html`` in an
    output, which is rendered as is; the source ``.md`` in a markdown cell, which Sphinx resolves),
    else unchanged. The ledger and a notebook's own tables (``figures/NN_name/...``, which its page
    shows) are such pages."""
    if re.match(r"[a-z]+://|mailto:|#", target):
        return target
    repo = target[3:] if target.startswith("../") else f"notebooks/{target}"
    page = site_target(repo, 1)
    if page is None:
        return target
    if html:
        page = re.sub(r"\.(md|ipynb)$", ".html", page)
    return page.replace("../notebooks/", "")


def notebook_for_site(nb: dict) -> dict:
    """A notebook's JSON with its links to repository files pointed at the site's pages, in the
    markdown cells and in the Markdown outputs (:func:`notebook_target`)."""
    def fix(text: str, html: bool) -> str:
        return _LINK.sub(lambda m: f"[{m.group(1)}]({notebook_target(m.group(2), html)})", text)

    def join(src) -> str:
        return "".join(src) if isinstance(src, list) else src
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            cell["source"] = fix(join(cell["source"]), html=False)
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if "text/markdown" in data:
                data["text/markdown"] = fix(join(data["text/markdown"]), html=True)
    return nb


@dataclass(frozen=True)
class FigureOutput:
    """An image output of a notebook: the sha256 of its PNG (the name MyST-NB gives its file under
    ``_images/``), the figure file it was saved as (``figures/<notebook>/<stem>.png``; None when no
    file name of the folder occurs in its cell), and the heading and anchor of its section."""

    notebook: str
    digest: str
    stem: str | None
    heading: str
    anchor: str

    @property
    def alt(self) -> str:
        """What the figure shows, for its ``alt`` text and the gallery's caption."""
        spec = site_content.figure_spec(self.notebook, self.stem) if self.stem else None
        if spec is None:
            return f"Figure of notebook {self.notebook}, section: {plain(self.heading)}"
        return f"{spec.label}: {spec.shows} (notebook {self.notebook})"

    @property
    def element_id(self) -> str:
        """The id the image carries on its notebook's page (``fig-<stem>``, or its section's)."""
        return f"fig-{self.stem}" if self.stem else self.anchor


def plain(text: str) -> str:
    """A heading's text without Markdown marks and TeX (for an ``alt`` text)."""
    def untex(m: re.Match) -> str:
        return re.sub(r"\\(mathbb|text|mathrm)\s*|\\|[{}]", "", m.group(1))
    text = re.sub(r"\$([^$]*)\$", untex, text)
    return text.replace("`", "").replace("*", "")


def figure_outputs(name: str, nb: dict) -> list[FigureOutput]:
    """Every PNG output of notebook ``name`` in order, matched to the figure files of
    ``figures/<name>/`` that its cell's source names (a name, or a name less its last ``_part``
    when the cell builds it, e.g. ``fig11_family_{dataset}``), in their order in the source."""
    from docutils.nodes import make_id
    stems = sorted(p.stem for p in (ROOT / "figures" / name).glob("*.png"))
    out, heading, anchor, used = [], name, "", set()
    for cell in nb["cells"]:
        src = _join(cell["source"])
        if cell["cell_type"] == "markdown":
            for line in src.splitlines():
                m = re.match(r"#{1,6}\s+(.*)", line)
                if m:
                    heading, anchor = m.group(1).strip(), make_id(m.group(1))
            continue
        images = [base64.b64decode(_join(o["data"]["image/png"])) for o in cell.get("outputs", [])
                  if "image/png" in o.get("data", {})]
        if not images:
            continue

        def position(stem: str, src: str = src) -> int:
            """Where the cell's source names the figure file: as a string, or as an f-string
            that ends in one field (``f"fig11_family_{ds}"``); -1 when it does not."""
            for pattern in (rf"""["']{re.escape(stem)}["']""",
                            rf"""["']{re.escape(stem.rsplit('_', 1)[0])}_{{\w+}}["']"""):
                m = re.search(pattern, src)
                if m:
                    return m.start()
            return -1
        named = sorted((position(s), s) for s in stems if s not in used and position(s) >= 0)
        for k, png in enumerate(images):
            stem = named[k][1] if k < len(named) else None
            if stem:
                used.add(stem)
            out.append(FigureOutput(name, hashlib.sha256(png).hexdigest(), stem, heading, anchor))
    return out


def figure_strip(figs: list[FigureOutput], name: str) -> str:
    """Raw HTML under a notebook's title: its downloads and one thumbnail per figure of the page,
    each a link to the figure (results before the code that made them)."""
    thumbs = "".join(
        f'<a class="fig-thumb" href="#{f.element_id}"><img src="../_static/gallery/{name}/{f.stem}.png" '
        f'alt="{html.escape(f.alt)}"></a>' for f in figs if f.stem)
    strip = f'<div class="fig-strip">{thumbs}</div>' if thumbs else ""
    return ("\n```{raw} html\n"
            f'<p class="nb-downloads">Download this notebook: <a href="../_static/notebooks/{name}.ipynb" '
            f'download>{name}.ipynb</a> (with its outputs) &middot; <a href="../_static/notebooks/{name}.py" '
            f'download>{name}.py</a> (its jupytext source). The code of each cell is folded under its '
            "results "
            "(&ldquo;Show code cell source&rdquo;); a click on a figure enlarges it.</p>"
            f"{strip}\n```\n")


def dress_notebook(nb: dict, name: str, ledger: list[dict[str, str]]) -> dict:
    """The site's copy of a notebook made for reading, its outputs kept: every code cell's source
    folded under its outputs (MyST-NB's ``hide-input`` tag), the downloads and the figures'
    thumbnails under the title (:func:`figure_strip`), and a table of claims that the notebook
    displays (a DataFrame with ``verdict`` and ``cause`` columns) drawn as the ledger's
    :func:`claims_table` from the ledger's rows of this notebook."""
    figs = figure_outputs(name, nb)
    titled = False
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            tags = cell.setdefault("metadata", {}).setdefault("tags", [])
            if "hide-input" not in tags and "remove-input" not in tags:
                tags.append("hide-input")
            rows = [r for r in ledger if r["notebook"] == name]
            for out in cell.get("outputs", []):
                table = _join(out.get("data", {}).get("text/html", ""))
                if rows and "<th>verdict</th>" in table and "<th>cause</th>" in table:
                    out["data"]["text/html"] = claims_table(rows, "../", table_id=f"claims-{name[:2]}",
                                                            groups=False)
        elif not titled:
            lines = _join(cell["source"]).split("\n")
            at = next((i for i, line in enumerate(lines) if line.startswith("# ")), None)
            if at is not None:
                lines.insert(at + 1, figure_strip(figs, name) + "\n\n" + reproduce_note(name))
                cell["source"] = "\n".join(lines)
                titled = True
    return nb


def reproduce_note(name: str) -> str:
    """How to regenerate a notebook's page (Markdown, under its title): the command, whether it reads
    committed runs (how many, and their run time summed from their ``meta.json``) or computes all it
    shows, and the command of its paper-profile campaign where it has one."""
    from fedlib.campaign import CAMPAIGNS
    from fedlib.notebook import store_path
    profile = notebook_profile(name)
    metas = sorted(store_path(name, profile, ROOT).glob("*/meta.json")) if profile != "unknown" else []
    seconds = sum(float(json.loads(m.read_text()).get("run_seconds") or 0) for m in metas)
    text = (f"**Reproduce this page:** `make figures NB={name}` executes this notebook at its defaults "
            f"(the {profile} profile)")
    if metas:
        text += (f", reading its {len(metas)} committed runs from `results/{name}/{profile}/` (minutes; "
                 f"computing them took {seconds / 3600:.1f} hours of run time when they were "
                 "stored, and a run missing from the store is computed as the notebook runs)")
    else:
        text += " and computes everything it shows as it runs"
    if name in CAMPAIGNS:
        text += f". The paper's own settings, on a GPU: `make campaign NB={name}`"
    return text + "."


def rewrite_links(markdown: str, depth: int) -> str:
    """README links made to work in the site: web links stay, links to repository files point at
    the page that shows them (:func:`site_target`), and a link to a file the site does not carry
    becomes its text followed by the path in code, so nothing breaks and nothing is dropped."""
    def one(m: re.Match) -> str:
        text, target = m.group(1), m.group(2)
        if re.match(r"[a-z]+://|mailto:|#", target):
            return m.group(0)
        page = site_target(target, depth)
        return f"[{text}]({page})" if page else f"{text} (`{target}` in the repository)"
    return _LINK.sub(one, markdown)


def promote(markdown: str) -> str:
    """Headings of a README section one level up (``### `` -> ``## ``), outside code fences, so
    that the section's subsections sit right below its page title."""
    out, fenced = [], False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        out.append(line[1:] if not fenced and line.startswith("###") else line)
    return "\n".join(out)


def split_setting(setting: str) -> tuple[str, str]:
    """A ledger setting cut into what differs between rows (``MNIST, P1``) and the profile's
    description that follows it (``quick profile (...)``); a setting that names no profile (the
    toy notebooks 01, 04, 06) is cut at its first comma outside parentheses (``full
    participation`` | ``least squares n = 8000, ...``), and kept whole when it has none."""
    m = re.match(r"(.*?),\s*((?:smoke|quick|paper) profile\b.*)$", setting)
    if m:
        return m.group(1), m.group(2)
    depth = 0                          # no profile (a toy computed in the notebook): cut at the first
    for i, ch in enumerate(setting):   # comma outside parentheses, what differs between rows coming first
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            return setting[:i], setting[i + 1:].strip()
    return setting, ""


def read_ledger(csv_path: Path) -> list[dict[str, str]]:
    """The ledger's rows; a ValueError names the columns the site needs that it lacks."""
    with open(csv_path, newline="") as f:
        rows = list(csv.DictReader(f))
    missing = [c for c in LEDGER_SHOWN if rows and c not in rows[0]]
    if missing:
        raise ValueError(f"{csv_path}: ledger columns {missing} missing; expected {list(LEDGER_SHOWN)}")
    return rows


def verdict_badge(verdict: str, n: int | None = None) -> str:
    """A verdict as a coloured badge (class ``verdict v-<verdict>``), with a count when given."""
    text = html.escape(verdict) if n is None else f"{n} {html.escape(verdict)}"
    return f'<span class="verdict v-{slug(verdict)}">{text}</span>'


def verdict_counts(rows: list[dict[str, str]], link: str | None = None) -> str:
    """Badges counting the rows per verdict, in the order of ``fedlib.claims.VERDICTS`` (a verdict
    no row has is left out). ``link``: the ledger page's address with its filters so far (e.g.
    ``ledger.html?paper=FedSUM``), to which each badge links with its verdict added."""
    from fedlib.claims import VERDICTS
    counts = {v: sum(r["verdict"] == v for r in rows) for v in VERDICTS}
    if link is None:
        return " ".join(verdict_badge(v, n) for v, n in counts.items() if n)
    sep = "&amp;" if "?" in link else "?"
    return " ".join(f'<a class="verdict-link" href="{link}{sep}verdict={quote(v)}">{verdict_badge(v, n)}</a>'
                    for v, n in counts.items() if n)


def notebook_headings(nb: dict) -> list[tuple[str, str]]:
    """(heading text, anchor id on its page) of every ``#``-heading of a notebook's markdown cells,
    the anchor as Sphinx makes it (docutils' ``make_id`` of the heading's text)."""
    from docutils.nodes import make_id
    out, fenced = [], False
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        for line in _join(cell["source"]).splitlines():
            if line.startswith("```"):
                fenced = not fenced
            m = None if fenced else re.match(r"(#{1,6})\s+(.*)", line)
            if m:
                out.append((m.group(2).strip(), make_id(m.group(2))))
    return out


def _join(src) -> str:
    return "".join(src) if isinstance(src, list) else src


def claims_anchor(notebook: str) -> str:
    """The anchor of the section of a notebook's page where it checks its claims (its first
    heading that names a claim), or ``""`` (the page's top) when it has none."""
    path = ROOT / "notebooks" / f"{notebook}.ipynb"
    if not path.exists():
        return ""
    for text, anchor in notebook_headings(json.loads(path.read_text()))[1:]:
        if "claim" in text.lower():
            return anchor
    return ""


def claims_table(rows: list[dict[str, str]], up: str, table_id: str = "ledger", groups: bool = True) -> str:
    """Claims as a compact table: one line per claim (claim, where, setting, verdict badge, effect
    with its 95% interval, seeds, a link to its notebook's claims section), the paper's quote, the
    rule's numbers, the whole setting and the cause in an expander (``<details>``) under the claim.
    With ``groups``, rows are grouped under one line per notebook and profile. ``up`` leads from
    the page to the site's root."""
    anchors = {nb: claims_anchor(nb) for nb in {r["notebook"] for r in rows}}
    head = ("<thead><tr><th class=\"c-claim\">claim <small>(click for the quote, numbers and cause)</small>"
            "</th><th class=\"c-where\">where</th><th class=\"c-setting\">setting</th>"
            "<th class=\"c-verdict\">verdict</th><th class=\"c-effect\">effect [95% interval]</th>"
            "<th class=\"c-seeds\">seeds</th><th class=\"c-nb\" title=\"notebook\">nb</th></tr></thead>")
    body, group = [], None
    for r in rows:
        e = html.escape
        short, profile = split_setting(r["setting"])
        nb = r["notebook"]
        link = f'{up}notebooks/{nb}.html' + (f'#{anchors[nb]}' if anchors[nb] else "")
        key = f"{nb}|{profile}"
        if groups and key != group:
            group = key
            body.append(f'<tr class="group" data-group="{e(key)}"><th colspan="7" title="{e(profile)}">'
                        f'<a href="{link}">{e(nb)}</a> <span class="paper">{e(r["paper"])}</span> '
                        f'<span class="profile">{e(profile)}</span>'
                        "</th></tr>")
        interval = f" [{r['ci_low']}, {r['ci_high']}]" if r["ci_low"] or r["ci_high"] else ""
        effect = f"{r['effect']}{interval}" if r["effect"] else "&mdash;"
        printed = r.get("in the paper", "")          # the paper's own numbers, where it prints them
        more = (f'<p><b>{e(r["paper"])}, {e(r["where"])}:</b> &ldquo;{e(r["quote"])}&rdquo;</p>'
                + (f'<p><b>In the paper:</b> {e(printed)}</p>' if printed else "")
                + (f'<p><b>Compared:</b> {e(r["numbers"])}</p>' if r.get("numbers") else "")
                + f'<p><b>Rule numbers:</b> {e(rule_numbers(r))}</p><p><b>Setting:</b> {e(r["setting"])}</p>'
                f'<p><b>Why:</b> {e(verdict_reason(r))}</p>')
        body.append(
            f'<tr class="claim" data-group="{e(key)}" data-paper="{e(r["paper"])}" data-notebook="{e(nb)}" '
            f'data-setting="{e(short)}" data-verdict="{e(r["verdict"])}" '
            f'data-direction="{e(r.get("direction", ""))}">'
            f'<td class="c-claim"><details><summary title="{e(r["claim"])}"><span class="claim-text">'
            f'{e(r["claim"])}</span></summary><div class="claim-more">{more}'
            f"</div></details></td>"
            f'<td class="c-where">{e(r["where"])}</td><td class="c-setting">{e(short)}</td>'
            f'<td class="c-verdict">{verdict_badge(r["verdict"])}'
            + (f' <small class="direction" title="the direction of an inconclusive verdict">'
               f'{e(r["direction"])}</small>' if r.get("direction") else "") + "</td>"
            f'<td class="c-effect">{e(effect) if effect != "&mdash;" else effect}</td>'
            f'<td class="c-seeds">{e(r["seeds"])}</td>'
            f'<td class="c-nb"><a href="{link}" title="the claims section of {e(nb)}">{e(nb[:2])}</a>'
            "</td></tr>")
    return (f'<div class="ledger-wrap"><table id="{table_id}" class="ledger">{head}<tbody>{"".join(body)}'
            "</tbody></table></div>")


def rule_numbers(r: dict[str, str]) -> str:
    """A row's numbers under the verdict rule, in words: effect, interval, threshold, margin and
    seeds, or that no comparison was made (a row with no effect)."""
    if not r["effect"]:
        return f"no interval: the comparison was not made (threshold {r['threshold']}, margin {r['margin']})"
    return (f"effect {r['effect']}, 95% interval [{r['ci_low']}, {r['ci_high']}], "
            f"threshold {r['threshold']}, margin {r['margin']}, seeds {r['seeds']}")


def verdict_reason(r: dict[str, str]) -> str:
    """Why a row has its verdict: its cause, or for a row that holds and names none, the rule's
    reason computed from its numbers (the interval lies above the threshold)."""
    if r["cause"]:
        return r["cause"]
    if r["verdict"] == "holds" and r["ci_low"]:
        return f"the 95% interval [{r['ci_low']}, {r['ci_high']}] lies above the threshold {r['threshold']}"
    return "none stated"


def scope_note(rows: list[dict[str, str]]) -> str:
    """One sentence on what the verdict counts are (computed from the rows and the committed
    stores): which notebooks' runs are computed in full and which are read from a quick-profile
    store, a row per claim and setting (how many distinct claims), and how many of the "not
    tested" rows were not run here and how many were run and set aside."""
    from fedlib.claims import NOT_TESTED, was_run

    def numbered(names: set[str]) -> str:
        nums = sorted(n.split("_")[0] for n in names)
        return ("notebook " if len(nums) == 1 else "notebooks ") + (
            nums[0] if len(nums) == 1 else f"{', '.join(nums[:-1])} and {nums[-1]}")
    notebooks = {r["notebook"] for r in rows}
    stored = {n for n in notebooks if (ROOT / "results" / n / "quick").is_dir()}
    what = [f"{numbered(notebooks - stored)} in full"] if notebooks - stored else []
    what += [f"{numbered(stored)} at the quick profile (MNIST or Fashion-MNIST where a paper's dataset "
             "cannot be had here, shorter horizons; each row's setting says which)"] if stored else []
    claims = len({(r["paper"], r["where"], r["claim"]) for r in rows})
    untested = [r for r in rows if r["verdict"] == NOT_TESTED]
    not_run = sum(not was_run(r["cause"]) for r in untested)
    aside = (f" Of the {len(untested)} not tested, {not_run} were not run here (data or scale out of reach) "
             f"and {len(untested) - not_run} were run and set aside (a rival run outside its paper's "
             "settings, or a choice the paper makes once); each row says why.") if untested else ""
    return (f"Verdicts of the committed runs: {'; '.join(what)}. A row is one claim in one setting: "
            f"{len(rows)} rows ask {claims} distinct claims.{aside}")


def ledger_filters(rows: list[dict[str, str]]) -> str:
    """The ledger's filters: a select per paper, notebook, setting and verdict, a text box (every
    word must occur in the row's text, its expander included) and the count of rows shown."""
    def options(name: str, values: list[str]) -> str:
        opts = "".join(f'<option value="{html.escape(v)}">{html.escape(v)}</option>' for v in values)
        return (f'<label>{name} <select id="ledger-{name}" class="ledger-filter" data-key="{name}">'
                f'<option value="">any</option>{opts}</select></label>')

    def values(key):
        return sorted({split_setting(r["setting"])[0] if key == "setting" else r[key] for r in rows})
    from fedlib.claims import VERDICTS
    return ('<div class="ledger-filters">'
            + "".join(options(k, values(k)) for k in ("paper", "notebook", "setting"))
            + options("verdict", [v for v in VERDICTS if any(r["verdict"] == v for r in rows)])
            + '<label>text <input id="ledger-text" type="search" '
            + 'placeholder="words in a claim, quote or cause">'
            + f'</label><span id="ledger-count">{len(rows)} of {len(rows)} rows</span></div>')


def ledger_page(csv_path: Path) -> str:
    """The claims ledger as one compact table (:func:`claims_table`) under its filters
    (``_static/ledger.js``); one ``<tr class="claim">`` per ledger row."""
    rows = read_ledger(csv_path)
    return "\n".join([
        "# Claims ledger", "",
        "```{raw} html",
        f'<p class="ledger-intro">Every claim that a notebook checks, judged by the one rule of '
        f'<code>fedlib.claims.RULE</code> (<a href="guides/what-holds.html">the rule and its margins</a>): '
        f'{len(rows)} rows of <code>figures/claims_ledger.csv</code>. {verdict_counts(rows)}</p>',
        f'<p class="scope">{html.escape(scope_note(rows))}</p>',
        ledger_filters(rows),
        claims_table(rows, ""),
        "```", ""])


def public_modules() -> list[str]:
    """Every module of the fedlib package whose name does not start with ``_``, sorted."""
    import fedlib
    names = ["fedlib"]
    for info in pkgutil.walk_packages(fedlib.__path__, "fedlib."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return sorted(names)


def module_summary(name: str) -> str:
    """The first sentence of a module's docstring, on one line (its summary in the API index)."""
    doc = (importlib.import_module(name).__doc__ or "").strip()
    para = re.split(r"\n\s*\n", doc, maxsplit=1)[0]
    para = re.sub(r":[a-z]+:`~?([^`<]*?)(?: <[^>]*>)?`", lambda m: f"`{m.group(1)}`", para)   # roles as code
    first = para
    for m in re.finditer(r"\.\s+(?=[A-Z(])", para):      # a sentence ends, not an abbreviation's dot
        if not re.search(r"(?:\b(?:App|Apps|Fig|Figs|Eq|Eqs|Sec|Tab|cf|vs|al|e\.g|i\.e)|\b[A-Z])$",
                         para[:m.start()]):
            first = para[:m.start() + 1]
            break
    return " ".join(first.split()).rstrip(":") or "(no docstring)"


def api_pages(src: Path) -> list[str]:
    """One page per public module (``api/<module>.md``, autodoc of its members; an algorithms
    module also lists the registry names of its classes) and an index grouped by task
    (``site_content.API_GROUPS``; a public module in no group goes under "Other modules", the
    internals apart), each module with its one-line summary."""
    (src / "api").mkdir(parents=True, exist_ok=True)
    modules = public_modules()
    for name in modules:
        module = importlib.import_module(name)
        # a package re-exports its modules' names: its page shows its own docstring and members,
        # the re-exported names are documented once, on their modules' pages
        package = ["   :ignore-module-all:"] if hasattr(module, "__path__") else []
        names = registered_names(name)
        registry = (["Registered algorithms (the names `fedlib.run` accepts; "
                     "[all of them](../algorithms.md)): "
                     + ", ".join(f"`{n}` ({{py:class}}`{c} <{name}.{c}>`)" for n, c in names) + ".", ""]
                    if names else [])
        (src / "api" / f"{name}.md").write_text("\n".join([
            f"# `{name}`", "", *registry, "```{eval-rst}", f".. automodule:: {name}", "   :members:",
            "   :show-inheritance:", *package, "```", ""]))
    grouped = [m for _, ms in site_content.API_GROUPS for m in ms]
    unknown = [m for m in grouped + list(site_content.INTERNALS) if m not in modules]
    if unknown:
        raise ValueError(f"docs/site_content.py: API_GROUPS / INTERNALS name modules that do not exist: "
                         f"{unknown}")
    groups = [*site_content.API_GROUPS,
              ("Other modules", tuple(m for m in modules
                                      if m not in grouped and m not in site_content.INTERNALS)),
              ("Internals (what the package uses itself)", site_content.INTERNALS)]
    index = ["# API reference", "",
             "Generated from the docstrings of every public module of `fedlib`, grouped by task. "
             "The algorithms of the registry by name: [Algorithms](../algorithms.md).", ""]
    for title, members in groups:
        if not members:
            continue
        index += [f"## {title}", "", "| module | what it holds |", "|---|---|"]
        index += [f"| [`{m}`]({m}.md) | {module_summary(m).replace('|', '/')} |" for m in members]
        index += [""]
    # the sidebar of the API pages: the modules under their groups' names
    for title, members in groups:
        if members:
            index += ["```{toctree}", ":hidden:", f":caption: {title}", "", *members, "```", ""]
    (src / "api" / "index.md").write_text("\n".join(index))
    return modules


def notebook_title(name: str) -> str:
    """The title of a notebook (its first ``# `` heading), TeX and Markdown marks removed."""
    for text, _ in notebook_headings(json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text())):
        return plain(text)
    return name


def notebook_profile(name: str) -> str:
    """The profile a notebook's committed outputs were made at: the default of its ``profile``
    parameter (the committed outputs are those of a run at the defaults)."""
    source = (ROOT / "notebooks" / f"{name}.py").read_text()
    m = re.search(r'^profile(?::\s*str)?\s*=\s*"(\w+)"', source, re.M)
    return m.group(1) if m else "unknown"


def supported_rows(notebook: str, spec: site_content.Figure | None,
                   ledger: list[dict[str, str]]) -> list[dict[str, str]]:
    """The ledger rows a figure supports (:class:`site_content.Figure`): none when it names none."""
    if spec is None or spec.where is None:
        return []
    nb = spec.notebook or notebook
    return [r for r in ledger if r["notebook"] == nb and re.search(spec.where, r["where"])
            and re.search(spec.setting, r["setting"])]


def gallery_cards(ledger: list[dict[str, str]], up: str, notebooks: list[str] | None = None,
                  paper: site_content.Paper | None = None) -> list[tuple[str, str]]:
    """(notebook, HTML) of one card per figure file under ``figures/`` (of ``notebooks`` when
    given; of ``paper`` when given, its figures only, not the regime sections'): the thumbnail,
    a link to the figure on its notebook's page, the paper's figure number, what it shows, the
    profile and the verdicts of the ledger rows it supports."""
    cards = []
    for folder in sorted(p for p in (ROOT / "figures").iterdir() if p.is_dir()):
        name = folder.name
        if notebooks is not None and name not in notebooks:
            continue
        nb_path = ROOT / "notebooks" / f"{name}.ipynb"
        outputs = ({f.stem: f for f in figure_outputs(name, json.loads(nb_path.read_text()))}
                   if nb_path.exists() else {})
        for png in sorted(folder.glob("*.png")):
            spec = site_content.figure_spec(name, png.stem)
            if paper is not None and (spec is None or not spec.label.startswith(paper.short)):
                continue
            f = outputs.get(png.stem)
            href = f"{up}notebooks/{name}.html#{f.element_id}" if f else f"{up}notebooks/{name}.html"
            label = spec.label if spec else png.stem
            shows = spec.shows if spec else f"figure {png.name} of notebook {name}"
            rows = supported_rows(name, spec, ledger)
            verdicts = (f'supports {len(rows)} claim row{"s" if len(rows) != 1 else ""}: ' + " ".join(
                verdict_badge(v, n) for v, n in Counter(r["verdict"] for r in rows).items())
                if rows else "no claim row of the ledger")
            alt = f"{label}: {shows} (notebook {name})"
            cards.append((name, (
                f'<figure class="g-card"><a href="{href}"><img src="{up}_static/gallery/{name}/{png.name}" '
                f'alt="{html.escape(alt)}"></a><figcaption><b>{html.escape(label)}</b>: '
                f'{html.escape(shows)}. '
                f'<span class="g-meta">Notebook <a href="{href}">{name[:2]}</a>, {notebook_profile(name)} '
                f'profile; {verdicts}.</span></figcaption></figure>')))
    return cards


def gallery_page(ledger: list[dict[str, str]]) -> str:
    """Every regenerated figure as a thumbnail, under its notebook's title (:func:`gallery_cards`)."""
    cards = gallery_cards(ledger, "")
    out = ["# Gallery", "",
           f"Every figure the notebooks regenerate ({len(cards)} files under `figures/`), with the paper's "
           "figure number, what it shows, the profile of the committed run, and the verdicts of the ledger "
           "rows it supports. A click opens the figure on its notebook's page.", ""]
    for name in sorted({n for n, _ in cards}):
        out += [f"## {name[:2]} &mdash; {notebook_title(name).split(' — ', 1)[-1]}", "", "```{raw} html",
                '<div class="gallery">' + "".join(c for n, c in cards if n == name) + "</div>", "```", ""]
    return "\n".join(out)


def paper_card(paper: site_content.Paper, ledger: list[dict[str, str]], up: str) -> str:
    """A paper's card for the landing page: name, title, authors, arXiv link, verdict counts,
    notebooks."""
    rows = [r for r in ledger if r["paper"] == paper.key]
    arxiv = (f'<a href="https://arxiv.org/abs/{paper.arxiv}">arXiv:{paper.arxiv}</a>' if paper.arxiv
             else "arXiv id not known")
    nbs = " ".join(f'<a class="nb-chip" href="{up}notebooks/{n}.html" '
                   f'title="{html.escape(notebook_title(n))}">'
                   f"{n[:2]}</a>" for n in paper.notebooks)
    return (f'<div class="paper-card"><h3><a href="{up}papers/{paper.slug}.html">'
            f'{html.escape(paper.short)}</a></h3>'
            f'<p class="pc-title">{html.escape(paper.title)}</p>'
            f'<p class="pc-ref">{html.escape(", ".join(paper.authors))} ({paper.year}) &middot; {arxiv}</p>'
            f'<p class="pc-verdicts"><a href="{up}ledger.html?paper={quote(paper.key)}">'
            f'{len(rows)} claim rows</a>: '
            f"{verdict_counts(rows, f'{up}ledger.html?paper={quote(paper.key)}')}</p>"
            f"<p class=\"pc-nbs\">Notebooks {nbs}</p></div>")


def paper_page(paper: site_content.Paper, ledger: list[dict[str, str]]) -> str:
    """One page per paper: reference and arXiv link, the counts per verdict and notebook from the
    ledger, what is regenerated and what not (and why), its notebooks and its figures."""
    rows = [r for r in ledger if r["paper"] == paper.key]
    arxiv = (f"[arXiv:{paper.arxiv}](https://arxiv.org/abs/{paper.arxiv})" if paper.arxiv
             else "its arXiv identifier is not known to this project")
    from fedlib.claims import VERDICTS
    head = "| notebook | " + " | ".join(VERDICTS) + " | rows |"
    table = [head, "|---" * (len(VERDICTS) + 2) + "|"]
    for nb in dict.fromkeys(r["notebook"] for r in rows):
        sub = [r for r in rows if r["notebook"] == nb]
        table.append(f"| [{nb}](../notebooks/{nb}.ipynb) | " + " | ".join(
            str(sum(r["verdict"] == v for r in sub)) for v in VERDICTS) + f" | {len(sub)} |")
    table.append("| all | " + " | ".join(str(sum(r["verdict"] == v for r in rows)) for v in VERDICTS)
                 + f" | {len(rows)} |")
    cards = [c for _, c in gallery_cards(ledger, "../", list(paper.notebooks), paper)]
    return "\n".join([
        f"# {paper.short}", "",
        f"**{paper.title}**  ", f"{', '.join(paper.authors)} ({paper.year}), {paper.venue}. {arxiv}.", "",
        f"<small>Reference read from: {paper.found}.</small>", "",
        "## What holds", "",
        f"{len(rows)} claim rows of the [ledger](../ledger.md) (counted from "
        "`figures/claims_ledger.csv` when "
        f"this page was built):", "", "```{raw} html", f"<p>{verdict_counts(rows)} &middot; "
        f'<a href="../ledger.html?paper={quote(paper.key)}">these rows in the ledger</a></p>', "```", "",
        *table, "", scope_note(rows), "",
        "## What is regenerated", "", *[f"- {t}" for t in paper.regenerated], "",
        "## What is not, and why", "", *[f"- {t}" for t in paper.not_regenerated], "",
        "## Notebooks", "",
        *[f"- [{notebook_title(n)}](../notebooks/{n}.ipynb)" for n in paper.notebooks], "",
        "## Figures", "", "```{raw} html", '<div class="gallery">' + "".join(cards) + "</div>", "```", ""])


def papers_index(ledger: list[dict[str, str]]) -> str:
    cards = "".join(paper_card(p, ledger, "../") for p in site_content.PAPERS)
    return "\n".join(["# Papers", "", "The four papers, one page each.", "", "```{raw} html",
                      f'<div class="paper-cards">{cards}</div>', "```", "", "```{toctree}", ":hidden:", "",
                      *[p.slug for p in site_content.PAPERS], "```", ""])


def cite_page() -> str:
    """BibTeX of fedlib (its name and version, from the package) and of the four papers (from
    :data:`site_content.PAPERS`)."""
    from fedlib import __version__
    entries = ["@software{fedlib,\n"
               "  title = {fedlib: federated learning under arbitrary client participation},\n"
               f"  author = {{{{the fedlib developers}}}},\n  version = {{{__version__}}},\n"
               "  note = {A reproducible companion to FedSUM, FOCUS, FedACS and Wang \\& Ji 2022}\n}"]
    for p in site_content.PAPERS:
        authors = " and ".join(p.authors)
        kind = "inproceedings" if "NeurIPS" in p.venue else "misc"
        venue = f"  booktitle = {{{p.venue}}},\n" if kind == "inproceedings" else ""
        eprint = f"  eprint = {{{p.arxiv}}},\n  archivePrefix = {{arXiv}},\n" if p.arxiv else ""
        entries.append(f"@{kind}{{{p.bibkey},\n  title = {{{p.title}}},\n  author = {{{authors}}},\n"
                       f"{venue}  year = {{{p.year}}},\n{eprint}}}")
    partial = [p.short for p in site_content.PAPERS if all(" " not in a for a in p.authors)]
    return "\n".join([
        "# Cite", "",
        "If you use fedlib, cite it and the papers whose methods and figures you use. The papers' "
        "titles and authors are those of the paper texts the notebooks were written from, their arXiv "
        "identifiers those the package's docstrings cite"
        + (f"; for {', '.join(partial)} only the authors' surnames are known here." if partial else "."), "",
        "```bibtex", "\n\n".join(entries), "```", ""])


def readme_subsection(body: str, title: str) -> str:
    """The text of a ``### title`` subsection of a README section, up to the next heading."""
    m = re.search(rf"^### {re.escape(title)}\n(.*?)(?=^#{{2,3}} |\Z)", body, re.M | re.S)
    if m is None:
        raise ValueError(f"README.md: subsection '### {title}' not found")
    return m.group(1).strip()


def algorithms_page(body: str) -> str:
    """The README's algorithms table (name, paper, messages, memory) with each name linked to its
    class, and every name ``fedlib.run`` accepts with its class and description (the registry)."""
    from fedlib import algorithms

    def link(m: re.Match) -> str:
        try:
            cls = algorithms.get(m.group(1))
        except (KeyError, ValueError):
            return m.group(0)
        return f"{{py:class}}`{m.group(1)} <{cls.__module__}.{cls.__qualname__}>`"
    lines = []
    for line in body.splitlines():
        if line.startswith("| `"):
            first, rest = line[1:].split("|", 1)
            line = "| " + re.sub(r"`(\w+)`", link, first) + "|" + rest
        lines.append(line)
    names = algorithms.available()
    rows = ["| name | class | what it is |", "|---|---|---|"]
    for name, text in names.items():
        cls = algorithms.get(name)
        rows.append(f"| `{name}` | {{py:class}}`{cls.__qualname__} <{cls.__module__}.{cls.__qualname__}>` | "
                    f"{text.replace('|', '/')} |")
    return "\n".join([
        "# Algorithms", "",
        "The algorithms of the registry, by the name `fedlib.run(name, ...)`, "
        "`ExperimentConfig(algorithm=name)` "
        "and the notebooks use. Each links to its class, whose page lists its options.", "",
        *lines, "",
        f"## The names `fedlib.run` accepts ({len(names)})", "",
        "From `fedlib.algorithms.available()`, with the options of each and their defaults:", "",
        *rows, ""])


def registered_names(module: str) -> list[tuple[str, str]]:
    """(name, class name) of the registry's algorithms defined in ``module``."""
    from fedlib import algorithms
    out = []
    for name in algorithms.available():
        cls = algorithms.get(name)
        if cls.__module__ == module:
            out.append((name, cls.__qualname__))
    return out


def landing_page(preamble: str, start: str, ledger: list[dict[str, str]],
                 kinds: dict[str, list[tuple[str, str]]]) -> str:
    """The front door: what this is (the README's opening), the four papers' cards, "start here"
    (install and the three-line example), and the guides by kind."""
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", preamble) if p.strip() and not p.startswith("# ")]
    prose = [p for p in paragraphs if not p.lstrip().startswith("-")]
    lead = " ".join(rewrite_links(re.sub(r":$", ".", p), 0) for p in prose)
    cards = "".join(paper_card(p, ledger, "") for p in site_content.PAPERS)
    n, counts = len(ledger), verdict_counts(ledger, "ledger.html")

    def links(kind: str) -> str:
        return "".join(f'<li><a href="{href}">{html.escape(text)}</a></li>'
                       for text, href in kinds.get(kind, []))
    columns = [("Tutorials", "tutorial"), ("How-to guides", "how-to"), ("Explanations", "explanation"),
               ("Reference", "reference")]
    guide_html = "".join(f'<div class="guide-col"><h3>{t}</h3><ul>{links(k)}</ul></div>' for t, k in columns)
    return "\n".join([
        "# fedlib", "", lead, "",
        "```{raw} html",
        f'<p class="all-claims">All {n} claim rows: {counts} &middot; <a href="ledger.html">the ledger</a> '
        '&middot; <a href="gallery.html">the gallery of figures</a> &middot; '
        '<a href="guides/what-holds.html">how a '
        "verdict is reached</a></p>",
        f'<p class="scope">{html.escape(scope_note(ledger))}</p>',
        f'<div class="paper-cards">{cards}</div>',
        "```", "",
        "## Start here", "",
        "In a clone of the repository, with Python 3.11 and pip:", "",
        "```bash",
        "python -m pip install -e .     # the library (make figures / make test set up .venv themselves)",
        "```", "", rewrite_links(start, 0), "",
        "## Guides", "", "```{raw} html", f'<div class="guide-cols">{guide_html}</div>', "```", "",
        "```{toctree}", ":maxdepth: 1", ":hidden:", "", "papers/index", "gallery", "ledger",
        "notebooks/index",
        "guides/index", "algorithms", "api/index", "cite", "contributing", "```", ""])


def write_sources(src: Path) -> None:
    """Lay out the Sphinx source tree of the site under ``src`` (emptied first)."""
    if src.exists():
        shutil.rmtree(src)
    src.mkdir(parents=True)
    preamble, sections = readme_sections((ROOT / "README.md").read_text())
    titles = [t for t, _ in sections]
    for t in (NOTEBOOK_SECTION, site_content.START_HERE, ALGORITHMS_IN):
        if t not in titles:
            raise ValueError(f"README.md: section '## {t}' not found; sections: {titles}")
    by_title = dict(sections)
    guides = [(t, b) for t, b in sections if t != NOTEBOOK_SECTION]
    ledger = read_ledger(ROOT / "figures" / "claims_ledger.csv")

    nb_dir = src / "notebooks"
    nb_dir.mkdir()
    notebooks = sorted(p for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    copies = src / "_static" / "notebooks"
    copies.mkdir(parents=True)
    for nb in notebooks:
        site_nb = dress_notebook(notebook_for_site(json.loads(nb.read_text())), nb.stem, ledger)
        (nb_dir / nb.name).write_text(json.dumps(site_nb))
        shutil.copy2(nb, copies / nb.name)
        shutil.copy2(nb.with_suffix(".py"), copies / f"{nb.stem}.py")
    for folder in sorted(p for p in (ROOT / "figures").iterdir() if p.is_dir()):
        dest = src / "_static" / "gallery" / folder.name
        dest.mkdir(parents=True)
        for png in folder.glob("*.png"):
            shutil.copy2(png, dest / png.name)
    (nb_dir / "index.md").write_text("\n".join([
        "# Notebooks", "", rewrite_links(by_title[NOTEBOOK_SECTION], 1), "",
        "```{toctree}", ":maxdepth: 1", "", *[nb.stem for nb in notebooks], "```", ""]))

    (src / "ledger.md").write_text(ledger_page(ROOT / "figures" / "claims_ledger.csv"))
    (src / "gallery.md").write_text(gallery_page(ledger))
    (src / "papers").mkdir()
    (src / "papers" / "index.md").write_text(papers_index(ledger))
    for paper in site_content.PAPERS:
        (src / "papers" / f"{paper.slug}.md").write_text(paper_page(paper, ledger))
    (src / "cite.md").write_text(cite_page())
    table = readme_subsection(by_title[ALGORITHMS_IN], "Algorithms")
    (src / "algorithms.md").write_text(algorithms_page(table))

    # the README's sections by kind of guide; "contributing" is a page of its own
    (src / "guides").mkdir()
    kinds: dict[str, list[tuple[str, str]]] = {}
    contributing = ["# Contributing", "",
                    "How the companion is built and tested, and how long that takes; the README says "
                    "the same.", ""]
    for t, body in guides:
        kind = site_content.GUIDE_KINDS.get(t, "how-to")
        if kind == "contributing":
            contributing += [f"## {t}", "", rewrite_links(body, 0), ""]
            continue
        (src / "guides" / f"{slug(t)}.md").write_text(f"# {t}\n\n{promote(rewrite_links(body, 1))}\n")
        label = "What holds: the verdict rule and its margins" if t == "What holds" else t
        kinds.setdefault(kind, []).append((label, f"guides/{slug(t)}.html"))
    (src / "contributing.md").write_text("\n".join(contributing))
    kinds.setdefault("tutorial", []).append(("The notebooks, one per paper experiment",
                                             "notebooks/index.html"))
    kinds.setdefault("reference", [])[:0] = [
        ("API reference, by task", "api/index.html"), ("Algorithms: the registry", "algorithms.html"),
        ("The claims ledger", "ledger.html"), ("The gallery of figures", "gallery.html"),
        ("Cite", "cite.html")]
    kinds["reference"].append(("Contributing: how the site and tests are built, timings",
                               "contributing.html"))
    kinds.setdefault("explanation", []).extend((p.short + ": what is regenerated", f"papers/{p.slug}.html")
                                               for p in site_content.PAPERS)
    captions = {"tutorial": "Tutorials", "how-to": "How-to guides", "explanation": "Explanations",
                "reference": "Reference"}
    index = ["# Guides", "", "The README's guides, one page each, by kind.", ""]
    for kind, caption in captions.items():
        pages = [h[len("guides/"):-len(".html")] for _, h in kinds.get(kind, []) if h.startswith("guides/")]
        if pages:
            index += ["```{toctree}", ":maxdepth: 1", f":caption: {caption}", "", *pages, "```", ""]
    (src / "guides" / "index.md").write_text("\n".join(index))

    (src / "index.md").write_text(landing_page(preamble, by_title[site_content.START_HERE], ledger, kinds))

    api_pages(src)

    copy_mathjax(src / "_static" / "mathjax")


def copy_mathjax(dest: Path) -> None:
    """MathJax 3 with SVG output (``tex-svg.js``: the glyphs are paths inside the script, so no
    font file is loaded, which a browser refuses for pages opened from disk) and the TeX
    extensions it loads on demand, from the copy that the PyPI package ``sphinx-mathjax-offline``
    carries (its Sphinx extension is not used: it would configure the font-based output)."""
    spec = importlib.util.find_spec("sphinx-mathjax-offline")
    if spec is None or spec.origin is None:
        raise RuntimeError("MathJax: the package sphinx-mathjax-offline is missing "
                           "(pip install -e '.[docs]')")
    mathjax = Path(spec.origin).parent / "static" / "mathjax"
    dest.mkdir(parents=True)
    shutil.copy2(mathjax / "tex-svg.js", dest / "tex-svg.js")
    shutil.copytree(mathjax / "input" / "tex" / "extensions", dest / "input" / "tex" / "extensions")


def label_figures(out: Path) -> int:
    """After Sphinx: each notebook figure on its page gets its ``alt`` text (what it shows,
    :attr:`FigureOutput.alt`, where MyST-NB writes the file's path) and the id the thumbnails and
    the gallery link to. Returns how many images were labelled."""
    done = 0
    for nb in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        page = out / "notebooks" / f"{nb.stem}.html"
        if not page.exists():
            continue
        text = page.read_text()
        for f in figure_outputs(nb.stem, json.loads(nb.read_text())):
            img = f'<img alt="../_images/{f.digest}.png" src="../_images/{f.digest}.png"'
            new = (f'<img alt="{html.escape(f.alt)}" class="fig-out" id="{f.element_id}" '
                   f'src="../_images/{f.digest}.png"')
            done += text.count(img)
            text = text.replace(img, new, 1)
        page.write_text(text)
    return done


def fix_viewcode_backlinks(out: Path) -> int:
    """After Sphinx: a ``[docs]`` link of a source page (``sphinx.ext.viewcode``) to an anchor that
    its API page does not have (an object documented under the module that re-exports it, e.g.
    ``fedlib.problems.Neural`` defined in ``fedlib/tasks.py``) points at the top of that page
    instead, so no link leads nowhere. Returns how many links were changed."""
    ids: dict[Path, set[str]] = {}
    changed = 0
    for page in (out / "_modules").rglob("*.html"):
        text = page.read_text()

        def fix(m: re.Match, page: Path = page) -> str:
            nonlocal changed
            target = (page.parent / m.group(1)).resolve()
            if target not in ids:
                ids[target] = (set(re.findall(r'\bid="([^"]+)"', target.read_text()))
                               if target.exists() else set())
            if m.group(2) in ids[target]:
                return m.group(0)
            changed += 1
            return f'<a class="viewcode-back" href="{m.group(1)}">'
        new = re.sub(r'<a class="viewcode-back" href="([^"#]+)#([^"]+)">', fix, text)
        if new != text:
            page.write_text(new)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "build" / "site"), help="HTML output folder")
    parser.add_argument("--src", default=str(ROOT / "build" / "site-src"), help="generated sources")
    args = parser.parse_args(argv)
    src, out = Path(args.src), Path(args.out)
    write_sources(src)
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", "-c", str(DOCS),
           "-d", str(src.parent / "site-doctrees"), str(src), str(out)]
    rc = subprocess.call(cmd)
    if rc == 0:
        label_figures(out)
        fix_viewcode_backlinks(out)
    return rc


if __name__ == "__main__":
    sys.exit(main())
