"""docker-compose.yml validates with compose-go (Docker Compose v2's loader); no engine needed.
The one test that runs the compose demos for real (`compose` marker) needs a Docker engine and
is skipped without one."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VALIDATOR = REPO / "ops" / "compose-validate"
COMPOSE = REPO / "docker-compose.yml"
CLI_SERVICES = {"topics", "producer", "instance-producer", "watch", "downstream",
                "scale-producer"}


@pytest.fixture(scope="module")
def validator(tmp_path_factory):
    if shutil.which("go") is None:
        pytest.skip("Go toolchain not installed; compose-go validation needs it")
    out = tmp_path_factory.mktemp("cv") / "compose-validate"
    subprocess.run(["go", "build", "-o", str(out), "."], cwd=VALIDATOR, check=True,
                   capture_output=True, timeout=600)
    return out


@pytest.fixture(scope="module")
def project(validator):
    """The compose project as compose-go loads it with the scale profile on (anchors resolved)."""
    proc = subprocess.run([str(validator), "--profile", "scale", "--json", str(COMPOSE)],
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


def test_compose_file_is_valid_and_has_the_pipeline(validator):
    proc = subprocess.run([str(validator), str(COMPOSE)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    services = set(proc.stdout.split())
    assert {"kafka", "topics", "worker", "producer", "watch", "downstream"} <= services
    assert "scale-producer" not in services  # only with --profile scale


def test_validator_rejects_a_broken_file(validator, tmp_path):
    broken = tmp_path / "compose.yml"
    text = COMPOSE.read_text()
    broken.write_text(text.replace("condition: service_healthy", "condition: when_ready", 1))
    proc = subprocess.run([str(validator), str(broken)], capture_output=True, text=True)
    assert proc.returncode != 0 and "condition" in proc.stderr


def test_no_top_level_name_compose_v1_rejects_it():
    assert not re.search(r"^name\s*:", COMPOSE.read_text(), re.MULTILINE)


def test_only_kafka_and_worker_have_health_checks(project):
    services = project["services"]
    assert CLI_SERVICES | {"kafka", "worker"} == set(services)
    for name in CLI_SERVICES:
        assert services[name]["healthcheck"] == {"disable": True}, name
    assert "/health" in " ".join(services["worker"]["healthcheck"]["test"])
    assert "kafka-broker-api-versions" in " ".join(services["kafka"]["healthcheck"]["test"])


def test_health_checks_use_what_compose_v1_and_older_engines_take(project):
    """The README promises `docker-compose` 1.29 and Debian's engine 20.10: a health check key
    of the newer Compose spec (start_interval) made v1.29 refuse the whole file."""
    for name, service in project["services"].items():
        keys = set(service.get("healthcheck", {})) - {"test", "interval", "timeout", "retries",
                                                      "start_period", "disable"}
        assert not keys, f"{name}: healthcheck {sorted(keys)}"


def test_kafka_image_is_the_version_broker_sh_runs(project):
    default = re.search(r"^version=\$\{KAFKA_VERSION:-([^}]+)\}$",
                        (REPO / "ops" / "kafka" / "broker.sh").read_text(), re.MULTILINE)
    assert project["services"]["kafka"]["image"] == f"apache/kafka:{default.group(1)}"


def test_worker_can_be_scaled(project):
    """No fixed host port (three workers would collide on it) and no container_name."""
    worker = project["services"]["worker"]
    assert all("published" not in p for p in worker.get("ports", [])), worker["ports"]
    assert "container_name" not in worker


def test_scale_profile_publishes_the_listed_streams(project):
    service = project["services"]["scale-producer"]
    assert service["profiles"] == ["scale"]
    assert service["depends_on"]["worker"]["condition"] == "service_healthy"
    listed = service["command"][-1]
    lines = [ln.split() for ln in (REPO / listed).read_text().splitlines()
             if ln.split("#", 1)[0].strip()]
    assert len(lines) == 30
    assert {ln[1] for ln in lines} == {"features", "instances"}
    assert len({ln[0] for ln in lines}) == 30


def test_demo_stream_list_matches_the_demo_producers(project):
    """ops/compose/demo.streams (what compose-smoke.sh checks) says what the producers send."""
    services = project["services"]
    for line in (REPO / "ops" / "compose" / "demo.streams").read_text().splitlines():
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        stream, kind, source, algorithm, rate, *params = fields
        producer = next(s for s in services.values()
                        if (s.get("command") or [])[:1] == ["produce"] and stream in s["command"])
        command = producer["command"]
        assert command[1:3] == [kind, source]
        assert command[command.index("--algorithm") + 1] == algorithm
        assert [command[i + 1] for i, a in enumerate(command) if a == "--param"] == params
        assert ("--rate" in command) == (rate != "-")


def test_dockerfile_installs_like_make_venv():
    dockerfile = (REPO / "ops" / "Dockerfile").read_text()
    makefile = (REPO / "Makefile").read_text()
    docker_extras = re.search(r"pip install -c constraints\.txt -e '\.\[([a-z,]+)\]'",
                              dockerfile).group(1).split(",")
    make_extras = re.search(r"pip install -q -c constraints\.txt -e '\.\[([a-z,]+)\]'",
                            makefile).group(1).split(",")
    assert set(docker_extras) <= set(make_extras)  # the image is the runtime subset (no test)
    assert "python:3.11" in dockerfile
    assert re.search(r"^COPY .*\bconstraints\.txt\b", dockerfile, re.M)
    ignored = (REPO / ".dockerignore").read_text().split()
    assert "constraints.txt" not in ignored and "*.txt" not in ignored


def test_constraints_pin_every_dependency():
    """The image and `make venv` install the tested versions: constraints.txt pins each
    package exactly, the project's own dependencies (and extras') among them."""
    import tomllib

    pins = {}
    for line in (REPO / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, sep, version = line.partition("==")
            assert sep and version, f"constraints.txt: {line!r} is not NAME==VERSION"
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = project["dependencies"] + [d for extra in project["optional-dependencies"].values()
                                        for d in extra]
    names = {re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9_.-]+", d).group()).lower()
             for d in wanted}
    assert not names - pins.keys(), f"not pinned in constraints.txt: {sorted(names - pins.keys())}"


def _engine_answers() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=10).returncode == 0
    except subprocess.TimeoutExpired:
        return False


@pytest.mark.compose
def test_compose_smoke_runs_both_profiles():
    """ops/compose-smoke.sh all: builds the images, runs the demo and the scale-out profile,
    checks every final selection against `streamfs select`. CI has no Docker engine."""
    if os.environ.get("CI") == "true":
        pytest.skip("CI has no Docker engine")
    if not _engine_answers():
        pytest.skip("no Docker engine answers (`docker info`); see README, Docker")
    proc = subprocess.run(["bash", str(REPO / "ops" / "compose-smoke.sh"), "all"],
                          capture_output=True, text=True, timeout=3600)
    assert proc.returncode == 0, proc.stderr[-4000:] + proc.stdout[-4000:]


def _variables(text: str) -> set[str]:
    return set(re.findall(r"\b(STREAMFS_[A-Z0-9_]*[A-Z0-9])\b", text))


def test_every_streamfs_variable_compose_and_the_image_set_is_one_streamfs_reads(project):
    """A renamed setting left in the compose file or the image would be ignored (a typo
    warning at best), its default used."""
    from streamfs.settings import Settings

    known = set(Settings.variables())
    compose_set = {name for service in project["services"].values()
                   for name in (service.get("environment") or {})}
    image_set = {name for line in (REPO / "ops" / "Dockerfile").read_text().splitlines()
                 if line.startswith("ENV ") for name in _variables(line)}
    assert compose_set | image_set
    assert {n for n in compose_set | image_set if n.startswith("STREAMFS_")} <= known


def test_every_cli_service_command_parses_with_the_cli(project):
    """Each one-shot's command line as the CLI takes it (`--help` after it: an option that
    does not exist, or a missing argument, is refused before the help is printed)."""
    import sys

    for name, service in project["services"].items():
        command = service.get("command")
        if not command or name == "kafka":
            continue
        entry = service.get("entrypoint") or ["streamfs"]
        if entry[:2] == ["python", "ops/compose/streams.py"]:
            continue  # the scale profile's script: its stream list is checked above
        program = ([sys.executable, *entry[1:]] if entry[0] == "python"
                   else [sys.executable, "-m", "streamfs.cli"])
        proc = subprocess.run([*program, *command, "--help"], capture_output=True, text=True,
                              cwd=REPO, timeout=120)
        assert proc.returncode == 0, (name, proc.stderr)


def test_the_broker_keeps_its_data_and_the_worker_has_time_to_stop(project):
    """Kafka's default log dir is under /tmp in its container: every topic, result and
    changelog went with the container (`down`, or `up` after a change of the service). The
    engine's default grace of 10 s killed a worker stopping during a restore (the transaction
    timeout + 10 s)."""
    from streamfs.settings import Settings

    kafka = project["services"]["kafka"]
    log_dirs = kafka["environment"]["KAFKA_LOG_DIRS"]
    assert any(v["type"] == "volume" and v["target"] == log_dirs for v in kafka["volumes"])
    worker = project["services"]["worker"]
    grace = int(re.fullmatch(r"(\d+)s", worker["stop_grace_period"]).group(1))
    assert grace >= Settings().transaction_timeout + 10 + 5
    assert any(v["target"] == "/var/lib/streamfs" for v in worker["volumes"])
    for name in CLI_SERVICES - {"watch"}:  # one-shots: a failed exit does not mend itself
        assert project["services"][name].get("restart", "no") == "no", name
    assert all(project["services"][name].get("init") is True for name in CLI_SERVICES)


def test_the_image_checks_liveness_runs_as_a_number_and_owns_its_state_dir():
    dockerfile = (REPO / "ops" / "Dockerfile").read_text()
    check = dockerfile[dockerfile.index("HEALTHCHECK"):]
    assert "--start-period=" in check.split("CMD")[0] and "/live" in check.split("\n\n")[0]
    assert re.search(r"^USER \d+$", dockerfile, re.MULTILINE)
    assert "STREAMFS_DATA_DIR=/var/lib/streamfs" in dockerfile
    assert re.search(r"chown 10001 /var/lib/streamfs", dockerfile)
