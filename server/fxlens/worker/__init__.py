"""The side of fxlens that runs in the user's interpreter: stdlib and torch only."""
