"""deploy/kubernetes: every overlay renders (`kubectl kustomize`), every object is valid
against its schema (offline, kubernetes-models), checkov finds nothing unexplained, and the
values the server depends on are the server's own."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from qwen3_asr_server.app import create_app
from qwen3_asr_server.observability.metrics import Metrics
from qwen3_asr_server.serving import stop_time
from qwen3_asr_server.settings.composite import Settings
from qwen3_asr_server.settings.flags import ENV_PREFIX, described
from tests.fixtures.process import REPO

# the manual's Kubernetes page: its overlay of one's own, and the components it names
GUIDE = REPO / "docs" / "operations" / "kubernetes.md"

KUBE = REPO / "deploy" / "kubernetes"
OVERLAYS = ("gpu", "aligner", "cpu", "gateway")
VALIDATOR = REPO / "tests" / "kubernetes" / "validate.mjs"
NODE_MODULES = REPO / ".cache" / "kube-validate" / "node_modules"
CHECKOV = REPO / ".cache" / "checkov" / "bin" / "checkov"
Object = dict[str, Any]
CPU_LEAVES_OUT = ("PersistentVolumeClaim", "ScaledObject", "ServiceMonitor")
GRACE_MARGIN = 5  # seconds: a kill that lands as the last wait ends loses answers
AUTOSCALED = tuple(overlay for overlay in OVERLAYS if overlay != "cpu")


def render(folder: Path) -> tuple[Object, ...]:
    assert shutil.which("kubectl"), "kubectl is needed: scripts/test.sh installs it"
    done = subprocess.run(
        ["kubectl", "kustomize", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return tuple(each for each in yaml.safe_load_all(done.stdout) if each)


@cache
def rendered(overlay: str) -> tuple[Object, ...]:
    return render(KUBE / "overlays" / overlay)


def overlay_of_ones_own(tmp_path: Path, kustomization: str) -> tuple[Object, ...]:
    """`kustomization` rendered from my-asr/ beside deploy/ (as the Kubernetes page puts it)."""
    (tmp_path / "deploy").symlink_to(REPO / "deploy")
    (tmp_path / "my-asr").mkdir()
    (tmp_path / "my-asr" / "kustomization.yaml").write_text(kustomization)
    return render(tmp_path / "my-asr")


def kind_in(objects: tuple[Object, ...], kind: str) -> Object:
    [found] = [each for each in objects if each["kind"] == kind]
    return found


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
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    for overlay in OVERLAYS:
        (manifests / f"{overlay}.yaml").write_text(yaml.safe_dump_all(rendered(overlay)))
    (tmp_path / "every").mkdir()  # and an overlay with every component, Wyoming's and jobs too
    every = overlay_of_ones_own(
        tmp_path / "every",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        "resources: [../deploy/kubernetes/overlays/gateway]\ncomponents:\n"
        "  - ../deploy/kubernetes/components/wyoming\n  - ../deploy/kubernetes/components/jobs\n",
    )
    (manifests / "every.yaml").write_text(yaml.safe_dump_all(every))
    done = subprocess.run(
        [str(CHECKOV), "-d", str(manifests), "--framework", "kubernetes", "--skip-download",
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
    pause and the stop the code allows (`serving.stop_time`: the drain, its 503s, uvicorn's own
    grace, the workers' exit, vLLM's stop) fit in it with GRACE_MARGIN to spare."""
    pod = one(overlay, "Deployment")["spec"]["template"]["spec"]
    container = server_container(overlay)
    pause = int(container["lifecycle"]["preStop"]["exec"]["command"][-1])
    variables = env(overlay)
    settings = Settings(
        shutdown_timeout=int(variables["QWEN3_ASR_SHUTDOWN_TIMEOUT"]),
        workers=int(variables.get("QWEN3_ASR_WORKERS", workers)),
    )
    needed = pause + stop_time.stop_seconds(settings) + GRACE_MARGIN
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
    assert described("api_key", Settings.model_fields["api_key"]).env[1:] == ("QWEN_API_KEY",)
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
    assert {
        "/tmp",
        "/home/asr/.cache",
        variables["HF_HOME"],
        variables["QWEN3_ASR_DATA_DIR"],
    } <= mounts
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


# --- what a deployment is safe by, and what it leaves to its overlay --------------------------

PSA_RESTRICTED_VOLUMES = {
    "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
    "projected", "secret",
}  # fmt: skip


