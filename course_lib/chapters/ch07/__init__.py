"""Chapter 7: BERT and GPT (``ch07_bert_gpt``). Modules: source, errata, exercises."""
