"""The levels of the ladder: `table.TABLE` maps each level's name to its entry point, one module per
level (fx, aten, core_aten, backward, dynamo), and what they share: devices (the cheapest tensors that
run user code), values (describing traced values), overloads and graph-break texts, the class cost,
specialisation hints, the forked process that exports scaled sizes.

May import: failures and fxlens's shared modules. Never load, construction, analysis, process or passes; an
optimisation (a warm-up, a cache) hooks in through the table's ClassContext, it is never imported
here. A new level is one module here and one row in table.TABLE.
"""
