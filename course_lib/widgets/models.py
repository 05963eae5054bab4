"""Attention weights of a real model, in the explorer's format (chapters 3, 5 and 7; appendix).

:func:`attention_maps` runs a model built from
:class:`course_lib.models.MultiHeadAttention` (the book's ``GPT``, ``BERT``,
``ViT``, the ``Transformer``'s encoder, a stack of ``EncoderLayer``…) on
several inputs, one at a time (no padding), and collects every layer's
per-head weights ``(num_layers, num_heads, L, L)``; :func:`model_explorer`
shows them in :func:`~course_lib.widgets.attention_explorer`. A chapter with
a trained checkpoint needs three lines::

    model = ...; repro.load_checkpoint("name", model, dtype=torch.float64)
    ids = [vocab.encode(s) for s in SENTENCES]
    model_explorer(model, ids, tokens=[vocab.decode(i) for i in ids], title="… · …")

:func:`minilm_explorer` does the same for the pre-trained all-MiniLM-L6-v2
(``course_lib.models.pretrained``), tokenising with its own WordPiece
tokenizer. Models are evaluated in float64 (a float32 model is refused unless
``allow_float32=True``): the weights then show the same digits on every CPU,
so nbval can compare the stored output character for character.

torch is imported only when these functions are called.
"""

from __future__ import annotations

import numpy as np

from .explorer import AttentionExplorer, attention_explorer

__all__ = ["attention_maps", "model_explorer", "minilm_explorer"]


def _attention_modules(model, where):
    from ..models.attention import MultiHeadAttention

    found = [(name, m) for name, m in model.named_modules() if isinstance(m, MultiHeadAttention)]
    if where is not None:
        if callable(where):
            found = [(n, m) for n, m in found if where(n)]
        elif isinstance(where, str):
            found = [(n, m) for n, m in found if n == where or n.startswith(where + ".")]
        else:
            raise TypeError(f"where must be None, a module-name prefix (str) or a callable "
                            f"name -> bool, got {type(where).__name__}")
    if not found:
        raise ValueError("model has no course_lib.models.MultiHeadAttention module"
                         + ("" if where is None else f" matching where={where!r}")
                         + "; attention_maps reads the weights of those modules")
    return found


def _default_forward(model, x):
    import torch

    ids = torch.as_tensor(x)
    if ids.dtype not in (torch.int64, torch.int32):
        raise TypeError(f"each input must be a 1-D sequence of token ids (integers), got dtype "
                        f"{ids.dtype}; for other inputs pass forward=lambda model, x: ...")
    if ids.ndim != 1 or ids.numel() == 0:
        raise ValueError(f"each input must be a non-empty 1-D sequence of token ids, got shape "
                         f"{tuple(ids.shape)}; for other inputs pass forward=lambda model, x: ...")
    return model(ids.long()[None])


