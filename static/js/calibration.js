// The run form's task picker: a few hundred approved tasks as checkboxes. Typing in the filter shows the tasks
// whose label (title, type, difficulty) holds every word typed; ticked tasks always stay shown, so nothing chosen
// is hidden. "Tick shown" ticks what the filter shows.
(() => {
  const filter = document.getElementById("task-filter");
  const picker = document.getElementById("task-picker");
  if (!filter || !picker) return;
  const count = document.getElementById("task-filter-count");
  const items = [...picker.querySelectorAll("input[type=checkbox]")].map((box) => {
    const label = box.closest("label") || box.parentElement;
    return { row: label.parentElement.tagName === "DIV" ? label.parentElement : label, box, text: label.textContent.toLowerCase() };
  });

  function apply() {
    const words = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
    let shown = 0;
    for (const item of items) {
      const visible = item.box.checked || words.every((word) => item.text.includes(word));
      item.row.hidden = !visible;
      if (visible) shown += 1;
    }
    const ticked = items.filter((item) => item.box.checked).length;
    if (count) count.textContent = `${shown} of ${items.length} shown, ${ticked} ticked`;
  }

  filter.addEventListener("input", apply);
  picker.addEventListener("change", apply);
  filter.addEventListener("keydown", (event) => {
    if (event.key === "Enter") event.preventDefault(); // Enter filters; it does not plan the run
  });
  const tickShown = document.getElementById("task-tick-shown");
  if (tickShown) {
    tickShown.addEventListener("click", () => {
      for (const item of items) if (!item.row.hidden) item.box.checked = true;
      apply();
    });
  }
  apply();
})();
