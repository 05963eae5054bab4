/* course_lib.widgets: helpers shared by every widget (plain JavaScript, no network).
 * fmt(x, d) formats exactly like Python's f"{x:.{d}f}" (course_lib.display.fmt):
 * the exact binary value is rounded half to even and "-0.00" becomes "0.00".
 * Number.prototype.toFixed rounds exact ties up instead (0.125 -> "0.13"),
 * so ties are detected on the exact decimal expansion and rounded to even. */
function cwFmt(x, d) {
  if (!isFinite(x)) return String(x);
  var s = x.toFixed(d);
  var a = Math.abs(x);
  if (a < 1e15) {
    var exact = a.toFixed(100);                 /* exact for |x| >= 2^-48 */
    var dot = exact.indexOf(".");
    var tail = exact.slice(dot + 1 + d);
    if (/^50*$/.test(tail)) {                    /* an exact tie: round half to even */
      var kept = exact.slice(0, d > 0 ? dot + 1 + d : dot);
      var last = parseInt(kept.charAt(kept.length - 1), 10);
      if (last % 2 === 0) s = (x < 0 ? "-" : "") + kept;
    }
  }
  if (s.charAt(0) === "-" && parseFloat(s) === 0) s = s.slice(1);
  return s;
}

/* cwShow: how every widget shows a number. The value is first rounded to 10
 * decimals, which absorbs the last-bit differences between NumPy and JavaScript
 * arithmetic (summation order, fused multiply-add), then formatted by cwFmt.
 * Python's twin is course_lib.widgets.show. */
function cwShow(x, d) {
  if (!isFinite(x) || Math.abs(x) >= 1e15) return cwFmt(x, d);
  return cwFmt(parseFloat(cwFmt(x, 10)), d);
}

function cwEsc(s) {
  return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;");
}
