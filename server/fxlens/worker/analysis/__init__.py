"""One request, end to end, inside a trace child: load the buffer, build every class, trace the levels
the request asks for (cheap ones first, then a `stage` event, then the deep ones), the class cost, and
emit each class's report as it is made (or run a graph pass instead of the levels).

May import: load, construction, levels, passes, failures, and fxlens's shared modules. Never process: the
process machinery calls in here, not the other way round.
"""
