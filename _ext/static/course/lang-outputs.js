/* Code-cell outputs follow the language switch (lang.js): issue #22.
 *
 * Outputs carry bilingual labels, "English · 中文": table headers
 * ("step · 步骤"), captions, check lines ("✓ rows sum to 1 · 每行之和为 1"),
 * stream lines ("scores · 分数: [0.71 0.71 1.41]   weights · 权重: [...]").
 * Once the page is loaded, every text node under div.cell_output is cut into
 * shared text and pairs, each pair wrapped as
 *     <span class="course-label-en">English</span><span class="course-label-sep"> · </span><span class="course-label-zh">中文</span>
 * lang.css hides -zh and -sep under English, -en and -sep under 中文, and
 * nothing under both, so the "both" view is character for character the text
 * the cell printed (tests/book/test_visible_text.py compares it with text/plain).
 * The text/plain that nbval compares is not touched: this is the page only.
 *
 * SEGMENTATION RULES (segments(text) below; tested by
 * tests/book/test_language_switch_outputs.py). Conservative: when in doubt,
 * a label stays bilingual, and no language ever hides a number or a token
 * that is not part of a label.
 *  1. A separator is "·" (U+00B7) with at least one space on each side
 *     ("5·0.2" is a product). Each text node is cut on its own, so a label
 *     split by markup stays whole; nothing inside code, a widget (.cw-root),
 *     math, script or style is touched. A line may hold several pairs,
 *     separated by other text ("label · 标签: 0.5   loss · 损失: 0.7").
 *  2. The Chinese side starts right after the separator (with a letter, digit,
 *     Han character, opening quote or full-width punctuation) and runs forward
 *     until a stop (rule 4); it ends at its last Han character or closing CJK
 *     punctuation (）」』》】。？！), so a value after it stays shared ("true ·
 *     真实 0", "检查点 ch05-x"). Then it takes the tokens that follow (after a
 *     space or "：") if they are also written before the separator, so the
 *     English reader still sees them ("head 1 · 头 1", "claims ~75% · 原文称约
 *     75%", "embed_text and generate_text · … embed_text 和 generate_text").
 *  3. The English side ends right before the separator and runs backward
 *     until a stop, a Han character or full-width punctuation. It crosses as
 *     many phrase-ending ASCII commas and colons (followed by a space) as the
 *     Chinese side has "，"/"、" and "："/":" ("correct, with a note · 正确，
 *     附说明" is one label, but in "(ch05-x, arithmetic slip · 计算错误)" the
 *     key stays shared). It never crosses a quote that holds Chinese.
 *  4. Stops, on both sides: another separator, a line break or tab, two
 *     spaces in a row (a column gap), | ; → ← ↑ ↓ ✓ ✗ ⟨ ⟩ …, and an unmatched
 *     bracket or quote (balanced (…) […] {…} "…" '…' “…” ‘…’ are crossed as
 *     a whole; an apostrophe between letters is a letter). An arrow right
 *     before the separator belongs to the label if the Chinese side ends
 *     with the same arrow ("query → · 查询 →"). On the Chinese side an ASCII
 *     comma or colon followed by a space also stops it (a label's Chinese
 *     punctuation is full-width, and Chinese data after "gold · 答案: " must
 *     stay shared); "50,000" and "a:b" do not.
 *  5. Numbers (runs of digits, with a decimal part): both sides must hold the
 *     same multiset, so a number is hidden in one language only when the
 *     other side repeats it. The English side may lose leading tokens that
 *     hold a digit ("51657 weights · 个权重" pairs "weights"); otherwise no
 *     pair ("loss 0.5 · 损失 0.7", "one process (float64) · 单进程" stay whole).
 *  6. A pair is kept only if the English side has a plain English word (two or
 *     more ASCII letters, inner hyphens and apostrophes allowed: not "d_k",
 *     "L1 H8", "ε") and no Han character, and the Chinese side has a Han
 *     character. So "0.751 · 0.752", "translator · step 100/150 · loss",
 *     "L1 H8 · 头" and "d_k · 维度" stay whole.
 * segments(text) returns [[kind, string], ...] with kind "" (shared), "en",
 * "sep" or "zh"; the strings joined give back text exactly. apply(root) wraps
 * the pairs of every text node under root (default: every div.cell_output);
 * it runs once when the page has loaded.
 */
