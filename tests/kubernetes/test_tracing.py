"""components/tracing with every overlay: the objects stay valid, the server container is
pointed at the collector and writes JSON lines, and the policy lets OTLP/HTTP out."""

from __future__ import annotations

from pathlib import Path

import pytest

from qwen3_asr_server.observability.otlp import destination
from qwen3_asr_server.settings.flags import ENV_PREFIX
from tests.kubernetes.test_manifests import (
    OVERLAYS,
    Object,
    kind_in,
    overlay_of_ones_own,
    validate,
)


def with_tracing(tmp_path: Path, overlay: str) -> tuple[Object, ...]:
    return overlay_of_ones_own(
        tmp_path,
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        f"resources: [../deploy/kubernetes/overlays/{overlay}]\n"
        "components: [../deploy/kubernetes/components/tracing]\n",
    )


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_tracing_component_points_every_pod_at_the_collector(
    tmp_path: Path, overlay: str
) -> None:
    objects = with_tracing(tmp_path, overlay)
    assert [r for r in validate(list(objects)) if r["error"]] == []
    [container] = kind_in(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    variables = {each["name"]: each.get("value") for each in container["env"]}
    assert variables[f"{ENV_PREFIX}LOG_FORMAT"] == "json"
    found = destination(None, {k: v for k, v in variables.items() if isinstance(v, str)})
    assert found is not None
    assert found.for_vllm == "http://otel-collector.monitoring.svc:4318/v1/traces"
    egress = kind_in(objects, "NetworkPolicy")["spec"]["egress"]
    assert {"ports": [{"port": 4318, "protocol": "TCP"}]} in egress
