/* LaughLab rater pages: countdown, the ordered scorecard (its order held by the server: the
 * answers others depend on are sent first, and the server opens the rest), the key map each
 * page shows, and answers that survive a flaky network (one idempotency key per task, retried
 * until the server answers).
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

  // Keys go to the task on screen: one listener, handed from form to form as the next task's
  // form replaces the one answered (showForm).
  var onKey = null;
  document.addEventListener("keydown", function (event) { if (onKey) { onKey(event); } });
  // The form of every layout this page has shown, as it came (unanswered). The answer names
  // them (`layouts`), so a later task of one of them comes as its items alone, and its form is
  // rebuilt here from this copy (showForm): the server renders no form the page already has.
  var keptForms = {};
  var MAX_KEPT_FORMS = 8; // as the server allows (judgments/serializers.py)
  function keepForm(form) {
    var layout = form.dataset.layout;
    if (layout && !keptForms[layout] && Object.keys(keptForms).length < MAX_KEPT_FORMS) {
      keptForms[layout] = form.outerHTML;
    }
  }

  var first = document.querySelector("form.task");
  if (first) { start(first); }

  // One task's form: its clock, key, answers, order and submit.
  function start(form) {
    keepForm(form); // before anything here changes it
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
    // A question's answer as text, or null: the chosen point, or a field question's number once
    // the rater gave one on its grid (see setField).
    function answerOf(name) {
      var input = checked(name);
      if (input) { return input.value; }
      var number = form.querySelector("input[data-number][name='" + name + "']");
      return number && number.dataset.answered === "1" ? number.value.trim() : null;
    }

    // The scorecard's order, held by the server: a question with data-after opens only when the
    // server has received the answers it depends on (the first step, POSTed to data-early-url)
    // and said so. The page never opens it on its own.
    var fieldsets = Array.prototype.slice.call(form.querySelectorAll("fieldset[data-question]"));
    function afterOf(fieldset) { return (fieldset.dataset.after || "").split(",").filter(Boolean); }
    var prerequisites = {};
    fieldsets.forEach(function (fieldset) {
      afterOf(fieldset).forEach(function (name) { prerequisites[name] = true; });
    });
    var unlocked = {};
    function refreshLocks() {
      fieldsets.forEach(function (fieldset) {
        var after = afterOf(fieldset);
        if (!after.length) { return; }
        var open = !!unlocked[fieldset.dataset.question] &&
                   after.every(function (name) { return answerOf(name) !== null; });
        fieldset.disabled = !open;
        fieldset.setAttribute("aria-disabled", open ? "false" : "true");
        var hint = fieldset.querySelector("[data-locked-hint]");
        if (hint) { hint.hidden = open; }
      });
      applyPendingKey();
    }

    var csrf = form.querySelector("input[name=csrfmiddlewaretoken]").value;
    function postJson(url, body) {
      return fetch(url, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "Accept": "application/json", "X-CSRFToken": csrf },
        body: JSON.stringify(body)
      });
    }

    // Early answers go one request at a time, in order; the submit waits for the last one.
    var early = Promise.resolve(true);
    function earlyBody() {
      var answers = {}, active = elapsed();
      fieldsets.forEach(function (fieldset) {
        var name = fieldset.dataset.question, answer = answerOf(name);
        if (prerequisites[name] && answer !== null && !fieldset.disabled) {
          answers[name] = { value: Number(answer), at_ms: Math.min(answeredAt[name] || active, active) };
        }
      });
      return { assignment: parseInt(form.dataset.assignment, 10), active_ms: active, answers: answers };
    }
    function sendEarly(body, attempt) {
      return postJson(form.dataset.earlyUrl, body).then(function (response) {
        return response.json().catch(function () { return {}; }).then(function (data) {
          if (response.ok) {
            (data.unlocked || []).forEach(function (name) { unlocked[name] = true; });
            refreshLocks();
            return true;
          }
          if (response.status === 410) {
            window.location.assign(session ? session.dataset.endUrl : "../end/");
            return false;
          }
          if (response.status >= 500 || response.status === 429) { return later(body, attempt); }
          status.textContent = data.message || form.dataset.errorText || "Error";
          status.className = "status error";
          return false;
        });
      }).catch(function () { return later(body, attempt); });
    }
    function later(body, attempt) {
      status.textContent = form.dataset.retryText;
      status.className = "status warning";
      return new Promise(function (resolve) {
        window.setTimeout(function () { resolve(sendEarly(body, attempt + 1)); }, Math.min(8000, 500 * Math.pow(2, attempt)));
      }).then(function (ok) {
        if (ok && status.className === "status warning") { status.textContent = ""; status.className = "status"; }
        return ok;
      });
    }
    function maybeSendEarly() {
      // Only once some locked question has every prerequisite answered: one request per
      // scorecard, and again only if one of those answers is changed.
      var due = fieldsets.some(function (fieldset) {
        var after = afterOf(fieldset);
        return after.length && after.every(function (name) { return answerOf(name) !== null; });
      });
      if (!due || !form.dataset.earlyUrl) { return; }
      var body = earlyBody();
      early = early.then(function () { return sendEarly(body, 0); });
    }

    // The highlighted question: keys answer it and nothing else. It starts on the first question,
    // moves to the next unanswered one after each answer, and is moved with the arrow keys (or by
    // clicking or tabbing into a question).
    var current = fieldsets.length ? fieldsets[0] : null;
    var pendingKey = null;
    // The number being typed on a typed question (see typeOn below).
    var TYPED_PAUSE_MS = 1200;
    var typed = { buffer: "", fieldset: null, timer: null };
    function highlight(fieldset) {
      if (fieldset !== current) { clearTyped(); }
      current = fieldset;
      fieldsets.forEach(function (f) {
        f.classList.toggle("current", f === fieldset);
        f.setAttribute("aria-current", f === fieldset ? "true" : "false");
      });
    }
    function nextUnanswered(from) {
      var start = fieldsets.indexOf(from);
      var rest = fieldsets.slice(start + 1).concat(fieldsets.slice(0, start + 1));
      return rest.filter(function (f) { return answerOf(f.dataset.question) === null; })[0] || null;
    }
    if (kind === "scorecard") { highlight(current); }

    form.addEventListener("change", function (event) {
      if (event.target.type !== "radio") { return; }
      answeredAt[event.target.name] = elapsed();
      var fieldset = event.target.closest("fieldset[data-question]");
      if (fieldset && fieldset.dataset.entry === "field") {
        // "I don't get it" on a field question: its number and slider no longer answer it.
        var number = fieldset.querySelector("input[data-number]");
        var slider = fieldset.querySelector("input[data-slider]");
        number.value = "";
        number.dataset.answered = "";
        slider.classList.add("unset");
      }
      if (kind === "scorecard" && fieldset) {
        if (prerequisites[fieldset.dataset.question]) { maybeSendEarly(); }
        refreshLocks();
        highlight(nextUnanswered(fieldset));
      }
    });
    form.addEventListener("focusin", function (event) {
      var fieldset = event.target.closest && event.target.closest("fieldset[data-question]");
      if (kind === "scorecard" && fieldset && fieldset !== current) { highlight(fieldset); }
    });
    refreshLocks();

    function inputFor(group, key) {
      if (!group) { return null; }
      return Array.prototype.filter.call(group.querySelectorAll("input[type=radio][data-key]"), function (input) {
        return input.dataset.key.split(" ").indexOf(key) >= 0;
      })[0] || null;
    }
    function choose(input) {
      input.focus();  // first: focusing highlights the input's question, the change moves on
      input.checked = true;
      input.dispatchEvent(new Event("change", { bubbles: true }));
    }
    // A key pressed on a question still waiting for the server is kept, and applied when the
    // server opens it (if the rater has not moved on meanwhile).
    function applyPendingKey() {
      if (!pendingKey || pendingKey.fieldset.disabled) { return; }
      var waiting = pendingKey;
      pendingKey = null;
      if (current === waiting.fieldset) { choose(waiting.input); }
    }

    function warn(text) {
      status.textContent = text || "";
      status.className = "status warning";
    }

    // A typed question (data-entry="typed": a point above 9 or below 0) takes the whole number:
    // digits and a leading "-" collect, shown on the question, and the number is chosen as soon as
    // no longer number on the scale starts with it, after a pause, or with Enter. So "1" on a
    // 0-10 scale waits for a possible "0", "73" on a 0-100 scale is 73, and "-2" is -2.
    function showTyped() {
      if (!typed.fieldset) { return; }
      var shown = typed.fieldset.querySelector("[data-typed]");
      if (!shown) { return; }
      shown.hidden = !typed.buffer;
      shown.querySelector("[data-typed-value]").textContent = typed.buffer.replace("-", "\u2212");
    }
    function clearTyped() {
      window.clearTimeout(typed.timer);
      typed.buffer = "";
      showTyped();
      typed.fieldset = null;
    }
    function typedValues(fieldset) {
      return Array.prototype.map.call(fieldset.querySelectorAll("input[type=radio]"), function (input) {
        return input.value;
      });
    }
    function commitTyped() {
      var fieldset = typed.fieldset;
      var text = typed.buffer;
      clearTyped();
      if (!fieldset || !text || text === "-") { return; }
      var input = fieldset.querySelector("input[type=radio][value='" + text + "']");
      if (!input) { warn(form.dataset.noPointText); return; }
      if (input.disabled) {
        if (!pendingKey) { pendingKey = { fieldset: fieldset, input: input }; }
        return;
      }
      choose(input);
    }
    function typeOn(fieldset, key) {
      if (typed.fieldset !== fieldset) { clearTyped(); typed.fieldset = fieldset; }
      if (key === "backspace") { typed.buffer = typed.buffer.slice(0, -1); showTyped(); return; }
      if (key === "-" && typed.buffer) { return; }
      var next = typed.buffer + key;
      var values = typedValues(fieldset);
      var starting = values.filter(function (value) { return value.indexOf(next) === 0; });
      if (!starting.length) {
        clearTyped();
        warn(form.dataset.noPointText);
        return;
      }
      typed.buffer = next;
      showTyped();
      window.clearTimeout(typed.timer);
      var complete = values.indexOf(next) >= 0;
      var longer = starting.some(function (value) { return value !== next; });
      if (complete && !longer) { commitTyped(); return; }
      typed.timer = window.setTimeout(commitTyped, TYPED_PAUSE_MS);
    }

    // A field question (data-entry="field": a slider, or a scale too wide for a row of points)
    // is answered in its number field or on its slider, which follow each other. The slider
    // starts unset: its position counts only once the rater moves it, and a number counts only
    // when it lies on the question's grid (min + k * step), as the server checks.
    function onGrid(fieldset, text) {
      if (!/^-?(\d+\.?\d*|\.\d+)$/.test(text)) { return false; }
      var value = Number(text), low = Number(fieldset.dataset.min), high = Number(fieldset.dataset.max);
      var steps = (value - low) / Number(fieldset.dataset.step);
      return value >= low && value <= high && Math.abs(steps - Math.round(steps)) <= 1e-6;
    }
    function setField(fieldset, text, fromSlider) {
      var name = fieldset.dataset.question;
      var number = fieldset.querySelector("input[data-number]");
      var slider = fieldset.querySelector("input[data-slider]");
      text = text.replace("\u2212", "-");
      var was = number.dataset.answered === "1";
      if (!onGrid(fieldset, text)) {
        number.dataset.answered = "";
        number.setAttribute("aria-invalid", text === "" ? "false" : "true");
        if (was) { refreshLocks(); }
        return false;
      }
      number.dataset.answered = "1";
      number.setAttribute("aria-invalid", "false");
      var other = fieldset.querySelector("input[type=radio][value=not_understood]");
      if (other) { other.checked = false; }
      if (fromSlider) { number.value = text; } else { slider.value = text; }
      slider.classList.remove("unset");
      answeredAt[name] = elapsed();
      if (prerequisites[name]) { maybeSendEarly(); }
      refreshLocks();
      return true;
    }
    function moveOn(fieldset) {
      if (document.activeElement && document.activeElement.blur) { document.activeElement.blur(); }
      highlight(nextUnanswered(fieldset));
    }
    form.addEventListener("input", function (event) {
      var target = event.target, fieldset = target.closest && target.closest("fieldset[data-question]");
      if (!fieldset || fieldset.dataset.entry !== "field") { return; }
      setField(fieldset, target.matches("input[data-slider]") ? target.value : target.value.trim(),
               target.matches("input[data-slider]"));
    });
    form.addEventListener("change", function (event) {
      var target = event.target, fieldset = target.closest && target.closest("fieldset[data-question]");
      if (!fieldset || fieldset.dataset.entry !== "field") { return; }
      if (target.matches("input[data-slider]")) {
        // Let go of the slider (mouse or finger): the highlight moves on, as after a point.
        if (answerOf(fieldset.dataset.question) !== null) { highlight(nextUnanswered(fieldset)); }
        return;
      }
      if (target.value.trim() && !onGrid(fieldset, target.value.trim().replace("\u2212", "-"))) {
        warn(form.dataset.noPointText);
      }
    });
    function fieldKey(event, fieldset) {
      // Keys typed into a field question's own inputs are theirs; Enter confirms the number and
      // moves on (or says why it is not an answer), and never submits a half-answered card.
      if (event.key !== "Enter") { return; }
      event.preventDefault();
      if (answerOf(fieldset.dataset.question) !== null) {
        moveOn(fieldset);
      } else {
        warn(form.dataset.noPointText);
      }
    }

    // Keyboard: the key map each page shows (data-key on every choice; see the page's legend).
    onKey = function (event) {
      if (event.altKey || event.ctrlKey || event.metaKey) { return; }
      if (event.target.tagName === "SELECT" || event.target.tagName === "TEXTAREA") { return; }
      var own = event.target.closest && event.target.closest("fieldset[data-entry='field']");
      if (own && event.target.matches("input[data-number], input[data-slider]")) {
        fieldKey(event, own);
        return;
      }
      if (kind === "scorecard" && current && current.dataset.entry === "field" &&
          /^[0-9.-]$/.test(event.key) && !current.disabled) {
        // A number typed on the highlighted field question starts in its number field.
        event.preventDefault();
        var number = current.querySelector("input[data-number]");
        number.focus();
        number.value = event.key;
        number.dispatchEvent(new Event("input", { bubbles: true }));
        return;
      }
      var typing = kind === "scorecard" && current && current.dataset.entry === "typed";
      if (typing) {
        var pressed = event.key.toLowerCase();
        if (/^[0-9]$/.test(pressed) || pressed === "-" || pressed === "backspace") {
          event.preventDefault();
          typeOn(current, pressed);
          return;
        }
        if (pressed === "escape") { clearTyped(); return; }
        if (pressed === "enter" && typed.buffer) { event.preventDefault(); commitTyped(); return; }
      }
      if (event.key === "Enter") { event.preventDefault(); form.requestSubmit(); return; }
      var key = event.key.toLowerCase();
      if (kind === "scorecard" && (key === "arrowup" || key === "arrowdown")) {
        event.preventDefault();
        var index = fieldsets.indexOf(current);
        var step = key === "arrowup" ? -1 : 1;
        if (index < 0) { index = step > 0 ? -1 : fieldsets.length; }
        highlight(fieldsets[Math.max(0, Math.min(fieldsets.length - 1, index + step))]);
        return;
      }
      var group = kind === "scorecard" ? current : form;
      var input = inputFor(group, key);
      if (!input) {
        if (kind === "scorecard" && current && key.length === 1 && /[0-9a-z]/.test(key)) {
          warn(form.dataset.noKeyText);
        }
        return;
      }
      event.preventDefault();
      if (status.className === "status warning" && status.textContent === form.dataset.noKeyText) {
        status.textContent = "";
        status.className = "status";
      }
      if (input.disabled) {
        // Only the first key is kept: a second one while the question still waits may have
        // been meant for the next question, and is dropped rather than guessed at.
        if (kind === "scorecard" && !pendingKey) { pendingKey = { fieldset: current, input: input }; }
        return;
      }
      choose(input);
    };

    function payload() {
      var active = elapsed();
      // with_next: the reply carries the next task, shown in place (showNext) when it fits.
      var layouts = Object.keys(keptForms);
      var body = { idempotency_key: key, active_ms: active, with_next: true, layout: form.dataset.layout || "",
                   layouts: layouts };
      if (kind === "explanation") {
        return { response: parseInt(form.dataset.response, 10), verdict: (checked("verdict") || {}).value,
                 with_next: true, layouts: layouts };
      }
      body.assignment = parseInt(form.dataset.assignment, 10);
      if (kind === "scorecard") {
        body.answers = {};
        fieldsets.forEach(function (fieldset) {
          var name = fieldset.dataset.question, answer = answerOf(name);
          if (answer !== null && !fieldset.disabled) {
            var at = Math.min(answeredAt[name] || active, active);
            // "I don't get it" is its own outcome, never a number.
            body.answers[name] = answer === "not_understood" ? { not_understood: true, at_ms: at }
                                                             : { value: Number(answer), at_ms: at };
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
        return fieldset.querySelector("input[required]") && answerOf(fieldset.dataset.question) === null;
      }).length || (kind === "pair" && !checked("winner"));
    }

    var sending = false;
    function send(body, attempt) {
      postJson(form.dataset.submitUrl, body).then(function (response) {
        return response.json().catch(function () { return {}; }).then(function (data) {
          if (response.ok) {
            window.sessionStorage.removeItem(taskKey);
            var task = data.task;
            if (task && task.content && content && task.layout === form.dataset.layout) {
              showNext(task);
            } else if (task && (task.form || (task.content && keptForms[task.layout]))) {
              showForm(task);
            } else {
              window.location.assign(data.next);
            }
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

    // The next task comes with the answer and is shown in place, so it is not a page load of its
    // own. When only its items differ from the task answered (the same layout: kind, questions,
    // choices), the server sends those items and the page starts the task afresh as a new page
    // would, with a new key, clock and answers (showNext); any other task replaces this form
    // with its own (showForm): rebuilt from the page's copy when the page has shown its layout
    // before, else sent whole. The end of the session is loaded as a page.
    var content = form.querySelector("[data-task-content]");
    function showNext(task) {
      var fresh = parsed(task.content, "[data-task-content]");
      content.replaceWith(fresh);
      content = fresh;
      showProgress(task.progress);
      form.dataset.assignment = String(task.id);
      taskKey = "laughlab:key:" + kind + ":" + task.id;
      key = window.sessionStorage.getItem(taskKey) || newKey();
      window.sessionStorage.setItem(taskKey, key);
      form.querySelectorAll("input[type=radio]").forEach(function (input) { input.checked = false; });
      fieldsets.forEach(function (fieldset) {
        if (fieldset.dataset.entry !== "field") { return; }
        var number = fieldset.querySelector("input[data-number]");
        var slider = fieldset.querySelector("input[data-slider]");
        number.value = "";
        number.dataset.answered = "";
        number.setAttribute("aria-invalid", "false");
        slider.value = slider.defaultValue;
        slider.classList.add("unset");
      });
      answeredAt = {};
      unlocked = {};
      early = Promise.resolve(true);
      pendingKey = null;
      clearTyped();
      status.textContent = "";
      status.className = "status";
      sending = false;
      submitButton.disabled = false;
      refreshLocks();
      if (kind === "scorecard" && fieldsets.length) { highlight(fieldsets[0]); }
      window.scrollTo(0, 0);
      // Where a new page would start reading: the new items (the old focus is gone with them).
      content.focus({ preventScroll: true });
      shownAt = performance.now();
    }
    function showForm(task) {
      var fresh = task.form ? parsed(task.form, "form.task") : rebuilt(task);
      clearTyped();
      showProgress(task.progress);
      form.replaceWith(fresh);
      document.title = fresh.dataset.title || document.title;
      window.scrollTo(0, 0);
      start(fresh);
      var shown = fresh.querySelector("[data-task-content]");
      if (shown) { shown.focus({ preventScroll: true }); }
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
      // After the early answers have arrived: the scorecard is judged against them.
      early.then(function (ok) {
        if (ok) { send(payload(), 0); } else { sending = false; submitButton.disabled = false; }
      });
    });
  }

  // A kept form with the next task's items and assignment: the form the task page would show.
  function rebuilt(task) {
    var fresh = parsed(keptForms[task.layout], "form.task");
    fresh.querySelector("[data-task-content]").replaceWith(parsed(task.content, "[data-task-content]"));
    fresh.dataset.assignment = String(task.id);
    return fresh;
  }

  function parsed(html, selector) {
    var holder = document.createElement("div");
    holder.innerHTML = html;
    return holder.querySelector(selector);
  }
  function showProgress(html) {
    var progress = document.querySelector("[data-progress]");
    if (progress && html) { progress.replaceWith(parsed(html, "[data-progress]")); }
  }
})();
