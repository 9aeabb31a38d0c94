import socket

from hosting.servers.ports import first_free, is_free


def test_a_busy_preferred_port_is_skipped_for_the_next_free_one():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        assert not is_free("127.0.0.1", taken)
        chosen = first_free("127.0.0.1", taken)
        assert chosen != taken
        assert is_free("127.0.0.1", chosen)


def test_port_zero_means_any_free_port():
    assert first_free("127.0.0.1", 0) > 0