def api_key(objects: tuple[Object, ...]) -> list[Object]:
    [container] = kind_in(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    return [each for each in container["env"] if each["name"] == "QWEN_API_KEY"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_api_key_is_required(overlay: str) -> None:
    """A missing Secret keeps the pod from starting, rather than serving without auth."""
    [variable] = api_key(rendered(overlay))
    reference = variable["valueFrom"]["secretKeyRef"]
    assert (reference["name"], reference["key"]) == ("qwen3-asr-server", "api-key")
    assert reference.get("optional", False) is False


def test_no_auth_is_a_component_an_overlay_names(tmp_path: Path) -> None:
    objects = overlay_of_ones_own(
        tmp_path,
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        "resources: [../deploy/kubernetes/overlays/gateway]\n"
        "components: [../deploy/kubernetes/components/no-auth]\n",
    )
    assert api_key(objects) == []
    [container] = kind_in(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    left = {e["name"]: e.get("value", "") for e in container["env"]}
    assert left == {k: v for k, v in env("gateway").items() if k != "QWEN_API_KEY"}
    assert "components/no-auth" in GUIDE.read_text()


def ingress_peers(objects: tuple[Object, ...]) -> list[Object]:
    """Every peer the NetworkPolicy admits, each checked to select something named."""
    policy = kind_in(objects, "NetworkPolicy")["spec"]
    assert "Ingress" in policy["policyTypes"]
    peers = []
    for rule in policy["ingress"]:
        assert rule.get("from"), rule  # an empty or missing `from` admits every source
        assert [port["port"] for port in rule["ports"]] == ["http"]
        for peer in rule["from"]:
            assert peer, rule
            for selector in ("podSelector", "namespaceSelector"):
                if selector in peer:  # `{}` selects every pod, or every namespace
                    assert peer[selector].get("matchLabels") or peer[selector].get(
                        "matchExpressions"
                    ), peer
            peers.append(peer)
    return peers


CLIENT = {"podSelector": {"matchLabels": {"qwen3-asr-server/client": "true"}}}
PROMETHEUS = {
    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
    "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}},
}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_network_policy_admits_only_the_peers_it_names(overlay: str) -> None:
    peers = ingress_peers(rendered(overlay))
    assert peers[0] == CLIENT  # the base's: pods of its namespace that carry the label
    expected = [CLIENT]
    if overlay in AUTOSCALED:  # Prometheus scrapes /metrics, where the autoscaler asks it
        expected.append(PROMETHEUS)
        address = one(overlay, "ScaledObject")["spec"]["triggers"][0]["metadata"]
        assert ".monitoring.svc:" in address["serverAddress"]
    if overlay == "gateway":  # Envoy Gateway's proxies for the route's parent
        [parent] = one(overlay, "HTTPRoute")["spec"]["parentRefs"]
        expected.append(
            {
                "namespaceSelector": {
                    "matchLabels": {"kubernetes.io/metadata.name": "envoy-gateway-system"}
                },
                "podSelector": {
                    "matchLabels": {
                        "gateway.envoyproxy.io/owning-gateway-name": parent["name"],
                        "gateway.envoyproxy.io/owning-gateway-namespace": "qwen3-asr",
                    }
                },
            }
        )
    assert peers == expected


def test_the_readmes_own_overlay_names_a_storage_class_and_opens_the_policy(
    tmp_path: Path,
) -> None:
    """The Kubernetes page's overlay of one's own renders, and does what it says."""
    blocks = re.findall(r"```yaml\n(.*?)```", GUIDE.read_text(), re.S)
    [example] = [each for each in blocks if each.startswith("# my-asr/kustomization.yaml")]
    objects = overlay_of_ones_own(tmp_path, example)
    assert kind_in(objects, "PersistentVolumeClaim")["spec"]["storageClassName"] == "nfs-csi"
    mine = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "my-app"}}}
    assert ingress_peers(objects) == [*ingress_peers(rendered("gpu")), mine]
    assert len(api_key(objects)) == 1
    # and its commented-out component, taken in, leaves no key
    uncommented = example.replace("# components:", "components:").replace("#   - ", "  - ")
    other = tmp_path / "other"
    other.mkdir()
    assert api_key(overlay_of_ones_own(other, uncommented)) == []


def test_the_base_claim_leaves_the_storage_class_to_the_overlay() -> None:
    [claim] = [each for each in rendered("gpu") if each["kind"] == "PersistentVolumeClaim"]
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    assert "storageClassName" not in claim["spec"]  # the default; "" would mean none at all


