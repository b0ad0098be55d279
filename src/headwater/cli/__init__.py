"""The ``headwater`` command line (Typer + Rich), a thin layer over the Workspace.

``common`` holds what every command shares (the app, output, one place that turns errors
into a line and an exit code); each command module registers its commands on the app;
``app`` is the entry point (``main``), which imports them all.
"""
