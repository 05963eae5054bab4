"""Line-by-line NumPy ports of the multi-representation source's Rust and Haskell listings.

Debian ships neither nalgebra nor Haskell's ``matrix`` package (``Data.Matrix``), so the
listings cannot be compiled offline; these ports run them instead. Each statement
carries the source line it translates, in a comment; nothing is fixed on the way.
Two things had to be chosen:

- Rust's ``DMatrix::random(r, c)``: entries uniform on [0, 1), as nalgebra's random
  matrices are, drawn from ``np.random.default_rng(seed)`` (``rng`` below);
- Haskell's ``Data.Matrix`` is 1-based: ``m ! (i, j)`` is ``m[i - 1, j - 1]``, and
  ``matrix n m f`` calls ``f (i, j)`` for ``i = 1..n``, ``j = 1..m``. Haskell is lazy:
  ``head (map f xs)`` evaluates ``f`` once, and so does the port (``map`` is lazy too).

The ports also keep the last attention weights (``last_weights``) so that the
appendix "Source listings" (``book/appendix/listings``) can show them; the source
returns only the outputs.
"""

from __future__ import annotations

import numpy as np

__all__ = ["RustSelfAttention", "RustMultiHeadAttention", "rust_main",
           "hs_matrix", "hs_multiply", "hs_transpose", "hs_softmax", "hs_matrix_softmax",
           "hs_new_self_attention", "hs_forward", "hs_new_multi_head_attention",
           "hs_multi_head_forward", "hs_example"]


# ---------------------------------------------------------------- Rust (nalgebra)

class RustSelfAttention:
    """``pub struct SelfAttention`` and its ``impl``; ``x`` is ``(seq_len, d_model)``."""

    def __init__(self, d_model: int, d_k: int, rng):                # pub fn new(d_model: usize, d_k: usize) -> Self {
        self.w_q = rng.random((d_model, d_k)) * 0.1                 # let w_q = DMatrix::random(d_model, d_k) * 0.1;
        self.w_k = rng.random((d_model, d_k)) * 0.1                 # let w_k = DMatrix::random(d_model, d_k) * 0.1;
        self.w_v = rng.random((d_model, d_k)) * 0.1                 # let w_v = DMatrix::random(d_model, d_k) * 0.1;
        self.d_model, self.d_k = d_model, d_k                       # Self { d_model, d_k, w_q, w_k, w_v }

    def forward(self, x):                                           # pub fn forward(&self, x: &DMatrix<f64>) -> DMatrix<f64> {
        q = x @ self.w_q                                            # let q = x * &self.w_q;
        k = x @ self.w_k                                            # let k = x * &self.w_k;
        v = x @ self.w_v                                            # let v = x * &self.w_v;
        scores = q @ k.T                                            # let scores = &q * &k.transpose();
        scaled_scores = scores / np.sqrt(float(self.d_k))           # let scaled_scores = scores / (self.d_k as f64).sqrt();
        attention_weights = self.softmax(scaled_scores)             # let attention_weights = self.softmax(&scaled_scores);
        self.last_weights = attention_weights                       # (kept for inspection; not in the source)
        return attention_weights @ v                                # &attention_weights * &v

    def softmax(self, x):                                           # fn softmax(&self, x: &DMatrix<f64>) -> DMatrix<f64> {
        result = np.zeros(x.shape)                                  # let mut result = DMatrix::zeros(x.nrows(), x.ncols());
        for j in range(x.shape[1]):                                 # for j in 0..x.ncols() {
            max_val = x[:, j].max()                                 #   let max_val = x.column(j).max();
            exp_sum = sum(np.exp(val - max_val) for val in x[:, j])  # let exp_sum: f64 = x.column(j).iter().map(|&val| (val - max_val).exp()).sum();
            for i in range(x.shape[0]):                             #   for i in 0..x.nrows() {
                result[i, j] = np.exp(x[i, j] - max_val) / exp_sum  #     result[(i, j)] = (x[(i, j)] - max_val).exp() / exp_sum;
        return result                                               # result


