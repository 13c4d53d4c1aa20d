// Live progress of a retraction: server-sent events, or polling where
// EventSource is missing or the stream fails. Plain JavaScript, no library.
(function () {
  "use strict";
  var panel = document.querySelector("[data-progress]");
  if (!panel) return;
  var base = panel.getAttribute("data-progress");
  var bar = document.getElementById("progress-bar");

  function field(name) { return panel.querySelector('[data-field="' + name + '"]'); }

  function show(p) {
    ["sent", "dead", "failed", "pending", "spared"].forEach(function (name) { field(name).textContent = String(p[name]); });
    field("rate").textContent = p.rateText;
    field("eta").textContent = p.etaText;
    field("line").textContent = p.line;
    var state = field("state");
    state.textContent = p.state;
    state.className = "state " + p.state;
    bar.max = Math.max(p.total, 1);
    bar.value = p.settled;
    bar.textContent = p.settled + " of " + p.total;
    var list = field("failures");
    list.textContent = "";
    if (p.failures.length === 0) {
      var none = document.createElement("li");
      none.className = "muted";
      none.textContent = "none";
      list.appendChild(none);
    }
    p.failures.forEach(function (f) {
      var item = document.createElement("li");
      item.textContent = f.reason + ": " + f.count;
      list.appendChild(item);
    });
    panel.setAttribute("data-finished", p.finished ? "true" : "false");
    // Nothing is left to cancel once it has ended.
    var cancel = document.getElementById("cancel-panel");
    if (cancel && p.finished) cancel.hidden = true;
  }

  function poll() {
    fetch(base + "/progress", { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) { if (!response.ok) throw new Error(response.status); return response.json(); })
      .then(function (p) { show(p); if (!p.finished) setTimeout(poll, 1000); })
      .catch(function () { setTimeout(poll, 3000); });
  }

  if (!window.EventSource) { poll(); return; }
  var source = new EventSource(base + "/events");
  source.onmessage = function (event) {
    var p = JSON.parse(event.data);
    show(p);
    if (p.finished) source.close();
  };
  source.onerror = function () {
    // A stream the server ended (it does after a minute) reconnects by itself;
    // one that cannot connect falls back to polling.
    if (source.readyState === EventSource.CLOSED) poll();
  };
})();
