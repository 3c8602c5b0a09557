"""The wheel carries the data folders: installed into a fresh venv outside the checkout, kg demo works."""

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_a_wheel_in_a_fresh_venv_runs_the_demo(tmp_path):
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(wheels), str(ROOT)],
        check=True,
        cwd=tmp_path,
    )
    wheel = next(wheels.glob("kgrdf-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    for needed in ("kgrdf/_data/ontology/schema.ttl", "kgrdf/_data/queries/lookup.rq", "kgrdf/examples/fernhill.jsonl"):
        assert needed in names, f"{needed} is not in the wheel"
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel)], check=True, cwd=tmp_path
    )
    result = subprocess.run(
        [str(venv / "bin" / "kg"), "demo", "--kb", str(tmp_path / "kb")], capture_output=True, text=True, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert "Hotfix process starts in #deploys" in result.stdout
    assert "person/sam reviews repo/web-app" in result.stdout
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "from kgrdf.resources import data_dir; print(data_dir('queries'))"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert str(venv) in where.stdout  # the installed copy, not the checkout's
