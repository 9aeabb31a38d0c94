"""Least privilege for a secure mesh: one Kafka principal per service, with ACLs derived from
the topics the service reads and writes (:mod:`grants`), created by ``mesh``
(:mod:`principals`)."""
