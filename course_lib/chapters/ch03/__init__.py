"""Chapter 3: Multi-head attention (``ch03_multi_head``). Modules: errata, exercises, figures."""
