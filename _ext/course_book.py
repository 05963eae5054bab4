"""Local Sphinx extension of the course book.

It does five small things:

1. **Languages.** A notebook markdown cell tagged ``en`` or ``zh`` becomes a
   ``<div class="lang lang-en">`` (or ``lang-zh``), so the language switch
   (``static/course/lang.js``) can show English, 中文, or both. Tagged cells
   hold prose only; headings stay in untagged cells, bilingual on one line.
   Code-cell outputs follow the same switch: ``static/course/lang-outputs.js``
   wraps their bilingual labels ("step · 步骤") in ``course-label-en`` /
   ``-sep`` / ``-zh`` spans in the browser (its docstring gives the rules);
   the stored outputs keep both languages.
2. **Pairs.** A ``book/**/X.md`` that has a ``X.ipynb`` beside it is the
   editable half of a jupytext pair; the book is built from the ``.ipynb``
   (its stored, tested outputs), so the ``.md`` is excluded.
3. **Offline.** MathJax and mermaid are served from the vendored copies in
   ``_vendor/`` (made by ``make vendor``); the thebe script, which points at
   a CDN, is dropped.
4. **Mermaid.** A small ``mermaid`` directive emits ``<pre class="mermaid">``
   that the vendored UMD build renders in the browser, also from ``file://``.
   Its 3 MB of JavaScript is loaded only by the pages that draw a diagram
   (:func:`_mermaid_where_drawn`): a browser parsed and ran it on every page.
5. **A fast Chinese search index.** Sphinx 7's Chinese indexer (``html_search_language:
   zh``) keeps every Latin word it has seen in a list and looks each word up in it:
   two thirds of a whole build's time here (127 s of 189 s). :class:`SearchChinese`
   keeps them in a set, as Sphinx 8.1 does (sphinx-doc/sphinx#12995). The built HTML,
   ``searchindex.js`` included, was the same file for file on a whole build;
   ``tests/book/test_search_index.py`` checks the words and stems.
"""

from __future__ import annotations

import html
from pathlib import Path

import sphinx.search.zh
from docutils import nodes
from docutils.parsers.rst import Directive
from myst_nb.core.render import MditRenderMixin

LANGS = ("en", "zh")
HERE = Path(__file__).parent


def _render_nb_cell_markdown(self, token):
    """Wrap a markdown cell tagged ``en``/``zh`` in a language container."""
    tags = token.meta.get("metadata", {}).get("tags", [])
    langs = [t for t in tags if t in LANGS]
    if not langs:
        return _original_render(self, token)
    container = nodes.container(classes=["lang", f"lang-{langs[0]}"])
    self.add_line_and_source_path(container, token)
    with self.current_node_context(container, append=True):
        self.render_children(token)


_original_render = MditRenderMixin.render_nb_cell_markdown
MditRenderMixin.render_nb_cell_markdown = _render_nb_cell_markdown


class Mermaid(Directive):
    """``mermaid`` directive: the diagram source, rendered client-side."""

    has_content = True
    optional_arguments = 0

    def run(self):
        code = "\n".join(self.content)
        raw = f'<pre class="mermaid">\n{html.escape(code)}\n</pre>'
        return [nodes.raw("", raw, format="html")]


def _exclude_paired_markdown(app, config):
    src = Path(app.srcdir)
    for md in src.glob("book/**/*.md"):
        if md.with_suffix(".ipynb").exists():
            config.exclude_patterns.append(md.relative_to(src).as_posix())
    config.html_static_path.append(str(HERE / "static"))


def _drop_cdn_scripts(app, pagename, templatename, context, doctree):
    """Remove scripts that would reach a CDN (sphinx-thebe's)."""
    kept = []
    for js in context.get("script_files", []):
        body = getattr(js, "attributes", {}).get("body", "") or ""
        name = str(js)
        if "thebe" in name or "THEBE" in body or "http://" in body or "https://" in body:
            continue
        kept.append(js)
    context["script_files"] = kept


MERMAID_SCRIPTS = ("mermaid/mermaid.min.js", "course/mermaid-init.js")
"""The vendored mermaid build and the script that starts it, in that order."""


def draws_mermaid(doctree) -> bool:
    """Whether a page's doctree holds a diagram of the ``mermaid`` directive."""
    return doctree is not None and any(
        n.get("format") == "html" and n.astext().startswith('<pre class="mermaid">')
        for n in doctree.findall(nodes.raw))


def _mermaid_where_drawn(app, pagename, templatename, context, doctree):
    """Add the mermaid scripts to the pages that draw a diagram (Sphinx keeps a script added
    here to this page only)."""
    if draws_mermaid(doctree):
        for js in MERMAID_SCRIPTS:
            app.add_js_file(js)


class _WordSet(set):
    """A set that Sphinx's indexer can ``extend`` as it did its list."""
    extend = set.update


class SearchChinese(sphinx.search.zh.SearchChinese):
    """Sphinx's Chinese indexer with its Latin words in a set (see the module's docstring)."""

    def init(self, options: dict[str, str]) -> None:
        super().init(options)
        self.latin_terms = _WordSet()


def setup(app):
    app.add_directive("mermaid", Mermaid)
    app.add_search_language(SearchChinese)
    app.connect("config-inited", _exclude_paired_markdown)
    app.connect("html-page-context", _mermaid_where_drawn)
    app.connect("html-page-context", _drop_cdn_scripts, priority=900)
    app.add_js_file("course/offline.js")
    app.add_js_file("course/lang.js")
    app.add_js_file("course/lang-outputs.js")
    app.add_css_file("course/lang.css")
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
