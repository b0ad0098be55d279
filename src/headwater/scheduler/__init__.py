"""The scheduler behind ``headwater run``: ``due`` (the pure decision of what is due),
``plans`` (its inputs from a runtime, and the scheduling fields of ``status``),
``runs`` (what one run does in its thread), ``housekeeping`` (the retention steps)
and ``daemon`` (the loop, the thread pool and the signals)."""
