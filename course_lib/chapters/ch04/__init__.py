"""Chapter 4: Positional encoding (``ch04_positional_encoding``). Modules: source, worked, errata, exercises."""
