// The job page's live status (docs/console.md, Jobs): the job's events,
// through the console, update the status shown, and its end reloads the
// page for the result. Only a job not yet ended has the hook.
(function () {
  "use strict";
  var status = document.querySelector("[data-live-events]");
  if (!status || typeof EventSource === "undefined") {
    return;
  }
  var prefix = status.getAttribute("data-live-prefix");
  var source = new EventSource(status.getAttribute("data-live-events"));
  function onEvent(e) {
    var attrs;
    try {
      attrs = JSON.parse(e.data).data.attributes;
    } catch (err) {
      return;
    }
    if (!attrs || !attrs.status) {
      return;
    }
    var text = attrs.status;
    if (attrs.status === "processing" && typeof attrs.progress === "number") {
      text += " (" + attrs.progress + "%)";
    }
    status.textContent = text;
    if (attrs.status === "completed" || attrs.status === "failed") {
      source.close();
      window.location.reload();
    }
  }
  ["progress", "completed", "failed"].forEach(function (kind) {
    source.addEventListener(prefix + "." + kind, onEvent);
  });
})();
