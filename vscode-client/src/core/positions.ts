// The one place that turns report coordinates (1-based lines, 0-based UTF-8 byte columns, as Python
// gives them) into editor positions (0-based lines, UTF-16 code unit columns) and back.

export interface EditorPosition {
  line: number;
  character: number;
}

export interface EditorRange {
  start: EditorPosition;
  end: EditorPosition;
}

function utf8Length(codePoint: number): number {
  return codePoint < 0x80 ? 1 : codePoint < 0x800 ? 2 : codePoint < 0x10000 ? 3 : 4;
}

/** UTF-16 column of the character that starts at UTF-8 byte `byteColumn` of `lineText`. */
export function utf16Column(lineText: string, byteColumn: number): number {
  let bytes = 0;
  let units = 0;
  for (const char of lineText) {
    if (bytes >= byteColumn) {
      break;
    }
    bytes += utf8Length(char.codePointAt(0) ?? 0);
    units += char.length;
  }
  return units;
}

/**
 * The editor range of a report span. `lineText(line)` gives the text of a 0-based editor line
 * (undefined past the end of the document). A span without an end covers the rest of its line.
 */
export function editorRange(
  span: { line: number; col?: number | null; end_line?: number | null; end_col?: number | null },
  lineText: (line: number) => string | undefined,
): EditorRange {
  const startLine = Math.max(0, span.line - 1);
  const endLine = Math.max(startLine, (span.end_line ?? span.line) - 1);
  const startText = lineText(startLine) ?? "";
  const endText = lineText(endLine) ?? "";
  const start = { line: startLine, character: utf16Column(startText, span.col ?? 0) };
  const end =
    span.end_col === null || span.end_col === undefined
      ? { line: endLine, character: endText.length }
      : { line: endLine, character: utf16Column(endText, span.end_col) };
  return { start, end };
}

/** The report line (1-based) of a 0-based editor line. */
export function reportLine(editorLine: number): number {
  return editorLine + 1;
}
