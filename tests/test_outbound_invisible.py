"""Redaction sees through invisible characters, and every output shows them (outbound.py).

Each member of the lists, not a sample: a code point left out is a way around both.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator

import pytest

from pytest_advreview import outbound
from pytest_advreview.outbound import INVISIBLE_RANGES, Redactor, Secret

PAT = "ghp_Q7xv0PlantedPat9Zk2LmN4"

#: Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt), typed here from the
#: standard, not from the module.
DEFAULT_IGNORABLE = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
#: Interlinear annotation anchor, separator and terminator: they hide the text between.
ANNOTATION = ((0xFFF9, 0xFFFB),)
BIDI = (0x061C, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E)
BIDI_ISOLATES = (0x2066, 0x2067, 0x2068, 0x2069)
COMBINING = (
    (0x0300, 0x036F),
    (0x1AB0, 0x1AFF),
    (0x1DC0, 0x1DFF),
    (0x20D0, 0x20FF),
    (0xFE20, 0xFE2F),
)


def _points(ranges: tuple[tuple[int, int], ...]) -> list[int]:
    return [code for start, end in ranges for code in range(start, end + 1)]


INVISIBLE = _points(INVISIBLE_RANGES)
INVISIBLE_PATTERN = re.compile("[" + "".join(map(chr, INVISIBLE)) + "]")


@pytest.fixture
def redactor() -> Iterator[Redactor]:
    """The process's redactor knows :data:`PAT`; left as it was afterwards."""
    found = Redactor([Secret("DEPLOY_PAT", PAT)])
    outbound.install(found)
    yield found
    outbound.install(None)


def _shown(code: int) -> str:
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def test_the_list_is_every_default_ignorable_code_point_and_the_annotation_controls() -> None:
    assert set(INVISIBLE) == set(_points(DEFAULT_IGNORABLE)) | set(_points(ANNOTATION))
    assert set(BIDI) | set(BIDI_ISOLATES) <= set(INVISIBLE)


def test_every_invisible_character_is_shown_escaped_by_every_output_function(
    redactor: Redactor,
) -> None:
    for code in INVISIBLE:
        char, shown = chr(code), _shown(code)
        text = f"a{char}b"
        assert outbound.show_invisible(text) == f"a{shown}b", hex(code)
        assert outbound.terminal_text(text) == f"a{shown}b", hex(code)
        assert outbound.one_line(text) == f"a{shown}b", hex(code)
        assert outbound.escape_controls(text, keep=char) == f"a{shown}b", hex(code)
        assert outbound.annotation_data(text) == f"a{shown}b", hex(code)
        assert outbound.annotation_property(text) == f"a{shown}b", hex(code)
        assert outbound.unsafe_name(f"docs/plans/x{char}.md"), hex(code)
        assert outbound.shown(text) == f"'a{shown}b'", hex(code)
        assert outbound.redact_data({"k": [text]}) == {"k": [f"a{shown}b"]}, hex(code)


def test_the_neighbours_of_each_range_are_left_as_they_are(redactor: Redactor) -> None:
    inside = set(INVISIBLE)
    neighbours = {c for start, end in INVISIBLE_RANGES for c in (start - 1, end + 1)} - inside
    assert neighbours  # every range has an outside on both sides
    for code in sorted(neighbours):
        text = f"a{chr(code)}b"
        assert outbound.show_invisible(text) == text, hex(code)
        if code < 0xA0 or code in (0x2028, 0x2029):
            continue  # C1 controls and line separators: a terminal's, for another reason
        assert outbound.terminal_text(text) == text, hex(code)
        assert not outbound.unsafe_name(text), hex(code)


def test_a_secret_split_by_any_invisible_character_or_combining_mark_is_redacted(
    redactor: Redactor,
) -> None:
    for code in [*INVISIBLE, *_points(COMBINING)]:
        hidden = chr(code).join(PAT)
        assert redactor.redact(f"token {hidden}.") == "token [redacted:DEPLOY_PAT].", hex(code)


