"""How the routing query runs: real-time where every raw partition gets a task slot, else one line
saying why it runs micro-batch; when a grown topic set means the job must restart."""

import pytest

from services.ingest.config import IngestConfig
from services.ingest.trigger_mode import (
    LOCAL_TASK_TRIES,
    MICRO_BATCH,
    REAL_TIME,
    SIDE_READ_TASKS,
    SIDE_SLOTS,
    checkpoint_seconds,
    master_for,
    outgrown,
    past_gap,
    plan,
    raw_partitions,
    side_slots,
)
from shared.errors import ConfigError
from shared.service_files import routing_mode_text as status_text


def test_the_auto_master_gives_every_raw_partition_a_slot_and_the_counts_their_own():
    assert master_for("auto", 16) == f"local[{16 + SIDE_SLOTS},{LOCAL_TASK_TRIES}]"
    assert master_for("local[4]", 16) == f"local[4,{LOCAL_TASK_TRIES}]"
    assert master_for("local[*]", 16) == f"local[*,{LOCAL_TASK_TRIES}]"
    assert master_for("local[4,2]", 16) == "local[4,2]"
    assert master_for("spark://127.0.0.1:7077", 16) == "spark://127.0.0.1:7077"


def test_the_side_queries_keep_a_slot_for_every_task_they_can_run_at_once():
    # the span export's one reading task, beside the window counts' widest stage: one reading
    # task, then one per shuffle partition
    assert side_slots(4) == SIDE_READ_TASKS + 4
    assert side_slots(1) == 2 * SIDE_READ_TASKS == SIDE_SLOTS
    assert side_slots(12) == SIDE_READ_TASKS + 12
    assert master_for("auto", 16, side_slots(12)) == (
        f"local[{16 + SIDE_READ_TASKS + 12},{LOCAL_TASK_TRIES}]"
    )
    wider = plan(REAL_TIME, 16, 16 + SIDE_SLOTS, side_slots(12))
    assert wider.mode == MICRO_BATCH and f"+ {side_slots(12)} for the side queries" in wider.reason
    assert outgrown(plan(REAL_TIME, 16, 16 + side_slots(12), side_slots(12)), 17, True)


def test_real_time_when_the_slots_cover_the_partitions_and_the_side_queries():
    chosen = plan(REAL_TIME, 16, 16 + SIDE_SLOTS)
    assert chosen.real_time and chosen.mode == REAL_TIME
    assert f"16 raw partitions, {16 + SIDE_SLOTS} task slots" in chosen.line()


@pytest.mark.parametrize("slots", [2, 16, 16 + SIDE_SLOTS - 1])
def test_too_few_slots_fall_back_to_micro_batch_with_the_reason(slots):
    chosen = plan(REAL_TIME, 16, slots)
    assert chosen.mode == MICRO_BATCH
    assert f"needs {16 + SIDE_SLOTS} task slots" in chosen.reason
    assert f"has {slots}" in chosen.reason
    assert "\n" not in chosen.line()


def test_no_raw_topic_yet_runs_micro_batch_and_says_so():
    chosen = plan(REAL_TIME, 0, 64)
    assert chosen.mode == MICRO_BATCH and "no raw topic" in chosen.reason


def test_micro_batch_when_asked_for_whatever_the_slots():
    chosen = plan(MICRO_BATCH, 16, 64)
    assert chosen.mode == MICRO_BATCH and chosen.reason == "MESH_INGEST_MODE=micro-batch"


def test_a_bad_mode_is_one_line_naming_the_setting():
    with pytest.raises(ConfigError, match=r"MESH_INGEST_MODE='fast': choose real-time or micro"):
        IngestConfig.from_env({"MESH_INGEST_MODE": "fast"})
    assert IngestConfig.from_env({}).mode == REAL_TIME
    assert IngestConfig.from_env({}).master == "auto"


def test_more_raw_partitions_than_real_time_slots_means_a_restart():
    started = plan(REAL_TIME, 16, 16 + SIDE_SLOTS)
    assert outgrown(started, 16, auto_master=True) is None
    assert outgrown(started, 8, auto_master=True) is None  # a deleted topic frees slots
    why = outgrown(started, 24, auto_master=True)
    assert why and "from 16 to 24" in why and "restarting" in why


