"""The service's try-it page, ``GET /``: plain HTML and JavaScript, inlined, bilingual (chapter 8).

Nothing is fetched from another host (no CDN, no font, no favicon request:
the icon is an empty ``data:`` URL), so the page works offline. Each form
posts JSON to its route and shows the answer; a refusal shows its envelope's
English and Chinese messages.
"""

from __future__ import annotations

__all__ = ["page_html"]

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>Text-processing service · 文本处理服务</title>
<style>
body { font-family: system-ui, sans-serif; max-width: 52rem; margin: 1.5rem auto; padding: 0 1rem; color: #222; }
section { border: 1px solid #ccc; border-radius: 6px; padding: .6rem 1rem; margin: 1rem 0; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.1rem; margin: .2rem 0 .5rem; }
textarea, input { width: 100%; box-sizing: border-box; font: inherit; margin: .2rem 0; }
input[type=number] { width: 6rem; }
button { font: inherit; padding: .2rem 1rem; }
.answer { font-weight: bold; margin: .4rem 0; } .error { color: #a00; }
pre { background: #f6f6f6; padding: .5rem; overflow-x: auto; font-size: .85rem; }
</style>
</head>
<body>
<h1>Text-processing service · 文本处理服务</h1>
<p>Chapter 8's models behind an HTTP API. Every answer below comes from this server (127.0.0.1);
the machine-readable description is <a href="/openapi.json">/openapi.json</a>, the models and
their checksums are at <a href="/v1/health">/v1/health</a>.<br>
第 8 章的模型，通过 HTTP 接口提供服务。下面的每个回答都来自本机服务器（127.0.0.1）；
接口描述见 <a href="/openapi.json">/openapi.json</a>，模型及其校验和见 <a href="/v1/health">/v1/health</a>。</p>

<section id="sentiment">
<h2>Sentiment · 情感分类 <code>POST /v1/sentiment</code></h2>
<textarea id="sentiment-text" rows="2">质量很好，物流也快，非常满意！</textarea>
<button id="sentiment-go">Classify · 分类</button>
<div class="answer" id="sentiment-answer"></div><pre id="sentiment-json"></pre>
</section>

<section id="similarity">
<h2>Similarity · 相似度 <code>POST /v1/similarity</code></h2>
<input id="similarity-a" value="How long does the phone battery last?">
<input id="similarity-b" value="The battery of this phone lasts two days.">
<button id="similarity-go">Compare · 比较</button>
<div class="answer" id="similarity-answer"></div><pre id="similarity-json"></pre>
</section>

<section id="search">
<h2>Search · 检索 <code>POST /v1/search</code></h2>
<input id="search-text" value="Where can I eat good food?">
k <input id="search-k" type="number" value="3" min="1">
<button id="search-go">Search · 检索</button>
<div class="answer" id="search-answer"></div><pre id="search-json"></pre>
</section>

<section id="summarize">
<h2>Extractive summary · 抽取式摘要 <code>POST /v1/summarize</code></h2>
<textarea id="summarize-text" rows="5">Attention lets every token look at every other token. The weights come from a softmax of scaled dot products. Each head learns its own projections. The pizza was cold. A Transformer stacks attention and feed-forward layers with residual connections.</textarea>
k <input id="summarize-k" type="number" value="2" min="1">
<button id="summarize-go">Summarise · 摘要</button>
<div class="answer" id="summarize-answer"></div><pre id="summarize-json"></pre>
</section>

<script>
"use strict";
const val = (id) => document.getElementById(id).value;
const requests = {
  sentiment: () => ({text: val("sentiment-text")}),
  similarity: () => ({a: val("similarity-a"), b: val("similarity-b")}),
  search: () => ({text: val("search-text"), k: parseInt(val("search-k"), 10)}),
  summarize: () => ({text: val("summarize-text"), k: parseInt(val("summarize-k"), 10)}),
};
const answers = {
  sentiment: (r) => r.label + " (" + r.confidence.toFixed(3) + ")",
  similarity: (r) => "cosine · 余弦 = " + r.cosine.toFixed(4),
  search: (r) => r.results.map((x) => x.sentence + " (" + x.cosine.toFixed(3) + ")").join(" | "),
  summarize: (r) => r.summary.map((x) => "[" + (x.index + 1) + "] " + x.sentence).join(" "),
};
async function run(name) {
  const answer = document.getElementById(name + "-answer");
  const out = document.getElementById(name + "-json");
  answer.className = "answer"; answer.textContent = "…";
  const response = await fetch("/v1/" + name, {method: "POST",
    headers: {"Content-Type": "application/json"}, body: JSON.stringify(requests[name]())});
  const body = await response.json();
  out.textContent = response.status + "\\n" + JSON.stringify(body, null, 2);
  if (response.ok) {
    answer.textContent = answers[name](body);
  } else {
    answer.className = "answer error";
    answer.textContent = body.error.field + ": " + body.error.message_en + " · " + body.error.message_zh;
  }
  answer.dataset.done = "1";
}
for (const name of Object.keys(requests)) {
  document.getElementById(name + "-go").addEventListener("click", () => run(name));
}
</script>
</body>
</html>
"""


def page_html() -> str:
    """The page's HTML (one string, no external assets)."""
    return _PAGE
