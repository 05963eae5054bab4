"""Chapter 2: Worked Q/K/V examples (``ch02_worked_qkv``). Modules: source, worked, errata, exercises."""
