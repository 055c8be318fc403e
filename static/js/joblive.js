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
