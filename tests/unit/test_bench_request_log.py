"""The broker request log reader: rates per type and client, per stretch of logging."""

from bench.broker.request_log import client_kind, main, parse, rates, stretches


def line(at: str, api: str, client: str) -> str:
    return (
        f'[2026-11-26 {at}] DEBUG Completed request:{{"isForwarded":false,"requestHeader":'
        f'{{"requestApiKey":0,"requestApiVersion":11,"correlationId":7,"clientId":"{client}",'
        f'"requestApiKeyName":"{api}"}},"request":"","response":{{"x":"a}} (b"}},'
        f'"totalTimeMs":1.0}} (kafka.request.logger)\n'
    )


LOG = [
    "[2026-11-26 14:00:00,000] INFO something else (kafka.server)\n",
    line("14:00:00,000", "FETCH", "detector-velocity-r1-0"),
    line("14:00:01,000", "FETCH", "detector-velocity-r1-1"),
    line("14:00:02,000", "METADATA", "rdkafka"),
    '[2026-11-26 14:00:02,500] DEBUG Completed request:{"torn\n',
    line("14:00:30,000", "PRODUCE", "plain-feed"),
    line("14:00:30,500", "PRODUCE", "plain-feed"),
    line("14:00:31,000", "OFFSET_COMMIT", "notifier@vm:12:34"),
]


def test_alike_clients_add_up_and_distinct_ones_stay_apart():
    assert client_kind("detector-velocity-r1-1") == "detector-velocity-r1-N"
    assert client_kind("detector-velocity-r1-0-state") == "detector-velocity-r1-0-state"
    spark = "consumer-p.ingest-d243339d-b03f-490f-a0ef-40d26277bae9--982613509-executor-3"
    assert client_kind(spark) == "consumer-p.ingest-executor-N"
    assert client_kind("notifier@vm:12:34") == "notifier@<instance>"
    assert client_kind("") == "(no client id)"


def test_each_stretch_of_logging_gets_its_own_rates():
    requests = list(parse(LOG))
    assert len(requests) == 6  # the other line and the torn one are skipped
    idle, busy = stretches(requests)
    seconds, by_api, by_client = rates(idle)
    assert seconds == 2.0
    assert by_api == {"FETCH": 1.0, "METADATA": 0.5}
    assert by_client[("FETCH", "detector-velocity-r1-N")] == 1.0
    seconds, by_api, _ = rates(busy)
    assert seconds == 1.0 and by_api == {"PRODUCE": 2.0, "OFFSET_COMMIT": 1.0}


def test_a_log_without_request_lines_says_what_to_switch_on(tmp_path, capsys):
    log = tmp_path / "kafka.log"
    log.write_text(LOG[0])
    assert main([str(log)]) == 1
    assert "kafka.request.logger at DEBUG" in capsys.readouterr().err
    assert main([str(tmp_path / "missing.log")]) == 2
    assert "cannot read" in capsys.readouterr().err
