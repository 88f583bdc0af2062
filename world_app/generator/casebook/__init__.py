"""The cases a real store's records are full of and the base world has too few of, appended after it.

The base world (catalog, people, commerce, support) is a store of one-off buyers whose searches fit one page and
whose tasks mostly land on the common branch. A real store also has:

- **business accounts** that order most weeks (a customer's orders over a year, and a product's buyers, run to
  several pages), with orders shipped in two parcels, one of them sometimes still on its way (a partial
  shipment), and parcels a carrier lost and the store reshipped;
- **a carrier disruption**: a hub closed by a storm a week ago, parcels stuck or lost, and a queue of open
  shipping tickets written the way worried customers write (wrong order numbers, two questions in one message,
  anger, confusion), some disputed with the bank as well;
- **failed payments** that never went through (the order waits for payment, or was cancelled for it);
- **lapsed buyers** whose parts, bought in 2023 and early 2024, are now out of warranty, and **recent buyers**
  still inside the return window, so both branches of the warranty and return tasks exist in similar numbers;
- **support agents on leave** whose open tickets still name them (a stale assignment);
- **records that disagree**: a ticket that says one thing and the order another.

Everything is appended: each part draws from its own random stream (``corecraft:{seed}:casebook:{part}``) and
takes the ids after the base world's last ones (an order's number continues its day's count), so no base id or
value moves and the starter library's hard-coded answers about base records stay true. New accounts get the
loyalty tier their spend earns (``world_app.loyalty``), and orders are priced with the tier held on the day.
Each deliberate anomaly is recorded in the manifest (``ANOMALY_KINDS``).
"""

from __future__ import annotations

from world_app.generator.casebook.append import append_casebook

__all__ = ["append_casebook"]