def test_a_first_raw_topic_lets_the_auto_master_start_real_time():
    started = plan(REAL_TIME, 0, 2)
    assert outgrown(started, 0, auto_master=True) is None
    assert outgrown(started, 8, auto_master=True)
    # A master someone chose is not resized: the job stays as it is and says so at start.
    assert outgrown(started, 8, auto_master=False) is None
    # Micro-batch for lack of slots on a chosen master: more partitions change nothing.
    assert outgrown(plan(REAL_TIME, 16, 2), 24, auto_master=False) is None


def test_raw_partitions_count_the_topics_the_pattern_matches_whole():
    topics = {"raw.transactions": 8, "raw.logins": 8, "records.transactions": 8,
              "x.raw.transactions": 3, "raw.logins.old": 2}  # fmt: skip
    assert raw_partitions(topics, r"raw\..*") == 18  # raw.logins.old matches raw\..* too
    assert raw_partitions(topics, r"raw\.[^.]*") == 16
    assert raw_partitions(topics, r"x\.raw\..*") == 3


def test_status_says_the_mode_the_master_and_for_micro_batch_why():
    real = {**plan(REAL_TIME, 16, 21).as_json(), "master": "local[21]"}
    assert status_text(real) == "real-time on local[21] (16 raw partitions)"
    fallback = {**plan(REAL_TIME, 16, 2).as_json(), "master": "local[2]"}
    assert status_text(fallback).startswith("micro-batch on local[2] (16 raw partitions): real-")
    assert status_text(None) == ""


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30 seconds", 30.0), ("5 second", 5.0), ("1 minute", 60.0), ("2 minutes", 120.0),
     ("7500 milliseconds", 7.5), ("1 hour", 3600.0)],
)  # fmt: skip
def test_checkpoint_intervals_in_spark_words(text, seconds):
    assert checkpoint_seconds(text) == seconds


# "5 s", "10 sec", "1 min", "7500 ms": Spark 4.1.1's Trigger.RealTime and processingTime refuse
# them all (INVALID_INTERVAL_FORMAT.INVALID_UNIT, checked by hand), at query start.
@pytest.mark.parametrize("text", ["often", "30", "3 seconds", "1 month", "5 s", "10 sec", "1 min"])
def test_a_bad_checkpoint_interval_is_one_line_naming_the_setting(text):
    with pytest.raises(ConfigError, match="MESH_INGEST_CHECKPOINT_INTERVAL") as info:
        IngestConfig.from_env({"MESH_INGEST_CHECKPOINT_INTERVAL": text})
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "setting", ["MESH_INGEST_TRIGGER", "MESH_INGEST_COUNTING_TRIGGER", "MESH_INGEST_TRACE_TRIGGER"]
)
@pytest.mark.parametrize("text", ["soon", "5 s", "500 ms", "-1 seconds"])
def test_a_bad_trigger_interval_is_one_line_naming_the_setting(setting, text):
    with pytest.raises(ConfigError, match=setting) as info:
        IngestConfig.from_env({setting: text})
    assert "\n" not in str(info.value)


def test_trigger_intervals_spark_takes_are_accepted():
    config = IngestConfig.from_env({"MESH_INGEST_TRIGGER": "500 milliseconds",
                                    "MESH_INGEST_COUNTING_TRIGGER": "0 seconds",
                                    "MESH_INGEST_TRACE_TRIGGER": "2 seconds"})  # fmt: skip
    assert (config.trigger, config.counting_trigger, config.trace_trigger) == (
        "500 milliseconds", "0 seconds", "2 seconds")  # fmt: skip


def test_a_retention_gap_is_passed_micro_batch_then_real_time_again() -> None:
    planned = plan("real-time", raw_partitions=8, slots=8 + SIDE_SLOTS)
    passing = past_gap(planned, 1200)
    assert (passing.mode, passing.passing_gap) == ("micro-batch", True)
    assert "getting past 1200 raw records retention removed" in passing.reason
    micro = plan("micro-batch", raw_partitions=8, slots=10)
    assert past_gap(micro, 1200) == micro  # the micro-batch reader skips a gap itself
