"""Groups and topics changed from outside (shared/kafka/groups.py) on a real broker: each call
answers, including when the thing is not there (a shadow's first start deletes what an earlier
one may have left); a call whose client was dropped while it waited once hung for ever."""

import pytest

from shared.kafka.groups import delete_group, delete_topic, set_group_offsets
from shared.kafka.inspect import group_lag

pytestmark = pytest.mark.integration


def test_offsets_set_then_group_and_topic_deleted_and_missing_ones_say_so(
    kafka_bootstrap, unique_name, create_topics
):
    (topic,) = create_topics([unique_name("records")], partitions=2)
    group = unique_name("shadow")

    assert delete_group(kafka_bootstrap, group, timeout=5) is False
    set_group_offsets(kafka_bootstrap, group, {(topic, 0): 0, (topic, 1): 0})
    assert group_lag(kafka_bootstrap, group, [topic]).committed == {(topic, 0): 0, (topic, 1): 0}

    assert delete_group(kafka_bootstrap, group, timeout=5) is True
    assert group_lag(kafka_bootstrap, group, [topic]).committed == {
        (topic, 0): None, (topic, 1): None
    }  # fmt: skip
    assert delete_group(kafka_bootstrap, group, timeout=5) is False
    assert delete_topic(kafka_bootstrap, unique_name("never-made"), timeout=5) is False
    assert delete_topic(kafka_bootstrap, topic, timeout=10) is True
