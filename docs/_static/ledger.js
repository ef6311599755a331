// Filters of the claims ledger page: show the rows whose paper and verdict match the selects.
document.addEventListener("DOMContentLoaded", function () {
  var table = document.getElementById("ledger");
  if (!table) { return; }
  var paper = document.getElementById("ledger-paper");
  var verdict = document.getElementById("ledger-verdict");
  var count = document.getElementById("ledger-count");
  var rows = table.querySelectorAll("tr.claim");
  function apply() {
    var shown = 0;
    rows.forEach(function (row) {
      var ok = (!paper.value || row.dataset.paper === paper.value) &&
               (!verdict.value || row.dataset.verdict === verdict.value);
      row.style.display = ok ? "" : "none";
      if (ok) { shown += 1; }
    });
    count.textContent = shown + " of " + rows.length + " rows";
  }
  paper.addEventListener("change", apply);
  verdict.addEventListener("change", apply);
  apply();
});
