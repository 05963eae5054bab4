"""Chapter 11: Attention today (``ch11_attention_today``). Modules: exercises."""
