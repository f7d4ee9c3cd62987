// Keyboard-first helpers. Pages opt in with data attributes, so everything works without JS:
//  - [data-key="1"] on a radio/checkbox/button: pressing that key (outside text fields) clicks it;
//  - [data-submit-key="Enter"] on a form: pressing Enter (outside text areas) submits it.
(function () {
  function typing(target) {
    return target && (target.tagName === "TEXTAREA" || (target.tagName === "INPUT" && /^(text|search|number|password)$/.test(target.type)) || target.isContentEditable);
  }
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    var scope = document.querySelector("[data-keyboard-scope]") || document;
    if (event.key === "Enter") {
      var form = scope.querySelector("form[data-submit-key='Enter']");
      if (form) { event.preventDefault(); form.requestSubmit(); }
      return;
    }
    var control = scope.querySelector("[data-key='" + CSS.escape(event.key) + "']");
    if (control) { event.preventDefault(); control.click(); control.focus(); }
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
// then moves on to the next axis); ArrowDown/ArrowUp or j/k change the axis; "r" jumps to the
// rationale and Escape leaves it; Ctrl+Enter submits from anywhere, Enter outside text areas.
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
    activate(form, list[Math.min(Math.max(i + step, 0), list.length - 1)]);
  }
  document.addEventListener("focusin", function (event) {
    var fieldset = event.target.closest && event.target.closest("form[data-axis-form] [data-axis]");
    if (fieldset) activate(fieldset.closest("form"), fieldset);
  });
  document.addEventListener("keydown", function (event) {
    var form = document.querySelector("form[data-axis-form]");
    if (!form) return;
    var target = event.target;
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) { event.preventDefault(); form.requestSubmit(); return; }
    if (target && target.tagName === "TEXTAREA") { if (event.key === "Escape") target.blur(); return; }
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (target && target.tagName === "INPUT" && /^(text|search|number|password|file)$/.test(target.type)) return;
    if (/^[0-9]$/.test(event.key)) {
      var fieldset = active(form);
      var input = fieldset && fieldset.querySelector("input[data-option='" + event.key + "']");
      if (!input) return;
      event.preventDefault();
      input.click();
      if (input.type === "radio") move(form, 1);
    } else if (event.key === "ArrowDown" || event.key === "j") {
      event.preventDefault(); move(form, 1);
    } else if (event.key === "ArrowUp" || event.key === "k") {
      event.preventDefault(); move(form, -1);
    } else if (event.key === "r") {
      var area = form.querySelector("textarea");
      if (area) { event.preventDefault(); area.focus(); }
    }
  });
})();
