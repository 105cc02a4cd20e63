"use strict";
// Client-side column sort: click a header of a table.sortable. Cells may carry data-sort; headers with
// data-type="num" sort numerically.
function sortTable(table, column, header) {
  const numeric = header.dataset.type === "num";
  const ascending = header.getAttribute("aria-sort") !== "ascending";
  const key = (row) => {
    const cell = row.cells[column];
    const raw = cell ? (cell.dataset.sort ?? cell.textContent.trim()) : "";
    return numeric ? (parseFloat(raw) || 0) : raw.toLowerCase();
  };
  const body = table.tBodies[0];
  const rows = Array.from(body.rows).filter((row) => row.cells.length > 1);
  rows.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0) * (ascending ? 1 : -1));
  rows.forEach((row) => body.appendChild(row));
  table.querySelectorAll("thead th").forEach((th) => th.removeAttribute("aria-sort"));
  header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
}

document.querySelectorAll("table.sortable").forEach((table) => {
  table.querySelectorAll("thead th").forEach((th, column) => {
    th.addEventListener("click", () => sortTable(table, column, th));
  });
});

// A submission still being graded polls its state and reloads when the status or verdict changes.
const submission = document.getElementById("submission");
if (submission && submission.dataset.status !== "done") {
  const poll = async () => {
    try {
      const response = await fetch(submission.dataset.stateUrl, { headers: { Accept: "application/json" } });
      if (response.ok) {
        const state = await response.json();
        if (state.status !== submission.dataset.status) { window.location.reload(); return; }
        const progress = document.getElementById("progress");
        if (progress) {
          const ahead = state.queue_position != null ? `${state.queue_position} job(s) ahead · ` : "";
          progress.textContent = ahead + (state.progress || "");
        }
      }
    } catch (error) { /* the server may be restarting: try again */ }
    window.setTimeout(poll, 1500);
  };
  window.setTimeout(poll, 1500);
}
