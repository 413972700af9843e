// The page's frame at any width: the toolbar on one row (what does not fit goes into the ⋯ menu, the
// least needed first), the Graph/Text tabs, and the panes beside the graph (details, the second
// level) resized by dragging their divider or with the arrow keys, the details pane collapsible.
const byId = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

const MIN_PANE_PX = 160;
// the graph keeps at least this much beside a pane being dragged wider
const MIN_GRAPH_PX = 160;
const KEY_STEP_PX = 24;

/** Keeps the toolbar on one row: items with the highest data-priority move into the overflow menu first.
 * Returns the re-arrangement, for the page to call when the toolbar's content changed (a new report). */
export function oneRowToolbar(toolbar: HTMLElement, overflow: HTMLElement, button: HTMLButtonElement, menu: HTMLElement): () => void {
  const items = [...toolbar.querySelectorAll<HTMLElement>("[data-priority]")];
  const home = new Map(items.map((item) => [item, { parent: item.parentElement!, next: item.nextSibling }]));
  const byNeed = [...items].sort((a, b) => Number(b.dataset.priority) - Number(a.dataset.priority));
  const fits = () => toolbar.scrollWidth <= toolbar.clientWidth + 1;
  const arrange = () => {
    // everything home, last first (so each one's next sibling is home already), then out again one by
    // one until the row fits
    for (const item of [...items].reverse()) {
      const place = home.get(item)!;
      place.parent.insertBefore(item, place.next);
    }
    menu.replaceChildren();
    overflow.hidden = true;
    for (const item of byNeed) {
      if (fits()) {
        break;
      }
      overflow.hidden = false;
      menu.append(item);
    }
    // in the menu as on the row: in the toolbar's order
    [...menu.children].sort((a, b) => items.indexOf(a as HTMLElement) - items.indexOf(b as HTMLElement)).forEach((item) => menu.append(item));
    document.body.dataset.overflowed = String(menu.childElementCount);
  };
  button.addEventListener("click", () => {
    // fixed, under the toolbar: the toolbar clips what overflows it
    menu.style.top = `${toolbar.getBoundingClientRect().bottom}px`;
    menu.hidden = !menu.hidden;
    button.setAttribute("aria-expanded", String(!menu.hidden));
  });
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && !menu.hidden) {
      menu.hidden = true;
      button.setAttribute("aria-expanded", "false");
    }
  });
  document.addEventListener("click", (event) => {
    if (!menu.hidden && !overflow.contains(event.target as Node)) {
      menu.hidden = true;
      button.setAttribute("aria-expanded", "false");
    }
  });
  new ResizeObserver(arrange).observe(toolbar);
  arrange();
  return arrange;
}

/** A divider on the left edge of `pane`: dragging it (or ←/→ on it) sets the pane's width. */
export function resizable(divider: HTMLElement, pane: HTMLElement, container: HTMLElement, changed: () => void): void {
  const setWidth = (width: number) => {
    const room = container.getBoundingClientRect().width - MIN_GRAPH_PX;
    pane.style.width = `${Math.round(Math.max(MIN_PANE_PX, Math.min(width, room)))}px`;
    pane.style.flex = "none";
    changed();
  };
  divider.addEventListener("pointerdown", (event) => {
    event.preventDefault();
    divider.setPointerCapture(event.pointerId);
    const right = pane.getBoundingClientRect().right;
    const move = (e: PointerEvent) => setWidth(right - e.clientX);
    const up = () => {
      divider.removeEventListener("pointermove", move);
      divider.removeEventListener("pointerup", up);
    };
    divider.addEventListener("pointermove", move);
    divider.addEventListener("pointerup", up);
  });
  divider.addEventListener("keydown", (event) => {
    const width = pane.getBoundingClientRect().width;
    if (event.key === "ArrowLeft" || event.key === "ArrowRight") {
      event.preventDefault();
      setWidth(width + (event.key === "ArrowLeft" ? KEY_STEP_PX : -KEY_STEP_PX));
    }
  });
}

/** The details pane's ›/‹ button: collapsed, the pane is a thin strip that opens again on a click. */
export function collapsible(pane: HTMLElement, button: HTMLButtonElement, changed: () => void): void {
  button.addEventListener("click", () => {
    const collapsed = pane.classList.toggle("collapsed");
    button.textContent = collapsed ? "‹" : "›";
    button.title = collapsed ? "Show the details pane" : "Collapse the details pane";
    button.setAttribute("aria-expanded", String(!collapsed));
    changed();
  });
}

/** The Graph and Text tabs: one view shown, the other hidden (and `shown(tab)` told). */
export function tabs(shown: (tab: string) => void): void {
  const views: Record<string, HTMLElement> = { graph: byId("graph-view"), text: byId("text-view") };
  for (const tab of document.querySelectorAll<HTMLButtonElement>(".tab")) {
    tab.addEventListener("click", () => {
      for (const [name, view] of Object.entries(views)) {
        view.hidden = name !== tab.dataset.tab;
      }
      document.querySelectorAll(".tab").forEach((t) => {
        t.classList.toggle("active", t === tab);
        t.setAttribute("aria-selected", String(t === tab));
      });
      shown(tab.dataset.tab ?? "graph");
    });
  }
}
