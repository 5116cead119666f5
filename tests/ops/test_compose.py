"""docker-compose.yml validates with compose-go (Docker Compose v2's loader); no engine needed."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VALIDATOR = REPO / "ops" / "compose-validate"


@pytest.fixture(scope="module")
def validator(tmp_path_factory):
    if shutil.which("go") is None:
        pytest.skip("Go toolchain not installed; compose-go validation needs it")
    out = tmp_path_factory.mktemp("cv") / "compose-validate"
    subprocess.run(["go", "build", "-o", str(out), "."], cwd=VALIDATOR, check=True,
                   capture_output=True, timeout=600)
    return out


def test_compose_file_is_valid_and_has_the_pipeline(validator):
    proc = subprocess.run([str(validator), str(REPO / "docker-compose.yml")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    services = set(proc.stdout.split())
    assert {"kafka", "topics", "worker", "producer", "watch", "downstream"} <= services


def test_validator_rejects_a_broken_file(validator, tmp_path):
    broken = tmp_path / "compose.yml"
    text = (REPO / "docker-compose.yml").read_text()
    broken.write_text(text.replace("condition: service_healthy", "condition: when_ready", 1))
    proc = subprocess.run([str(validator), str(broken)], capture_output=True, text=True)
    assert proc.returncode != 0 and "condition" in proc.stderr


def test_dockerfile_installs_like_make_venv():
    dockerfile = (REPO / "ops" / "Dockerfile").read_text()
    makefile = (REPO / "Makefile").read_text()
    docker_extras = re.search(r"pip install -e '\.\[([a-z,]+)\]'", dockerfile).group(1).split(",")
    make_extras = re.search(r"pip install -q -e '\.\[([a-z,]+)\]'", makefile).group(1).split(",")
    assert set(docker_extras) <= set(make_extras)  # the image is the runtime subset (no test)
    assert "python:3.11" in dockerfile
