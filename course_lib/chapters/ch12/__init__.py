"""Chapter 10: speech (``ch10_speech``). Modules: source, errata, exercises."""
