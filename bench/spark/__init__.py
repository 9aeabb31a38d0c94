"""Experiments on Spark alone (no broker): what a query shape costs, measured apart."""
