// Figures of the notebook pages: a click shows the image at its own size over the page (scroll
// inside it); a click, Escape or the close button closes it. Code blocks get a copy button.
document.addEventListener("DOMContentLoaded", function () {
  var overlay = null;
  function close() { if (overlay) { overlay.remove(); overlay = null; } }
  document.querySelectorAll("img.fig-out, .cell_output img").forEach(function (img) {
    img.classList.add("zoomable");
    img.addEventListener("click", function () {
      close();
      overlay = document.createElement("div");
      overlay.className = "fl-zoom";
      overlay.setAttribute("role", "dialog");
      overlay.setAttribute("aria-label", img.alt);
      var big = document.createElement("img");
      big.src = img.src; big.alt = img.alt;
      var btn = document.createElement("button");
      btn.className = "fl-zoom-close"; btn.textContent = "close \u00d7";
      overlay.appendChild(btn); overlay.appendChild(big);
      overlay.addEventListener("click", close);
      document.body.appendChild(overlay);
    });
  });
  document.addEventListener("keydown", function (e) { if (e.key === "Escape") { close(); } });
  document.querySelectorAll("div.highlight").forEach(function (block) {
    var pre = block.querySelector("pre");
    if (!pre) { return; }
    var b = document.createElement("button");
    b.className = "fl-copy"; b.type = "button"; b.textContent = "copy"; b.title = "copy to clipboard";
    b.addEventListener("click", function () {
      var text = pre.innerText;
      function done() { b.textContent = "copied"; setTimeout(function () { b.textContent = "copy"; }, 1500); }
      if (navigator.clipboard && window.isSecureContext) { navigator.clipboard.writeText(text).then(done, function () {}); }
      else {
        var t = document.createElement("textarea"); t.value = text; document.body.appendChild(t); t.select();
        try { document.execCommand("copy"); done(); } catch (err) { /* no clipboard here */ }
        t.remove();
      }
    });
    block.style.position = "relative";
    block.appendChild(b);
  });
});