class RustMultiHeadAttention:
    """``pub struct MultiHeadAttention`` and its ``impl``."""

    def __init__(self, num_heads: int, d_model: int, rng):          # pub fn new(num_heads: usize, d_model: usize) -> Self {
        d_k = d_model // num_heads                                  # let d_k = d_model / num_heads;
        self.attention_heads = [RustSelfAttention(d_model, d_k, rng)  # let attention_heads: Vec<SelfAttention> = (0..num_heads)
                                for _ in range(num_heads)]          #   .map(|_| SelfAttention::new(d_model, d_k)).collect();
        self.w_o = rng.random((d_model, d_model)) * 0.1             # let w_o = DMatrix::random(d_model, d_model) * 0.1;
        self.num_heads, self.d_model, self.d_k = num_heads, d_model, d_k  # Self { num_heads, d_model, d_k, attention_heads, w_o }

    def forward(self, x):                                           # pub fn forward(&self, x: &DMatrix<f64>) -> DMatrix<f64> {
        seq_len = x.shape[0]                                        # let seq_len = x.nrows();
        d_k = self.d_model // self.num_heads                        # let d_k = self.d_model / self.num_heads;
        head_outputs = []                                           # let mut head_outputs = Vec::new();
        for head in self.attention_heads:                           # for head in &self.attention_heads {
            head_outputs.append(head.forward(x))                    #   let head_output = head.forward(x); head_outputs.push(head_output);
        concatenated = np.zeros((seq_len, self.d_model))            # let mut concatenated = DMatrix::zeros(seq_len, self.d_model);
        for i, head_output in enumerate(head_outputs):              # for (i, head_output) in head_outputs.iter().enumerate() {
            start_col, end_col = i * d_k, (i + 1) * d_k             #   let start_col = i * d_k; let end_col = (i + 1) * d_k;
            for row in range(seq_len):                              #   for row in 0..seq_len {
                for col in range(start_col, end_col):               #     for col in start_col..end_col {
                    concatenated[row, col] = head_output[row, col - start_col]  # concatenated[(row, col)] = head_output[(row, col - start_col)];
        return concatenated @ self.w_o                              # &concatenated * &self.w_o


def rust_main(seed: int = 0):
    """``fn main()``: returns ``(x, mha, output)`` instead of printing the shapes."""
    rng = np.random.default_rng(seed)
    seq_len, d_model, num_heads = 10, 64, 8                         # let seq_len = 10; let d_model = 64; let num_heads = 8;
    x = rng.random((seq_len, d_model))                              # let x = DMatrix::random(seq_len, d_model);
    mha = RustMultiHeadAttention(num_heads, d_model, rng)           # let mha = MultiHeadAttention::new(num_heads, d_model);
    output = mha.forward(x)                                         # let output = mha.forward(&x);
    return x, mha, output                                           # println!("Input shape: …"); println!("Output shape: …");


# ---------------------------------------------------------------- Haskell (Data.Matrix)

def hs_matrix(n: int, m: int, f):
    """``Data.Matrix.matrix n m f``: entry (i, j), 1-based, is ``f((i, j))``."""
    return np.array([[f((i, j)) for j in range(1, m + 1)] for i in range(1, n + 1)], dtype=float)


def hs_new_self_attention(d_model: int, d_k: int) -> dict:          # newSelfAttention dModel dK = SelfAttention {
    """A ``SelfAttention`` record (``data SelfAttention = SelfAttention {…}``) as a dict."""
    return {"dModel": d_model, "dK": d_k,                           #   dModel = dModel, dK = dK,
            "wQ": hs_matrix(d_model, d_k, lambda _: 0.1),           #   wQ = matrix dModel dK (\_ -> 0.1),
            "wK": hs_matrix(d_model, d_k, lambda _: 0.1),           #   wK = matrix dModel dK (\_ -> 0.1),
            "wV": hs_matrix(d_model, d_k, lambda _: 0.1)}           #   wV = matrix dModel dK (\_ -> 0.1) }


def hs_multiply(a, b):                                              # multiply a b = matrix (nrows a) (ncols b) (\(i, j) ->
    return hs_matrix(a.shape[0], b.shape[1], lambda ij: sum(        #   sum [a ! (i, k) * b ! (k, j) | k <- [1..ncols a]])
        a[ij[0] - 1, k - 1] * b[k - 1, ij[1] - 1] for k in range(1, a.shape[1] + 1)))


