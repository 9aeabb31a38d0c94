"""Reading a JVM's heap in use from `jstat -gc`'s two lines."""

import os

import pytest

from chaos.jvm_heap import heap_mib, is_jvm, parse_used_mib

# JDK 17's `jstat -gc` for a G1 JVM (columns as it prints them)
_COLUMNS = "S0C S1C S0U S1U EC EU OC OU MC MU CCSC CCSU YGC YGCT FGC FGCT CGC CGCT GCT"
_VALUES = ("0.0 4096.0 0.0 4096.0 163840.0 86016.0 356352.0 307200.5 95232.0 93750.1 11264.0 "
           "10438.7 52 0.512 0 0.000 12 0.098 0.610")  # fmt: skip
G1 = f"  {_COLUMNS}\n  {_VALUES}\n"


def test_the_live_heap_is_the_old_generation_in_use_in_mib():
    # OU 307200.5 KiB; eden and survivors (allocated since the collection) are left out
    assert parse_used_mib(G1) == pytest.approx(300.0, abs=0.01)


@pytest.mark.parametrize(
    "output", ["", "12345 not found\n", "S0C OC\n1.0 2.0\n", "S0U S1U EU OU\n1 2 3 x\n"]
)
def test_what_is_not_jstat_s_answer_reads_as_nothing(output):
    assert parse_used_mib(output) is None


def test_a_process_that_is_not_a_jvm_has_no_heap():
    assert not is_jvm(os.getpid())
    assert heap_mib([os.getpid()]) is None
    assert heap_mib([]) is None
