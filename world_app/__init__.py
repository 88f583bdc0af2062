"""The Corecraft Computers world: its models and rules, the seeded generator, published snapshots, episodes (a snapshot
plus the log of tool calls made in it), the 23 agent tools in one registry, the agent contract, the world's pages,
admin and episode API. The lowest app: it knows nothing of tasks, rubrics, tokens or releases."""
