// Authoring pages: copy an entity id from the look-up panel to the clipboard (everything else is htmx).
document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-copy]");
  if (!button || !navigator.clipboard) return;
  navigator.clipboard.writeText(button.dataset.copy).then(() => {
    const label = button.textContent;
    button.textContent = "Copied";
    setTimeout(() => { button.textContent = label; }, 1200);
  });
});

// A refusal (403) or bad input (400) answered to an htmx request carries a message meant for the page: show it
// where the answer was going instead of silently dropping it (htmx does not swap 4xx answers by default).
document.addEventListener("htmx:beforeSwap", (event) => {
  const status = event.detail.xhr.status;
  if (status === 400 || status === 403) {
    event.detail.shouldSwap = true;
    event.detail.isError = false;
  }
});

// The rubric editor re-renders its criteria (#criteria) from the values a request carried ("Add criterion", another
// filter or argument row, a move, a removal). What the author types into the criteria while such a request is in
// flight must survive that swap: every field's value is noted when the request leaves, and at the swap each field
// changed since then is carried into the new criteria (matched by the criterion's prefix, which stays with the
// criterion, the field and its position), with the caret when the author was typing in it.
const CRITERIA_ID = "criteria";
const criteriaSent = new WeakMap(); // request (XMLHttpRequest) -> Map(field id -> value when sent)
let criteriaCarry = null; // what was typed during the request, taken at the swap
let criteriaRefocus = null; // the field being typed in, focused again after the settle

function criteriaFields(root) {
  const fields = new Map();
  for (const card of root.querySelectorAll("fieldset.criterion[data-prefix]")) {
    const prefix = card.dataset.prefix;
    const count = {};
    for (const field of card.querySelectorAll("input, select, textarea")) {
      if (!field.name || field.type === "hidden" || !field.name.startsWith(`${prefix}-`)) continue;
      count[field.name] = (count[field.name] || 0) + 1;
      fields.set(`${field.name}#${count[field.name]}`, field);
    }
  }
  return fields;
}

function fieldValue(field) {
  return field.type === "checkbox" ? field.checked : field.value;
}

document.addEventListener("htmx:beforeRequest", (event) => {
  const target = event.detail.target;
  if (!target || target.id !== CRITERIA_ID) return;
  const sent = new Map();
  for (const [id, field] of criteriaFields(target)) sent.set(id, fieldValue(field));
  criteriaSent.set(event.detail.xhr, sent);
});

document.addEventListener("htmx:beforeSwap", (event) => {
  const sent = criteriaSent.get(event.detail.xhr);
  const target = event.detail.target;
  if (!sent || !event.detail.shouldSwap || !target || target.id !== CRITERIA_ID) return;
  const edits = new Map();
  let focus = null;
  for (const [id, field] of criteriaFields(target)) {
    if (sent.has(id) && sent.get(id) !== fieldValue(field)) edits.set(id, fieldValue(field));
    if (field === document.activeElement && edits.has(id)) {
      focus = { id, start: field.selectionStart, end: field.selectionEnd };
    }
  }
  criteriaCarry = edits.size ? { edits, focus } : null;
});

document.addEventListener("htmx:afterSwap", () => {
  if (!criteriaCarry) return;
  const carry = criteriaCarry;
  criteriaCarry = null;
  const root = document.getElementById(CRITERIA_ID);
  if (!root) return;
  const fields = criteriaFields(root);
  for (const [id, value] of carry.edits) {
    const field = fields.get(id);
    if (!field) continue; // the criterion was removed by the request
    if (field.type === "checkbox") field.checked = value;
    else field.value = value;
  }
  criteriaRefocus = carry.focus && fields.get(carry.focus.id) ? carry.focus : null;
});

// After the settle (where htmx gives the new criterion's text its autofocus): back to the field being typed in.
document.addEventListener("htmx:afterSettle", () => {
  if (!criteriaRefocus) return;
  const { id, start, end } = criteriaRefocus;
  criteriaRefocus = null;
  const root = document.getElementById(CRITERIA_ID);
  const field = root && criteriaFields(root).get(id);
  if (!field) return;
  field.focus();
  if (typeof field.setSelectionRange === "function" && start !== null) {
    try {
      field.setSelectionRange(start, end);
    } catch (error) {
      // number inputs have no selection
    }
  }
});
