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
