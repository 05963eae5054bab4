"""BERT's masked-LM corruption (15 %, then 80/10/10) and checkpoint loading (chapters 7 and 8)."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest
import torch

from course_lib.models.bert import BERT, mask_tokens

V, MASK, SPECIAL = 1000, 3, (0, 1, 2, 3)


@pytest.fixture(scope="module")
def corrupted():
    ids = torch.randint(4, V, (200, 500), generator=torch.Generator().manual_seed(0))
    ids[:, 0], ids[:, -1] = 1, 2                         # [CLS] ... [SEP]
    ids[:5, 400:] = 0                                    # some padding
    inputs, labels = mask_tokens(ids, MASK, V, SPECIAL, generator=torch.Generator().manual_seed(1))
    return ids, inputs, labels


def test_labels_mark_exactly_the_selected_tokens(corrupted):
    ids, inputs, labels = corrupted
    selected = labels != -100
    assert torch.equal(labels[selected], ids[selected])
    assert torch.equal(inputs[~selected], ids[~selected])     # unselected: untouched
    assert not selected[torch.isin(ids, torch.tensor(SPECIAL))].any()


def test_selection_rate_and_80_10_10_split(corrupted):
    ids, inputs, labels = corrupted
    selected = labels != -100
    n = selected.sum().item()
    real = (~torch.isin(ids, torch.tensor(SPECIAL))).sum().item()
    assert abs(n / real - 0.15) < 0.005
    masked = (inputs[selected] == MASK).float().mean().item()
    kept = (inputs[selected] == ids[selected]).float().mean().item()
    randomised = 1 - masked - kept
    assert abs(masked - 0.8) < 0.01
    assert abs(kept - 0.1) < 0.01          # plus a 1/V chance that a random token is the same
    assert abs(randomised - 0.1) < 0.01


def test_same_generator_seed_same_corruption():
    ids = torch.randint(4, V, (4, 30), generator=torch.Generator().manual_seed(2))
    a = mask_tokens(ids, MASK, V, SPECIAL, generator=torch.Generator().manual_seed(9))
    b = mask_tokens(ids, MASK, V, SPECIAL, generator=torch.Generator().manual_seed(9))
    assert all(torch.equal(x, y) for x, y in zip(a, b))


def test_from_pretrained_dir_reads_prefixed_checkpoint(tmp_path):
    """A BertForMaskedLM checkpoint stores the encoder under 'bert.'; heads are skipped."""
    import transformers  # pinned: a broken install fails, never skips

    torch.manual_seed(0)
    hf = transformers.BertForMaskedLM(transformers.BertConfig(
        vocab_size=60, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=20)).eval()
    hf.save_pretrained(tmp_path)
    from safetensors import safe_open
    with safe_open(tmp_path / "model.safetensors", "pt") as f:
        assert any(k.startswith("bert.") for k in f.keys())
    ours = BERT.from_pretrained_dir(tmp_path)
    ids = torch.randint(0, 60, (2, 7), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        torch.testing.assert_close(ours(ids), hf.bert(ids).last_hidden_state, atol=1e-5, rtol=0)
