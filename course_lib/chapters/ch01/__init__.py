"""Chapter 1: Why attention (``ch01_why_attention``). Modules: exercises."""
