"""The red team and the valid alternatives: policies that must fail a rubric, and policies that must pass it.

Each policy turns (instruction, reference solution, the reference's results replayed on the snapshot) into a
trajectory (calls + final answer), deterministically. No model is involved. Calibration plays them as rollouts
(``calibrate --policy red_team``, one ``Rollout`` per policy key) and the library check plays them in a scratch
world (``red_team_check``, ``bench/task_library.py --red-team``): both build them here, with the same keys.

Must fail (a rubric that lets one pass pays for something other than the task):

- ``dump``: the reference's calls, then the JSON of every tool result as the whole answer;
- ``spray``: the reference's calls, then the reference answer followed by every entity id and money amount that
  appeared in any result (made only when that adds something to the answer);
- ``no_call``: no tool call; a reply naming every policy (knowledge-base article title), status and remedy word
  of the world;
- ``echo``: no tool call; the instruction as the answer;
- ``over_act[<tool>]``: the reference's calls plus one plausible extra write on an entity the task touched
  (another refund, a cancel, a ticket status change, an escalation, a resolution); only writes the tools accept;
- ``guess``: on a task whose reference asks the user for a held-back fact (``ask_user``), the reference without
  its questions: every later call and the answer as they were, the fact guessed right (a rubric must require
  that the agent asked, not only that it got lucky);
- the perturbations of ``tasks_app.perturbations`` made real with the reference's results: ``drop_write``,
  ``drop_fact`` (every occurrence of the fact), ``change_argument`` (a changed read drops the facts it gave),
  ``first_page_only`` (later-page ids leave the answer too).

Must pass (a rubric that fails one punishes correct work):

- ``reorder_reads``: independent reads in another order (a read that uses an id an earlier result gave stays
  after it; writes keep their places);
- ``extra_read``: one harmless read added first (a tool the reference does not call, on an entity it names);
- ``bigger_page``: the pages of a paged read replaced by one bigger page from the first offset (made only when
  the tool's limit allows it and the big page returns exactly the same rows);
- ``formats``: money and dates written in other common formats ("$1,234.50" -> "1234.50 USD", "2025-09-15" ->
  "September 15, 2025");
- ``reword``: the answer reworded deterministically (body paragraphs or sentences in another order, synonyms of
  filler words, another greeting and sign-off).

A policy that would not differ from the reference on a task (nothing to reorder, no page) is not made for it.

Flags (``red_team_flags``): ``gameable`` when a must-fail policy passes (no required criterion fails it: an
``llm`` criterion pending offline fails nothing), or when one of the blunt policies (dump, spray, no_call, echo)
earns a partial reward above ``GAMEABLE_PARTIAL_REWARD`` (0.7: within 0.3 of a perfect reference, the margin
the issue asks of these policies on average); ``over_specified`` when a must-pass policy does not pass. Each
cause names the policy and the criteria behind it.
"""

from tasks_app.red_team.check import (
    PERTURBATION_KINDS,
    PolicyOutcome,
    RedTeamReport,
    outcome_as_dict,
    policy_outcome,
    red_team_check,
    red_team_flags,
    red_team_summary,
    replay_vocabulary,
    version_perturbations,
    version_red_team,
)
from tasks_app.red_team.kinds import (
    BIGGER_PAGE,
    BLUNT_KINDS,
    CONVERSATION,
    DUMP,
    ECHO,
    EXTRA_READ,
    FORMATS,
    GAMEABLE_PARTIAL_REWARD,
    GUESS,
    MUST_FAIL,
    MUST_FAIL_KINDS,
    MUST_PASS,
    MUST_PASS_KINDS,
    NO_CALL,
    OVER_ACT,
    POLICY_KINDS,
    REFERENCE,
    REORDER_READS,
    REWORD,
    SPRAY,
    RedTeamPolicy,
    Replay,
    entity_ids_in,
    policy_expect,
    policy_kind,
    registry_tool,
    solution_calls,
    tool_group,
)
from tasks_app.red_team.must_fail import (
    REMEDY_WORDS,
    dump_answer,
    extra_writes,
    no_call_answer,
    spray_extra,
    world_vocabulary,
)
from tasks_app.red_team.must_pass import (
    answer_reformatted,
    answer_reworded,
    bigger_page,
    harmless_read,
    reordered_reads,
)
from tasks_app.red_team.policies import (
    red_team_policies,
)

__all__ = [
    "BIGGER_PAGE",
    "BLUNT_KINDS",
    "CONVERSATION",
    "DUMP",
    "ECHO",
    "EXTRA_READ",
    "FORMATS",
    "GAMEABLE_PARTIAL_REWARD",
    "GUESS",
    "MUST_FAIL",
    "MUST_FAIL_KINDS",
    "MUST_PASS",
    "MUST_PASS_KINDS",
    "NO_CALL",
    "OVER_ACT",
    "PERTURBATION_KINDS",
    "POLICY_KINDS",
    "REFERENCE",
    "REMEDY_WORDS",
    "REORDER_READS",
    "REWORD",
    "SPRAY",
    "PolicyOutcome",
    "RedTeamPolicy",
    "RedTeamReport",
    "Replay",
    "answer_reformatted",
    "answer_reworded",
    "bigger_page",
    "dump_answer",
    "entity_ids_in",
    "extra_writes",
    "harmless_read",
    "no_call_answer",
    "outcome_as_dict",
    "policy_expect",
    "policy_kind",
    "policy_outcome",
    "red_team_check",
    "red_team_flags",
    "red_team_policies",
    "red_team_summary",
    "registry_tool",
    "reordered_reads",
    "replay_vocabulary",
    "solution_calls",
    "spray_extra",
    "tool_group",
    "version_perturbations",
    "version_red_team",
    "world_vocabulary",
]