def attention_maps(model, inputs, *, forward=None, where=None, allow_float32: bool = False
                   ) -> list[np.ndarray]:
    """Every layer's per-head attention weights of ``model``, one input at a time.

    Args:
        model: a ``torch.nn.Module`` holding
            :class:`course_lib.models.MultiHeadAttention` modules (one per
            layer), evaluated in float64 (``repro.load_checkpoint(...,
            dtype=torch.float64)``). It is put in eval mode for the call
            (and put back), under ``torch.no_grad()``.
        inputs: a list of inputs; by default each is a 1-D sequence of token
            ids (list, array or tensor), run as a batch of one.
        forward: ``forward(model, x)`` runs the model on one input ``x``
            (add the batch axis yourself); default ``model(ids[None])``.
        where: which attention modules count, in the model's module order:
            None (all), a module-name prefix (``"encoder"`` for the
            ``Transformer``'s encoder) or a callable ``name -> bool``. Every
            chosen module must attend over the input itself (square weights).
        allow_float32: accept a model that is not float64 (its weights may
            then differ in the last digit from one CPU to another).

    Returns:
        A list with one float64 array ``(num_layers, num_heads, L_i, L_i)`` per
        input, rows summing to 1: what :func:`attention_explorer` takes.

    Raises:
        TypeError, ValueError: naming the argument at fault.

    The modules are asked for their weights (``need_weights=True``) through
    forward hooks; the model's code is not changed.
    """
    import torch

    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if isinstance(inputs, (str, bytes)) or not isinstance(inputs, (list, tuple)) or not inputs:
        raise TypeError("inputs must be a non-empty list of inputs (e.g. one list of token ids "
                        f"per sentence), got {type(inputs).__name__}")
    dtypes = {p.dtype for p in model.parameters() if p.is_floating_point()}
    if dtypes != {torch.float64} and not allow_float32:
        raise ValueError(f"model has parameters of dtype {sorted(map(str, dtypes))}; evaluate it in "
                         "float64 (model.double(), or repro.load_checkpoint(..., dtype=torch.float64)) "
                         "so the weights print the same digits on every CPU, or pass allow_float32=True")
    forward = _default_forward if forward is None else forward
    if not callable(forward):
        raise TypeError(f"forward must be a callable forward(model, x), got {type(forward).__name__}")
    modules = _attention_modules(model, where)

    record: list = []

    def pre_hook(module, args, kwargs):
        if len(args) > 4:   # forward(query, key, value, mask, need_weights, cache)
            args = args[:4] + (True,) + args[5:]
        else:
            kwargs = {**kwargs, "need_weights": True}
        return args, kwargs

    def post_hook(module, args, output):
        record.append(output[1])

    handles = []
    was_training = model.training
    out = []
    try:
        for _, m in modules:
            handles.append(m.register_forward_pre_hook(pre_hook, with_kwargs=True))
            handles.append(m.register_forward_hook(post_hook))
        model.eval()
        with torch.no_grad():
            for i, x in enumerate(inputs):
                record.clear()
                forward(model, x)
                if len(record) != len(modules):
                    raise ValueError(f"inputs[{i}]: {len(modules)} attention modules but {len(record)} "
                                     "calls recorded; run the model once per input (no cache, "
                                     "no generation loop) or choose modules with where=")
                shapes = {tuple(w.shape) for w in record}
                if len(shapes) != 1:
                    names = [n for n, _ in modules]
                    raise ValueError(f"inputs[{i}]: the attention modules give weights of different "
                                     f"shapes {sorted(shapes)} ({names[:4]}…); choose one stack with "
                                     "where= (e.g. where='encoder')")
                (shape,) = shapes
                if len(shape) != 4 or shape[0] != 1 or shape[2] != shape[3]:
                    raise ValueError(f"inputs[{i}]: weights of shape {shape}, expected (1, num_heads, "
                                     "L, L): one input at a time, self-attention only (where=)")
                out.append(torch.stack([w[0] for w in record]).to(torch.float64).numpy())
    finally:
        for h in handles:
            h.remove()
        model.train(was_training)
    return out


def model_explorer(model, inputs, *, tokens, title: str, forward=None, where=None,
                   layer_names=None, head_names=None, digits: int = 2,
                   allow_float32: bool = False) -> AttentionExplorer:
    """The attention explorer of a model on several inputs (chapters 3, 5, 7).

    Args:
        model, inputs, forward, where, allow_float32: as in :func:`attention_maps`.
        tokens: one list of token strings per input, ``len(tokens[i]) == L_i``
            (e.g. ``vocab.decode(ids)``).
        title, layer_names, head_names, digits: as in :func:`attention_explorer`.

    Returns:
        An :class:`~course_lib.widgets.AttentionExplorer` (display it; its text
        form lists each query's most-attended key, what nbval compares).
    """
    maps = attention_maps(model, inputs, forward=forward, where=where, allow_float32=allow_float32)
    return attention_explorer(tokens, maps, title=title, layer_names=layer_names,
                              head_names=head_names, digits=digits)


def minilm_explorer(sentences, *, title: str = "all-MiniLM-L6-v2 · 预训练 MiniLM",
                    digits: int = 2) -> AttentionExplorer:
    """The real attention of the pre-trained all-MiniLM-L6-v2 (6 layers × 12 heads)
    on a few sentences (appendix *Attention explorer*, chapter 7).

    Args:
        sentences: a list of strings; each is tokenised by MiniLM's WordPiece
            tokenizer (``[CLS] … [SEP]``) and run alone (no padding).
        title, digits: as in :func:`attention_explorer`.

    Returns:
        An :class:`~course_lib.widgets.AttentionExplorer`. The model is a
        float64 copy of :func:`course_lib.models.pretrained.load_minilm`'s
        (the cached model itself is left untouched).
    """
    import copy

    import torch

    from ..models.pretrained import _check_texts, load_minilm

    sentences = _check_texts(sentences)
    model, tokenizer = load_minilm()
    model = copy.deepcopy(model).to(torch.float64)
    encodings = [tokenizer.encode(s) for s in sentences]
    maps = attention_maps(model, [e.ids for e in encodings])
    return attention_explorer([list(e.tokens) for e in encodings], maps, title=title, digits=digits)
