/* Researcher pages: refresh live progress without a full reload, and copy links. No inline
 * scripts, no dependencies. */
(function () {
  "use strict";
  document.querySelectorAll("select[data-autosubmit]").forEach(function (select) {
    select.addEventListener("change", function () { select.form.submit(); });
  });

  document.querySelectorAll("[data-copy]").forEach(function (button) {
    button.addEventListener("click", function () {
      var source = document.getElementById(button.dataset.copy);
      if (!source || !navigator.clipboard) { return; }
      navigator.clipboard.writeText(source.textContent.trim()).then(function () {
        button.dataset.copied = "true";
      });
    });
  });

  var box = document.querySelector("[data-refresh-url]");
  // A block whose content says it is finished (an import that is done or failed) stops refreshing.
  var finished = function () { return box.querySelector("[data-finished]") !== null; };
  if (box && !finished()) {
    var seconds = parseInt(box.dataset.refreshSeconds || "10", 10);
    var refresh = function () {
      fetch(box.dataset.refreshUrl, { credentials: "same-origin", headers: { "Accept": "text/html" } })
        .then(function (response) { return response.ok ? response.text() : null; })
        .then(function (html) {
          if (html !== null) {
            box.innerHTML = html;
            if (window.laughlabFitTables) { window.laughlabFitTables(box); }
            box.dataset.refreshedAt = new Date().toISOString();
          }
        })
        .catch(function () { /* keep the last numbers; try again on the next tick */ })
        .then(function () { if (!finished()) { window.setTimeout(refresh, seconds * 1000); } });
    };
    window.setTimeout(refresh, seconds * 1000);
  }
})();

/* exports */
(function () {
  "use strict";
  // Poll each unfinished export job's status until it is done or failed; no page reload.
  var POLL_MS = 2000;
  var fileSize = function (bytes) {  // as Django's filesizeformat, which renders the first view
    if (bytes < 1024) { return bytes + " bytes"; }
    var units = ["KB", "MB", "GB"], value = bytes / 1024, unit = 0;
    while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit += 1; }
    return value.toFixed(1) + " " + units[unit];
  };
  var track = function (row) {
    var status = row.querySelector("[data-field=status] .badge");
    var bar = row.querySelector("[data-field=progress]");
    var size = row.querySelector("[data-field=size]");
    var link = row.querySelector("[data-field=download]");
    var error = row.querySelector("[data-field=error]");
    var poll = function () {
      fetch(row.dataset.statusUrl, { credentials: "same-origin", headers: { "Accept": "application/json" } })
        .then(function (response) { return response.ok ? response.json() : null; })
        .then(function (job) {
          if (job === null) { return true; }
          row.dataset.status = job.status;
          if (status) { status.textContent = job.status_label; status.className = "badge badge-job-" + job.status; }
          if (bar) { bar.value = job.progress; bar.textContent = job.progress + "%"; }
          if (size && job.size !== null) { size.textContent = fileSize(job.size); }
          if (error) { error.textContent = job.error || ""; }
          if (link && job.download_url) { link.href = job.download_url; link.hidden = false; }
          return job.status === "done" || job.status === "failed";
        })
        .catch(function () { return false; /* try again on the next tick */ })
        .then(function (finished) { if (!finished) { window.setTimeout(poll, POLL_MS); } });
    };
    window.setTimeout(poll, POLL_MS);
  };
  document.querySelectorAll("tr[data-export-job]").forEach(function (row) {
    if (row.dataset.status === "queued" || row.dataset.status === "running") { track(row); }
  });
})();

