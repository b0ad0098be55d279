"""The HTTP API of ``headwater serve``: a FastAPI app over one Workspace.

``create_app(workspace_path)`` builds it; routers per area (``v1``, ``v1_admin``,
``v1_push``, ``admin``) call the Workspace's public methods, the same calls the CLI makes.
"""

from headwater.api.app import create_app

__all__ = ["create_app"]
