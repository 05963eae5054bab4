"""course_lib: the companion package of the course *Attention and Transformers*.

Read it like an appendix of the book, named with the book's notation (``Q``,
``K``, ``V``, ``d_k``, ``num_heads``). The map::

    scratch/     NumPy, forward only, formula by formula (one module per concept)
    models/      the same ideas as trainable PyTorch modules, converters from torch.nn
                 and Hugging Face; also pretrained.py (all-MiniLM-L6-v2, offline),
                 efficient_attention.py (local, strided, linear attention), resnet.py,
                 decoding.py (greedy and beam search)
    corpora.py   the real corpora (Shakespeare, People's Daily, Chinese reviews), checksummed
    analysis/    concept-level measurements: complexity, sizes (parameters, FLOPs), ngram,
                 scaling (the 1/sqrt(d_k)), positional (encoding geometry), rnn,
                 opcount (a call's multiply-adds and largest tensor, counted)
    widgets/     interactive explorers for the notebooks
    training/    the book's one training loop, train(...) (loop.py); muon.py: Muon, the optimizer
                 of chapter 7's long Chinese run (train(optimizer="muon")); averaging.py: an
                 exponential moving average of a model's weights (chapter 7's averaged Chinese run)
    text.py      the one tokenizer and vocabulary class (<pad> 0, <sos> 1, <eos> 2, <unk> 3)
    data.py      data_path(...): the course's data/ folder, found from anywhere
    repro.py     seeds, bands and checkpoints with provenance
    display/     Table, fmt, matrix_table; display.plotting: figures whose Chinese renders
    labs/        one chapter's experiment per module (its docstring names the chapter):
                 seq_tasks (1), heads (3), extrapolation (4), translation and
                 g2p (5), digits and clip (6), bert_lab, folio, finetune, segmenter,
                 tagging (its encoder-decoder contrast), language_model and bpe (7), textclf, sentiment, wordclass, capstone,
                 compression, serving (8), modern (9), speech (10); a large lab is
                 split at its seams: <lab>_data (corpus, splits, batches), <lab>_eval
                 (metrics, baselines), <lab> (model, training, its recipes):
                 seq_tasks_data, translation_data, g2p_data/_eval, tagging_data/_eval,
                 segmenter_eval, language_model_data/_eval
    service/     the capstone as an HTTP service (8): FastAPI app, limits, one error
                 envelope, try-it page, uvicorn launcher, loopback load test (make api)
    chapters/    chNN/ per chapter: source.py (the source documents' printed numbers and
                 code), worked.py (recomputed), errata.py, exercises.py (checkers);
                 chapters.EXAMPLES, ERRATA, CHECKERS, show(key), compare(...)

Imports point one way: labs and chapters use the concepts (scratch, models,
analysis) and the utilities; the concepts never import labs or chapters.
"""

__version__ = "0.1.0"

# In Jupyter, a display object built but never shown fails its cell
# (course_lib.display.install_guard); installing it is all this import does.
from .display import install_guard as _install_guard  # noqa: E402

_install_guard()
