"""What trainers touch: frozen train/holdout releases and their exports, scoped API tokens, the trainer-time episode
and reward API, MCP (authenticated and task modes), and the adapters a training job imports (TRL, verl). The top
app: it may use every other; none uses it."""
