"""Hints in: change notifications (webhooks, a file watcher) that shorten the wait.

A hint is never the truth: it names objects (or a source's scope) to read again, and the
read asks the source. ``vendors`` checks a webhook's signature and turns its payload into
hints; ``queue`` writes hints to the manifest and reads them (a targeted read, or a sync
for a scope hint); ``watch`` turns inotify events into hints. The scheduler reads due
hints between its periodic runs, which stay the guarantee. See docs/live.md.
"""