@pytest.mark.parametrize("overlay", AUTOSCALED)
def test_keda_owns_the_replica_count_and_scales_down_slowly(overlay: str) -> None:
    deployment = one(overlay, "Deployment")
    scaler = one(overlay, "ScaledObject")["spec"]
    assert scaler["scaleTargetRef"]["name"] == deployment["metadata"]["name"]
    assert "replicas" not in deployment["spec"]  # every apply would reset KEDA's count
    # cooldownPeriod times only the step to zero; above it the HPA's behaviour rules
    assert scaler["minReplicaCount"] >= 1
    assert "cooldownPeriod" not in scaler
    down = scaler["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleDown"]
    assert down["stabilizationWindowSeconds"] >= 300
    assert down["policies"] == [{"type": "Pods", "value": 1, "periodSeconds": 300}]
    # the query counts this namespace's pods only, not a namesake's elsewhere
    query = scaler["triggers"][0]["metadata"]["query"]
    namespace = deployment["metadata"]["namespace"]
    selectors = re.findall(r"\{([^}]*)\}", query)
    assert len(selectors) == 2
    for selector in selectors:
        assert f'namespace="{namespace}"' in selector, query


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_disruption_budget_keeps_a_pod_up_and_never_blocks_a_drain(overlay: str) -> None:
    budget_spec = one(overlay, "PodDisruptionBudget")["spec"]
    # minAvailable 1 with one replica would block the node's drain for good
    assert "minAvailable" not in budget_spec
    assert budget_spec["maxUnavailable"] == 1
    if overlay in AUTOSCALED:  # at the fewest replicas, one still serves during a drain
        fewest = one(overlay, "ScaledObject")["spec"]["minReplicaCount"]
        assert fewest - budget_spec["maxUnavailable"] >= 1


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_a_release_image_is_pulled_once_and_one_slow_answer_keeps_a_pod_ready(
    overlay: str,
) -> None:
    container = server_container(overlay)
    tag = container["image"].rsplit(":", 1)[1]
    assert re.fullmatch(r"\d+\.\d+\.\d+(-cpu)?", tag)  # a release's, which never moves
    assert container["imagePullPolicy"] == "IfNotPresent"
    readiness = container["readinessProbe"]
    assert readiness["failureThreshold"] >= 3
    assert 2 <= readiness["timeoutSeconds"] <= readiness["periodSeconds"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_namespace_enforces_pod_security_restricted_and_the_pods_meet_it(
    overlay: str,
) -> None:
    """The Pod Security Standards' restricted rules (and so baseline's), checked on the pod."""
    labels = one(overlay, "Namespace")["metadata"]["labels"]
    for mode in ("enforce", "audit", "warn"):
        assert labels[f"pod-security.kubernetes.io/{mode}"] == "restricted"
    pod = one(overlay, "Deployment")["spec"]["template"]["spec"]
    for host in ("hostNetwork", "hostPID", "hostIPC"):
        assert pod.get(host, False) is False
    for volume in pod["volumes"]:
        assert set(volume) - {"name"} <= PSA_RESTRICTED_VOLUMES, volume
    pod_context = pod.get("securityContext", {})
    assert pod_context.get("runAsUser", 1) != 0
    for container in [*pod.get("initContainers", []), *pod["containers"]]:
        context = container.get("securityContext", {})
        assert context.get("privileged", False) is False
        assert context["allowPrivilegeEscalation"] is False
        assert context.get("runAsNonRoot", pod_context.get("runAsNonRoot")) is True
        assert context.get("runAsUser", 1) != 0
        seccomp = context.get("seccompProfile", pod_context.get("seccompProfile", {}))
        assert seccomp.get("type") in ("RuntimeDefault", "Localhost")
        assert context["capabilities"]["drop"] == ["ALL"]
        assert set(context["capabilities"].get("add", [])) <= {"NET_BIND_SERVICE"}
        assert all("hostPort" not in port for port in container.get("ports", []))


# --- components/wyoming: Home Assistant's port, when an overlay asks for it --------------------

WYOMING = 10300


def with_wyoming(tmp_path: Path, overlay: str) -> tuple[Object, ...]:
    return overlay_of_ones_own(
        tmp_path,
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        f"resources: [../deploy/kubernetes/overlays/{overlay}]\n"
        "components: [../deploy/kubernetes/components/wyoming]\n",
    )


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_wyoming_port_is_closed_unless_an_overlay_names_its_component(overlay: str) -> None:
    assert not {name for name in env(overlay) if "WYOMING" in name}
    assert [port["name"] for port in server_container(overlay)["ports"]] == ["http"]
    assert [port["name"] for port in one(overlay, "Service")["spec"]["ports"]] == ["http"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_wyoming_component_serves_10300_in_the_cluster_to_the_clients_only(
    tmp_path: Path, overlay: str
) -> None:
    objects = with_wyoming(tmp_path, overlay)
    assert [r for r in validate(list(objects)) if r["error"]] == []
    [container] = kind_in(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert {p["name"]: p["containerPort"] for p in container["ports"]} == {
        "http": 8000,
        "wyoming": WYOMING,
    }
    variables = {e["name"]: e.get("value", "") for e in container["env"]}
    mine = {name: value for name, value in variables.items() if "WYOMING" in name}
    # the settings the server reads: its port, on the pod's interfaces (where the Service goes)
    settings = Settings(**{name.removeprefix(ENV_PREFIX).lower(): v for name, v in mine.items()})
    assert (settings.wyoming_port, settings.wyoming_host) == (WYOMING, "0.0.0.0")
    assert {k: v for k, v in variables.items() if k not in mine} == env(overlay)
    service = kind_in(objects, "Service")["spec"]
    assert service["type"] == "ClusterIP"
    assert {p["name"]: (p["port"], p["targetPort"]) for p in service["ports"]} == {
        "http": (8000, "http"),
        "wyoming": (WYOMING, "wyoming"),
    }
    # the API's rule as the overlay has it; the port's own admits the base's clients alone
    rules = kind_in(objects, "NetworkPolicy")["spec"]["ingress"]
    assert rules[:-1] == one(overlay, "NetworkPolicy")["spec"]["ingress"]
    assert rules[-1] == {"from": [CLIENT], "ports": [{"port": "wyoming", "protocol": "TCP"}]}
    assert "components/wyoming" in GUIDE.read_text()
