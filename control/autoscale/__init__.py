"""Lag-driven replicas: the rule (:mod:`.policy`), the look at the mesh (:mod:`.autoscaler`) and
the process `mesh up` starts to run it (:mod:`.main`). docs/autoscale.md is the operator's guide.
"""
