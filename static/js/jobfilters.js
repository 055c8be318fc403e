// The jobs list's filters fold away on a narrow screen, so that a phone's first screen
// shows jobs. The page comes with them open, for wide screens and browsers without
// scripts; this runs right after them, before the first paint, and keeps them open when
// a filter was refused, so its field shows. htmx swaps only the results and the fold's
// summary (which the server words), so the fold stays as the user left it.
(() => {
  const fold = document.getElementById("job-filters");
  if (fold && matchMedia("(max-width: 40rem)").matches && !fold.querySelector("[aria-invalid=true]")) fold.open = false;
})();
