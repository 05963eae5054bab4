"""course_lib: the companion package of the course *Attention and Transformers*.

Read it like an appendix of the book: one module per concept, named with the
book's notation (``Q``, ``K``, ``V``, ``d_k``, ``num_heads``).

- ``course_lib.scratch``: NumPy, forward only, formula by formula.
- ``course_lib.sources``: the source documents' worked examples as data.
- ``course_lib.errata``: where a source's arithmetic is wrong, and why.
- ``course_lib.plotting``: figure helpers with a font that has Chinese glyphs.
"""

__version__ = "0.1.0"
