"""Line protocol: the exact text InfluxDB 1.x gets for awkward names, values and types.

Expected lines are written out in full (raw strings: a backslash in them is one backslash on
the wire); the integration tests check that influxd reads them back as the original values.
"""

from __future__ import annotations

from typing import Any

import pytest

from shared.influx.line_protocol import Point, encode_point, encode_points


def line(measurement: str, tags: dict[str, str], fields: dict[str, Any], time_ns: int = 7) -> str:
    return encode_point(Point(measurement, tags, fields, time_ns))


def test_plain_point_is_measurement_tags_fields_and_time() -> None:
    assert line("cpu", {"host": "a"}, {"value": 1.5}, 1795350000000000000) == (
        "cpu,host=a value=1.5 1795350000000000000"
    )


def test_point_without_tags_has_no_comma_after_the_measurement() -> None:
    assert line("cpu", {}, {"value": 1.5}) == "cpu value=1.5 7"


def test_spaces_are_escaped_everywhere_outside_string_fields() -> None:
    assert line("cpu load", {"host name": "big box"}, {"user time": 1, "s": "a b"}) == (
        r'cpu\ load,host\ name=big\ box user\ time=1i,s="a b" 7'
    )


def test_commas_are_escaped_in_measurement_tags_and_field_keys() -> None:
    assert line("a,b", {"k,1": "v,2"}, {"f,3": 1}) == r"a\,b,k\,1=v\,2 f\,3=1i 7"


def test_equals_signs_are_escaped_in_tags_and_field_keys_not_in_the_measurement() -> None:
    assert line("a=b", {"k=1": "v=2"}, {"f=3": 1}) == r"a=b,k\=1=v\=2 f\=3=1i 7"


def test_string_fields_escape_quotes_and_backslashes_inside_double_quotes() -> None:
    assert line("m", {}, {"s": 'he said "hi" \\ ok'}) == r'm s="he said \"hi\" \\ ok" 7'


def test_quotes_in_names_and_tags_are_written_as_they_are() -> None:
    assert line('say"', {'k"': '"v"'}, {'f"': 1}) == r'say",k"="v" f"=1i 7'


def test_backslashes_in_names_are_kept_unless_influx_would_read_them_as_an_escape() -> None:
    assert line("a\\b", {"k": "C:\\temp"}, {"f": 1}) == r"a\b,k=C:\temp f=1i 7"
    # Before a delimiter or at the end, InfluxDB 1.x cannot take a backslash: it is left out.
    assert line("a\\", {"k": "v\\,w", "j": "x\\ y"}, {"f\\": 1}) == r"a,j=x\ y,k=v\,w f=1i 7"


def test_non_ascii_is_written_as_is() -> None:
    text = encode_points([Point("mä", {"ü": "漢字 x"}, {"é": "ñ"}, 5)])
    assert text == 'mä,ü=漢字\\ x é="ñ" 5\n'
    assert (
        text.encode() == b'm\xc3\xa4,\xc3\xbc=\xe6\xbc\xa2\xe5\xad\x97\\ x \xc3\xa9="\xc3\xb1" 5\n'
    )


def test_int_float_bool_and_string_fields_have_distinct_spellings() -> None:
    fields = {"i": 3, "f": 3.0, "t": True, "n": False, "s": "3", "neg": -42}
    assert line("m", {}, fields) == 'm i=3i,f=3.0,t=true,n=false,s="3",neg=-42i 7'


@pytest.mark.parametrize(
    "value, text",
    [(0.1, "0.1"), (1e100, "1e+100"), (-1.5e-7, "-1.5e-07"), (2.0**53 + 2, "9007199254740994.0")],
)
def test_floats_are_written_so_they_read_back_identical(value: float, text: str) -> None:
    assert line("m", {}, {"f": value}) == f"m f={text} 7"
    assert float(text) == value


def test_nan_and_infinite_fields_are_dropped() -> None:
    fields = {"a": float("nan"), "b": 1.0, "c": float("inf"), "d": float("-inf")}
    assert line("m", {}, fields) == "m b=1.0 7"


def test_integers_beyond_int64_are_dropped() -> None:
    assert line("m", {}, {"big": 2**63, "ok": 2**63 - 1, "low": -(2**63)}) == (
        "m ok=9223372036854775807i,low=-9223372036854775808i 7"
    )


def test_a_point_left_without_fields_is_dropped() -> None:
    assert line("m", {"k": "v"}, {"a": float("nan")}) == ""
    assert line("m", {"k": "v"}, {}) == ""
    assert encode_points([Point("m", {}, {"a": float("nan")}, 1), Point("m", {}, {"a": 1}, 2)]) == (
        "m a=1i 2\n"
    )


def test_empty_tag_values_and_empty_keys_are_dropped() -> None:
    assert line("m", {"a": "", "b": "x", "": "y"}, {"f": 1, "": 2}) == "m,b=x f=1i 7"


def test_time_is_refused_by_influx_as_a_key_so_it_is_dropped() -> None:
    assert line("m", {"time": "x", "k": "v"}, {"time": 1, "f": 2}) == "m,k=v f=2i 7"


def test_tags_are_sorted_by_key_and_fields_keep_their_order() -> None:
    assert line("m", {"zone": "z", "app": "a", "host": "h"}, {"z": 1, "a": 2}) == (
        "m,app=a,host=h,zone=z z=1i,a=2i 7"
    )


def test_line_breaks_become_spaces_so_a_point_stays_on_one_line() -> None:
    encoded = line("m\nx", {"k\r\n": "a\nb"}, {"f\n": "one\ntwo\r"})
    assert encoded == r'm\ x,k\ \ =a\ b f\ ="one two " 7'
    assert "\n" not in encoded and "\r" not in encoded


def test_a_measurement_starting_with_a_hash_would_be_a_comment_so_it_is_dropped() -> None:
    assert line("#m", {}, {"f": 1}) == ""


def test_encode_points_joins_lines_with_a_trailing_newline() -> None:
    points = [Point("m", {}, {"f": 1}, 1), Point("m", {}, {"f": 2}, 2)]
    assert encode_points(points) == "m f=1i 1\nm f=2i 2\n"
    assert encode_points([]) == ""


def test_same_point_always_encodes_to_the_same_line() -> None:
    a = Point("m", {"b": "2", "a": "1"}, {"f": 0.5}, 3)
    b = Point("m", {"a": "1", "b": "2"}, {"f": 0.5}, 3)
    assert encode_point(a) == encode_point(b) == "m,a=1,b=2 f=0.5 3"


def test_unsupported_field_types_are_refused() -> None:
    with pytest.raises(TypeError, match="field values are int, float, str or bool"):
        line("m", {}, {"f": [1]})
