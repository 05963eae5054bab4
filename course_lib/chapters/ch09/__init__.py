"""Chapter 9: training a language model well (``ch09_training_lm``). Modules: exercises."""