def test_a_secret_split_by_the_shown_escapes_is_redacted(redactor: Redactor) -> None:
    for code in (0x00AD, 0x200B, 0x2060, 0xFEFF, 0xE0041, 0x1B, 0x85):
        hidden = _shown(code).join(PAT)
        assert redactor.redact(f"token {hidden}.") == "token [redacted:DEPLOY_PAT].", hex(code)
    # Redacting what is already shown finds it too (a sink that escapes first).
    shown = outbound.show_invisible("\u200b".join(PAT))
    assert "\\u200b" in shown
    assert redactor.redact(shown) == "[redacted:DEPLOY_PAT]"


def test_a_secret_that_starts_like_an_escapes_tail_is_still_found() -> None:
    secret = "u200bQ7xv0PlantedPat9"
    found = Redactor([Secret("TOKEN", secret)])
    assert found.redact(f"C:\\{secret} here") == "C:\\[redacted:TOKEN] here"
    assert found.redact(f"x\\{secret}") == "x\\[redacted:TOKEN]"


def test_showing_is_idempotent_and_never_escapes_an_escape_again(redactor: Redactor) -> None:
    text = "a\u202eb\u200bc \\u200b already shown \U000e0041 \u00ad"
    once = outbound.show_invisible(text)
    assert once == "a\\u202eb\\u200bc \\u200b already shown \\U000e0041 \\xad"
    assert outbound.show_invisible(once) == once
    assert outbound.terminal_text(once) == once
    assert outbound.terminal_text(outbound.terminal_text(text)) == outbound.terminal_text(text)
    assert outbound.redact_data(outbound.redact_data([text])) == outbound.redact_data([text])


def test_visible_text_keeps_its_combining_marks_and_its_data_its_identity(
    redactor: Redactor,
) -> None:
    decomposed = "Rolle\u0301 cafe\u0301 \u00e9"
    assert outbound.terminal_text(decomposed) == decomposed
    clean = {"k": ["plain", decomposed]}
    assert outbound.redact_data(clean) is clean


@pytest.mark.parametrize("offset", [0, 1, 2])
@pytest.mark.parametrize("alphabet", ["standard", "url-safe"])
def test_a_base64_encoded_secret_is_redacted_alone_or_inside_a_longer_encoding(
    offset: int, alphabet: str
) -> None:
    secret = "ghp_Q7xv?>Planted~Pat9Zk2LmN4"  # "?", ">" and "~" give "+" and "/" (or "-_")
    found = Redactor([Secret("DEPLOY_PAT", secret)])
    encode = base64.b64encode if alphabet == "standard" else base64.urlsafe_b64encode
    plain = encode(b"x" * offset + secret.encode() + b" trailing").decode()
    redacted = found.redact(f"blob: {plain} end")
    assert "[redacted:DEPLOY_PAT (base64)]" in redacted
    # What is left: at most the 3 characters the offset shares and the tail's encoding.
    left = redacted.replace("[redacted:DEPLOY_PAT (base64)]", "")
    assert len(left) <= len("blob:  end") + 3 + len(encode(b"? trailing"))
    wrapped = "\n".join(plain[i : i + 10] for i in range(0, len(plain), 10))
    assert "[redacted:DEPLOY_PAT (base64)]" in found.redact(wrapped)


def test_the_encoded_forms_are_derived_on_each_worker_not_sent() -> None:
    controller = Redactor([Secret("DEPLOY_PAT", PAT), Secret("SHORT", "abcd")])
    assert {s.name for s in controller.secrets} == {"DEPLOY_PAT", "DEPLOY_PAT (base64)", "SHORT"}
    wire = controller.to_wire()
    assert "(base64)" not in wire
    worker = Redactor(Secret(n, v, i) for n, v, i in json.loads(wire))
    assert set(worker.secrets) == set(controller.secrets)
    encoded = base64.b64encode(PAT.encode()).decode()
    assert worker.redact(encoded).startswith("[redacted:DEPLOY_PAT (base64)]")


@pytest.mark.parametrize("keep", ["", "\n\t", "\n\r\t"])
def test_an_ascii_text_is_escaped_exactly_as_any_other(keep: str) -> None:
    for code in range(0x80):
        text = f"a{chr(code)}\r\nb"
        assert outbound.escape_controls(text + "\u00e9", keep) == (
            outbound.escape_controls(text, keep) + "\u00e9"
        ), hex(code)


# -- the forms behind the matching (each rule at its limits) -------------------------------


