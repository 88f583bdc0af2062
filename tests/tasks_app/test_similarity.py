"""Near-duplicate detection: exact Jaccard over word 3-shingles, equal to comparing every pair."""

from __future__ import annotations

import itertools
import random
import time

import pytest

from tasks_app.library.similarity import (
    NEAR_DUPLICATE_THRESHOLD,
    instruction_fingerprint,
    jaccard,
    most_similar,
    near_duplicate_groups,
    near_duplicate_pairs,
    normalized_words,
)

MESSAGE = (
    "Hi, this is Dana Reyes. I ordered a Kestrel Nyra NX 4090 on order ord-250812-017 and it arrived with a "
    "cracked fan shroud. I would like a replacement shipped overnight if possible, and please confirm the "
    "refund of the $39.99 shipping charge you told me about on the phone yesterday."
)


def test_normalisation_keeps_ids_amounts_and_dates_whole():
    words = normalized_words("Order ORD-250812-017 cost $1,249.99 on 2025-08-14!")
    assert words == ["order", "ord-250812-017", "cost", "1,249.99", "on", "2025-08-14"]
    masked = normalized_words("Order ord-250812-017 cost $1,249.99", mask_entities=True)
    assert masked == ["order", "<id>", "cost", "<n>"]
    assert instruction_fingerprint("a b") == frozenset({"a b"})
    assert instruction_fingerprint("") == frozenset()


def test_copy_paste_with_one_id_swapped_is_a_near_duplicate():
    edited = MESSAGE.replace("ord-250812-017", "ord-250812-018")
    reworded = MESSAGE.replace("cracked fan shroud", "broken fan blade")
    other = "My PSU clicks and shuts down under load; order ord-240101-002. What are my options?"
    pairs = near_duplicate_pairs([MESSAGE, edited, reworded, other])
    # One edit each from the original; the two copies differ by two edits and fall below the threshold.
    assert [(i, j) for i, j, _ in pairs] == [(0, 1), (0, 2)]
    assert all(score >= NEAR_DUPLICATE_THRESHOLD for *_, score in pairs)
    # Groups are connected components: the two copies share a group through the original.
    groups = near_duplicate_groups([("a", MESSAGE), ("b", edited), ("c", other), ("d", reworded)])
    assert groups == [{"a", "b", "d"}]


def test_masking_entities_groups_templates():
    a = "Where is order ord-250812-017 placed on 2025-08-12 for $59.99 by customer cus-00012 please?"
    b = "Where is order ord-240101-002 placed on 2024-01-01 for $1,059.00 by customer cus-00400 please?"
    assert near_duplicate_pairs([a, b]) == []
    assert [(i, j) for i, j, _ in near_duplicate_pairs([a, b], mask_entities=True)] == [(0, 1)]


def test_the_prefix_filter_join_equals_all_pairs():
    rng = random.Random(7)
    vocabulary = [f"w{i}" for i in range(40)]
    base = [" ".join(rng.choice(vocabulary) for _ in range(30)) for _ in range(30)]
    texts = base + [t.replace(t.split()[rng.randrange(30)], "zz", 1) for t in base[:15]]
    sets = [instruction_fingerprint(t) for t in texts]
    for threshold in (0.5, 0.8):
        brute = sorted(
            (i, j, jaccard(sets[i], sets[j]))
            for i, j in itertools.combinations(range(len(texts)), 2)
            if jaccard(sets[i], sets[j]) >= threshold
        )
        assert near_duplicate_pairs(texts, threshold) == brute
    assert near_duplicate_pairs(texts, 0.5) == near_duplicate_pairs(list(texts), 0.5)  # deterministic


def test_fast_enough_for_the_whole_library():
    rng = random.Random(1)
    words = [f"word{i}" for i in range(3000)]
    texts = [" ".join(rng.choice(words) for _ in range(60)) for _ in range(1500)]
    started = time.perf_counter()
    near_duplicate_pairs(texts)
    assert time.perf_counter() - started < 5


def test_most_similar_and_bad_threshold():
    assert most_similar(["a b c d", "x y z w"]) == (0.0, None)
    score, pair = most_similar([MESSAGE, MESSAGE.replace("Dana", "Dina"), "unrelated words here entirely"])
    assert pair == (0, 1) and 0.8 < score < 1
    with pytest.raises(ValueError):
        near_duplicate_pairs(["a"], 0)
