"""deploy/kubernetes: every overlay renders (`kubectl kustomize`), every object is valid
against its schema (offline, kubernetes-models), checkov finds nothing unexplained, and the
values the server depends on are the server's own."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import tomllib
import yaml

from qwen3_asr_server.app import create_app
from qwen3_asr_server.metrics import Metrics
from qwen3_asr_server.serving import budget
from qwen3_asr_server.settings import ENV_PREFIX, Settings
from tests.fixtures.process import REPO

KUBE = REPO / "deploy" / "kubernetes"
OVERLAYS = ("gpu", "aligner", "cpu", "gateway")
VALIDATOR = REPO / "tests" / "kubernetes" / "validate.mjs"
NODE_MODULES = REPO / ".cache" / "kube-validate" / "node_modules"
CHECKOV = REPO / ".cache" / "checkov" / "bin" / "checkov"
Object = dict[str, Any]
CPU_LEAVES_OUT = ("PersistentVolumeClaim", "ScaledObject", "ServiceMonitor")
GRACE_MARGIN = 5  # seconds: a kill that lands as the last wait ends loses answers
AUTOSCALED = tuple(overlay for overlay in OVERLAYS if overlay != "cpu")


@cache
def rendered(overlay: str) -> tuple[Object, ...]:
    assert shutil.which("kubectl"), "kubectl is needed: scripts/test.sh installs it"
    done = subprocess.run(
        ["kubectl", "kustomize", str(KUBE / "overlays" / overlay)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return tuple(each for each in yaml.safe_load_all(done.stdout) if each)


def one(overlay: str, kind: str) -> Object:
    [found] = [each for each in rendered(overlay) if each["kind"] == kind]
    return found


def server_container(overlay: str) -> Object:
    [container] = one(overlay, "Deployment")["spec"]["template"]["spec"]["containers"]
    return container


def env(overlay: str) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in server_container(overlay)["env"]}


def validate(objects: list[Object]) -> list[Object]:
    done = subprocess.run(
        ["node", str(VALIDATOR), str(NODE_MODULES)],
        input=json.dumps(objects),
        capture_output=True,
        text=True,
        check=True,
    )
    results: list[Object] = json.loads(done.stdout)
    return results


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_overlay_renders(overlay: str) -> None:
    kinds = sorted(each["kind"] for each in rendered(overlay))
    expected = [
        "Deployment",
        "Namespace",
        "NetworkPolicy",
        "PersistentVolumeClaim",
        "PodDisruptionBudget",
        "ScaledObject",
        "Service",
        "ServiceMonitor",
    ]
    if overlay == "cpu":  # an emptyDir per pod instead; no KEDA or prometheus-operator
        expected = [kind for kind in expected if kind not in CPU_LEAVES_OUT]
    if overlay == "gateway":
        expected = sorted([*expected, "HTTPRoute"])
    assert kinds == expected
    assert {each["metadata"].get("namespace") for each in rendered(overlay)} == {
        None,  # the Namespace itself
        "qwen3-asr",
    }


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_object_is_valid_against_its_schema(overlay: str) -> None:
    results = validate(list(rendered(overlay)))
    assert [r for r in results if r["error"]] == []
    assert len(results) == len(rendered(overlay))


def test_the_schema_check_can_fail() -> None:
    """A wrong type in each kind of custom object is caught, not passed over."""
    broken = json.loads(json.dumps(rendered("gateway")))
    for each in broken:
        if each["kind"] == "Deployment":
            each["spec"]["replicas"] = "one"
        elif each["kind"] == "ScaledObject":
            each["spec"]["minReplicaCount"] = "one"
        elif each["kind"] == "ServiceMonitor":
            each["spec"]["endpoints"] = "http"
        elif each["kind"] == "HTTPRoute":
            each["spec"]["rules"] = {"backendRefs": []}
    failed = {r["kind"] for r in validate(broken) if r["error"]}
    assert failed == {"Deployment", "ScaledObject", "ServiceMonitor", "HTTPRoute"}


def test_checkov_finds_nothing_that_is_not_explained(tmp_path: Path) -> None:
    assert CHECKOV.exists(), "checkov is needed: scripts/test.sh installs it"
    for overlay in OVERLAYS:
        (tmp_path / f"{overlay}.yaml").write_text(yaml.safe_dump_all(rendered(overlay)))
    done = subprocess.run(
        [str(CHECKOV), "-d", str(tmp_path), "--framework", "kubernetes", "--skip-download",
         "--output", "json"],
        capture_output=True,
        text=True,
        check=False,
    )  # fmt: skip
    report = json.loads(done.stdout)
    results = report["results"]
    assert results["failed_checks"] == []
    assert report["summary"]["passed"] > 300
    assert report["summary"]["parsing_errors"] == 0
    for skipped in results["skipped_checks"]:  # each with its reason, in the manifest
        assert len(skipped["check_result"]["suppress_comment"]) > 30, skipped["check_id"]


@pytest.mark.parametrize("overlay", OVERLAYS)
@pytest.mark.parametrize("workers", [1, 2])
def test_the_grace_period_covers_the_whole_stop_with_a_margin(overlay: str, workers: int) -> None:
    """Kubernetes kills at terminationGracePeriodSeconds, counted from the preStop pause: the
    pause and the stop the code allows (`serving.budget`: the drain, its 503s, uvicorn's own
    grace, the workers' exit, vLLM's stop) fit in it with GRACE_MARGIN to spare."""
    pod = one(overlay, "Deployment")["spec"]["template"]["spec"]
    container = server_container(overlay)
    pause = int(container["lifecycle"]["preStop"]["exec"]["command"][-1])
    variables = env(overlay)
    settings = Settings(
        shutdown_timeout=int(variables["QWEN3_ASR_SHUTDOWN_TIMEOUT"]),
        workers=int(variables.get("QWEN3_ASR_WORKERS", workers)),
    )
    needed = pause + budget.stop_seconds(settings) + GRACE_MARGIN
    assert pod["terminationGracePeriodSeconds"] >= needed


def test_the_values_the_server_needs_are_its_own() -> None:
    settings = Settings()
    container = server_container("gpu")
    variables = env("gpu")
    [port] = container["ports"]
    assert port["containerPort"] == settings.port == int(variables["QWEN3_ASR_PORT"])
    [service_port] = one("gpu", "Service")["spec"]["ports"]
    assert service_port["targetPort"] == port["name"]
    # every variable is one the server reads
    fields = {f"{ENV_PREFIX}{name.upper()}" for name in Settings.model_fields}
    extra = {"QWEN_API_KEY", "HF_HOME"}  # api_key's second name; the Hub's cache
    for overlay in OVERLAYS:
        assert set(env(overlay)) - fields <= extra, overlay
    assert Settings.model_fields["api_key"].json_schema_extra == {"env": "QWEN_API_KEY"}
    # probes: readiness is /health, liveness the route that stays up while vLLM restarts
    paths = create_app(settings).openapi()["paths"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/health"
    assert container["livenessProbe"]["httpGet"]["path"] == "/livez"
    assert container["startupProbe"]["httpGet"]["path"] == "/health"
    assert {"/health", "/livez", "/metrics"} <= set(paths)
    startup = container["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= settings.startup_timeout
    pod = one("gpu", "Deployment")["spec"]["template"]["spec"]
    # a read-only root, with writable places for what the server and vLLM write
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    mounts = {mount["mountPath"] for mount in container["volumeMounts"]}
    assert {"/tmp", "/home/asr/.cache", variables["HF_HOME"]} <= mounts
    assert pod["securityContext"]["runAsUser"] == 10001  # the image's user


def test_the_autoscaler_reads_the_servers_own_metrics() -> None:
    [trigger] = one("gpu", "ScaledObject")["spec"]["triggers"]
    names = set(re.findall(r"\b(qwen3_asr_\w+)\{", trigger["metadata"]["query"]))
    exposed = {metric.name for metric in Metrics().registry.collect()}
    assert names == {"qwen3_asr_upstream_in_flight", "qwen3_asr_queue_depth"}
    assert names <= exposed
    # scale out while the busy pods still have free slots
    for overlay in AUTOSCALED:
        [each] = one(overlay, "ScaledObject")["spec"]["triggers"]
        slots = int(env(overlay)["QWEN3_ASR_MAX_CONCURRENT"])
        assert slots / 2 < int(each["metadata"]["threshold"]) < slots, overlay
    monitor = one("gpu", "ServiceMonitor")["spec"]["endpoints"][0]
    assert (monitor["port"], monitor["path"]) == ("http", "/metrics")
    # ServiceMonitor's job label is the Service's name: what the query selects on
    assert f'job="{one("gpu", "Service")["metadata"]["name"]}"' in trigger["metadata"]["query"]


def test_the_images_are_the_releases_and_each_overlay_asks_for_what_it_runs_on() -> None:
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert server_container("gpu")["image"] == f"ghcr.io/malaiwah/qwen3-asr-server:{version}"
    assert server_container("cpu")["image"].endswith(f":{version}-cpu")  # image.yml's suffix
    for overlay in ("gpu", "aligner", "gateway"):
        resources = server_container(overlay)["resources"]
        assert resources["limits"]["nvidia.com/gpu"] == 1
    assert "nvidia.com/gpu" not in json.dumps(server_container("cpu")["resources"])
    assert env("aligner")["QWEN3_ASR_ALIGNER"] == "Qwen/Qwen3-ForcedAligner-0.6B"
    assert "QWEN3_ASR_ALIGNER" in {f"{ENV_PREFIX}{name.upper()}" for name in Settings.model_fields}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_selector_finds_the_pods(overlay: str) -> None:
    """The Service, the PodDisruptionBudget, the NetworkPolicy and the ServiceMonitor (through
    the Service's labels) select the Deployment's pods, and the autoscaler scales it."""
    pods = one(overlay, "Deployment")["spec"]["template"]["metadata"]["labels"]
    budget = one(overlay, "PodDisruptionBudget")["spec"]
    selectors = {
        "Service": one(overlay, "Service")["spec"]["selector"],
        "PodDisruptionBudget": budget["selector"]["matchLabels"],
        "NetworkPolicy": one(overlay, "NetworkPolicy")["spec"]["podSelector"]["matchLabels"],
    }
    for kind, selector in selectors.items():
        assert selector, kind  # an empty one would select every pod, or none
        assert selector.items() <= pods.items(), kind
    if overlay in AUTOSCALED:
        service = one(overlay, "Service")["metadata"]["labels"]
        monitor = one(overlay, "ServiceMonitor")["spec"]["selector"]["matchLabels"]
        assert monitor.items() <= service.items()
        target = one(overlay, "ScaledObject")["spec"]["scaleTargetRef"]["name"]
        assert target == one(overlay, "Deployment")["metadata"]["name"]
