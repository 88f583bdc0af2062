"""The server side of scripts/grpo_smoke.py: start this checkout's server on a free port when none answers, and set
it up through manage.py (migrate, a seeded and published world, approved tasks, a frozen release, a token with
train:read, episodes and reward). Standard library only.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SETUP = r"""
import json
from django.contrib.auth import get_user_model
from tasks_app.models import Task
from trainer_bridge.models import Release, ReleaseStatus, ReleaseRow
from trainer_bridge.services import api_token_create, release_create, release_freeze

release = (Release.objects.filter(status=ReleaseStatus.FROZEN, rows__split="train").distinct()
           .order_by("-frozen_at").first())
user = get_user_model().objects.filter(is_superuser=True).order_by("pk").first() \
    or get_user_model().objects.order_by("pk").first()
made = False
if release is None:
    approved = Task.objects.filter(status="approved").count()
    if approved < 4:
        raise SystemExit("NEED_TASKS")
    slug = "grpo-smoke"
    Release.objects.filter(slug=slug, status=ReleaseStatus.DRAFT).delete()
    # A plumbing smoke test, not a training release: tasks the gate flags are kept (include_flagged).
    release = release_create(slug=slug, name="GRPO smoke", seed=7, filters={"include_flagged": True},
                             sizes={"train": 0.85, "holdout": 0.15, "fraction": True}, user=user)
    release = release_freeze(release=release, user=user)
    made = True
issued = api_token_create(name="grpo-smoke", scopes=["train:read", "episodes", "reward"], created_by=user)
print("SMOKE_SETUP " + json.dumps({"release": release.slug, "token": issued.secret, "made": made,
      "train_rows": ReleaseRow.objects.filter(release=release, split="train").count()}))
"""


def say(message: str) -> None:
    print(f"[grpo-smoke] {message}", flush=True)


def manage(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(  # noqa: S603 (our own manage.py)
        [sys.executable, str(ROOT / "manage.py"), *args], cwd=ROOT, capture_output=True, text=True
    )
    if check and done.returncode != 0:
        raise SystemExit(f"manage.py {' '.join(args)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    return done


def server_up(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/healthz", timeout=3) as response:  # noqa: S310 (http URL given by us)
            return response.status == 200
    except OSError:
        return False


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_start() -> tuple[str, subprocess.Popen]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    gunicorn = shutil.which("gunicorn", path=str(Path(sys.executable).parent)) or "gunicorn"
    log = open(tempfile.gettempdir() + f"/grpo-smoke-web-{port}.log", "w")  # noqa: SIM115 (lives with the server)
    process = subprocess.Popen(  # noqa: S603
        [gunicorn, "corecraft_site.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "2", "--timeout", "300"],
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    for _ in range(60):
        if server_up(url):
            return url, process
        if process.poll() is not None:
            break
        time.sleep(1)
    process.terminate()
    raise SystemExit(f"the web server did not start; see {log.name}")


def setup_server_side() -> dict:
    say("world: seed 7 scale 1 if empty, publish a snapshot if changed")
    manage("seed_world", "--seed", "7", "--scale", "1", "--if-empty")
    manage("publish_world", "--note", "grpo smoke", "--if-changed")
    manage("create_demo_users")
    done = manage("shell", "-c", SETUP, check=False)
    if "NEED_TASKS" in done.stdout + done.stderr:
        say("no frozen release and too few approved tasks: load_tasks --status approved")
        manage("load_tasks", "--status", "approved")
        done = manage("shell", "-c", SETUP, check=False)
    line = next((x for x in done.stdout.splitlines() if x.startswith("SMOKE_SETUP ")), None)
    if line is None:
        raise SystemExit(f"could not prepare a release and a token:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    return json.loads(line.removeprefix("SMOKE_SETUP "))
