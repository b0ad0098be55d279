"""The scheduler behind ``headwater run``: ``due`` (the pure decision of what is due),
``plans`` (its inputs from a workspace, and the scheduling fields of ``status``),
``history`` (run history, pause switches and retention in the manifest) and ``daemon``
(the loop, the thread pool and the signals)."""
