"""Chapter 6: Vision Transformer (``ch06_vit``). Modules: source, worked, errata, exercises."""
