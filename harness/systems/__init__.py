"""Adapters to the real systems the harness models: the OpenClaw and QMD releases from npm, their Node drivers
and installer, the embedding front they call, and the scripted agent chat."""
