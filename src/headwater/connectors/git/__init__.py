"""The ``git`` connector: the files of one branch of a git repository.

Object ids are paths, version hints blob shas; each run diffs the last synced commit
against the branch head and reports deletes explicitly. See docs/connectors/git.md.
"""

from headwater.connectors.git._connector import GitConnector, GitOptions

__all__ = ["GitConnector", "GitOptions"]
