"""The worker as processes: the warm worker that imports torch once, the disposable trace children it forks,
and what keeps them apart (isolation, the signal shield, the page where a child writes the class and line it is at,
the channel its events go through, the postmortem of a child that died, the warm-up of a standby child).

May import: analysis (a child runs one Analysis), levels (a warm-up exports a recipe's graph), failures,
load.imports, and fxlens's shared modules (report, lines). Nothing below imports this package.
"""
