// The cockpit's little script: select every row of a list, and ask before a change.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  const all = document.getElementById("select-all");
  if (all) {
    all.addEventListener("change", () => {
      for (const box of document.querySelectorAll("input.pick")) box.checked = all.checked;
    });
  }
  for (const form of document.querySelectorAll("form.confirm")) {
    form.addEventListener("submit", (event) => {
      if (!window.confirm(form.dataset.confirm)) event.preventDefault();
    });
  }
  for (const button of document.querySelectorAll("button.confirm-click")) {
    button.addEventListener("click", (event) => {
      if (!window.confirm(button.dataset.confirm)) event.preventDefault();
    });
  }
});
