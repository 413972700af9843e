// Which class the `Show FX graph` command (from the palette, without a lens) should draw: the
// class whose body holds the cursor, found from the text alone.

const CLASS_LINE = /^class\s+([A-Za-z_][A-Za-z0-9_]*)\s*[(:]/;

/** Name of the top-level class containing 0-based `cursorLine`, or of the first class after it. */
export function classAtLine(lines: readonly string[], cursorLine: number): string | undefined {
  for (let line = Math.min(cursorLine, lines.length - 1); line >= 0; line--) {
    const match = CLASS_LINE.exec(lines[line]);
    if (match) {
      return match[1];
    }
    // a top-level statement that is not a class ends the search upwards
    if (line < cursorLine && /^[A-Za-z_@]/.test(lines[line]) && !lines[line].startsWith("#")) {
      break;
    }
  }
  for (let line = cursorLine + 1; line < lines.length; line++) {
    const match = CLASS_LINE.exec(lines[line]);
    if (match) {
      return match[1];
    }
  }
  return undefined;
}

/** The server's showGraph arguments: `[uri, className?, level?]`, without trailing absent values. */
export function showGraphArguments(uri: string, className?: string, level?: string): unknown[] {
  if (level !== undefined) {
    return [uri, className ?? null, level];
  }
  return className !== undefined ? [uri, className] : [uri];
}
