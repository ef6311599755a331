// Filters of the claims tables (the ledger page): a row shows when it matches every select
// (paper, notebook, setting, verdict) and contains every word of the text box; a notebook's
// group line shows when one of its rows does. Nothing is fetched.
document.addEventListener("DOMContentLoaded", function () {
  var table = document.getElementById("ledger");
  if (!table) { return; }
  var selects = document.querySelectorAll(".ledger-filter");
  var text = document.getElementById("ledger-text");
  var count = document.getElementById("ledger-count");
  var rows = table.querySelectorAll("tr.claim");
  var groups = table.querySelectorAll("tr.group");
  function apply() {
    var shown = 0, words = (text && text.value || "").toLowerCase().split(/\s+/).filter(Boolean);
    var open = {};
    rows.forEach(function (row) {
      var ok = true;
      selects.forEach(function (s) { if (s.value && row.dataset[s.dataset.key] !== s.value) { ok = false; } });
      if (ok && words.length) {
        var t = row.textContent.toLowerCase();
        ok = words.every(function (w) { return t.indexOf(w) >= 0; });
      }
      row.style.display = ok ? "" : "none";
      if (ok) { shown += 1; open[row.dataset.group] = true; }
    });
    groups.forEach(function (g) { g.style.display = open[g.dataset.group] ? "" : "none"; });
    if (count) { count.textContent = shown + " of " + rows.length + " rows"; }
  }
  // a link may choose the filters: ledger.html?paper=FedSUM&verdict=holds&q=words
  var params = new URLSearchParams(window.location.search);
  selects.forEach(function (s) {
    var v = params.get(s.dataset.key);
    if (v !== null && Array.from(s.options).some(function (o) { return o.value === v; })) { s.value = v; }
    s.addEventListener("change", apply);
  });
  if (text && params.get("q")) { text.value = params.get("q"); }
  if (text) { text.addEventListener("input", apply); }
  apply();
});
