"""scripts/tau2_peer.sh finds the Python tau2-bench needs (3.12 or 3.13, 3.12 first): PATH, then pyenv's versions."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "tau2_peer.sh"


def _interpreter(folder: Path, name: str, version: tuple[int, int]) -> Path:
    """A stand-in interpreter answering the script's version check as Python ``version`` would."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    ok = (3, 12) <= version < (3, 14)
    path.write_text(f"#!/bin/sh\nexit {0 if ok else 1}\n")
    path.chmod(0o755)
    return path


def _find(tmp_path: Path, path_dir: Path, pyenv_root: Path) -> subprocess.CompletedProcess:
    env = {"PATH": f"{path_dir}:/usr/bin:/bin", "PYENV_ROOT": str(pyenv_root), "HOME": str(tmp_path)}
    return subprocess.run(  # noqa: S603
        ["/bin/bash", str(SCRIPT), "--find-python"], capture_output=True, text=True, env=env, check=False
    )


def test_prefers_a_suitable_python_on_path(tmp_path):
    path_dir = tmp_path / "bin"
    _interpreter(path_dir, "python3.12", (3, 14))  # a name that lies: the version check decides
    expected = _interpreter(path_dir, "python3.13", (3, 13))
    found = _find(tmp_path, path_dir, tmp_path / "no-pyenv")
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == str(expected)


def test_falls_back_to_pyenv_3_12_first(tmp_path):
    path_dir = tmp_path / "bin"
    _interpreter(path_dir, "python3.13", (3, 11))
    _interpreter(path_dir, "python3.12", (3, 11))
    _interpreter(path_dir, "python3", (3, 11))
    pyenv = tmp_path / "pyenv"
    _interpreter(pyenv / "versions" / "3.11.7" / "bin", "python", (3, 11))
    _interpreter(pyenv / "versions" / "3.12.1" / "bin", "python", (3, 11))  # a broken build: the check decides
    expected = _interpreter(pyenv / "versions" / "3.12.10" / "bin", "python", (3, 12))
    _interpreter(pyenv / "versions" / "3.13.0" / "bin", "python", (3, 13))
    found = _find(tmp_path, path_dir, pyenv)
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == str(expected)


def test_says_so_when_none_fits(tmp_path):
    path_dir = tmp_path / "bin"
    for name in ("python3.13", "python3.12", "python3"):
        _interpreter(path_dir, name, (3, 11))
    found = _find(tmp_path, path_dir, tmp_path / "no-pyenv")
    assert found.returncode == 1
    assert "no Python 3.12 or 3.13 found" in found.stderr
