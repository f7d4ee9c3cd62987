// Keyboard-first helpers. Pages opt in with data attributes, so everything works without JS:
//  - [data-key="1"] on a radio/checkbox/button/input: pressing that key (outside text fields)
//    clicks and focuses it;
//  - [data-submit-key="Enter"] on a form: Enter (outside text areas, buttons and links) and
//    Ctrl+Enter submit it, but only while focus is inside that form. Enter on a focused link or
//    button anywhere keeps its native meaning (follow the link, press the button).
// A key can land in the few milliseconds between an htmx swap and htmx wiring up the new form;
// processing it first (idempotent) keeps that submit an htmx request instead of a page load.
function readyForm(form) {
  if (form && window.htmx) window.htmx.process(form);
  return form;
}

(function () {
  function typing(target) {
    return target && (target.tagName === "TEXTAREA" || (target.tagName === "INPUT" && /^(text|search|number|password)$/.test(target.type)) || target.isContentEditable);
  }
  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (event.key === "Enter") {
      var form = target && target.closest ? target.closest("form[data-submit-key='Enter']") : null;
      if (!form || form.hasAttribute("data-axis-form")) return;
      if (event.ctrlKey || event.metaKey) { event.preventDefault(); readyForm(form).requestSubmit(); return; }
      if (typing(target) || /^(A|BUTTON|SUMMARY)$/.test(target.tagName)) return;
      event.preventDefault(); readyForm(form).requestSubmit();
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey || typing(target)) return;
    var scope = document.querySelector("[data-keyboard-scope]") || document;
    var control = scope.querySelector("[data-key='" + CSS.escape(event.key) + "']");
    if (control) { event.preventDefault(); readyForm(control.form || null); control.click(); control.focus(); }
  });
})();

// Curation: [data-fill-target][data-fill-value] buttons (block search results) fill an input:
// the element with that id, else the block-ref input that last had focus (split form).
(function () {
  var lastRef = null;
  document.addEventListener("focusin", function (event) {
    if (event.target.classList && event.target.classList.contains("block-ref")) lastRef = event.target;
  });
  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("[data-fill-value]") : null;
    if (!button) return;
    var input = document.getElementById(button.getAttribute("data-fill-target")) || lastRef || document.querySelector("input.block-ref");
    if (!input) return;
    input.value = button.getAttribute("data-fill-value");
    input.dispatchEvent(new Event("change", { bubbles: true }));
    input.focus();
  });
})();

// Item pages (label, review, adjudication): the element [data-item] (#label-item, #review-item,
// #adjudication-item) is what htmx swaps for the next item, and holds one decision form
// [data-decision-form]. Focus follows the item: after every swap (submit, skip, undo, error) it
// lands on the new item's first axis (the first fieldset of the decision form), or on the error
// the server gave (the fieldset or alert, made focusable), or on the item's "next" button when
// the item is decided — never in a text field, so the next key is a key, not text. htmx would
// otherwise move focus to the element with the id that had it (the next item's skip box or
// comment box), which turned a reviewer's "1" Enter into a skip with reason "1".
// Escape in a text field of an item page goes back to the decision form's highlighted axis
// (elsewhere it just leaves the field), so the next key works and Enter submits. Enter with
// focus nowhere (on <body>) submits the item's decision form. A 422 answer aimed at an item (a
// refused skip) is swapped in like a 200, so the page says why.
// The input to focus in a decision form: in its first axis (a new item: htmx may already have
// lit up another axis by focusing an element with a remembered id), or with highlighted=true in
// the axis the person was on (Escape from a text field).
function axisInput(form, highlighted) {
  var fieldset = (highlighted && form.querySelector("[data-axis].axis-active")) || form.querySelector("[data-axis], fieldset");
  return fieldset && (fieldset.querySelector("input:checked") || fieldset.querySelector("input:not([type=hidden])"));
}

function focusItem(root) {
  var item = root.matches && root.matches("[data-item]") ? root : root.querySelector("[data-item]");
  if (!item) return;
  var form = item.querySelector("form[data-decision-form]");
  var error = item.querySelector(".axis-error, [role=alert]:not([hidden])");
  if (error) {
    if (!error.hasAttribute("tabindex")) error.setAttribute("tabindex", "-1");
    error.focus();  // an axis in error lights up through the focusin handler below
    return;
  }
  var input = form && axisInput(form, false);
  if (input) { input.focus({ preventScroll: true }); return; }
  var next = item.querySelector("[data-item-next]");
  if (next) next.focus();
}

