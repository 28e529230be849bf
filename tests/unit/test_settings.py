from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from qwen3_asr_server.main import main
from qwen3_asr_server.serving.cli import parse_args
from qwen3_asr_server.settings import reference
from qwen3_asr_server.settings.composite import GROUPS, Settings
from qwen3_asr_server.settings.flags import ENV_PREFIX

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "operations" / "configuration.md"


def test_defaults() -> None:
    settings, vllm_args = parse_args([])
    assert vllm_args == []
    assert settings.host == "0.0.0.0"
    assert settings.port == 8000
    assert settings.model == "Qwen/Qwen3-ASR-1.7B"
    assert settings.served_name == "Qwen/Qwen3-ASR-1.7B"
    assert settings.max_model_len == 4096
    assert settings.kv_cache_dtype is None  # fp8 on GPU, auto on CPU: launch decides
    assert settings.enable_prefix_caching is True
    assert settings.api_key is None
    assert settings.model_aliases[:2] == ["gpt-transcribe", "gpt-4o-transcribe"]
    assert "whisper-1" in settings.model_aliases
    assert settings.wyoming_port is None  # off
    assert settings.wyoming_host == "127.0.0.1"  # no authentication: loopback unless asked


def test_unknown_flags_are_kept_in_order_for_vllm() -> None:
    settings, vllm_args = parse_args(
        [
            "--enforce-eager",
            "--max-model-len",
            "2048",
            "--tensor-parallel-size",
            "2",
            "--max-num",
            "3",
        ]
    )
    assert settings.max_model_len == 2048
    assert vllm_args == ["--enforce-eager", "--tensor-parallel-size", "2", "--max-num", "3"]
    assert settings.max_num_seqs is None  # no abbreviation matching of our own flags


def test_flags_env_and_their_precedence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QWEN3_ASR_MODEL_ID", "org/from-env")
    monkeypatch.setenv("QWEN_API_KEY", "k1")
    monkeypatch.setenv("QWEN3_ASR_PORT", "9000")
    monkeypatch.setenv("QWEN3_ASR_MODEL_ALIASES", "whisper-1, my-asr")
    monkeypatch.setenv("MODEL", "must-not-be-read")
    settings, _ = parse_args(["--port", "9100", "--no-enable-prefix-caching", "--cpu"])
    assert settings.model == "org/from-env"
    assert settings.api_key is not None
    assert settings.api_key.get_secret_value() == "k1"
    assert "k1" not in repr(settings)
    assert settings.port == 9100
    assert settings.enable_prefix_caching is False
    assert settings.cpu is True
    assert settings.model_aliases == ["whisper-1", "my-asr"]
    monkeypatch.setenv("QWEN3_ASR_API_KEY", "k2")  # the prefixed name wins
    assert parse_args([])[0].api_key.get_secret_value() == "k2"  # type: ignore[union-attr]
    assert parse_args(["--model", "cli"])[0].model == "cli"


@pytest.mark.parametrize("field", ["model_aliases", "allowed_origins", "wyoming_keywords"])
def test_a_list_flag_is_comma_separated(field: str) -> None:
    flag = "--" + field.replace("_", "-")
    settings, _ = parse_args(["--wyoming-port", "10300", flag, "a, b ,,c"])
    assert getattr(settings, field) == ["a", "b", "c"]


def test_wyoming_keywords_and_the_home_assistant_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QWEN3_ASR_HASS_TOKEN", "secret-token")
    settings, _ = parse_args(
        [
            "--wyoming-port",
            "10300",
            "--wyoming-keywords",
            "Ecobee, Nanit ,",
            "--hass-url",
            "http://ha:8123/",
        ]
    )
    assert settings.wyoming_keywords == ["Ecobee", "Nanit"]
    assert settings.hass_url == "http://ha:8123"
    assert settings.hass_token is not None
    assert settings.hass_token.get_secret_value() == "secret-token"
    assert "secret-token" not in repr(settings)


