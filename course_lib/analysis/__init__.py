"""Concept-level measurements, in NumPy or PyTorch; import the module you need.

- ``complexity``: time and memory of self-attention against an RNN (chapter 5);
- ``sizes``: parameters and FLOPs of published models, built on ``meta`` (chapters 6 and 7);
- ``scaling``: why scores are divided by sqrt(d_k) (chapter 3);
- ``positional``: the geometry of sinusoidal position vectors (chapter 4);
- ``rnn``: vanishing gradients and sequential time of an RNN (chapter 1);
- ``mel``: log-mel features of audio, the input of the speech model (chapter 12);
- ``maxmatch``: dictionary maximum-matching word segmentation, the baseline of chapter 7's tagger;
- ``edit``: edit (Levenshtein) distance, behind chapter 5's phoneme and chapter 12's character error rates;
- ``opcount``: the multiply-adds and the largest tensor of a PyTorch call, counted, not timed (chapter 10).
"""
