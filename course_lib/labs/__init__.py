"""Each chapter's experiment, one module each (its docstring names the chapter).

- ``seq_tasks``: copy/reverse tasks and a toy parallel corpus (chapter 1);
- ``heads``: eight heads that must each specialise (chapter 3);
- ``extrapolation``: sinusoidal versus learned positions beyond the training length (chapter 4);
- ``translation``: the source's digits-to-letters test (chapter 5);
- ``digits``: ViT and a small CNN on 8 x 8 digits (chapter 6);
- ``bert_lab``, ``language_model``: a small BERT (MLM, then sentiment fine-tuning) and a
  character-level GPT on the Declaration of Independence (chapter 7);
- ``sentiment``, ``capstone``, ``compression``, ``serving``: the capstone's classifier and its
  cheaper-attention variants, made smaller, served (chapter 8);
- ``modern``: rotary and ALiBi positions, pre-LN against post-LN (chapter 9).

Every model here trains through :func:`course_lib.training.train`.
"""
