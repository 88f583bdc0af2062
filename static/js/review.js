// Reviewing at keyboard speed: j/k next/previous item, c claim, / the task comment box; never while typing.
(function () {
  "use strict";
  function typing(target) {
    return target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
  }
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    var go = { j: "next-item", k: "prev-item" }[event.key];
    if (go) {
      var link = document.getElementById(go);
      if (link) { event.preventDefault(); link.click(); }
      return;
    }
    if (event.key === "c") {
      var claim = document.getElementById("claim-form");
      if (claim) { event.preventDefault(); claim.requestSubmit(); }
      return;
    }
    if (event.key === "/") {
      var box = document.getElementById("comment-body-task");
      if (box) { event.preventDefault(); box.focus(); }
    }
  });
})();
