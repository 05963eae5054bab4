"""Chapter 10: Capstone: a text-processing platform (``ch10_capstone``). Modules: source, errata, exercises."""
