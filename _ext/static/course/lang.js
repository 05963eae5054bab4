/* Language switch of the course book: English / 中文 / both.
 * The choice is kept in localStorage, so it persists across pages and
 * reloads (also when the book is opened from disk). Blocks are marked by the
 * local Sphinx extension with class "lang-en" or "lang-zh". */
(function () {
  "use strict";
  var KEY = "course-lang";
  var CHOICES = [["en", "English"], ["zh", "中文"], ["both", "EN + 中文"]];

  function read() {
    try {
      var v = window.localStorage.getItem(KEY);
      if (v === "en" || v === "zh" || v === "both") return v;
    } catch (e) { /* storage disabled: fall back to both */ }
    return "both";
  }

  function apply(v) {
    document.documentElement.setAttribute("data-course-lang", v);
    var buttons = document.querySelectorAll(".course-lang-switch button");
    for (var i = 0; i < buttons.length; i++) {
      buttons[i].setAttribute("aria-pressed", buttons[i].value === v ? "true" : "false");
    }
  }

  function choose(v) {
    try { window.localStorage.setItem(KEY, v); } catch (e) { /* ignore */ }
    apply(v);
  }

  function build() {
    if (document.querySelector(".course-lang-switch")) return;
    var box = document.createElement("div");
    box.className = "course-lang-switch";
    box.setAttribute("role", "group");
    box.setAttribute("aria-label", "Language · 语言");
    CHOICES.forEach(function (c) {
      var b = document.createElement("button");
      b.type = "button";
      b.value = c[0];
      b.textContent = c[1];
      b.addEventListener("click", function () { choose(c[0]); });
      box.appendChild(b);
    });
    var slot = document.querySelector(".article-header-buttons") ||
               document.querySelector(".header-article-items__end");
    if (slot) { slot.insertBefore(box, slot.firstChild); }
    else { box.classList.add("floating"); document.body.appendChild(box); }
    apply(read());
  }

  apply(read());  /* before first paint: no flash of the hidden language */
  window.addEventListener("storage", function (e) { if (e.key === KEY) apply(read()); });
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", build);
  } else {
    build();
  }
})();
