"""deploy/kubernetes and the jobs (Files and Batches): /data writable in every overlay, and
components/jobs, which every overlay takes, sharing the queue in PostgreSQL and the files on
one volume, opening nothing new to the cluster, and scaling on the batch lines waiting."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from qwen3_asr_server.observability.metrics import Metrics
from qwen3_asr_server.settings.composite import Settings
from qwen3_asr_server.settings.flags import ENV_PREFIX
from tests.kubernetes.test_manifests import (
    AUTOSCALED,
    GUIDE,
    OVERLAYS,
    Object,
    env,
    kind_in,
    one,
    overlay_of_ones_own,
    rendered,
    server_container,
    validate,
)

SECRET = ("qwen3-asr-jobs-db", "url")


def with_jobs(tmp_path: Path, overlay: str) -> tuple[Object, ...]:
    return overlay_of_ones_own(
        tmp_path,
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        f"resources: [../deploy/kubernetes/overlays/{overlay}]\n"
        "components: [../deploy/kubernetes/components/jobs]\n",
    )


def pod_of(objects: tuple[Object, ...]) -> Object:
    pod: Object = kind_in(objects, "Deployment")["spec"]["template"]["spec"]
    return pod


def data_volume(pod: Object) -> Object:
    """The volume mounted where the server keeps its jobs (its QWEN3_ASR_DATA_DIR)."""
    [container] = pod["containers"]
    variables = {e["name"]: e.get("value") for e in container["env"]}
    data_dir = Settings(data_dir=variables[f"{ENV_PREFIX}DATA_DIR"]).data_path
    [mount] = [m for m in container["volumeMounts"] if Path(m["mountPath"]) == data_dir]
    assert not mount.get("readOnly", False)
    [volume] = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    return volume


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_overlay_gives_the_jobs_a_writable_folder_of_the_pods_own(overlay: str) -> None:
    """The root filesystem is read-only: without a volume at /data the server could not
    keep a file, nor start its SQLite."""
    assert server_container(overlay)["securityContext"]["readOnlyRootFilesystem"] is True
    volume = data_volume(one(overlay, "Deployment")["spec"]["template"]["spec"])
    assert set(volume) == {"name", "emptyDir"}
    assert volume["emptyDir"]["sizeLimit"]
    assert f"{ENV_PREFIX}JOBS_DB" not in env(overlay)  # SQLite there, unless components/jobs


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_jobs_component_renders_valid_objects_with_every_overlay(
    tmp_path: Path, overlay: str
) -> None:
    objects = with_jobs(tmp_path, overlay)
    assert [r for r in validate(list(objects)) if r["error"]] == []
    kinds = sorted(each["kind"] for each in objects)
    assert kinds == sorted([*(each["kind"] for each in rendered(overlay)), "PersistentVolumeClaim"])
    assert {each["metadata"].get("namespace") for each in objects} == {None, "qwen3-asr"}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_jobs_component_takes_the_database_url_from_a_required_secret(
    tmp_path: Path, overlay: str
) -> None:
    [container] = pod_of(with_jobs(tmp_path, overlay))["containers"]
    variables = {e["name"]: e for e in container["env"]}
    reference = variables.pop(f"{ENV_PREFIX}JOBS_DB")["valueFrom"]["secretKeyRef"]
    # a missing Secret keeps the pod from starting, rather than batches in a pod's own SQLite
    assert (reference["name"], reference["key"]) == SECRET
    assert reference.get("optional", False) is False
    assert {k: v.get("value", "") for k, v in variables.items()} == env(overlay)
    assert f"{ENV_PREFIX}JOBS_DB" in {
        f"{ENV_PREFIX}{name.upper()}" for name in Settings.model_fields
    }
    guide = GUIDE.read_text()
    assert f"kubectl create secret generic {SECRET[0]}" in guide
    assert f"--from-literal={SECRET[1]}=postgresql://" in guide
    assert "components/jobs" in guide


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_jobs_component_shares_one_volume_at_data_between_the_replicas(
    tmp_path: Path, overlay: str
) -> None:
    objects = with_jobs(tmp_path, overlay)
    volume = data_volume(pod_of(objects))
    assert set(volume) == {"name", "persistentVolumeClaim"}  # the emptyDir replaced
    claims = {
        c["metadata"]["name"]: c["spec"] for c in objects if c["kind"] == "PersistentVolumeClaim"
    }
    claim = claims[volume["persistentVolumeClaim"]["claimName"]]
    assert claim["accessModes"] == ["ReadWriteMany"]  # pods on several nodes, one folder
    assert "storageClassName" not in claim  # the default; the overlay names its own
    quota = Settings().storage_quota_mb
    assert int(claim["resources"]["requests"]["storage"].removesuffix("Gi")) * 1024 > quota


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_jobs_component_opens_nothing_in_and_postgresql_out(
    tmp_path: Path, overlay: str
) -> None:
    objects = with_jobs(tmp_path, overlay)
    policy = kind_in(objects, "NetworkPolicy")["spec"]
    before = one(overlay, "NetworkPolicy")["spec"]
    assert policy["ingress"] == before["ingress"]
    assert kind_in(objects, "Service") == one(overlay, "Service")
    [container] = pod_of(objects)["containers"]
    assert container["ports"] == server_container(overlay)["ports"]
    assert policy["egress"] == [*before["egress"], {"ports": [{"port": 5432, "protocol": "TCP"}]}]
    # an https:// webhook goes out through the base's rule
    assert {"ports": [{"port": 443, "protocol": "TCP"}]} in before["egress"]


@pytest.mark.parametrize("overlay", AUTOSCALED)
def test_with_the_autoscaler_the_jobs_component_scales_on_the_lines_waiting(
    tmp_path: Path, overlay: str
) -> None:
    objects = with_jobs(tmp_path, overlay)
    scaler = kind_in(objects, "ScaledObject")["spec"]
    before = one(overlay, "ScaledObject")["spec"]
    *kept, added = scaler["triggers"]
    assert kept == before["triggers"]
    assert {k: v for k, v in scaler.items() if k != "triggers"} == {
        k: v for k, v in before.items() if k != "triggers"
    }
    assert added["type"] == "prometheus"
    metadata = added["metadata"]
    assert metadata["serverAddress"] == before["triggers"][0]["metadata"]["serverAddress"]
    assert int(metadata["threshold"]) >= 1
    query = metadata["query"]
    # every pod reports the whole queue (the database's count): the largest, not the sum
    [(aggregate, name, selector)] = re.findall(r"(\w+)\((qwen3_asr_\w+)\{([^}]*)\}\)", query)
    assert aggregate == "max"
    assert name == "qwen3_asr_batch_queue"
    assert name in {metric.name for metric in Metrics().registry.collect()}
    for label in (
        f'namespace="{kind_in(objects, "Deployment")["metadata"]["namespace"]}"',
        f'job="{one(overlay, "Service")["metadata"]["name"]}"',
        'state="queued"',
    ):
        assert label in selector, query


def test_without_the_autoscaler_the_jobs_component_adds_no_scaler(tmp_path: Path) -> None:
    assert "ScaledObject" not in {each["kind"] for each in with_jobs(tmp_path, "cpu")}


def test_the_pages_overlay_with_the_jobs_renders_them_shared(tmp_path: Path) -> None:
    blocks = re.findall(r"\n( *)```yaml\n(.*?)\1```", GUIDE.read_text(), re.S)
    [example] = [
        textwrap.dedent(block)
        for _, block in blocks
        if block.lstrip().startswith("# my-asr/kustomization.yaml, with the jobs")
    ]
    volume = data_volume(pod_of(overlay_of_ones_own(tmp_path, example)))
    assert volume["persistentVolumeClaim"]["claimName"] == "qwen3-asr-jobs"
