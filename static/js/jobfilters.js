// The jobs list's filters fold away on a narrow screen, so that a phone's first screen
// shows jobs. The page comes with them open, for wide screens and browsers without
// scripts; this runs right after them, before the first paint, and keeps them open when
// a filter was refused, so its field shows. htmx swaps only the results, so the fold
// stays as the user left it; its summary says which filters are set as they change, the
// way templates.filtersSet does.
(() => {
  const fold = document.getElementById("job-filters");
  if (!fold) return;
  if (matchMedia("(max-width: 40rem)").matches && !fold.querySelector("[aria-invalid=true]")) fold.open = false;
  const summary = fold.querySelector("[data-filters-set]");
  fold.closest("form").addEventListener("change", () => {
    const set = ["state", "project", "user", "image", "from", "to"].filter((name) => fold.querySelector(`[name=${name}]`).value !== "");
    summary.textContent = set.length === 0 ? "(none set)" : `(${set.length} set: ${set.join(", ")})`;
  });
})();
