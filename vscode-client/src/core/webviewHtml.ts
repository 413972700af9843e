// The graph page's HTML, shared by the extension and the browser test so both run the same CSP:
// nothing loads but our own script (with a nonce) and stylesheet; no inline script or style. The
// layout worker starts from a blob: URL of a script inside our own (worker-src blob:).

export interface PageResources {
  cspSource: string;
  nonce: string;
  scriptUri: string;
  styleUri: string;
}

export function graphPageHtml(resources: PageResources): string {
  const { cspSource, nonce, scriptUri, styleUri } = resources;
  const csp = [
    "default-src 'none'",
    `img-src ${cspSource} data:`,
    `style-src ${cspSource}`,
    `font-src ${cspSource}`,
    `script-src 'nonce-${nonce}'`,
    "worker-src blob:",
  ].join("; ");
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${styleUri}">
<title>FX graph</title>
</head>
<body>
<header id="toolbar" class="toolbar">
  <span id="title" class="title">FX graph</span>
  <label>level <select id="level" aria-label="graph level"></select></label>
  <!-- data-priority: what moves into the ⋯ menu first when the panel is narrow (highest first) -->
  <span id="rung" class="muted" data-priority="6" title="Where this graph sits on the ladder, read off its opcodes"></span>
  <label data-priority="4" title="Draw a second level beside this one: choosing a node at either marks the nodes of its source span at the other">beside <select id="split-level" aria-label="level drawn beside"></select></label>
  <span class="search-group" data-priority="3">
    <input id="search" type="search" placeholder="search: name, op, target, [B, T, 768]" aria-label="search nodes">
    <button id="search-previous" class="tool" title="Previous match (Shift+Enter)" aria-label="previous match">↑</button>
    <button id="search-next" class="tool" title="Next match (Enter): opens the groups around it" aria-label="next match">↓</button>
    <span id="search-count" class="muted" aria-live="polite"></span>
  </span>
  <button id="expand-all" class="tool" data-priority="5" title="Open every module group">Expand all</button>
  <button id="collapse-all" class="tool" data-priority="5" title="Close every module group">Collapse all</button>
  <button id="fit" class="tool" data-priority="2" title="Fit the whole graph into the view (0)">Fit</button>
  <label data-priority="7" title="Pan to the nodes of the editor's cursor line"><input id="follow" type="checkbox" checked> follow cursor</label>
  <button id="export-svg" class="tool" data-priority="8" title="Save the drawing as SVG">SVG</button>
  <button id="export-png" class="tool" data-priority="8" title="Save the drawing as PNG">PNG</button>
  <span id="overflow" class="overflow" hidden>
    <button id="overflow-button" class="tool" title="More tools" aria-label="more tools" aria-haspopup="true" aria-expanded="false">⋯</button>
    <div id="overflow-menu" class="overflow-menu" hidden></div>
  </span>
  <nav class="tabs" role="tablist">
    <button id="tab-graph" role="tab" class="tab active" data-tab="graph" aria-selected="true">Graph</button>
    <button id="tab-text" role="tab" class="tab" data-tab="text" aria-selected="false">Text</button>
  </nav>
</header>
<div id="message" class="message" hidden></div>
<div id="layout-status" class="message" role="status" aria-live="polite" hidden></div>
<ul id="diagnostics" class="diagnostics" hidden></ul>
<main>
  <section id="graph-view" class="view">
    <aside id="pass" class="pass-pane" aria-label="what the pass changed, and the proof" hidden></aside>
    <svg id="graph" role="application" tabindex="0" aria-label="graph: arrow keys move between boxes, Enter shows the source, Space opens or closes a group"></svg>
    <div id="split-divider" class="divider" role="separator" aria-orientation="vertical" aria-label="resize the level drawn beside (arrow keys)" tabindex="0" hidden></div>
    <div id="split" class="split" hidden>
      <div class="split-bar">
        <span id="split-caption" class="split-caption muted"></span>
        <button id="split-zoom-out" class="tool small" title="Zoom out (this graph only)" aria-label="zoom out beside">−</button>
        <button id="split-zoom-in" class="tool small" title="Zoom in (this graph only)" aria-label="zoom in beside">+</button>
        <button id="split-fit" class="tool small" title="Fit this graph into its pane">Fit</button>
      </div>
      <svg id="split-graph" role="application" tabindex="0" aria-label="a second level of the graph, linked by source span"></svg>
    </div>
    <aside id="details" class="details" aria-label="details of the selected node" hidden>
      <div id="details-divider" class="divider" role="separator" aria-orientation="vertical" aria-label="resize the details pane (arrow keys)" tabindex="0"></div>
      <button id="details-collapse" class="tool pane-toggle" title="Collapse the details pane" aria-label="collapse the details pane" aria-expanded="true">›</button>
      <div id="details-body" class="details-body"></div>
    </aside>
  </section>
  <section id="text-view" class="view" hidden>
    <h3>Printout</h3><pre id="printout"></pre>
    <h3>Generated code</h3><pre id="code"></pre>
    <h3>Shapes</h3><pre id="table"></pre>
  </section>
</main>
<script nonce="${nonce}" src="${scriptUri}"></script>
</body>
</html>`;
}
