"""Chapter 9: Attention today (``ch09_attention_today``). Modules: exercises."""
