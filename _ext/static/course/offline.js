/* Opened from disk (file://), a page may not fetch other pages, so Sphinx's
 * search cannot load result summaries: show titles only there. Served over
 * http (make serve), summaries stay on. */
if (window.location.protocol === "file:" && typeof DOCUMENTATION_OPTIONS !== "undefined") {
  DOCUMENTATION_OPTIONS.SHOW_SEARCH_SUMMARY = false;
}
