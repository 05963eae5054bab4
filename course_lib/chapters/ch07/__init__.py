"""Chapter 7: BERT (``ch07_bert``). Modules: source, errata, exercises."""