/* tables */
(function () {
  "use strict";
  // Every researcher table reads as a table: a word breaks only at a space, a column of Chinese
  // holds at least a few characters, and a long text shows its first lines with a button to
  // read it whole. The text itself stays in the cell (found by the browser's search, read whole
  // by a screen reader); the button's label is drawn by CSS from its data-label, so the cell's
  // own text is unchanged.
  var script = document.currentScript;
  var more = (script && script.dataset.more) || "Show all";
  var less = (script && script.dataset.less) || "Show less";
  var SHOWN = 4, LONG = 6, TEXT = 60;  // lines shown; a cell is long from this many lines and characters
  var CJK = /[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]{2}/;
  // Browsers also break after a hyphen, a dash or a slash: "laughter-" / "7b". A word holding
  // one is kept whole, so its column is as wide as the word; a longer one (a path, a long id)
  // may still break there, never between letters.
  var JOINED = /[-\u2010-\u2014\/]/;
  var WHOLE = 20;
  var joined = function (part) { return part.length > 1 && part.length <= WHOLE && JOINED.test(part) && !CJK.test(part); };
  var SKIP = "script, style, textarea, select, option, .nobr";

  var keepWhole = function (cell) {
    var walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    var nodes = [];
    while (walker.nextNode()) { nodes.push(walker.currentNode); }
    nodes.forEach(function (node) {
      if (!JOINED.test(node.data) || node.parentElement.closest(SKIP)) { return; }
      var parts = node.data.split(/(\s+)/);
      if (!parts.some(joined)) { return; }
      var fragment = document.createDocumentFragment();
      parts.forEach(function (part) {
        if (joined(part)) {
          var span = document.createElement("span");
          span.className = "nobr";
          span.textContent = part;
          fragment.appendChild(span);
        } else if (part) {
          fragment.appendChild(document.createTextNode(part));
        }
      });
      node.parentNode.replaceChild(fragment, node);
    });
  };

  var clamp = function (cell, index) {
    var box = document.createElement("div");
    box.className = "cell-clamp";
    box.id = "cell-clamp-" + index;
    box.style.setProperty("--lines", String(SHOWN));
    while (cell.firstChild) { box.appendChild(cell.firstChild); }
    cell.appendChild(box);
    var button = document.createElement("button");
    button.type = "button";
    button.className = "cell-more";
    button.setAttribute("aria-controls", box.id);
    var show = function (open) {
      box.classList.toggle("open", open);
      button.setAttribute("aria-expanded", open ? "true" : "false");
      button.dataset.label = open ? less : more;
      button.setAttribute("aria-label", button.dataset.label);
    };
    button.addEventListener("click", function () { show(!box.classList.contains("open")); });
    show(false);
    cell.appendChild(button);
  };

  var clamped = 0;
  var fit = function (root) {
    var cells = Array.prototype.slice.call(root.querySelectorAll(".table td, .table th"));
    // Writes first, then one round of reads, then the clamps: one layout, not one a cell.
    cells.forEach(function (cell) {
      keepWhole(cell);
      if (CJK.test(cell.textContent)) { cell.classList.add("cjk"); }
    });
    var isTall = function (cell) {
      // Only a text (an item, a prompt, a reason): a long name in a narrow column stays whole.
      // (A Chinese character counts as two: it takes about the width of two Latin letters.)
      var text = cell.textContent.trim();
      var wide = text.match(/[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]/g);
      if (text.length + (wide ? wide.length : 0) < TEXT || cell.matches("thead th")) { return false; }
      if (cell.querySelector("details, form, input, select, textarea, button, table, progress, .cell-clamp")) { return false; }
      var style = window.getComputedStyle(cell);
      var line = parseFloat(style.lineHeight) || parseFloat(style.fontSize) * 1.5;
      var range = document.createRange();
      range.selectNodeContents(cell);
      return range.getBoundingClientRect().height > LONG * line;
    };
    // A clamped text keeps a readable width, which narrows its neighbours: measure again.
    for (var round = 0; round < 3; round += 1) {
      var tall = cells.filter(isTall);
      if (!tall.length) { break; }
      tall.forEach(function (cell) { clamped += 1; clamp(cell, clamped); });
    }
    // A text that fits its first lines once its column is wide enough needs no button.
    root.querySelectorAll(".table .cell-more").forEach(function (button) {
      var box = document.getElementById(button.getAttribute("aria-controls"));
      if (box && !box.classList.contains("open")) { button.hidden = box.scrollHeight <= box.clientHeight + 1; }
    });
  };
  window.laughlabFitTables = fit;
  fit(document);
})();
