// The current drawing as a standalone SVG (the page's stylesheet inlined, theme colours resolved) and
// as a PNG rendered from it; the extension saves what the page sends.
import type { PageToHost } from "../src/core/messages";
import type { GraphReport } from "../src/core/report";
import type { Drawing } from "./visible";

// a canvas side longer than this fails in Chromium: larger drawings are scaled down to it
const MAX_CANVAS_SIDE = 16_000;

/** The stylesheet rules, with every theme variable the page uses resolved to its current value. */
function inlinedStyle(): string {
  const computed = getComputedStyle(document.documentElement);
  const rules: string[] = [];
  const variables = new Set<string>();
  for (const sheet of Array.from(document.styleSheets)) {
    for (const rule of Array.from(sheet.cssRules)) {
      rules.push(rule.cssText);
      for (const match of rule.cssText.matchAll(/var\((--[\w-]+)/g)) {
        variables.add(match[1]);
      }
    }
  }
  const values = [...variables].map((name) => `${name}: ${computed.getPropertyValue(name).trim() || "initial"};`);
  const body = getComputedStyle(document.body);
  return `svg { ${values.join(" ")} background: ${body.backgroundColor}; color: ${body.color}; }\n${rules.join("\n")}`;
}

export function svgText(svg: SVGSVGElement, width: number, height: number): string {
  const copy = svg.cloneNode(true) as SVGSVGElement;
  copy.setAttribute("xmlns", "http://www.w3.org/2000/svg");
  copy.setAttribute("viewBox", `0 0 ${Math.ceil(width)} ${Math.ceil(height)}`);
  copy.setAttribute("width", String(Math.ceil(width)));
  copy.setAttribute("height", String(Math.ceil(height)));
  copy.setAttribute("class", document.body.className);
  const style = document.createElementNS("http://www.w3.org/2000/svg", "style");
  style.textContent = inlinedStyle();
  const background = document.createElementNS("http://www.w3.org/2000/svg", "rect");
  background.setAttribute("class", "export-background");
  background.setAttribute("width", "100%");
  background.setAttribute("height", "100%");
  copy.prepend(style, background);
  return new XMLSerializer().serializeToString(copy);
}

/** A PNG (base64, without the data: prefix) of the SVG text. */
export async function pngBase64(svg: string, width: number, height: number): Promise<string> {
  const scale = Math.min(2, MAX_CANVAS_SIDE / Math.max(width, height, 1));
  const image = new Image();
  const loaded = new Promise((resolve, reject) => {
    image.onload = resolve;
    image.onerror = () => reject(new Error("the SVG did not render"));
  });
  image.src = `data:image/svg+xml;base64,${btoa(unescape(encodeURIComponent(svg)))}`;
  await loaded;
  const canvas = document.createElement("canvas");
  canvas.width = Math.max(1, Math.round(width * scale));
  canvas.height = Math.max(1, Math.round(height * scale));
  const context = canvas.getContext("2d")!;
  context.drawImage(image, 0, 0, canvas.width, canvas.height);
  return canvas.toDataURL("image/png").replace(/^data:image\/png;base64,/, "");
}

/** Sends the drawing to the extension to save, named `<Class>.<level>.<format>`. */
export async function exportDrawing(svg: SVGSVGElement, drawing: Drawing | undefined, report: GraphReport | undefined, format: "svg" | "png", post: (message: PageToHost) => void): Promise<void> {
  if (!drawing || !report) {
    return;
  }
  const text = svgText(svg, drawing.width, drawing.height);
  const data = format === "svg" ? text : await pngBase64(text, drawing.width, drawing.height);
  post({ type: "export", format, name: `${report.class}.${report.level}.${format}`, data });
}
