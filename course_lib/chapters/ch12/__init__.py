"""Chapter 12: speech (``ch12_speech``). Modules: source, errata, exercises."""