def test_backend_url_loses_its_trailing_slash() -> None:
    assert parse_args(["--backend-url", "http://gpu:8000/"])[0].backend_url == "http://gpu:8000"


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["--port", "70000"], "--port: Input should be less than or equal to 65535"),
        (["--gpu-memory-utilization", "1.5"], "--gpu-memory-utilization: Input should be"),
        (["--log-level", "loud"], "--log-level: Input should be 'debug', 'info'"),
        (["--wyoming-zeroconf"], "--wyoming-zeroconf advertises --wyoming-port: give that too"),
        (["--wyoming-port", "10300", "--wyoming-zeroconf"], "--wyoming-zeroconf would advertise"),
        (["--wyoming-zeroconf", "x" * 64], "--wyoming-zeroconf: String should have at most 63"),
        (["--aligner", "a", "--aligner-url", "http://b"], "give --aligner (launch it) or"),
        (["--aligner-vllm-args=--dtype 'float32"], "--aligner-vllm-args: No closing quotation"),
        (["--wyoming-port", "8000"], "--wyoming-port must differ from --port"),
        (["--wyoming-port", "0"], "--wyoming-port: Input should be greater than or equal to 1"),
        (["--wyoming-prompt", "é" * 2000], "--wyoming-prompt, --wyoming-keywords: The prompt"),
        (["--hass-url", "http://ha:8123"], "--hass-url needs --hass-token"),
        (["--hass-url", "ha:8123", "--hass-token", "t"], "--hass-url must be an http://"),
        (
            ["--hass-url", "http://ha:8123", "--hass-token", "t"],
            "--hass-url biases Wyoming commands: it needs",
        ),
    ],
)
def test_invalid_values_are_a_usage_error_naming_the_flag(
    args: list[str], problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        parse_args(args)
    assert exit_.value.code == 2
    error = capsys.readouterr().err
    assert f"server.py: error: {problem}" in error
    assert "Traceback" not in error
    assert "pydantic" not in error


def test_the_reference_documents_every_setting() -> None:
    page = REFERENCE.read_text()
    for name, field in Settings.model_fields.items():
        flag = "--" + name.replace("_", "-")
        row = re.search(rf"^\| `{flag}` \| `([A-Z0-9_]+)`(?: / `([A-Z0-9_]+)`)? \|", page, re.M)
        assert row, f"{flag} is missing from the configuration reference"
        assert row.group(1) == "QWEN3_ASR_" + name.upper()
        extra = field.json_schema_extra
        if isinstance(extra, dict):
            assert row.group(2) == extra.get("env")


def test_an_empty_api_key_means_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QWEN_API_KEY", "")
    monkeypatch.setenv("QWEN3_ASR_BACKEND_API_KEY", "  ")
    settings, _ = parse_args([])
    assert settings.api_key is None
    assert settings.backend_api_key is None
    assert parse_args(["--api-key", "k"])[0].api_key is not None


def test_the_committed_reference_is_the_one_the_settings_write() -> None:
    assert REFERENCE.read_text() == reference.page(), (
        "docs/operations/configuration.md is stale: python -m qwen3_asr_server.settings.reference"
        " > docs/operations/configuration.md"
    )


def test_help_shows_each_flag_in_its_group_with_its_default_and_variables(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    shown = capsys.readouterr().out
    headings = [line[:-1] for line in shown.splitlines() if line.endswith(":") and line[0] != " "]
    assert headings == ["options", *(title for title, _ in GROUPS)]
    assert headings[1:] == [
        "server",
        "engine",
        "aligner and diarizer",
        "limits",
        "jobs: files, batches, webhooks",
        "Realtime",
        "Wyoming and Home Assistant",
        "logging and tracing",
    ]
    text = " ".join(shown.split())  # as read, whatever the terminal's width broke
    assert "--port PORT Port the API listens on. (default: 8000) [env: QWEN3_ASR_PORT]" in text
    assert "(default: gpt-transcribe,gpt-4o-transcribe,gpt-4o-mini-transcribe," in text
    assert "--ui, --no-ui Serve the playground page" in text
    assert "[env: QWEN3_ASR_API_KEY, QWEN_API_KEY]" in text
    assert "--wyoming-zeroconf [NAME]" in text
    assert "--log-level {debug,info,warning,error}" in text
    for placeholder in ("SecretStr", "list[str]", " str ", " int ", " float ", "null", "None"):
        assert placeholder not in text
    # each flag once, in its group's order, and every setting has one
    listed = re.findall(r"^  --([a-z-]+)", shown, re.M)
    flags = [name.replace("_", "-") for _, group in GROUPS for name in group.model_fields]
    assert listed == flags
    assert sorted(flags) == sorted(name.replace("_", "-") for name in Settings.model_fields)
    for name in Settings.model_fields:
        assert f"{ENV_PREFIX}{name.upper()}]" in text or f"{ENV_PREFIX}{name.upper()}," in text


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"webhook_url": "http://hooks.test/h"}, "go together"),
        ({"webhook_secret": "whsec_" + base64.b64encode(b"k" * 32).decode()}, "go together"),
        ({"webhook_url": "ftp://hooks.test/h", "webhook_secret": "whsec_a2tr"}, "http://"),
        ({"webhook_url": "http://hooks.test/h", "webhook_secret": "secret"}, "whsec_"),
        # the openai SDK decodes it without adding the padding back: it could not verify
        ({"webhook_url": "http://hooks.test/h", "webhook_secret": "whsec_a2traw"}, "padded"),
    ],
)
def test_webhooks_need_a_url_and_a_secret_the_sdk_can_verify_with(
    given: dict[str, str], said: str
) -> None:
    with pytest.raises(ValidationError, match=said):
        Settings(model="x", **given)
