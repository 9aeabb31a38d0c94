"""Create a service's principal on a secure cluster: a SCRAM password (kept in a 0600 file under
MESH_HOME, never printed) and exactly the ACLs its grants name.

Idempotent: a principal that exists keeps its password (running services stay logged in), ACLs
it should have are added and ACLs it should no longer have (a detector whose inputs changed) are
removed. Runs with the admin's settings (the local secure broker's super user).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from control.security.grants import CREATE, GROUP, READ, TOPIC, WRITE, Grant
from shared.errors import MeshError
from shared.kafka.config import admin_config
from shared.kafka.security import ensure_password, password_file
from shared.settings import Settings

#: SCRAM iterations of the mesh's principals (Kafka's minimum is 4096).
ITERATIONS = 8192


class PrincipalError(MeshError):
    """The cluster refused to create a principal or its ACLs."""


def ensure_principal(admin_settings: Settings, principal: str, grants: Iterable[Grant]) -> Path:
    """The principal exists with a password and exactly ``grants``; returns its password file."""

    path = password_file(admin_settings, principal)
    password = ensure_password(path)
    admin = AdminClient(admin_config(admin_settings, log_level=2))
    upsert = UserScramCredentialUpsertion(
        principal, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, ITERATIONS), password.encode()
    )
    _wait(admin.alter_user_scram_credentials([upsert]), f"the password of {principal}")
    wanted = {_binding(principal, grant) for grant in grants}
    have = set(_acls_of(admin, principal))
    if have - wanted:
        _wait(admin.delete_acls([_filter(b) for b in have - wanted]), f"old ACLs of {principal}")
    if wanted - have:
        _wait(admin.create_acls(sorted(wanted - have, key=str)), f"the ACLs of {principal}")
    return path


def _binding(principal: str, grant: Grant) -> Any:
    resource = {TOPIC: ResourceType.TOPIC, GROUP: ResourceType.GROUP}[grant.resource]
    operation = {READ: AclOperation.READ, WRITE: AclOperation.WRITE,
                 CREATE: AclOperation.CREATE}[grant.operation]  # fmt: skip
    pattern = ResourcePatternType.PREFIXED if grant.prefixed else ResourcePatternType.LITERAL
    return AclBinding(resource, grant.name, pattern, f"User:{principal}", "*", operation,
                      AclPermissionType.ALLOW)  # fmt: skip


def _acls_of(admin: Any, principal: str) -> list[Any]:
    # None matches any name and any host (the stubs ask for str).
    query = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY,  # type: ignore[arg-type]
                             f"User:{principal}", None,  # type: ignore[arg-type]
                             AclOperation.ANY, AclPermissionType.ANY)  # fmt: skip
    try:
        return list(admin.describe_acls(query).result(30))
    except Exception as error:  # KafkaException: not authorized, or no answer
        raise PrincipalError(f"reading the ACLs of {principal}: {error}") from None


def _filter(binding: Any) -> Any:
    return AclBindingFilter(binding.restype, binding.name, binding.resource_pattern_type,
                            binding.principal, binding.host, binding.operation,
                            binding.permission_type)  # fmt: skip


def _wait(futures: Any, what: str) -> None:
    """Every future of an admin call, each error one line naming ``what``."""
    items = futures.values() if isinstance(futures, dict) else futures
    for future in items:
        try:
            future.result(30)
        except Exception as error:  # KafkaException carrying the broker's reason
            raise PrincipalError(f"setting {what} failed: {error}") from None
