"""The composition root: a workspace's parts, built once from its config.

``Runtime`` (``root``) holds the manifest, the content store, the connector factory
(``sources``), the indexes and their generations (``indexes``), the embedder and the
versions; ``executor`` states the ``Executor`` protocol every executor implements and
finds one by name. Layers above (executors, rebuilds, the scheduler, the ``Workspace``
facade) take the runtime; nothing below imports it.
"""

from headwater.runtime.root import Runtime, embedder_spec

__all__ = ["Runtime", "embedder_spec"]
