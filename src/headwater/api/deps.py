"""Small request helpers shared by the routers: the Service and the caller."""

from __future__ import annotations

from fastapi import Request

from headwater.api.service import Service


def service_of(request: Request) -> Service:
    """The app's Service."""
    service: Service = request.app.state.service
    return service
