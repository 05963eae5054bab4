"""The book's Chinese search indexer (_ext/course_book.py, SearchChinese) indexes as Sphinx's own does.

Sphinx 7's indexer keeps the Latin words it has seen in a list; the course's keeps them in a set
(Sphinx 8.1's fix), which made the whole build about five times faster. Word for word, the two
must split and stem alike: a Latin word of three letters or more that stems to fewer ("its" →
"it") is kept whole only if the indexer has seen it, so the set must hold what the list held.
"""

import sys
from pathlib import Path
from unittest import mock

import sphinx.search.zh

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "_ext"))
import course_book  # noqa: E402


def _sphinx_own():
    lang = sphinx.search.zh.SearchChinese({})
    lang.latin_terms = []          # its class attribute is shared by every instance: start afresh
    return lang


def _index(lang, paragraphs):
    """What the indexer makes of each paragraph: its words, then each word stemmed."""
    out = []
    for text in paragraphs:
        words = lang.split(text)
        out.append((words, [lang.stem(w) for w in words]))
    return out


def _paragraphs(page: str, limit: int = 400):
    text = (ROOT / "book" / f"{page}.md").read_text(encoding="utf-8")
    return [p for p in text.split("\n\n") if p.strip()][:limit]


def test_the_course_indexer_splits_and_stems_as_sphinx_does():
    paragraphs = _paragraphs("ch02_worked_qkv") + _paragraphs("ch03_multi_head")
    ours = course_book.SearchChinese({})
    assert isinstance(ours.latin_terms, set)
    got, want = _index(ours, paragraphs), _index(_sphinx_own(), paragraphs)
    assert got == want
    # the case the seen words decide is in the text: seen, kept whole; unseen, stemmed
    assert ours.stem("its") == "its" and "its" in ours.latin_terms
    assert course_book.SearchChinese({}).stem("its") == "it"
    assert sum(len(words) for words, _ in got) > 5000


def test_a_word_seen_in_an_earlier_page_counts():
    ours, theirs = course_book.SearchChinese({}), _sphinx_own()
    for lang in (ours, theirs):
        lang.split("Each head has its own weights · 注意力")
    words = ("its", "ids", "heads", "attention")    # seen, unseen, and two that stem to 3 letters or more
    assert [ours.stem(w) for w in words] == [theirs.stem(w) for w in words] == ["its", "id", "head", "attent"]


def test_the_extension_registers_it_for_chinese():
    app = mock.MagicMock()
    course_book.setup(app)
    app.add_search_language.assert_called_once_with(course_book.SearchChinese)
    assert course_book.SearchChinese.lang == "zh"
