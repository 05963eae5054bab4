/* Render every <pre class="mermaid"> with the vendored mermaid build. */
document.addEventListener("DOMContentLoaded", function () {
  if (!window.mermaid) return;
  window.mermaid.initialize({ startOnLoad: false, securityLevel: "strict", theme: "default" });
  window.mermaid.run({ querySelector: "pre.mermaid" });
});
