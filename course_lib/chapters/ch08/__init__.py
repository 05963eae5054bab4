"""Chapter 8: GPT (``ch08_gpt``). Modules: source, errata, exercises."""
