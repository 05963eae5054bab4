"""Bad input to ViT, BERT, GPT, the MiniLM helpers and the size tables gets a
clear error that names the argument and what was expected (chapters 6-8)."""

import pytest
import torch

from course_lib.models.bert import BERT, mask_tokens
from course_lib.models.gpt import GPT
from course_lib.models.vit import ViT, patchify
from course_lib.models.pretrained import cosine_similarity_matrix, sentence_embeddings
from course_lib.analysis.sizes import build_on_meta


def vit(**overrides):
    kwargs = dict(image_size=32, patch_size=8, in_channels=3, num_classes=5, d_model=16,
                  num_heads=2, num_layers=1, d_ff=32) | overrides
    return ViT(**kwargs)


def bert():
    return BERT(vocab_size=50, d_model=16, num_heads=2, num_layers=1, d_ff=32, max_len=8)


def gpt():
    return GPT(vocab_size=50, d_model=16, num_heads=2, num_layers=1, d_ff=32, max_len=8)


IDS = torch.tensor([[1, 2, 3]])
ONES = torch.ones(1, 3, dtype=torch.long)

# (id, call, exception type, fragments that must all appear in the message)
CASES = [
    ("image not divisible by patch", lambda: vit(image_size=30), ValueError,
     ["image_size = 30", "patch_size = 8"]),
    ("patchify not divisible", lambda: patchify(torch.zeros(1, 3, 30, 30), 8), ValueError,
     ["30", "patch_size = 8"]),
    ("wrong image size", lambda: vit()(torch.zeros(2, 3, 16, 16)), ValueError,
     ["images", "(B, 3, 32, 32)", "(2, 3, 16, 16)"]),
    ("integer images", lambda: vit()(torch.zeros(2, 3, 32, 32, dtype=torch.uint8)), TypeError,
     ["images", "floating", "uint8"]),
    ("NaN pixels", lambda: vit()(torch.full((1, 3, 32, 32), float("nan"))), ValueError,
     ["images", "NaN"]),
    ("negative num_classes", lambda: vit(num_classes=-1), ValueError,
     ["num_classes", ">= 0"]),
    ("token id out of vocabulary", lambda: bert()(torch.tensor([[1, 50]])), ValueError,
     ["input_ids", "[0, 50)", "50"]),
    ("negative token id", lambda: gpt()(torch.tensor([[-1, 2]])), ValueError,
     ["input_ids", "[0, 50)", "-1"]),
    ("float token ids", lambda: bert()(IDS.float()), TypeError,
     ["input_ids", "integer", "float32"]),
    ("token ids without batch axis", lambda: gpt()(torch.tensor([1, 2, 3])), ValueError,
     ["input_ids", "(B, L)", "(3)"]),
    ("BERT sequence longer than max_len", lambda: bert()(torch.ones(1, 9, dtype=torch.long)),
     ValueError, ["input_ids", "L = 9", "max_len = 8"]),
    ("GPT sequence longer than max_len", lambda: gpt()(torch.ones(1, 9, dtype=torch.long)),
     ValueError, ["input_ids", "9", "max_len = 8"]),
    ("segment id out of range", lambda: bert()(IDS, token_type_ids=2 * ONES), ValueError,
     ["token_type_ids", "[0, 2)"]),
    ("attention mask of wrong shape", lambda: bert()(IDS, attention_mask=torch.ones(1, 4)),
     ValueError, ["attention_mask", "(1, 3)", "(1, 4)"]),
    ("attention mask not 0/1", lambda: bert()(IDS, attention_mask=2 * ONES), ValueError,
     ["attention_mask", "0", "1"]),
    ("all-padding row", lambda: bert()(IDS, attention_mask=0 * ONES), ValueError,
     ["attention_mask", "at least one real token"]),
    ("pad_id outside vocabulary", lambda: BERT(vocab_size=50, d_model=16, num_heads=2, num_layers=1,
                                               d_ff=32, pad_id=50), ValueError,
     ["pad_id", "[0, 50)"]),
    ("temperature zero", lambda: gpt().generate(IDS, 2, temperature=0.0), ValueError,
     ["temperature", "positive"]),
    ("top_k zero", lambda: gpt().generate(IDS, 2, top_k=0), ValueError, ["top_k", ">= 1"]),
    ("top_k float", lambda: gpt().generate(IDS, 2, top_k=2.5), TypeError, ["top_k", "integer"]),
    ("max_new_tokens zero", lambda: gpt().generate(IDS, 0), ValueError,
     ["max_new_tokens", ">= 1"]),
    ("generation past max_len", lambda: gpt().generate(IDS, 6), ValueError,
     ["max_new_tokens = 6", "max_len = 8"]),
    ("cache of wrong type", lambda: gpt()(IDS, cache={}), TypeError,
     ["cache", "list of 1 KVCache", "new_cache"]),
    ("mask probability above 1", lambda: mask_tokens(IDS, 4, 50, [0], prob=1.5), ValueError,
     ["prob", "[0, 1)"]),
    ("mask id outside vocabulary", lambda: mask_tokens(IDS, 60, 50, [0]), ValueError,
     ["mask_id", "[0, 50)"]),
    ("a bare string as texts", lambda: sentence_embeddings("A man is eating food."), TypeError,
     ["texts", "list of strings"]),
    ("numbers as texts", lambda: sentence_embeddings([1, 2]), TypeError,
     ["texts", "strings", "int"]),
    ("model without tokenizer", lambda: sentence_embeddings(["a"], model=bert()), ValueError,
     ["model and tokenizer"]),
    ("zero embedding row", lambda: cosine_similarity_matrix(torch.zeros(2, 4)), ValueError,
     ["E", "non-zero"]),
    ("1-D embeddings", lambda: cosine_similarity_matrix(torch.ones(4)), ValueError,
     ["E", "(N, d)"]),
    ("unknown published model", lambda: build_on_meta("ViT-Z/16"), ValueError,
     ["name", "ViT-B/16", "ViT-Z/16"]),
    ("checkpoint folder without files", lambda: BERT.from_pretrained_dir("/nonexistent"),
     FileNotFoundError, ["config.json", "/nonexistent"]),
]


@pytest.mark.parametrize("call, exc, fragments", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_named(call, exc, fragments):
    with pytest.raises(exc) as info:
        call()
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"