(function () {
  function typing(target) {
    return target && (target.tagName === "TEXTAREA" || (target.tagName === "INPUT" && /^(text|search|number|password)$/.test(target.type)) || target.isContentEditable);
  }
  document.addEventListener("DOMContentLoaded", function () { focusItem(document); });
  document.addEventListener("htmx:afterSwap", function (event) {
    var elt = event.detail && event.detail.elt;
    if (elt && elt.isConnected && elt.matches && elt.matches("[data-item]")) focusItem(elt);
  });
  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail && event.detail.target;
    if (event.detail.xhr && event.detail.xhr.status === 422 && target && target.matches && target.matches("[data-item]")) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });
  document.addEventListener("keydown", function (event) {
    var target = event.target;
    var item = document.querySelector("[data-item]");
    var form = item && item.querySelector("form[data-decision-form]");
    if (event.key === "Escape" && typing(target)) {
      event.preventDefault();
      var input = form && axisInput(form, true);
      if (input && item.contains(target)) input.focus({ preventScroll: true }); else target.blur();
      return;
    }
    if (event.key === "Enter" && form && (target === document.body || target === document.documentElement)) {
      event.preventDefault();
      readyForm(form).requestSubmit();
      return;
    }
    if (event.key === "g" && !event.ctrlKey && !event.metaKey && !event.altKey && !typing(target)) {
      var panel = document.getElementById("guideline-panel");
      if (!panel) return;
      event.preventDefault();
      panel.open = !panel.open;
      if (panel.open && panel.scrollIntoView) panel.scrollIntoView({ block: "nearest" });
    }
  });
})();

// "All clear" on an answer that cites nothing ([data-cites-nothing] on the button) asks first:
// the first press (the a key or a click) shows #all-clear-confirm, a second press goes ahead;
// Escape or any other key takes the question back. Without JS the button submits as it says.
(function () {
  function confirmBox() { return document.getElementById("all-clear-confirm"); }
  function disarm() {
    var button = document.querySelector("#all-clear[data-armed]");
    if (!button) return;
    button.removeAttribute("data-armed");
    var box = confirmBox();
    if (box) box.hidden = true;
  }
  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("#all-clear[data-cites-nothing]") : null;
    if (!button || button.hasAttribute("data-armed")) return;
    event.preventDefault();
    event.stopImmediatePropagation();
    button.setAttribute("data-armed", "");
    var box = confirmBox();
    if (box) box.hidden = false;
  }, true);
  document.addEventListener("keydown", function (event) {
    if (event.key !== "a") disarm();
  }, true);
})();

// Label and adjudication forms (form[data-axis-form]): each axis is a fieldset [data-axis].
// Number keys pick the option with that [data-option] in the highlighted axis (a radio choice
// then moves on to the next axis; focus follows, so it stays inside the form); ArrowDown/ArrowUp
// or j/k change the axis; "r" or "c" jumps to the rationale (the comment) and Escape leaves it;
// "a" presses the all-clear preset. Enter (outside text areas) and Ctrl+Enter submit only while
// focus is inside the form.
(function () {
  function axes(form) { return Array.prototype.slice.call(form.querySelectorAll("[data-axis]")); }
  function activate(form, fieldset) {
    axes(form).forEach(function (f) { f.classList.toggle("axis-active", f === fieldset); });
    if (fieldset && fieldset.scrollIntoView) fieldset.scrollIntoView({ block: "nearest" });
  }
  function active(form) {
    var current = form.querySelector("[data-axis].axis-active");
    if (!current) {
      current = axes(form)[0];
      activate(form, current);
    }
    return current;
  }
  function move(form, step) {
    var list = axes(form), i = list.indexOf(active(form));
    var next = list[Math.min(Math.max(i + step, 0), list.length - 1)];
    activate(form, next);
    var input = next && (next.querySelector("input:checked") || next.querySelector("input"));
    if (input) input.focus({ preventScroll: true });
  }
  function applyPreset(form, button) {
    var preset = JSON.parse(button.getAttribute("data-preset"));
    Object.keys(preset).forEach(function (name) {
      var value = preset[name];
      if (Array.isArray(value)) return;
      var input = form.querySelector("input[name='" + name + "'][value='" + CSS.escape(value) + "']");
      if (input) input.checked = true;
    });
  }
  document.addEventListener("focusin", function (event) {
    var fieldset = event.target.closest && event.target.closest("form[data-axis-form] [data-axis]");
    if (fieldset) activate(fieldset.closest("form"), fieldset);
  });
  document.addEventListener("keydown", function (event) {
    var form = document.querySelector("form[data-axis-form]");
    if (!form) return;
    var target = event.target;
    var inside = target && target.closest && target.closest("form") === form;
    if (event.key === "Enter") {
      if (!inside) return;
      if (event.ctrlKey || event.metaKey) { event.preventDefault(); readyForm(form).requestSubmit(); return; }
      if (target.tagName === "TEXTAREA" || target.tagName === "BUTTON") return;
      event.preventDefault(); readyForm(form).requestSubmit();
      return;
    }
    if (target && target.tagName === "TEXTAREA") return;
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (target && target.tagName === "INPUT" && /^(text|search|number|password|file)$/.test(target.type)) return;
    if (/^[0-9]$/.test(event.key)) {
      var fieldset = active(form);
      var input = fieldset && fieldset.querySelector("input[data-option='" + event.key + "']");
      if (!input) return;
      event.preventDefault();
      input.click();
      input.focus({ preventScroll: true });
      if (input.type === "radio") move(form, 1);
    } else if (event.key === "ArrowDown" || event.key === "j") {
      event.preventDefault(); move(form, 1);
    } else if (event.key === "ArrowUp" || event.key === "k") {
      event.preventDefault(); move(form, -1);
    } else if (event.key === "r" || event.key === "c") {
      var area = form.querySelector("textarea");
      if (area) { event.preventDefault(); area.focus(); }
    } else if (event.key === "a") {
      var button = form.querySelector("button[data-preset]");
      if (!button) return;
      event.preventDefault();
      if (button.hasAttribute("data-cites-nothing") && !button.hasAttribute("data-armed")) {
        button.click();  // asks first (see above); a second "a" goes ahead
      } else if (button.hasAttribute("data-needs-rationale") && !form.querySelector("textarea").value.trim()) {
        applyPreset(form, button);
        form.querySelector("textarea").focus();
      } else {
        readyForm(form);
        button.click();
      }
    }
  });
})();

