"""The search tools: one per kind of record an agent looks up, each with filters, a fixed order and paging.

``base`` holds what they share (the filters and ``BakedSearch``); each other module holds the searches of one
part of the store. The registry's ``TOOL_MODULES`` imports them in the order of the tool list.
"""
