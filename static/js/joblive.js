// Keeps a keyboard user's place on a job's page when its live part refreshes and the
// control they were on goes with it (Cancel once the job has ended, Hold once it is
// held). htmx gives focus back to the element of the same id; where there is none,
// focus would fall to the top of the page. It goes to the action that took its place,
// the first one left, or else to the job's state.
(function () {
  "use strict";
  var wasInside = false;
  document.body.addEventListener("htmx:beforeSwap", function (e) {
    if (e.detail.target.id === "job-live") {
      wasInside = e.detail.shouldSwap && e.detail.target.contains(document.activeElement);
    }
  });
  // htmx has given focus back by now, where it could.
  document.body.addEventListener("htmx:afterSwap", function (e) {
    if (e.target.id !== "job-live" || !wasInside) { return; }
    wasInside = false;
    var now = document.activeElement;
    if (now && now !== document.body && now.isConnected) { return; }
    var next = e.target.querySelector("[data-testid=actions] .button") || document.getElementById("job-state-h");
    if (next) { next.focus(); }
  });
})();

// Counts a running job's run time on between refreshes: the server leaves it out of
// the live part's version, so that a refresh finding nothing else changed is answered
// 204, and the figure it drew (data-ran-seconds) would stand still. Written as the
// server writes it (Go's Duration.String, "1h2m3s", less trailing zero units).
(function () {
  "use strict";
  var drawn = new WeakMap();
  function words(s) {
    var h = Math.floor(s / 3600), m = Math.floor(s % 3600 / 60), out = (s % 60) + "s";
    if (h > 0 || m > 0) { out = m + "m" + out; }
    if (h > 0) { out = h + "h" + out; }
    if (out.slice(-3) === "m0s") { out = out.slice(0, -2); }
    if (out.slice(-3) === "h0m") { out = out.slice(0, -2); }
    return out;
  }
  function tick() {
    var el = document.querySelector("[data-ran-seconds]");
    if (!el) { return; }
    if (!drawn.has(el)) { drawn.set(el, performance.now()); }
    var s = Number(el.getAttribute("data-ran-seconds")) + Math.floor((performance.now() - drawn.get(el)) / 1000);
    if (s >= 0) { el.textContent = words(s); }
  }
  // A part drawn again starts from the server's figure.
  document.body.addEventListener("htmx:afterSwap", function (e) {
    if (e.target.id === "job-live") { tick(); }
  });
  tick();
  setInterval(tick, 1000);
})();

// Folds the page's secondary sections (timeline, what it runs, telemetry) on a narrow
// screen, so that a phone shows the job's state, placement and logs without a long
// scroll. The page comes with them open, for wide screens and browsers without scripts;
// this runs right after them, before the first paint (and before htmx, deferred, starts).
// Refreshes swap what is inside the folds, never the folds, so each stays as the user
// left it.
//
// What a folded section would fetch (the telemetry's load and its refreshes) waits until
// it is opened, so that a phone spends no data on what nobody sees: htmx's requests from
// inside a closed fold are called off, and opening a fold that was folded sends what is
// inside it "fold-open", which their hx-trigger lists.
(function () {
  "use strict";
  var folds = document.querySelectorAll("details.fold"), folded = new WeakSet();
  document.body.addEventListener("htmx:beforeRequest", function (e) {
    var fold = e.detail.elt.closest("details.fold");
    if (fold && !fold.open) { e.preventDefault(); }
  });
  folds.forEach(function (d) {
    d.addEventListener("toggle", function () {
      if (!d.open) {
        folded.add(d);
      } else if (folded.delete(d)) {
        d.querySelectorAll("[hx-trigger]").forEach(function (el) { el.dispatchEvent(new Event("fold-open")); });
      }
    });
  });
  if (!matchMedia("(max-width: 40rem)").matches) { return; }
  folds.forEach(function (d) { d.open = false; folded.add(d); });
})();
