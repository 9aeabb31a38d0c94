"""Taking a shadow version away: its replicas stopped, its consumer group and changelog deleted.

One place for every way a shadow ends (`mesh shadow --abandon`, `--promote`, a shadow that did
not start, `mesh stop` of its detector), so none of them leaves a group or a changelog behind
that a later shadow would start from.
"""

from __future__ import annotations

from control.deploy.backends import Started, shadow_replicas
from control.deploy.registry import Deployment
from shared.endpoints import resolve_bootstrap
from shared.kafka.groups import delete_group, delete_topic
from shared.kafka.security import client_security
from shared.kafka.static_membership import SESSION_TIMEOUT_MS
from shared.settings import Settings
from shared.topic_names import TopicNames


def remove_shadow(settings: Settings, deployment: Deployment) -> list[Started]:
    """Stop ``deployment``'s shadow replicas and delete the shadow's group and changelog; what
    was stopped. The registry is the caller's to update."""
    stopped = [info for replica in shadow_replicas(settings, deployment)
               if (info := replica.stop()) is not None]  # fmt: skip
    names, login = TopicNames.of(settings), client_security(settings)
    bootstrap = resolve_bootstrap(settings)
    # A shadow replica that died rather than stopped stays a (static) member until its session
    # ends; the group can be deleted only after that.
    patience = SESSION_TIMEOUT_MS["detector"] / 1000 + 5
    delete_group(bootstrap, names.shadow_group(deployment.name), login, timeout=patience)
    delete_topic(bootstrap, names.shadow_changelog(deployment.name), login)
    return stopped
