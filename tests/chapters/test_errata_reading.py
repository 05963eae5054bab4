"""The errata of the complete reading of the sources (issue 20): each one's evidence, checked
against a computation written out independently here."""

import numpy as np

from course_lib import chapters
from course_lib.chapters.ch03.errata import trace_source_mha
from course_lib.chapters.ch04 import source as pe_source
from course_lib.chapters.ch05.errata import torch_cross_attention_inputs
from course_lib.chapters.ch10.errata import run_source_benchmark
from course_lib.chapters.listings_evidence import mermaid_graph, mermaid_inputs

NEW = ("ch03-diagram-linear-order", "ch04-demo-frequency", "ch04-ref10-settings",
       "ch04-ref10-monotone", "ch04-test3-rows", "ch05-epochs-advice", "ch05-diagram-decoder",
       "ch08-benchmark-latency")


def test_the_new_errata_are_registered_as_errors():
    kinds = {e.key: e.kind for e in chapters.ERRATA}
    assert {k: kinds.get(k) for k in NEW} == {
        "ch03-diagram-linear-order": "claim", "ch04-demo-frequency": "claim",
        "ch04-ref10-settings": "claim", "ch04-ref10-monotone": "claim", "ch04-test3-rows": "claim",
        "ch05-epochs-advice": "claim", "ch05-diagram-decoder": "claim",
        "ch08-benchmark-latency": "code"}


def test_demo_columns_slow_down_from_left_to_right():
    table = np.array([float(p) for p in pe_source.PE_DEMO["claims"]["table"].printed]).reshape(10, 8)
    swing = np.abs(np.diff(table[:, 0::2], axis=0)).sum(axis=0)
    assert np.all(np.diff(swing) < 0)                     # each sine column moves less than the last
    omega = [10000.0 ** (-2 * i / 8) for i in range(4)]
    assert omega == sorted(omega, reverse=True)


def test_reference_table_breaks_its_own_rule():
    pos = pe_source.PE_REF10["positions"]
    dist = dict(zip(pos, map(float, pe_source.PE_REF10["claims"]["euclid"].printed)))
    assert dist[5] > dist[4] and dist[15] > dist[16]      # one step closer to 10, yet farther
    assert max(dist.values()) > 2 * np.sqrt(8 / 2)        # beyond any distance at d_model = 8


def test_test3_prints_half_the_rows_its_heading_promises():
    rows = len(pe_source.PE_TEST["claims"]["dims"].printed) // len(pe_source.PE_TEST["dims"])
    assert (rows, "前20个位置" in pe_source.PE_TEST3_HEADING) == (10, True)


def test_source_benchmark_prints_the_pass_time_as_latency():
    for n in (1, 2, 5):
        r = run_source_benchmark(["好"] * n, step=0.01, num_runs=2)
        assert np.isclose(r["avg_time"], n * 0.01) and np.isclose(r["throughput"], 100.0)
        assert r["printed"][0] == f"平均延迟: {n * 0.01:.3f}秒"


def test_every_torch_decoder_layer_cross_attends_to_the_encoder_output():
    rows = torch_cross_attention_inputs(3)
    assert [cross for cross, _ in rows] == [True, True, True] and rows[0][1]


def test_the_diagrams_as_parsed():
    labels, edges = mermaid_graph("multirep", 5)
    ids = {v: k for k, v in labels.items()}
    assert [labels[a] for a, b in edges if b == ids["解码器块1"]] == ["编码器块N"]
    assert not any("目标" in v for v in labels.values())
    assert mermaid_inputs("ch24", 6, "解码器层N") == ["解码器层2", "编码器输出"]
    labels4, edges4 = mermaid_graph("ch24", 4)
    assert (labels4["B"], labels4[dict(edges4)["B"]]) == ("Head 1", "线性变换1")


def test_source_multi_head_projects_before_attending():
    state = np.random.get_state()
    t = trace_source_mha()
    assert np.array_equal(np.random.get_state()[1], state[1])      # the global RNG is untouched
    assert t["calls"] == ["reshape_for_multihead"] * 3 + ["scaled_dot_product_attention"] * 2 + ["concat_heads"]
    assert t["projected_first"] and t["output_is_concat_Wo"]
    assert t["head_diff"] > 0.01 and t["drawn_diff"] == 0.0
