"""How MESH_HOME's disk is judged (`mesh status` and the supervisor say it; case 13 checks it)."""

from pathlib import Path

from shared.disk_space import DiskSpace, disk_space

GIB = 2**30


def _space(free: int, total: int = 64 * GIB, inodes: int = 1000, read_only: bool = False):
    return DiskSpace(Path("/mesh"), free, total, inodes, read_only)


def test_a_disk_with_room_has_no_problem():
    space = _space(40 * GIB)
    assert (space.state, space.problem, space.blocks_writes) == ("OK", None, False)
    assert space.text() == "/mesh  40.0 GiB free of 64.0 GiB"


def test_a_nearly_full_disk_blocks_writes_and_says_how_much_is_left():
    space = _space(12 * 2**10, total=64 * 2**20)
    assert space.state == "FULL" and space.blocks_writes
    assert space.text() == "/mesh: no space left (12.0 KiB free of 64.0 MiB)"


def test_no_inodes_is_full_too():
    assert _space(40 * GIB, inodes=0).problem == "no inodes left (no new file can be made)"
    assert _space(40 * GIB, inodes=0).blocks_writes


def test_low_space_warns_without_blocking():
    space = _space(2 * GIB, total=100 * GIB)  # 2 % free
    assert space.state == "LOW" and not space.blocks_writes
    assert space.problem == "low on space (2.0 GiB free of 100.0 GiB)"
    assert _space(6 * GIB, total=100 * GIB).state == "OK"


def test_read_only_wins_over_space():
    space = _space(40 * GIB, read_only=True)
    assert (space.state, space.problem) == ("READONLY", "read-only")


def test_a_home_not_made_yet_is_judged_by_the_folder_it_will_be_made_in(tmp_path):
    space = disk_space(tmp_path / "not" / "yet")
    assert space.path == tmp_path / "not" / "yet"
    assert space.total_bytes > 0 and space.free_bytes <= space.total_bytes


def test_the_advice_says_what_to_do_for_each_state():
    assert _space(40 * GIB).advice == ""
    assert _space(2 * GIB, total=100 * GIB).advice.startswith("free space there before")
    assert "free space there and their supervisors" in _space(4096).advice
    assert "remount it read-write" in _space(40 * GIB, read_only=True).advice