// Scoring jobs: the Compare button (#compare-submit) is enabled only while exactly two runs on
// the same gold version (checkbox [data-version]) are ticked; the page says why otherwise. The
// server refuses any other choice with a message too (works without JS).
function updateCompareForm(form) {
  var ticked = Array.prototype.slice.call(form.querySelectorAll("input[name=jobs]:checked"));
  var button = form.querySelector("#compare-submit");
  var hint = form.querySelector("#compare-hint");
  var versions = {};
  ticked.forEach(function (box) { versions[box.getAttribute("data-version")] = true; });
  var ok = ticked.length === 2 && Object.keys(versions).length === 1;
  button.disabled = !ok;
  if (hint) {
    hint.textContent = ok ? "" : ticked.length !== 2 ? "Tick exactly two runs to compare (" + ticked.length + " ticked)." : "The two runs must be scored against the same gold version.";
  }
}

// Agreement dashboard: the two annotator lists of the confusion matrix ([data-distinct-from])
// never offer the annotator chosen in the other list.
function updateDistinctSelects(select) {
  var other = document.getElementById(select.getAttribute("data-distinct-from"));
  if (!other) return;
  [[select, other], [other, select]].forEach(function (pair) {
    Array.prototype.forEach.call(pair[0].options, function (option) {
      option.disabled = option.value === pair[1].value;
    });
  });
}

(function () {
  function wire(root) {
    var form = root.querySelector ? root.querySelector("#compare-form") : null;
    if (form) updateCompareForm(form);
    var select = root.querySelector ? root.querySelector("select[data-distinct-from]") : null;
    if (select) updateDistinctSelects(select);
  }
  document.addEventListener("DOMContentLoaded", function () { wire(document); });
  document.addEventListener("change", function (event) {
    var target = event.target;
    if (target.name === "jobs" && target.closest("#compare-form")) updateCompareForm(target.closest("#compare-form"));
    if (target.hasAttribute && target.hasAttribute("data-distinct-from")) updateDistinctSelects(target);
  });
})();

// ---- Time on item (issue 14) ---------------------------------------------------------------
// Kept apart from the keyboard code above. A decision form carries input[data-active-ms] (with
// the form's signed opening token in data-opening and the idle cut-off in data-idle-ms). The
// active time counts the gaps between the user's inputs while the page is visible, leaving out
// every gap longer than the cut-off (the user was away) and the time the page was hidden. It
// restarts when a form with another opening token appears (the next item after an htmx swap)
// and continues when the same form is re-rendered (a rejected submit). On submit the count is
// written into the hidden field; the server checks it against its own clock.
(function () {
  var state = null;
  function clock() { return window.performance ? performance.now() : Date.now(); }
  function visible() { return document.visibilityState !== "hidden"; }
  function current() {
    var input = document.querySelector("input[data-active-ms]");
    if (!input) { state = null; return null; }
    var token = input.getAttribute("data-opening") || "";
    if (!state || state.token !== token) {
      state = {
        token: token,
        active: 0,
        last: visible() ? clock() : null,
        idle: parseInt(input.getAttribute("data-idle-ms"), 10) || 60000
      };
    }
    return state;
  }
  function tick() {
    var s = current();
    if (!s) return;
    var now = clock();
    if (s.last !== null && now - s.last <= s.idle) s.active += now - s.last;
    s.last = visible() ? now : null;
  }
  ["keydown", "pointerdown", "pointermove", "wheel", "scroll", "touchstart", "focusin", "input"].forEach(function (type) {
    document.addEventListener(type, tick, { capture: true, passive: true });
  });
  document.addEventListener("visibilitychange", tick);
  // Capture phase: runs before htmx reads the form's values.
  document.addEventListener("submit", function (event) {
    var input = event.target && event.target.querySelector ? event.target.querySelector("input[data-active-ms]") : null;
    if (!input) return;
    tick();
    if (state) input.value = String(Math.round(state.active));
  }, true);
  document.addEventListener("DOMContentLoaded", current);
  document.addEventListener("htmx:afterSettle", current);
})();
