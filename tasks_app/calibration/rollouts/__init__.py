"""Rollouts: the agent loop over a model endpoint, the reference and perturbed-reference policies, and
running one rollout in a fresh episode with its trajectory stored and judged.

- ``agent.agent_loop`` / ``agent.system_prompt``: the model policy.
- ``policies.replay_solution``: the reference and perturbed-reference policies.
- ``execute.rollout_create`` / ``execute.rollout_execute``: one rollout end to end.
- model endpoints and their clients: ``rubrics_app.endpoints``.
"""

from tasks_app.calibration.rollouts.execute import rollout_create, rollout_execute

__all__ = ["rollout_create", "rollout_execute"]
