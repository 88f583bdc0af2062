"""The judgement: what a criterion checks (state, tool call, response, llm), the programmatic and LLM judges behind one
``judge`` function, the verdict cache, model endpoints and judge configurations, and the reviewers' agreement with
the judge. Depends on ``world_app`` only (a state criterion reads a world); criteria rows belong to tasks."""
