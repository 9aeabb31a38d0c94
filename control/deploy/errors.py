"""Why a deploy, rollout or stop did not happen: one line each, saying what to do."""

from __future__ import annotations

from shared.errors import MeshError


class DeployRefused(MeshError):
    """Refused before anything ran: nothing that runs was touched."""


class UnhealthyRelease(MeshError):
    """A new version started but failed its health check; it was stopped (and, in a rollout,
    the old version kept running or was restarted where it had been replaced)."""
