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
          if (html !== null) { box.innerHTML = html; box.dataset.refreshedAt = new Date().toISOString(); }
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
