/* course_lib.widgets.qkv_playground: edit the query, watch the attention.
 *   score_i = q . k_i / sqrt(d_k),  w = softmax(score)  (stable: minus the max),
 *   context = sum_i w_i v_i.
 * Plain JavaScript; the data {q, K, V, digits} is inlined by Python. */
function courseQKVPlayground(root, data) {
  "use strict";
  var d = data.digits;
  var K = data.K, V = data.V, dk = K[0].length, dv = V[0].length;
  var q = data.q.slice();

  function compute(q) {
    var scale = Math.sqrt(dk);
    var scores = K.map(function (k) {
      var s = 0;
      for (var c = 0; c < dk; c++) s += q[c] * k[c];
      return s / scale;
    });
    var m = Math.max.apply(null, scores);
    var e = scores.map(function (s) { return Math.exp(s - m); });
    var total = e.reduce(function (a, b) { return a + b; }, 0);
    var w = e.map(function (x) { return x / total; });
    var ctx = [];
    for (var c2 = 0; c2 < dv; c2++) {
      var acc = 0;
      for (var i = 0; i < V.length; i++) acc += w[i] * V[i][c2];
      ctx.push(acc);
    }
    return { scores: scores, weights: w, context: ctx };
  }

  function cell(name) { return root.querySelector('[data-cell="' + name + '"]'); }

  function render() {
    var r = compute(q);
    for (var i = 0; i < K.length; i++) {
      cell("score-" + i).textContent = cwShow(r.scores[i], d);
      cell("weight-" + i).textContent = cwShow(r.weights[i], d);
      cell("bar-" + i).style.width = (100 * r.weights[i]).toFixed(1) + "%";
    }
    for (var c = 0; c < dv; c++) cell("context-" + c).textContent = cwShow(r.context[c], d);
    root.setAttribute("data-query", JSON.stringify(q));
  }

  var inputs = root.querySelectorAll("input[data-q]");
  for (var n = 0; n < inputs.length; n++) {
    inputs[n].addEventListener("input", function (ev) {
      var el = ev.currentTarget;
      var c = parseInt(el.getAttribute("data-q"), 10);
      var v = parseFloat(el.value);
      if (!isFinite(v)) return;               /* half-typed number: keep the last one */
      q[c] = v;
      var twins = root.querySelectorAll('input[data-q="' + c + '"]');
      for (var t = 0; t < twins.length; t++) if (twins[t] !== el) twins[t].value = el.value;
      render();
    });
  }
  render();
  root.setAttribute("data-ready", "1");
}
