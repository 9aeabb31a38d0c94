"""How a topic's declared durability follows the cluster it is applied to.

A declaration says what a production cluster should give every topic: replication 3 and
``min.insync.replicas`` 2, so that one broker lost takes no partition offline and no
acknowledged record (producers send with acks=all). A cluster of fewer brokers cannot place
three replicas, and the embedded single-broker mesh must keep working, so the replication
actually used is the declared one capped at the brokers there are, and ``min.insync.replicas``
stays one below it (at least 1): 3/2 on three or more brokers, 2/1 on two, 1/1 on one. A live
topic with fewer replicas than that is drift (it was created on a smaller cluster, or by hand).
"""

from __future__ import annotations

from typing import NamedTuple


class Durability(NamedTuple):
    replication: int
    min_insync: int


#: What infra/topics.yaml declares for every topic, and what the topics the services create for
#: themselves (the detectors' and the notifier's changelogs) get too (a unit test keeps the two
#: equal).
DECLARED = Durability(3, 2)


def fitted(declared: Durability, brokers: int) -> Durability:
    """The durability a cluster of ``brokers`` can give a topic declared with ``declared``."""
    replication = max(1, min(declared.replication, brokers))
    return Durability(replication, max(1, min(declared.min_insync, replication - 1)))
