"""Each chapter's experiment, one module each (its docstring names the chapter).

- ``seq_tasks``: copy/reverse tasks and a toy parallel corpus (chapter 1);
- ``extrapolation``: sinusoidal versus learned positions beyond the training length (chapter 4);
- ``translation``: the source's digits-to-letters test (chapter 5);
- ``digits``: ViT and a small CNN on 8 x 8 digits (chapter 6);
- ``sentiment``, ``compression``, ``serving``: the capstone's classifier, made smaller, served (chapter 8).

Every model here trains through :func:`course_lib.training.train`.
"""
