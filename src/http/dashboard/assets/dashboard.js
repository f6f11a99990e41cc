// The dashboard's only script (served as a file: the CSP allows no inline script). Pages work without it,
// except confirmation dialogs, the copy button and live migration counts, which it adds.

document.addEventListener('click', (event) => {
  const target = event.target instanceof Element ? event.target : null;
  const opener = target?.closest('[data-dialog-open]');
  if (opener) {
    const dialog = document.getElementById(opener.getAttribute('data-dialog-open'));
    if (dialog && typeof dialog.showModal === 'function') dialog.showModal();
    return;
  }
  const closer = target?.closest('[data-dialog-close]');
  if (closer) {
    closer.closest('dialog')?.close();
    return;
  }
  const copy = target?.closest('[data-copy]');
  if (copy) {
    const source = document.getElementById(copy.getAttribute('data-copy'));
    if (source && 'value' in source) {
      source.select();
      navigator.clipboard?.writeText(source.value).then(
        () => setStatus(copy, 'Copied'),
        () => setStatus(copy, 'Select the key and copy it'),
      );
    }
  }
});

function setStatus(button, text) {
  const status = document.getElementById(button.getAttribute('aria-describedby') || '');
  if (status) status.textContent = text;
}

// Live data: an element with data-live="<url>" is refreshed from that JSON address every second; each
// descendant with data-field="<name>" takes the value of that member, and a list with data-list="<name>"
// its items ({text, href?} each). Polling stops while the page is hidden.
for (const live of document.querySelectorAll('[data-live]')) {
  const url = live.getAttribute('data-live');
  const tick = async () => {
    if (document.visibilityState === 'visible') {
      try {
        const res = await fetch(url, { headers: { accept: 'application/json' }, credentials: 'same-origin' });
        if (res.ok) render(live, await res.json());
      } catch {
        // The next tick tries again.
      }
    }
    setTimeout(tick, 1000);
  };
  setTimeout(tick, 1000);
}

function render(root, data) {
  for (const el of root.querySelectorAll('[data-field]')) {
    const value = data[el.getAttribute('data-field')];
    if (value !== undefined && value !== null) el.textContent = String(value);
  }
  for (const list of root.querySelectorAll('[data-list]')) {
    const items = data[list.getAttribute('data-list')];
    if (!Array.isArray(items)) continue;
    list.replaceChildren(
      ...items.map((item) => {
        const li = document.createElement('li');
        if (item.href) {
          const a = document.createElement('a');
          a.href = item.href;
          a.textContent = item.text;
          li.append(a);
        } else li.textContent = item.text;
        return li;
      }),
    );
  }
}
