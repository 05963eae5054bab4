/* course_lib.widgets.attention_explorer: attention weights, token by token.
 * Plain JavaScript and SVG; the data is inlined by Python; nothing is fetched.
 * root: the widget's <div class="cw-root cw-explorer">; data: the payload
 * {title, digits, layers, heads, inputs: [{tokens, weights[layer][head][q][k]}]}. */
function courseAttentionExplorer(root, data) {
  "use strict";
  var d = data.digits;
  var state = { input: 0, layer: 0, head: 0, query: 0 };
  var stage = root.querySelector(".cw-stage");
  var readout = root.querySelector(".cw-readout");

  function select(role) { return root.querySelector("select[data-role=" + role + "]"); }

  function weights() {
    return data.inputs[state.input].weights[state.layer][state.head];
  }

  function build() {
    var tokens = data.inputs[state.input].tokens;
    var L = tokens.length;
    var cols = "grid-template-columns: repeat(" + L + ", minmax(3.6em, 1fr))";
    var q = "", k = "";
    for (var i = 0; i < L; i++) {
      q += '<button type="button" class="cw-tok cw-qtok" data-i="' + i + '" title="query ' +
        (i + 1) + ' · 查询 ' + (i + 1) + '">' + cwEsc(tokens[i]) + "</button>";
      k += '<div class="cw-tok cw-ktok" data-j="' + i + '"><span class="cw-kt">' +
        cwEsc(tokens[i]) + '</span><span class="cw-w"></span></div>';
    }
    stage.innerHTML =
      '<div class="cw-rowlabel">Queries · 查询 (hover · 悬停)</div>' +
      '<div class="cw-inner" style="min-width:' + (3.8 * L) + 'em">' +
      '<div class="cw-row cw-q" style="' + cols + '">' + q + "</div>" +
      '<svg class="cw-lines" viewBox="0 0 ' + (100 * L) + ' 60" preserveAspectRatio="none"' +
      ' width="100%" height="60" role="img" aria-label="attention lines · 注意力连线"></svg>' +
      '<div class="cw-row cw-k" style="' + cols + '">' + k + "</div></div>" +
      '<div class="cw-rowlabel">Keys · 键 (weight · 权重)</div>';
    var buttons = stage.querySelectorAll(".cw-qtok");
    for (var b = 0; b < buttons.length; b++) {
      ["mouseenter", "focus", "click"].forEach(function (ev) {
        buttons[b].addEventListener(ev, function (e) {
          state.query = parseInt(e.currentTarget.getAttribute("data-i"), 10);
          draw();
        });
      });
    }
    if (state.query >= L) state.query = 0;
    draw();
  }

  function draw() {
    var tokens = data.inputs[state.input].tokens;
    var L = tokens.length;
    var row = weights()[state.query];
    var lines = "";
    var parts = [];
    for (var j = 0; j < L; j++) {
      var w = row[j];
      lines += '<line x1="' + (100 * state.query + 50) + '" y1="2" x2="' + (100 * j + 50) +
        '" y2="58" stroke="#0a7d91" stroke-linecap="round" vector-effect="non-scaling-stroke"' +
        ' stroke-width="' + (0.5 + 7 * w).toFixed(2) + '" stroke-opacity="' +
        (0.08 + 0.92 * w).toFixed(3) + '"></line>';
      parts.push(cwEsc(tokens[j]) + " " + cwShow(w, d));
    }
    stage.querySelector(".cw-lines").innerHTML = lines;
    var qs = stage.querySelectorAll(".cw-qtok");
    for (var i = 0; i < qs.length; i++) {
      qs[i].classList.toggle("cw-active", i === state.query);
      qs[i].setAttribute("aria-pressed", i === state.query ? "true" : "false");
    }
    var ks = stage.querySelectorAll(".cw-ktok");
    for (var k = 0; k < ks.length; k++) {
      ks[k].style.backgroundColor = "rgba(10, 125, 145, " + (0.55 * row[k]).toFixed(3) + ")";
      ks[k].querySelector(".cw-w").textContent = cwShow(row[k], d);
    }
    readout.innerHTML = "<b>" + cwEsc(tokens[state.query]) + "</b> → " + parts.join(", ") +
      ' <span class="cw-dim">(' + cwEsc(data.layers[state.layer]) + " · " +
      cwEsc(data.heads[state.head]) + ")</span>";
  }

  ["input", "layer", "head"].forEach(function (role) {
    var s = select(role);
    if (!s) return;
    s.addEventListener("change", function () {
      state[role] = parseInt(s.value, 10);
      if (role === "input") build(); else draw();
    });
  });
  build();
  root.setAttribute("data-ready", "1");
}
