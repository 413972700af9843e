"""The worker as processes: the warm worker that imports torch once, the disposable trace children it forks,
and what keeps them apart (isolation, the signal shield, the beacon a child writes where it is, the channel
its events go through, the postmortem of a child that died, rehearsals that warm a spare child).

May import: analysis (a child runs one Analysis), levels (a rehearsal exports a recipe's graph), failures,
load.imports, and fxlens's shared modules (report, lines). Nothing below imports this package.
"""
