"""Instances and example inputs for every class of a loaded file: directives, guessed constructor
arguments, guessed and inferred inputs, the inputs a parent's run records for its children, the
directive that reproduces a build, the default device the code asks for.

May import: load (the classes' sources), levels (inferring inputs runs the fx tracer and the device
ladder), failures, and fxlens's shared modules. A new construction rule goes here.
"""
