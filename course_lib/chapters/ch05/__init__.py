"""Chapter 5: The full Transformer (``ch05_transformer``). Modules: source, worked, errata, exercises."""
