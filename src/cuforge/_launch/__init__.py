"""Launching: the per-argument checks, the general path, prepared launches, graphs, and the
C launcher's set-up. Imports the runtime and the layers below it."""
