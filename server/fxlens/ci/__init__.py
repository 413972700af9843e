"""fxlens in CI: output formats, whole trees checked in parallel with a cache, graph diffs between git refs."""
