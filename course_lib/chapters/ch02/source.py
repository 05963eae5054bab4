"""Chapter 2's worked examples from the source document "attention"."""

from __future__ import annotations

import numpy as np

from .._claims import Claim

__all__ = ["SINGLE_QUERY", "TWO_HEAD"]

# --- Source "attention", §2.3: one decoder query over three encoder states ---
# K = V = H and the score is the plain dot product q·h_i (no 1/sqrt(d_k)).
SINGLE_QUERY = {
    "q": np.array([0.2, 0.4, 0.6, 0.8]),
    "H": np.array([[0.1, 0.2, 0.3, 0.4],
                   [0.5, 0.6, 0.7, 0.8],
                   [0.9, 1.0, 1.1, 1.2]]),
    "claims": {
        "scores": Claim("attention", "§2.3 step 1", ("0.60", "1.40", "2.20")),
        "exp": Claim("attention", "§2.3 step 2", ("1.822", "4.055", "9.025")),
        "sum": Claim("attention", "§2.3 step 2", ("14.902",)),
        "weights": Claim("attention", "§2.3 step 2", ("0.122", "0.272", "0.606")),
        "terms": Claim("attention", "§2.3 step 3", (
            "0.012", "0.024", "0.037", "0.049",
            "0.136", "0.163", "0.190", "0.218",
            "0.545", "0.606", "0.667", "0.727")),
        "context": Claim("attention", "§2.3 step 3", ("0.693", "0.793", "0.894", "0.994")),
    },
}

# --- Source "attention", §3.2: two heads on X (3×4), W^Q = W^K = W^V per head ---
TWO_HEAD = {
    "X": np.array([[1.0, 2.0, 3.0, 4.0],
                   [5.0, 6.0, 7.0, 8.0],
                   [9.0, 10.0, 11.0, 12.0]]),
    "W1": np.array([[0.1, 0.2],
                    [0.3, 0.4],
                    [0.5, 0.6],
                    [0.7, 0.8]]),
    "W2": np.array([[0.2, 0.1],
                    [0.4, 0.3],
                    [0.6, 0.5],
                    [0.8, 0.7]]),
    # The source works out head 1 only and stops before its output.
    "claims": {
        "Q1": Claim("attention", "§3.2 head 1", (
            "5.0", "6.0", "11.4", "13.6", "17.8", "21.2")),
        "QKt1": Claim("attention", "§3.2 head 1 scores (before 1/√2)", (
            "61.0", "138.6", "216.2",
            "138.6", "314.72", "490.84",
            "216.2", "490.84", "765.48")),
        "A1": Claim("attention", "§3.2 head 1 softmax", (
            "0.006", "0.047", "0.947",
            "0.000", "0.018", "0.982",
            "0.000", "0.007", "0.993")),
    },
}
