"""Each chapter's experiment, one module each (its docstring names the chapter).

- ``seq_tasks``: RNN encoder-decoders on copy/reverse tasks and a toy parallel corpus
  (chapter 1), the tasks and corpus in ``seq_tasks_data``;
- ``heads``: eight heads that must each specialise (chapter 3);
- ``extrapolation``: sinusoidal versus learned positions beyond the training length (chapter 4);
- ``translation``: the source's digits-to-letters test (chapter 5), its data in ``translation_data``;
- ``g2p``: English grapheme-to-phoneme conversion on the CMU Pronouncing Dictionary, the chapter's
  Transformer against chapter 1's GRU with attention (chapter 5), its data in ``g2p_data``, metrics
  (PER, WER) and error groups in ``g2p_eval``;
- ``tagging``: word segmentation of People's Daily, 1998, as a sequence-to-sequence task
  (the encoder–decoder contrast of chapter 7's segmenter), its data in ``tagging_data``, baseline and metrics in ``tagging_eval``;
- ``digits``: ViT and a small CNN on 8 x 8 digits (chapter 6);
- ``clip``: a CLIP-style contrastive model aligning the digit images with English and Chinese
  number words, zero-shot on held-out prompt templates (chapter 6);
- ``bert_lab``, ``folio``, ``finetune``: one BERT layer in full; Shakespeare's genres (First Folio)
  and the real pretrained MiniLM fine-tuned on them, against the same model from scratch (chapter 7);
- ``language_model``, ``bpe``: small GPTs on Shakespeare (characters and byte-level BPE) and on
  People's Daily (characters), against unigram and bigram baselines (chapter 8); the corpora
  and windows in ``language_model_data``, scores and sampling in ``language_model_eval``; a larger
  character GPT trained longer, with its held-out loss against compute, in ``language_model_long``, and
  the larger People's Daily GPT in ``language_model_long_zh`` (chapter 9);
- ``segmenter``: People's Daily word segmentation by an encoder-only (BERT-style) tagger, against
  dictionary maximum matching (``course_lib.analysis.maxmatch``) (chapter 7);
- ``textclf``, ``sentiment``, ``wordclass``, ``capstone``, ``compression``, ``serving``: the
  capstone's classifiers on real Chinese text (review sentiment; the part of speech of unseen
  words), their cheaper-attention variants, made smaller, served (chapter 10);
- ``pretrain``, ``gpt_finetune``: the sentiment encoder pretrained as a masked LM on unlabelled text
  (training reviews and People's Daily) then fine-tuned, and chapter 8's People's Daily GPT
  fine-tuned from its last token, against the same models from scratch (chapter 10);
- ``pretrain_reviews``, ``label_efficiency``: that encoder pretrained on in-domain text (the training
  reviews whole and People's Daily, a vocabulary covering both) and fine-tuned on 100 to all labelled
  reviews, three seeds each, beside the n-grams on the same reviews: the label-efficiency curve (chapter 7);
- ``modern``: rotary and ALiBi positions, pre-LN against post-LN (chapter 11);
- ``speech``: a Speech Transformer on spoken digits in English and Mandarin, made offline with
  espeak-ng, with held-out voices (chapter 12); why its long strings fail (errors by position) in
  ``speech_errors``, its CTC head and joint decoding in ``speech_decode``, a longer run in ``speech_long``.

Every model here trains through :func:`course_lib.training.train`. A lab past about 300 lines is
split at its seams: ``<lab>_data`` (corpus, splits, batches), ``<lab>_eval`` (metrics,
baselines), and ``<lab>`` itself (model, training and the ``@repro.recipe`` registrations, which
stay with the training; ``tools/train.py`` imports every module here).
"""
