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

// Label and adjudication forms (form[data-axis-form]): each axis is a fieldset [data-axis].
// Number keys pick the option with that [data-option] in the highlighted axis (a radio choice
// then moves on to the next axis; focus follows, so it stays inside the form); ArrowDown/ArrowUp
// or j/k change the axis; "r" or "c" jumps to the rationale (the comment) and Escape leaves it;
// "a" presses the all-clear preset. Enter (outside text areas) and Ctrl+Enter submit only while
// focus is inside the form. After an htmx swap focus goes to the first field with an error, or to
// the new form, never to <body>.
(function () {
  function axes(form) { return Array.prototype.slice.call(form.querySelectorAll("[data-axis]")); }
  function activate(form, fieldset) {
    axes(form).forEach(function (f) { f.classList.toggle("axis-active", f === fieldset); });
    if (fieldset && fieldset.scrollIntoView) fieldset.scrollIntoView({ block: "nearest" });
  }
  function active(form) {
    var current = form.querySelector("[data-axis].axis-active");
    if (!current) {
      current = axes(form).filter(function (f) { return !f.querySelector("input:checked"); })[0] || axes(form)[0];
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
  function focusForm(root) {
    var error = root.querySelector(".axis-error, [role=alert]");
    var form = root.querySelector("form[data-axis-form]");
    if (error) {
      var field = error.querySelector("textarea, input") || error;
      if (!field.hasAttribute("tabindex") && field === error) field.setAttribute("tabindex", "-1");
      field.focus();
      if (form && error.hasAttribute("data-axis")) activate(form, error);
    } else if (form) {
      var fieldset = active(form);
      var input = fieldset && (fieldset.querySelector("input:checked") || fieldset.querySelector("input"));
      if (input) input.focus({ preventScroll: true });
    }
  }
  document.addEventListener("DOMContentLoaded", function () {
    if (document.querySelector("form[data-axis-form]")) focusForm(document);
  });
  document.addEventListener("htmx:afterSwap", function (event) {
    var root = event.detail && event.detail.elt && event.detail.elt.isConnected ? event.detail.elt : document;
    focusForm(root.querySelector("form[data-axis-form], .axis-error, [role=alert]") ? root : document);
  });
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
    if (target && target.tagName === "TEXTAREA") { if (event.key === "Escape") target.blur(); return; }
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
      if (button.hasAttribute("data-needs-rationale") && !form.querySelector("textarea").value.trim()) {
        applyPreset(form, button);
        form.querySelector("textarea").focus();
      } else {
        readyForm(form);
        button.click();
      }
    }
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