(function () {
  "use strict";

  var SEP = /[ \u00a0]+\u00b7[ \u00a0]+/g;
  var HAN = /[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]/;
  var CJK_END = /[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff）」』》】。？！]/;
  var CJK_PUNCT = /[\u3000-\u303f\uff00-\uffef]/;
  var STOPS = "|;→←↑↓✓✗⟨⟩…\n\t";
  var OPEN = {"(": ")", "[": "]", "{": "}"};
  var CLOSE = {")": "(", "]": "[", "}": "{"};
  var QUOTES = {'"': '"', "'": "'", "\u201c": "\u201d", "\u2018": "\u2019"};   // opener -> closer
  var QUOTE_CLOSE = {'"': '"', "'": "'", "\u201d": "\u201c", "\u2019": "\u2018"};
  var LETTER = /[A-Za-z]/;
  var WORD = /^[A-Za-z]+(?:[-'\u2019][A-Za-z]+)*$/;
  var NUM = /\d+(?:\.\d+)?/g;

  function isApostrophe(text, i) {
    var c = text.charAt(i);
    return (c === "'" || c === "\u2019") && LETTER.test(text.charAt(i - 1)) && LETTER.test(text.charAt(i + 1));
  }

  function isQuote(c) { return QUOTES[c] !== undefined || QUOTE_CLOSE[c] !== undefined; }

  /* A quote at text[i] opens: a curly opener, or a straight quote at the start or after a space or bracket. */
  function isOpening(text, i) {
    var c = text.charAt(i);
    if (c === "\u201c" || c === "\u2018") return true;
    if (c === "\u201d" || c === "\u2019") return false;
    return i === 0 || /[\s(\[{:]/.test(text.charAt(i - 1));
  }

  /* A comma or colon at text[i] that ends a phrase (a space or the end follows), not "50,000" or "a:b". */
  function isPause(text, i) { return i + 1 >= text.length || /\s/.test(text.charAt(i + 1)); }

  function isGap(text, i) {   // text[i] is a space that belongs to a run of two or more
    var sp = /[ \u00a0]/;
    return sp.test(text.charAt(i)) && (sp.test(text.charAt(i - 1)) || sp.test(text.charAt(i + 1)));
  }

  /* Index of the opener matching the closer at text[j], searching back to lo; -1 if none. */
  function openerBack(text, lo, j) {
    var stack = [text.charAt(j)];
    for (var k = j - 1; k >= lo; k--) {
      var c = text.charAt(k);
      if (c === "\n") return -1;
      if (CLOSE[c]) stack.push(c);
      else if (OPEN[c]) {
        if (OPEN[c] !== stack[stack.length - 1]) return -1;
        stack.pop();
        if (!stack.length) return k;
      }
    }
    return -1;
  }

  /* Index of the closer matching the opener at text[j], searching forward to hi; -1 if none. */
  function closerFwd(text, j, hi) {
    var stack = [text.charAt(j)];
    for (var k = j + 1; k < hi; k++) {
      var c = text.charAt(k);
      if (c === "\n") return -1;
      if (OPEN[c]) stack.push(c);
      else if (CLOSE[c]) {
        if (CLOSE[c] !== stack[stack.length - 1]) return -1;
        stack.pop();
        if (!stack.length) return k;
      }
    }
    return -1;
  }

  function count(s, re) { var m = s.match(re); return m ? m.length : 0; }

  /* Rule 3: where the English side ending at `end` starts (>= lo). */
  function scanBack(text, lo, end, commas, colons) {
    var i = end;
    while (i > lo) {
      var j = i - 1, c = text.charAt(j);
      if (HAN.test(c) || CJK_PUNCT.test(c) || STOPS.indexOf(c) >= 0 || isGap(text, j) || OPEN[c]) break;
      if (CLOSE[c]) {
        var k = openerBack(text, lo, j);
        if (k < 0) break;
        i = k; continue;
      }
      if (isQuote(c) && !isApostrophe(text, j)) {
        if (isOpening(text, j)) break;                                       // an unmatched opener
        var q = text.lastIndexOf(QUOTE_CLOSE[c], j - 1);
        while (q >= lo && !isOpening(text, q)) q = text.lastIndexOf(QUOTE_CLOSE[c], q - 1);
        if (q < lo || /\n/.test(text.slice(q, j)) || HAN.test(text.slice(q, j))) break;
        i = q; continue;
      }
      if (c === "," && isPause(text, j)) { if (commas-- <= 0) break; }
      if (c === ":" && isPause(text, j)) { if (colons-- <= 0) break; }
      i = j;
    }
    while (i < end && /\s/.test(text.charAt(i))) i++;
    return i;
  }

  /* Rules 2 and 4: where the Chinese side starting at `start` ends (<= hi). */
  function scanFwd(text, start, hi) {
    var c0 = text.charAt(start);
    if (!/[A-Za-z0-9"'\u201c\u2018]/.test(c0) && !HAN.test(c0) && !CJK_PUNCT.test(c0)) return [start, start];
    var i = start, last = start;
    while (i < hi) {
      var c = text.charAt(i);
      if (CJK_END.test(c)) { i++; last = i; continue; }
      if (CJK_PUNCT.test(c)) { i++; continue; }
      if (STOPS.indexOf(c) >= 0 || isGap(text, i) || ((c === "," || c === ":") && isPause(text, i)) || CLOSE[c]) break;
      if (OPEN[c]) {
        var k = closerFwd(text, i, hi);
        if (k < 0) break;
        if (HAN.test(text.slice(i, k))) last = k + 1;
        i = k + 1; continue;
      }
      if (isQuote(c) && !isApostrophe(text, i)) {
        if (!isOpening(text, i)) break;                                      // an unmatched closer
        var q = text.indexOf(QUOTES[c], i + 1);
        while (q >= 0 && q < hi && isOpening(text, q) && QUOTES[c] === c) q = text.indexOf(c, q + 1);
        if (q < 0 || q >= hi || /\n/.test(text.slice(i, q))) break;
        if (HAN.test(text.slice(i, q))) last = q + 1;
        i = q + 1; continue;
      }
      i++;
    }
    return [last, i];
  }

  function nums(s) { return s.match(NUM) || []; }

  function subset(a, b) {   // multiset a within multiset b
    var rest = b.slice();
    for (var i = 0; i < a.length; i++) {
      var k = rest.indexOf(a[i]);
      if (k < 0) return false;
      rest.splice(k, 1);
    }
    return true;
  }

  /* Rule 2, second half: tokens after the Chinese side that are also written before the separator. */
  function mirror(text, before, b, hi) {
    var tokens = before.split(/\s+/).map(function (t) { return t.replace(/^[(\[{"'\u201c\u2018~]+|[)\]}"'\u201d\u2019,.;:%]+$/g, ""); });
    for (;;) {
      var m = /^[ \u3000\uff1a\uff0c]([^\s|;,:()\[\]{}"'\u201c\u201d\u2018\u2019\u2192\u2190\u2191\u2193\u2713\u2717\u27e8\u27e9\u2026\u00b7\u3000-\u303f\uff00-\uffef]+)/.exec(text.slice(b, hi));
      if (!m) return b;
      var t = m[1].replace(/^~/, "").replace(/%$/, "");
      if (!t || tokens.indexOf(t) < 0) return b;
      b += m[0].length;
    }
  }

  /* Rule 5: [a', b] with the same numbers on both sides, a' >= a, or null. */
  function reconcile(text, a, s, e, b) {
    var zhNums = nums(text.slice(e, b));
    while (!subset(nums(text.slice(a, s)), zhNums)) {
      var m = /^(\S+)(\s+)/.exec(text.slice(a, s));
      if (!m || !/\d/.test(m[1])) return null;          // only leading numbers (and tokens holding one) go
      a += m[0].length;
      while (a < s && /\s/.test(text.charAt(a))) a++;
    }
    if (a >= s || !subset(zhNums, nums(text.slice(a, s)))) return null;
    return [a, b];
  }

  function plainWord(en) {
    return en.split(/\s+/).some(function (t) {
      var w = t.replace(/^[(\[{"'“‘]+|[)\]}"'”’,.;:!?]+$/g, "");
      return w.length >= 2 && WORD.test(w);
    });
  }

  /* The segments of `text`: [[kind, string], ...], kind "" (shared), "en", "sep", "zh". */
  function segments(text) {
    var seps = [], m;
    SEP.lastIndex = 0;
    while ((m = SEP.exec(text)) !== null) seps.push([m.index, m.index + m[0].length]);
    if (!seps.length || !HAN.test(text)) return [["", text]];
    var pairs = [], prevEnd = 0;
    for (var i = 0; i < seps.length; i++) {
      var s = seps[i][0], e = seps[i][1];
      var lo = Math.max(prevEnd, i > 0 ? seps[i - 1][1] : 0);
      var hi = i + 1 < seps.length ? seps[i + 1][0] : text.length;
      var fwd = scanFwd(text, e, hi), b = fwd[0];
      var zh0 = text.slice(e, fwd[1]);
      if (!HAN.test(zh0)) continue;
      // an arrow that ends both sides belongs to the label ("query → · 查询 →")
      var arrow = /[→←↑↓]/.test(text.charAt(s - 1)) ? text.charAt(s - 1) : null;
      var enEnd = arrow ? s - 1 : s;
      while (arrow && enEnd > lo && text.charAt(enEnd - 1) === " ") enEnd--;
      var a = scanBack(text, lo, enEnd, count(zh0, /[，、]/g), count(zh0, /[：:]/g));
      b = mirror(text, text.slice(lo, s), b, hi);
      if (arrow) {
        var m2 = /^ ?[→←↑↓]/.exec(text.slice(b, hi));
        if (!m2 || m2[0].slice(-1) !== arrow) continue;
        b += m2[0].length;
      }
      var r = reconcile(text, a, s, e, b);
      if (!r) continue;
      a = r[0]; b = r[1];
      var en = text.slice(a, s), zh = text.slice(e, b);
      if (HAN.test(en) || !HAN.test(zh) || !plainWord(en)) continue;
      pairs.push([a, s, e, b]);
      prevEnd = b;
    }
    if (!pairs.length) return [["", text]];
    var out = [], pos = 0;
    pairs.forEach(function (p) {
      if (p[0] > pos) out.push(["", text.slice(pos, p[0])]);
      out.push(["en", text.slice(p[0], p[1])], ["sep", text.slice(p[1], p[2])], ["zh", text.slice(p[2], p[3])]);
      pos = p[3];
    });
    if (pos < text.length) out.push(["", text.slice(pos)]);
    return out;
  }

  var SKIP = "code, script, style, textarea, .cw-root, mjx-container, .MathJax, .course-label-en, .course-label-zh";

  /* Wrap the pairs of every text node under `root` (default: every div.cell_output). */
  function apply(root) {
    var roots = root ? [root] : document.querySelectorAll("div.cell_output");
    for (var r = 0; r < roots.length; r++) {
      var walker = document.createTreeWalker(roots[r], NodeFilter.SHOW_TEXT, null), nodes = [], n;
      while ((n = walker.nextNode())) {
        if (n.nodeValue.indexOf("\u00b7") < 0 || !HAN.test(n.nodeValue)) continue;
        if (n.parentElement && n.parentElement.closest(SKIP)) continue;
        nodes.push(n);
      }
      nodes.forEach(function (node) {
        var segs = segments(node.nodeValue);
        if (segs.length === 1) return;
        var frag = document.createDocumentFragment();
        segs.forEach(function (sg) {
          if (!sg[0]) { frag.appendChild(document.createTextNode(sg[1])); return; }
          var span = document.createElement("span");
          span.className = "course-label-" + sg[0];
          span.textContent = sg[1];
          frag.appendChild(span);
        });
        node.parentNode.replaceChild(frag, node);
      });
    }
  }

  var api = {segments: segments, apply: apply};
  if (typeof module !== "undefined" && module.exports) { module.exports = api; return; }
  window.courseLabels = api;
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { apply(); });
  } else {
    apply();
  }
})();
