"""Interactive widgets for the book: plain JavaScript and SVG, data inlined, no network.

- :func:`attention_explorer`: pick an input, a layer and a head, hover a query
  token, see the keys it attends to (chapters 3 and 7).
- :func:`model_explorer`, :func:`minilm_explorer`, :func:`attention_maps`: the
  same explorer fed with a real model's per-layer, per-head weights (a trained
  checkpoint in chapters 3, 5 and 7; pre-trained MiniLM in the appendix).
- :func:`qkv_playground`: edit a query vector, watch the scores, the softmax
  weights and the context vector follow (chapter 2).

Each returns an object that Jupyter and the built book display as one
self-contained ``<div>`` (its script inline, its data inline as JSON); its
text form (``print``, text/plain) holds the same numbers, so nbval compares
them. Numbers show as :func:`show` formats them (rounded to 10 decimals, then
to the digits asked, half to even), identically in Python and JavaScript. Element ids come from a hash of the data, never from randomness.

In JupyterLab, scripts in outputs run only in trusted notebooks: a notebook
opened with stored outputs shows the static numbers and a note until the
reader runs the cell (or uses *Trust Notebook*); the built book runs them.
"""

from ._html import show
from .explorer import AttentionExplorer, attention_explorer
from .models import attention_maps, minilm_explorer, model_explorer
from .playground import QKVPlayground, playground_numbers, qkv_playground

__all__ = ["attention_explorer", "AttentionExplorer", "qkv_playground", "QKVPlayground",
           "playground_numbers", "show", "attention_maps", "model_explorer", "minilm_explorer"]
