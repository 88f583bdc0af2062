"""The 23 agent tools over MCP (the official ``mcp`` SDK), one episode per connection, named explicitly.

A serving surface, so it lives above what it serves: the tools and the episode engine are ``world_app``'s; the bearer
tokens, the release rows of task mode and their judgement are this app's (``trainer_bridge``).

Naming the episode (docs/adr/0002-mcp-episodes.md):

- Streamable HTTP is served STATELESS: the SDK keeps no session in memory. Every MCP message names its
  episode, in the URL ``/mcp/episodes/<uuid>`` or, on ``/mcp``, in the ``X-Corecraft-Episode`` header.
  A client without an episode first calls ``POST /mcp/episodes`` (plain JSON, same ASGI app), which creates
  one on a snapshot version (default: the server's, else the latest) and answers
  ``{"episode_id", "mcp_url", "snapshot_version"}``.
- The episode's state is its log in Postgres (``world_app.episodes``), so any server process, a restarted
  one included, serves any episode with the same state; a process only caches worlds it has rebuilt.
- Stdio serves one episode for the life of the process (``--episode``, or one created at start).

Task mode (``tasks``): ``POST /mcp/episodes`` with ``{"release", "row_id"}`` opens the episode for a task, which then
serves its instruction (prompt and resource) and a ``finish`` tool returning the judgement; the provider of tasks
is ``trainer_bridge.mcp.release_rows`` (named by ``settings.MCP_TASK_PROVIDER``).

``server`` builds the SDK ``Server`` (tool list and calls), ``http`` the ASGI app, ``stdio`` the stdio loop.
"""
