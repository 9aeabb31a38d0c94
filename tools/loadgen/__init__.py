"""The load generator behind ``mesh produce``: realistic raw records, broken ones, planted fraud.

Modules, one concern each:
  geography      countries and currencies (consistent ISO 3166 / ISO 4217 pairs), thresholds
  population     seeded customers (home, devices, addresses) and merchants (MCC, country)
  amounts        heavy-tailed amounts per currency
  activity       Zipf-like customer activity that never forms an accidental burst
  event_time     virtual clock and bounded lateness
  valid_records  transactions and logins as customers' systems send them
  malformed      invalid records of many kinds, each tagged
  fraud          planted patterns for the large_amount, velocity and new_country detectors
  config         StreamConfig: everything that shapes the bytes, validated
  stream         generate(config): the deterministic stream
  ground_truth   the answer key as JSON lines
  rate_limit     token bucket
  producer       Kafka sink with delivery accounting, and the dry-run sink
  report         what a run did
  run            produce(): generate, pace, send, write the answer key
"""

from tools.loadgen.config import StreamConfig
from tools.loadgen.event_time import Disorder
from tools.loadgen.fraud import PATTERNS, FraudRules
from tools.loadgen.generated import GeneratedRecord, PlantedAlert, RecordMeta
from tools.loadgen.ground_truth import GroundTruthWriter, read_ground_truth
from tools.loadgen.malformed import KINDS as MALFORMED_KINDS
from tools.loadgen.report import ProduceReport
from tools.loadgen.run import SendOptions, dry_run, produce, produce_to_kafka
from tools.loadgen.stream import generate
from tools.loadgen.valid_records import RECORD_TYPES

__all__ = [
    "MALFORMED_KINDS",
    "PATTERNS",
    "RECORD_TYPES",
    "Disorder",
    "FraudRules",
    "GeneratedRecord",
    "GroundTruthWriter",
    "PlantedAlert",
    "ProduceReport",
    "RecordMeta",
    "SendOptions",
    "StreamConfig",
    "dry_run",
    "generate",
    "produce",
    "produce_to_kafka",
    "read_ground_truth",
]
