// The graph page's HTML, shared by the extension and the browser test so both run the same CSP:
// nothing loads but our own script (with a nonce) and stylesheet; no inline script or style.

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
<header class="toolbar">
  <span id="title" class="title">FX graph</span>
  <label>level <select id="level" aria-label="graph level"></select></label>
  <input id="search" type="search" placeholder="search nodes (name, op, target)" aria-label="search nodes">
  <span id="search-count" class="muted"></span>
  <button id="fit" class="tool" title="Fit the whole graph into the view">Fit</button>
  <nav class="tabs" role="tablist">
    <button id="tab-graph" role="tab" class="tab active" data-tab="graph">Graph</button>
    <button id="tab-text" role="tab" class="tab" data-tab="text">Text</button>
  </nav>
</header>
<div id="message" class="message" hidden></div>
<ul id="diagnostics" class="diagnostics" hidden></ul>
<main>
  <section id="graph-view" class="view"><svg id="graph" role="img" aria-label="graph"></svg></section>
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
