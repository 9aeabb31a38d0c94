"""Valid records obey the raw-record contract; each invalid one breaks exactly what it claims.

The checks use their own reference validator, written from ARCHITECTURE.md ("Raw records") and the
ISO code lists, not the generator's tables, so a generator bug cannot hide behind itself.
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tools.loadgen import MALFORMED_KINDS, GeneratedRecord, StreamConfig, generate


def _codes(text: str) -> frozenset[str]:
    return frozenset(text.split())


# fmt: off
ISO_3166_ALPHA2 = _codes("""
AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS
BT BV BW BY BZ CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE
EG EH ER ES ET FI FJ FK FM FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM
HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC
LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR MS MT MU MV MW MX MY MZ NA
NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO RS RU RW
SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO
TR TT TV TW TZ UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS YE YT ZA ZM ZW
""")
ISO_4217_ALPHA = _codes("""
AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BOV BRL BSD BTN BWP
BYN BZD CAD CDF CHE CHF CHW CLF CLP CNY COP COU CRC CUC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB
EUR FJD FKP GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR IQD IRR ISK JMD JOD JPY
KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD MMK MNT MOP MRU MUR
MVR MWK MXN MXV MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON RSD RUB
RWF SAR SBD SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS TMT TND TOP TRY TTD TWD
TZS UAH UGX USD USN UYI UYU UYW UZS VED VES VND VUV WST XAF XAG XAU XBA XBB XBC XBD XCD XCG XDR
XOF XPD XPF XPT XSU XTS XUA XXX YER ZAR ZMW ZWG
""")
# fmt: on
FUTURE_TOLERANCE_MS = 5 * 60_000
COMMON = ("record_id", "customer_id", "event_time")
REQUIRED = {
    "transactions": (*COMMON, "amount", "currency", "merchant_id", "country"),
    "logins": (*COMMON, "country", "ip", "device_id", "success"),
}


def reference_problems(value: bytes, record_type: str, max_bytes: int, now_ms: int) -> set[str]:
    """Categories of what is wrong with a raw record (empty = valid)."""
    if len(value) > max_bytes:
        return {"size"}
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError:
        return {"encoding"}
    try:
        record = json.loads(text)
    except ValueError:
        return {"syntax"}
    if not isinstance(record, dict):
        return {"shape"}
    problems = {"missing" for field in REQUIRED[record_type] if field not in record}
    for field in ("record_id", "customer_id", "merchant_id", "ip", "device_id"):
        if field in record and field in REQUIRED[record_type]:
            problems |= _string_problems(record[field], non_empty=field not in ("ip", "device_id"))
    if "event_time" in record:
        problems |= _event_time_problems(record["event_time"], now_ms)
    if "country" in record:
        problems |= _code_problems(record["country"], ISO_3166_ALPHA2)
    if record_type == "transactions":
        problems |= _amount_problems(record)
        if "currency" in record:
            problems |= _code_problems(record["currency"], ISO_4217_ALPHA)
    elif "success" in record and not isinstance(record["success"], bool):
        problems.add("type")
    return problems


def _string_problems(value: Any, *, non_empty: bool) -> set[str]:
    if not isinstance(value, str):
        return {"type"}
    return {"empty"} if non_empty and value == "" else set()


def _event_time_problems(value: Any, now_ms: int) -> set[str]:
    if isinstance(value, bool) or not isinstance(value, int):
        return {"type"}
    return {"future"} if value > now_ms + FUTURE_TOLERANCE_MS else set()


def _code_problems(value: Any, codes: frozenset[str]) -> set[str]:
    if not isinstance(value, str):
        return {"type"}
    return set() if value in codes else {"code"}


def _amount_problems(record: dict[str, Any]) -> set[str]:
    if "amount" not in record:
        return set()
    amount = record["amount"]
    if isinstance(amount, bool) or not isinstance(amount, int | float):
        return {"type"}
    return set() if math.isfinite(amount) and amount > 0 else {"range"}


#: The one problem each kind of malformation must cause.
EXPECTED_PROBLEM = {
    "not_json": "syntax",
    "truncated_json": "syntax",
    "empty_value": "syntax",
    "not_an_object": "shape",
    "non_utf8": "encoding",
    "oversized": "size",
    "missing_field": "missing",
    "wrong_type": "type",
    "non_positive_amount": "range",
    "non_finite_amount": "range",
    "unknown_currency": "code",
    "unknown_country": "code",
    "future_event_time": "future",
    "empty_id": "empty",
}


def _problems(record: GeneratedRecord, config: StreamConfig) -> set[str]:
    now_ms = int(time.time() * 1000)
    return reference_problems(record.value, record.topic_suffix, config.max_record_bytes, now_ms)


def test_reference_validator_knows_every_malformed_kind() -> None:
    assert set(EXPECTED_PROBLEM) == set(MALFORMED_KINDS)


def test_every_valid_record_passes_the_reference_validator(
    typical_stream: list[GeneratedRecord], typical_config: StreamConfig
) -> None:
    valid = [r for r in typical_stream if r.meta.is_valid]
    assert len(valid) > 0.95 * len(typical_stream)
    for record in valid:
        assert _problems(record, typical_config) == set(), record


def test_each_invalid_record_breaks_exactly_the_rule_its_kind_names(
    noisy_stream: list[GeneratedRecord], noisy_config: StreamConfig
) -> None:
    for record in noisy_stream:
        kind = record.meta.invalid_kind
        if kind is not None:
            expected = {EXPECTED_PROBLEM[kind]}
            assert _problems(record, noisy_config) == expected, (kind, record.meta, record.value)


def test_invalid_share_is_respected(noisy_stream: list[GeneratedRecord]) -> None:
    share = sum(not r.meta.is_valid for r in noisy_stream) / len(noisy_stream)
    assert 0.28 < share < 0.32


def test_default_invalid_share_is_about_two_percent(typical_stream: list[GeneratedRecord]) -> None:
    share = sum(not r.meta.is_valid for r in typical_stream) / len(typical_stream)
    assert 0.015 < share < 0.025


def test_every_malformed_kind_appears_in_both_topics_where_it_applies(
    noisy_stream: list[GeneratedRecord],
) -> None:
    seen = Counter((r.meta.invalid_kind, r.topic_suffix) for r in noisy_stream)
    for name, kind in MALFORMED_KINDS.items():
        for record_type in kind.applies_to:
            assert seen[name, record_type] >= 3, (name, record_type)
    assert not any(
        seen[kind, "logins"]
        for kind in ("non_positive_amount", "non_finite_amount", "unknown_currency")
    )


def test_literal_nan_and_infinity_tokens_are_sent(noisy_stream: list[GeneratedRecord]) -> None:
    values = [r.value for r in noisy_stream if r.meta.invalid_kind == "non_finite_amount"]
    for token in (b'"amount":NaN', b'"amount":Infinity', b'"amount":-Infinity', b'"amount":1e999'):
        assert any(token in value for value in values), token


def test_valid_records_are_keyed_by_customer_and_some_invalid_ones_have_no_key(
    noisy_stream: list[GeneratedRecord],
) -> None:
    for record in noisy_stream:
        if record.meta.is_valid:
            assert record.key == json.loads(record.value)["customer_id"].encode()
        elif record.meta.customer_id is None:
            assert record.key is None
    invalid_keys = [r.key for r in noisy_stream if not r.meta.is_valid]
    assert 0 < invalid_keys.count(None) < len(invalid_keys)


def test_record_ids_are_unique(typical_stream: list[GeneratedRecord]) -> None:
    ids = [r.meta.record_id for r in typical_stream if r.meta.is_valid]
    assert len(set(ids)) == len(ids)


def test_invalid_record_ids_in_metadata_are_really_in_the_value(
    noisy_stream: list[GeneratedRecord],
) -> None:
    for record in noisy_stream:
        if not record.meta.is_valid and record.meta.record_id is not None:
            assert record.meta.record_id.encode() in record.value


def test_oversized_records_exceed_the_limit_only_just(
    noisy_stream: list[GeneratedRecord], noisy_config: StreamConfig
) -> None:
    sizes = [len(r.value) for r in noisy_stream if r.meta.invalid_kind == "oversized"]
    assert sizes
    assert all(
        noisy_config.max_record_bytes < s <= noisy_config.max_record_bytes + 8192 for s in sizes
    )
    ordinary = [len(r.value) for r in noisy_stream if r.meta.is_valid]
    assert max(ordinary) < 1024


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(min_value=0, max_value=2**40),
    invalid_share=st.floats(min_value=0.0, max_value=0.8),
    fraud_share=st.floats(min_value=0.0, max_value=0.2),
)
def test_any_seed_and_mix_gives_records_that_are_what_the_metadata_says(
    make_config: Callable[..., StreamConfig], seed: int, invalid_share: float, fraud_share: float
) -> None:
    config = make_config(
        count=1_500,
        seed=seed,
        invalid_share=invalid_share,
        fraud_share=fraud_share,
        max_record_bytes=2_048,
    )
    records = list(generate(config))
    assert len(records) == config.count
    for record in records:
        problems = _problems(record, config)
        if record.meta.invalid_kind is None:
            assert problems == set(), record
        else:
            assert problems == {EXPECTED_PROBLEM[record.meta.invalid_kind]}, record