@pytest.mark.parametrize("offset", [0, 1, 2])
@pytest.mark.parametrize("alphabet", ["standard", "url-safe"])
def test_a_base64_encoded_secret_is_redacted_from_its_first_to_its_last_own_character(
    offset: int, alphabet: str
) -> None:
    secret = "ghp_Q7xv?>Planted~Pat9Zk2LmN4"
    found = Redactor([Secret("DEPLOY_PAT", secret)])
    encode = base64.b64encode if alphabet == "standard" else base64.urlsafe_b64encode
    data = secret.encode()
    for prefix in (b"\xff" * offset, b"x" * offset):
        encoded = encode(prefix + data + b" trailing").decode()
        # A character carries 6 bits: the secret's own are those wholly inside its bytes.
        first = -(-8 * offset // 6)
        end = 8 * (offset + len(data)) // 6
        assert found.redact(encoded) == (
            f"{encoded[:first]}[redacted:DEPLOY_PAT (base64)]{encoded[end:]}"
        ), prefix


def test_a_character_class_holds_each_range_end_to_end_and_nothing_beside() -> None:
    # Single points and ranges, among them characters a class must escape.
    ranges = ((0x2D, 0x2D), (0x41, 0x43), (0x5C, 0x5C), (0x5D, 0x5E), (0x61, 0x61))
    members = set(_points(ranges))
    pattern = re.compile(outbound._char_class(ranges))
    for code in range(0x20, 0x80):
        assert bool(pattern.fullmatch(chr(code))) == (code in members), hex(code)
    invisible = re.compile(outbound._char_class(INVISIBLE_RANGES))
    outside = {c for start, end in INVISIBLE_RANGES for c in (start - 1, end + 1)}
    for code in sorted(set(INVISIBLE) | outside):
        assert bool(invisible.fullmatch(chr(code))) == (code in INVISIBLE), hex(code)


@pytest.mark.parametrize(
    "code", [0x00, 0x9F, 0xAD, 0xFE, 0xFF, 0x100, 0x061C, 0xFFFE, 0xFFFF, 0x10000, 0xE0041]
)
def test_an_escape_is_the_shortest_of_python_s_three_forms_at_each_limit(code: int) -> None:
    # Python's own escapes: \xff up to ff, \uffff up to ffff, \U0010ffff above.
    assert outbound._escaped(chr(code)) == chr(code).encode("unicode_escape").decode("ascii")


def test_a_secret_with_an_escape_in_it_is_found_split_by_shown_escapes() -> None:
    # Its form without the escapes is what the text's form without them holds.
    secret = "pass\\x41word99"
    found = Redactor([Secret("TOKEN", secret)])
    hidden = "\\u200b".join(secret[:4]) + secret[4:]
    assert found.redact(f"pw {hidden}.") == "pw [redacted:TOKEN]."


def test_a_secret_with_an_escape_in_it_is_found_after_a_backslash() -> None:
    # Starts like an escape's tail and holds an escape: only the forms with the escapes
    # kept (on both sides) still hold it.
    secret = "u200bQ7x\\x41Planted"
    found = Redactor([Secret("TOKEN", secret)])
    assert found.redact(f"C:\\{secret}") == "C:\\[redacted:TOKEN]"


def test_a_secret_in_either_case_is_found_split_by_shown_escapes_or_after_a_backslash() -> None:
    key = Redactor([Secret("state key", "0a1b2c3d4e5f", ignore_case=True)])
    assert key.redact("0A1B\\u200b2C3D4E5F") == "[redacted:state key]"
    tail = Redactor([Secret("state key", "x41abcdef9876", ignore_case=True)])
    assert tail.redact("C:\\x41ABCDEF9876") == "C:\\[redacted:state key]"


def test_a_quote_plus_form_is_found_split_by_shown_escapes_or_after_a_backslash() -> None:
    phrase = Redactor([Secret("PHRASE", "ab cd efgh")])
    assert phrase.redact("q=ab+c\\u200bd+efgh&") == "q=[redacted:PHRASE]&"
    tail = Redactor([Secret("PHRASE", "u200bQ7 xv0Planted")])
    assert tail.redact("C:\\u200bQ7+xv0Planted") == "C:\\[redacted:PHRASE]"
