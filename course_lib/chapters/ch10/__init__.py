"""Chapter 8: Capstone: a text-processing platform (``ch08_capstone``). Modules: source, errata, exercises."""
