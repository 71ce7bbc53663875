/* LaughLab rater pages: countdown, the ordered scorecard, keyboard shortcuts, and answers that
 * survive a flaky network (one idempotency key per task, retried until the server answers).
 * No build step, no dependencies, no inline scripts (the pages run under a strict CSP). */
(function () {
  "use strict";

  // Language switcher submits on change.
  document.querySelectorAll("select[data-autosubmit]").forEach(function (select) {
    select.addEventListener("change", function () { select.form.submit(); });
  });

  // Countdown against the server's clock: the offset removes the rater's clock skew.
  var session = document.querySelector(".session[data-deadline]");
  if (session) {
    var deadline = Date.parse(session.dataset.deadline);
    var offset = Date.parse(session.dataset.serverNow) - Date.now();
    var clock = session.querySelector("[data-countdown]");
    var tick = function () {
      var left = Math.max(0, Math.round((deadline - (Date.now() + offset)) / 1000));
      var minutes = Math.floor(left / 60), seconds = left % 60;
      clock.textContent = minutes + ":" + (seconds < 10 ? "0" : "") + seconds;
      clock.setAttribute("datetime", "PT" + minutes + "M" + seconds + "S");
      if (left <= 60) { clock.classList.add("urgent"); }
      if (left === 0) { window.location.assign(session.dataset.endUrl); return; }
      window.setTimeout(tick, 1000);
    };
    tick();
  }

  var form = document.querySelector("form.task");
  if (!form) { return; }
  var shownAt = performance.now();
  var answeredAt = {};
  var status = form.querySelector(".status");
  var submitButton = form.querySelector("button[type=submit]");
  var kind = form.dataset.task;
  var taskKey = "laughlab:key:" + kind + ":" + (form.dataset.assignment || form.dataset.response);

  function newKey() {
    if (window.crypto && window.crypto.randomUUID) { return window.crypto.randomUUID(); }
    var bytes = new Uint8Array(16);
    window.crypto.getRandomValues(bytes);
    return Array.prototype.map.call(bytes, function (b) { return (b + 256).toString(16).slice(1); }).join("");
  }
  // One key per task, kept across reloads, so a retried or repeated submit stores one answer.
  var key = window.sessionStorage.getItem(taskKey) || newKey();
  window.sessionStorage.setItem(taskKey, key);

  function elapsed() { return Math.round(performance.now() - shownAt); }
  function checked(name) { return form.querySelector("input[name='" + name + "']:checked"); }

  // The scorecard's order: a question with data-after opens only when those are answered.
  var fieldsets = Array.prototype.slice.call(form.querySelectorAll("fieldset[data-question]"));
  function refreshLocks() {
    fieldsets.forEach(function (fieldset) {
      var after = (fieldset.dataset.after || "").split(",").filter(Boolean);
      if (!after.length) { return; }
      var open = after.every(function (name) { return checked(name); });
      fieldset.disabled = !open;
      fieldset.setAttribute("aria-disabled", open ? "false" : "true");
      var hint = fieldset.querySelector("[data-locked-hint]");
      if (hint) { hint.hidden = open; }
    });
  }
  form.addEventListener("change", function (event) {
    if (event.target.type === "radio") {
      answeredAt[event.target.name] = elapsed();
      refreshLocks();
    }
  });
  refreshLocks();

  // Keyboard: digits pick a point on the first open, unanswered question; 1/2 and arrows pick
  // a side of a pair; Enter submits.
  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey) { return; }
    if (event.target.tagName === "SELECT" || event.target.tagName === "TEXTAREA") { return; }
    if (event.key === "Enter") { event.preventDefault(); form.requestSubmit(); return; }
    var choice = null;
    if (kind === "pair" && (event.key === "ArrowLeft" || event.key === "1")) { choice = form.querySelector("input[value=left]"); }
    else if (kind === "pair" && (event.key === "ArrowRight" || event.key === "2")) { choice = form.querySelector("input[value=right]"); }
    else if (/^[0-9]$/.test(event.key)) {
      var open = fieldsets.filter(function (f) { return !f.disabled && !checked(f.dataset.question); })[0] ||
                 fieldsets.filter(function (f) { return !f.disabled; }).slice(-1)[0];
      if (open) {
        var inputs = open.querySelectorAll("input[type=radio]");
        var byValue = open.querySelector("input[value='" + event.key + "']");
        // Scales that start at 1 take the digit as the value; choice lists take it as a position.
        choice = (kind === "scorecard" && byValue) ? byValue : inputs[parseInt(event.key, 10) - 1] || null;
      }
    }
    if (choice && !choice.disabled) {
      event.preventDefault();
      choice.checked = true;
      choice.dispatchEvent(new Event("change", { bubbles: true }));
      choice.focus();
    }
  });

  function payload() {
    var active = elapsed();
    var body = { idempotency_key: key, active_ms: active };
    if (kind === "explanation") {
      return { response: parseInt(form.dataset.response, 10), verdict: (checked("verdict") || {}).value };
    }
    body.assignment = parseInt(form.dataset.assignment, 10);
    if (kind === "scorecard") {
      body.answers = {};
      fieldsets.forEach(function (fieldset) {
        var name = fieldset.dataset.question, input = checked(name);
        if (input && !fieldset.disabled) {
          body.answers[name] = { value: parseInt(input.value, 10), at_ms: Math.min(answeredAt[name] || active, active) };
        }
      });
    } else if (kind === "pair") {
      body.winner = (checked("winner") || {}).value;
    } else if (kind === "turing") {
      body.guess = (checked("guess") || {}).value;
    }
    return body;
  }

  function missing() {
    return fieldsets.filter(function (fieldset) {
      return fieldset.querySelector("input[required]") && !checked(fieldset.dataset.question);
    }).length || (kind === "pair" && !checked("winner"));
  }

  var csrf = form.querySelector("input[name=csrfmiddlewaretoken]").value;
  var sending = false;
  function send(body, attempt) {
    fetch(form.dataset.submitUrl, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "Accept": "application/json", "X-CSRFToken": csrf },
      body: JSON.stringify(body)
    }).then(function (response) {
      return response.json().catch(function () { return {}; }).then(function (data) {
        if (response.ok) {
          window.sessionStorage.removeItem(taskKey);
          window.location.assign(data.next);
        } else if (response.status === 410) {
          window.location.assign(session ? session.dataset.endUrl : "../end/");
        } else if (response.status >= 500 || response.status === 429) {
          retry(body, attempt);
        } else {
          sending = false;
          submitButton.disabled = false;
          status.textContent = data.message || form.dataset.errorText || "Error";
          status.className = "status error";
        }
      });
    }).catch(function () { retry(body, attempt); });
  }
  // The answer stays on the page and goes again with the same key: a network error never
  // loses it, and a retry that reached the server the first time stores nothing new.
  function retry(body, attempt) {
    status.textContent = form.dataset.retryText;
    status.className = "status warning";
    window.setTimeout(function () { send(body, attempt + 1); }, Math.min(8000, 500 * Math.pow(2, attempt)));
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    if (sending) { return; }
    if (missing()) {
      status.textContent = form.dataset.missingText;
      status.className = "status error";
      return;
    }
    sending = true;
    submitButton.disabled = true;
    status.textContent = "";
    send(payload(), 0);
  });
})();
