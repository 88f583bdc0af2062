"""Near-duplicate instructions: word shingles and an exact Jaccard similarity join (deterministic, no sampling).

Two instructions are near duplicates when the Jaccard similarity of their sets of word 3-shingles is at least
``NEAR_DUPLICATE_THRESHOLD`` (0.8). Texts are normalised first (Unicode NFKC, lower case, punctuation dropped,
whitespace collapsed); entity ids ("ord-230215-001"), amounts ("$1,249.99") and dates stay single words.

What counts as "the same task" (the decision, and why):
- The comparison is on the text *including* its specifics: ids, names, amounts, dates. Two instances of a
  family template about different orders are different grounded tasks (other facts, other tool calls, another
  correct answer); masking the specifics would call every instance of a template a duplicate and forbid
  families altogether. What the check must catch is copy-paste: the same message with an id swapped or a word
  changed. One changed word alters at most 3 shingles, so a 40-word message with one change keeps a Jaccard of
  about 0.86 and is caught at 0.8; a family instance differs in several specifics *and* comes from one of several
  phrasings, which keeps it well below (the family tests assert the largest similarity seen).
- ``instruction_fingerprint(text, mask_entities=True)`` masks ids and numbers, for the weaker, informative
  question "how many distinct phrasings are there" (``task_stats`` and the family tests report it).

The join is exact: prefix filtering (Chaudhuri et al. 2006; Bayardo et al. "All-Pairs" 2007). Shingles are
ordered rarest first; two sets with Jaccard >= t must share one of the first ``|s| - ceil(t*|s|) + 1`` shingles
of each, so only pairs sharing a rare prefix shingle are compared, with a size filter on top. ~1,200
instructions take well under a second, and the result is the same as comparing every pair.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import defaultdict
from collections.abc import Hashable, Iterable

from world_app.tools.ids import ENTITY_ID

NEAR_DUPLICATE_THRESHOLD = 0.8
SHINGLE_SIZE = 3

# A word: letters/digits, keeping ids, amounts (1,249.99), dates (2025-08-14) and times (10:30) whole.
_WORD = re.compile(r"[a-z0-9]+(?:[-.,:/][a-z0-9]+)*")
_NUMBER = re.compile(r"^\$?\d[\d,.:/-]*$")


def normalized_words(text: str, *, mask_entities: bool = False) -> list[str]:
    """The words of ``text`` after normalisation; with ``mask_entities`` ids become <id> and numbers <n>."""
    text = unicodedata.normalize("NFKC", text or "").casefold()
    words = _WORD.findall(text)
    if mask_entities:
        words = ["<id>" if ENTITY_ID.fullmatch(w) else "<n>" if _NUMBER.match(w) else w for w in words]
    return words


def instruction_fingerprint(text: str, *, mask_entities: bool = False, size: int = SHINGLE_SIZE) -> frozenset[str]:
    """The set of word ``size``-shingles of the normalised text (a text shorter than ``size`` words is one shingle)."""
    words = normalized_words(text, mask_entities=mask_entities)
    if len(words) < size:
        return frozenset([" ".join(words)]) if words else frozenset()
    return frozenset(" ".join(words[i : i + size]) for i in range(len(words) - size + 1))


def jaccard(a: frozenset, b: frozenset) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def _pairs_of_sets(sets: list[frozenset], threshold: float) -> list[tuple[int, int, float]]:
    if not 0 < threshold <= 1:
        raise ValueError("threshold: must be in (0, 1]")
    frequency: dict[str, int] = defaultdict(int)
    for shingles in sets:
        for shingle in shingles:
            frequency[shingle] += 1
    # Rarest first; ties broken by the text so the order (and the result) never depends on hashing.
    ordered = [sorted(s, key=lambda x: (frequency[x], x)) for s in sets]
    index: dict[str, list[int]] = defaultdict(list)
    found: list[tuple[int, int, float]] = []
    # Shorter sets first: each set is compared only with earlier (not larger) ones, passing the size filter.
    for i in sorted(range(len(sets)), key=lambda k: (len(sets[k]), k)):
        tokens = ordered[i]
        size = len(tokens)
        if size == 0:
            continue
        prefix = size - math.ceil(threshold * size) + 1
        candidates: set[int] = set()
        for token in tokens[:prefix]:
            candidates.update(index[token])
        for j in candidates:
            if len(sets[j]) < threshold * size:
                continue
            score = jaccard(sets[i], sets[j])
            if score >= threshold:
                found.append((min(i, j), max(i, j), score))
        for token in tokens[:prefix]:
            index[token].append(i)
    return sorted(found)


def near_duplicate_pairs(
    texts: list[str], threshold: float = NEAR_DUPLICATE_THRESHOLD, *, mask_entities: bool = False
) -> list[tuple[int, int, float]]:
    """(i, j, jaccard) for every pair of texts (i < j) at least ``threshold`` similar, sorted."""
    sets = [instruction_fingerprint(t, mask_entities=mask_entities) for t in texts]
    return _pairs_of_sets(sets, threshold)


def near_duplicate_groups(
    items: Iterable[tuple[Hashable, str]], threshold: float = NEAR_DUPLICATE_THRESHOLD, *, mask_entities: bool = False
) -> list[set]:
    """Groups (connected components, two or more ids each) of items whose texts are near duplicates."""
    items = list(items)
    parent = list(range(len(items)))

    def root(k: int) -> int:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    for i, j, _ in near_duplicate_pairs([text for _, text in items], threshold, mask_entities=mask_entities):
        parent[root(i)] = root(j)
    groups: dict[int, set] = defaultdict(set)
    for k, (ident, _) in enumerate(items):
        groups[root(k)].add(ident)
    found = [g for g in groups.values() if len(g) > 1]
    return sorted(found, key=lambda g: sorted(map(str, g)))


def most_similar(texts: list[str], *, floor: float = 0.5) -> tuple[float, tuple[int, int] | None]:
    """The highest similarity between two texts when it is at least ``floor`` (else ``(0.0, None)``)."""
    pairs = near_duplicate_pairs(texts, floor)
    if not pairs:
        return 0.0, None
    i, j, score = max(pairs, key=lambda p: (p[2], -p[0], -p[1]))
    return score, (i, j)
