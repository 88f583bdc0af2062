"""The HTTP way into snapshots, episodes and tools (DRF, documented by drf-spectacular at /api/schema/)."""
