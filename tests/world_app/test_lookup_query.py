"""Reading what a person types into a look-up: words, one date window, amounts (pure, no database)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest

from world_app.lookup_query import lookup_query_parse

TODAY = date(2025, 9, 15)


@pytest.mark.parametrize(
    ("text", "start", "end", "center", "terms"),
    [
        ("nyra 4060 mid august", date(2025, 8, 11), date(2025, 8, 20), date(2025, 8, 15), ["nyra", "4060"]),
        ("early sept gpu", date(2025, 9, 1), date(2025, 9, 10), date(2025, 9, 5), ["gpu"]),
        ("late december", date(2024, 12, 21), date(2024, 12, 31), date(2024, 12, 25), []),  # the latest past one
        ("aug 14", date(2025, 8, 11), date(2025, 8, 17), date(2025, 8, 14), []),
        ("14th august 2024 psu", date(2024, 8, 11), date(2024, 8, 17), date(2024, 8, 14), ["psu"]),
        ("2025-08-06", date(2025, 8, 5), date(2025, 8, 7), date(2025, 8, 6), []),
        ("250806", date(2025, 8, 6), date(2025, 8, 6), date(2025, 8, 6), []),
        ("8/6 mouse", date(2025, 8, 5), date(2025, 8, 7), date(2025, 8, 6), ["mouse"]),
        ("gpu 40 days ago", date(2025, 7, 31), date(2025, 8, 12), date(2025, 8, 6), ["gpu"]),
        ("march", date(2025, 3, 1), date(2025, 3, 31), date(2025, 3, 15), []),
    ],
)
def test_dates_people_remember_become_windows(text, start, end, center, terms):
    parsed = lookup_query_parse(text, today=TODAY)
    assert (parsed.window.start, parsed.window.end, parsed.window.center) == (start, end, center)
    assert parsed.terms == terms
    assert parsed.understood and parsed.understood[0].startswith("date")


def test_amounts_words_and_model_numbers():
    parsed = lookup_query_parse("$1,299.00 jane 4060 299.5", today=TODAY)
    assert parsed.amounts == [Decimal("1299.00"), Decimal("299.5")]
    assert parsed.terms == ["jane", "4060"]  # a bare number is a word (a model number), not an amount
    assert parsed.window is None
    assert parsed.tsquery() == "'jane':* & '4060':*"


def test_words_are_safe_prefixes_and_nothing_typed_is_lost():
    parsed = lookup_query_parse("jane.doe@example.com O'Brien & | !x", today=TODAY)
    assert parsed.pieces() == ["jane", "doe", "example", "com", "o", "brien", "x"]
    assert all(piece.isalnum() for piece in parsed.pieces())  # quotes and operators never reach to_tsquery
    assert lookup_query_parse("aug 4060", today=TODAY).window.end == date(2025, 8, 31)  # 4060 is not a year
    assert lookup_query_parse("aug 4060", today=TODAY).terms == ["4060"]
    assert lookup_query_parse("991332", today=TODAY).terms == ["991332"]  # not a date: a word
