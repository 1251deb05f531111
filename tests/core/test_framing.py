from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rawp_adapters import LineFramer, OversizedLine


def test_lines_split_on_newline_only_not_on_unicode_separators() -> None:
    framer = LineFramer()
    data = '{"t":"a\u2028b\u2029c"}\n{"t":2}\r\n'.encode()
    assert framer.feed(data) == ['{"t":"a\u2028b\u2029c"}'.encode(), b'{"t":2}']


def test_a_line_split_across_chunks_is_reassembled_without_losing_whitespace() -> None:
    framer = LineFramer()
    assert framer.feed(b'{"a": "x ') == []
    assert framer.feed(b' y"') == []
    assert framer.feed(b"}\n") == [b'{"a": "x  y"}']


def test_an_oversized_line_is_skipped_and_reported_and_the_next_line_survives() -> None:
    framer = LineFramer(max_line_bytes=10)
    out = framer.feed(b"x" * 7)
    out += framer.feed(b"y" * 20)
    out += framer.feed(b"z" * 5 + b"\nok\n")
    assert out == [OversizedLine(32), b"ok"]


def test_an_oversized_line_inside_one_chunk_is_reported() -> None:
    framer = LineFramer(max_line_bytes=4)
    assert framer.feed(b"abcdefgh\nabc\n") == [OversizedLine(8), b"abc"]


def test_a_final_line_without_newline_is_flushed_at_close() -> None:
    framer = LineFramer()
    assert framer.feed(b"a\nb") == [b"a"]
    assert framer.close() == [b"b"]


def test_empty_lines_are_dropped() -> None:
    assert LineFramer().feed(b"\n\r\n\na\n") == [b"a"]


@given(
    st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=20),
    st.lists(st.integers(min_value=1, max_value=50), min_size=1, max_size=10),
)
def test_any_chunking_gives_the_same_lines(lines: list[bytes], cuts: list[int]) -> None:
    data = b"".join(line + b"\n" for line in lines)
    framer = LineFramer()
    out: list[bytes | OversizedLine] = []
    pos = 0
    for cut in cuts * (len(data) // max(1, sum(cuts)) + 1):
        out += framer.feed(data[pos : pos + cut])
        pos += cut
    out += framer.feed(data[pos:]) + framer.close()
    expected = [line.removesuffix(b"\r") for line in lines if line.removesuffix(b"\r")]
    assert out == expected
