"""How people really write: the canned replies of the support desk in each writer's own voice.

The desk's plot (who writes, when, what is decided) comes from the support generator's random stream; the
wording added here comes from a stream of its own per message, so it never moves an id, a date or a decision
of the seed's world. Customers greet or don't, sign with a first name or a nickname, type in a hurry (a dropped
or doubled letter, no capital), sound relieved, impatient or unsure; employees greet the customer by name and
sign; system notes carry their date.
"""

from __future__ import annotations

import random
import re
from datetime import datetime

_GREETINGS = ("", "", "Hi, ", "Hello, ", "Hey, ", "Hi again, ", "Morning, ", "Ok, ")
_MOODS = (
    "",
    "",
    "",
    " Sorry for the slow reply.",
    " Been a long week with this.",
    " Hope this gets sorted soon, I need the PC for work.",
    " This is taking longer than I hoped.",
    " Not sure I did that right, tell me if you need more.",
    " My son helped me with the photos.",
    " Sent from my phone.",
    " Please let me know asap.",
    " Thanks for being patient with me.",
)
_SIGNOFFS = ("", "", "{first}", "- {first}", "thanks, {first}", "Cheers, {first}", "{first} {initial}.", "{nick}")
_NICKNAMES = {
    "Alexander": "Alex",
    "Benjamin": "Ben",
    "Christopher": "Chris",
    "Daniel": "Dan",
    "Elizabeth": "Liz",
    "Jennifer": "Jen",
    "Jessica": "Jess",
    "Joseph": "Joe",
    "Katherine": "Kate",
    "Matthew": "Matt",
    "Michael": "Mike",
    "Nicholas": "Nick",
    "Robert": "Rob",
    "Samantha": "Sam",
    "William": "Will",
}
_STAFF_OPENINGS = ("Hi {first},", "Hello {first},", "Hi {first}, thanks for the update.", "{first},", "Hi there,")
_STAFF_SIGNOFFS = ("{staff}, Corecraft Support", "Best, {staff}", "Thanks, {staff} (Corecraft Support)", "- {staff}")
_WORD = re.compile(r"[A-Za-z]{5,}")


def _typo(rng: random.Random, text: str) -> str:
    words = list(_WORD.finditer(text))
    if not words:
        return text
    word = rng.choice(words)
    w = word.group()
    i = rng.randrange(1, len(w) - 1)
    slip = rng.choice((w[:i] + w[i + 1 :], w[:i] + w[i] + w[i:], w[: i - 1] + w[i] + w[i - 1] + w[i + 1 :]))
    return text[: word.start()] + slip + text[word.end() :]


def customer_voice(body: str, *, key: str, first_name: str, last_name: str) -> str:
    rng = random.Random(f"corecraft-voice:{key}")
    text = body
    if rng.random() < 0.25:
        text = _typo(rng, text)
    greeting = rng.choice(_GREETINGS)
    if greeting and text[:1].isupper() and not text.startswith("I "):
        text = text[0].lower() + text[1:]
    if rng.random() < 0.12:
        text = text.lower()
    text = f"{greeting}{text}{rng.choice(_MOODS)}"
    signoff = rng.choice(_SIGNOFFS).format(
        first=first_name, initial=last_name[:1], nick=_NICKNAMES.get(first_name, first_name)
    )
    return f"{text}\n{signoff}" if signoff else text


def staff_voice(body: str, *, key: str, customer_first: str, staff_first: str) -> str:
    rng = random.Random(f"corecraft-voice:{key}")
    opening = rng.choice(_STAFF_OPENINGS).format(first=customer_first)
    text = body if body.startswith(("Hi", "Hello")) else f"{opening}\n{body}"
    if "\n- " in body or "\n-- " in body:
        return text  # the desk signed it already
    return f"{text}\n{rng.choice(_STAFF_SIGNOFFS).format(staff=staff_first)}"


def system_voice(body: str, *, sent_at: datetime) -> str:
    return f"{body.rstrip('.')} on {sent_at:%Y-%m-%d}."