def hs_transpose(m):                                                # transpose m = matrix (ncols m) (nrows m) (\(i, j) -> m ! (j, i))
    return hs_matrix(m.shape[1], m.shape[0], lambda ij: m[ij[1] - 1, ij[0] - 1])


def hs_softmax(v):                                                  # softmax v = V.map (\x -> exp x / sum) normalized
    v = np.asarray(v, dtype=float)
    max_val = v.max()                                               #   where maxVal = V.maximum v
    normalized = np.exp(v - max_val)                                #         normalized = V.map (\x -> exp (x - maxVal)) v
    total = normalized.sum()                                        #         sum = V.sum normalized
    return np.exp(normalized) / total                               # V.map (\x -> exp x / sum) normalized


def hs_matrix_softmax(m):                                           # matrixSoftmax m = matrix (nrows m) (ncols m) (\(i, j) ->
    return hs_matrix(m.shape[0], m.shape[1], lambda ij: hs_softmax(  #   softmax (V.fromList [m ! (i, k) | k <- [1..ncols m]]) V.! (j-1))
        [m[ij[0] - 1, k - 1] for k in range(1, m.shape[1] + 1)])[ij[1] - 1])


def hs_forward(attn: dict, x):                                      # forward attn x =
    q = hs_multiply(x, attn["wQ"])                                  #   let q = multiply x (wQ attn)
    k = hs_multiply(x, attn["wK"])                                  #       k = multiply x (wK attn)
    v = hs_multiply(x, attn["wV"])                                  #       v = multiply x (wV attn)
    scores = hs_multiply(q, hs_transpose(k))                        #       scores = multiply q (transpose k)
    scaled = hs_matrix(scores.shape[0], scores.shape[1],            #       scaledScores = matrix (nrows scores) (ncols scores) (\(i, j) ->
                       lambda ij: scores[ij[0] - 1, ij[1] - 1] / np.sqrt(float(attn["dK"])))  # scores ! (i, j) / sqrt (fromIntegral (dK attn)))
    weights = hs_matrix_softmax(scaled)                             #       attentionWeights = matrixSoftmax scaledScores
    attn["last_weights"] = weights                                  #       (kept for inspection; not in the source)
    return hs_multiply(weights, v)                                  #       output = multiply attentionWeights v in output


def hs_new_multi_head_attention(num_heads: int, d_model: int) -> dict:  # newMultiHeadAttention numHeads dModel = MultiHeadAttention {
    """A ``MultiHeadAttention`` record (``data MultiHeadAttention = MultiHeadAttention {…}``) as a dict."""
    head = hs_new_self_attention(d_model, d_model // num_heads)
    return {"numHeads": num_heads, "dModel": d_model,               #   numHeads = numHeads, dModel = dModel,
            "attentionHeads": [head] * num_heads,                   #   attentionHeads = replicate numHeads (newSelfAttention dModel (dModel `div` numHeads)),
            "wO": hs_matrix(d_model, d_model, lambda _: 0.1)}       #   wO = matrix dModel dModel (\_ -> 0.1) }


def hs_multi_head_forward(mha: dict, x):                            # multiHeadForward mha x =
    d_k = mha["dModel"] // mha["numHeads"]                          #   let dK = dModel mha `div` numHeads mha  (never used)
    head_outputs = map(lambda head: hs_forward(head, x), mha["attentionHeads"])  # headOutputs = map (\head -> forward head x) (attentionHeads mha)
    concatenated = next(head_outputs)                               #   concatenated = head (headOutputs)  -- 简化：只使用第一个头
    return hs_multiply(concatenated, mha["wO"])                     #   output = multiply concatenated (wO mha) in output


def hs_example():
    """``example :: IO ()``: returns ``(x, mha, output)`` instead of printing the shapes."""
                                                                    # example = do
    seq_len, d_model, num_heads = 10, 64, 8                         # let seqLen = 10; dModel = 64; numHeads = 8
    x = hs_matrix(seq_len, d_model, lambda ij: 0.1)                 #     x = matrix seqLen dModel (\(i, j) -> 0.1)
    mha = hs_new_multi_head_attention(num_heads, d_model)           #     mha = newMultiHeadAttention numHeads dModel
    output = hs_multi_head_forward(mha, x)                          #     output = multiHeadForward mha x
    return x, mha, output                                           # putStrLn $ "Input shape: " ++ …; putStrLn $ "Output shape: " ++ …
