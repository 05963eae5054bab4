"""course_lib: the companion package of the course *Attention and Transformers*.

Read it like an appendix of the book: one module per concept, named with the
book's notation (``Q``, ``K``, ``V``, ``d_k``, ``num_heads``).

- ``course_lib.scratch``: NumPy, forward only, formula by formula.
- ``course_lib.models``: the same ideas as trainable PyTorch modules, with
  converters from ``torch.nn`` and Hugging Face ``transformers``.
- ``course_lib.pretrained``: real all-MiniLM-L6-v2 weights, offline.
- ``course_lib.sizes``: parameter counts and FLOPs of published models.
- ``course_lib.sources``, ``worked``, ``errata``: the source documents' worked
  examples as data, recomputed, and where their arithmetic is wrong.
- ``course_lib.positional_analysis``, ``extrapolation``: chapter 4's tools.
- ``course_lib.exercises``: checkers for the exercises.
- ``course_lib.display``, ``plotting``: tables, and figures whose Chinese renders.
"""

__version__ = "0.1.0"
