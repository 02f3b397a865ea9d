// Live updates for the dashboard: one Server-Sent Events stream per tab
// says when what the page shows has changed; the page then fetches its own
// main part again and swaps it in. Without EventSource, or when the stream
// keeps failing, the page polls instead.
(function () {
  "use strict";
  var body = document.body;
  var stream = body.getAttribute("data-stream");
  if (!stream) return;
  var main = document.getElementById("main");
  var busy = false, again = false, failures = 0, pollTimer = null;

  function refresh() {
    if (busy) { again = true; return; }
    // Do not replace a form the user is typing in.
    var a = document.activeElement;
    if (a && main.contains(a) && (a.tagName === "INPUT" || a.tagName === "SELECT")) { again = true; setTimeout(refresh, 2000); return; }
    busy = true;
    fetch(location.href, { headers: { "X-Voda-Partial": "1" }, credentials: "same-origin" })
      .then(function (r) {
        if (r.status === 401) { location.reload(); return null; }
        return r.ok ? r.text() : null;
      })
      .then(function (html) {
        if (html !== null && html !== undefined) {
          main.innerHTML = html;
          body.setAttribute("data-refreshed", String(Date.now()));
        }
      })
      .catch(function () {})
      .then(function () {
        busy = false;
        if (again) { again = false; refresh(); }
      });
  }

  function poll() {
    body.setAttribute("data-live", "poll");
    if (!pollTimer) pollTimer = setInterval(refresh, 5000);
  }

  if (!window.EventSource) { poll(); return; }
  var es = new EventSource(stream);
  es.addEventListener("open", function () { failures = 0; body.setAttribute("data-live", "sse"); });
  es.addEventListener("change", refresh);
  es.addEventListener("error", function () {
    failures++;
    if (failures >= 3) { es.close(); poll(); }
  });
})();
