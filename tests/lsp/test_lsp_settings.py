"""settings.py: typed settings with defaults; bad values warn and fall back."""

import sys

from fxlens.lsp.settings import Settings, has_settings, parse_settings, with_root


def test_defaults():
    settings, warnings = parse_settings(None)
    assert settings == Settings() and warnings == []
    assert settings.python == sys.executable and settings.levels == ("fx", "aten")
    assert settings.execution == "safe" and settings.inlay_hints is False and settings.timeout_seconds == 60


def test_every_shape_clients_send():
    for raw in ({"fxlens": {"timeoutSeconds": 5}}, {"fxlens.timeoutSeconds": 5}, {"timeoutSeconds": 5}):
        settings, warnings = parse_settings(raw)
        assert settings.timeout_seconds == 5.0 and warnings == []


def test_good_values_are_typed():
    settings, warnings = parse_settings(
        {
            "fxlens": {
                "python": "/opt/py/bin/python",
                "levels": "fx",
                "execution": "full",
                "inlayHints": True,
                "memoryLimitMB": 512.0,
            }
        }
    )
    assert warnings == []
    assert settings.levels == ("fx",) and settings.memory_limit_mb == 512 and settings.inlay_hints is True
    assert settings.trace_options().execution == "full" and settings.trace_options().memory_mb == 512


def test_bad_values_warn_and_fall_back_one_by_one():
    settings, warnings = parse_settings(
        {
            "fxlens": {
                "timeoutSeconds": "soon",
                "execution": "yolo",
                "levels": ["fx", "x"],
                "inlayHints": "yes",
                "memoryLimitMB": -1,
                "python": 3,
                "unknown": 1,
            }
        }
    )
    assert settings == Settings()
    assert len(warnings) == 6
    assert any("fxlens.execution" in w and "'safe'" in w for w in warnings)
    assert all("using the default" in w for w in warnings)


def test_bool_is_not_a_number_and_empty_python_is_default():
    settings, warnings = parse_settings({"fxlens": {"timeoutSeconds": True, "python": "  "}})
    assert settings.timeout_seconds == 60 and settings.python == sys.executable and len(warnings) == 1


def test_has_settings():
    assert has_settings({"fxlens": {}}) and has_settings({"fxlens.python": "x"})
    assert not has_settings(None) and not has_settings({}) and not has_settings({"other": 1})


def test_infinite_and_huge_numbers_are_refused():
    settings, warnings = parse_settings({"fxlens": {"timeoutSeconds": float("inf"), "memoryLimitMB": 10**30}})
    assert settings.timeout_seconds == 60 and settings.memory_limit_mb == 4096 and len(warnings) == 2
    assert parse_settings({"fxlens": {"timeoutSeconds": float("nan")}})[0].timeout_seconds == 60


def test_relative_interpreter_paths_are_relative_to_the_workspace():
    relative = parse_settings({"fxlens": {"python": ".venv/bin/python"}})[0]
    assert with_root(relative, "/home/me/proj").python == "/home/me/proj/.venv/bin/python"
    assert with_root(relative, None).python == ".venv/bin/python"
    bare = parse_settings({"fxlens": {"python": "python3"}})[0]
    assert with_root(bare, "/home/me/proj").python == "python3"  # found on PATH
    absolute = parse_settings({"fxlens": {"python": "/usr/bin/python3"}})[0]
    assert with_root(absolute, "/home/me/proj").python == "/usr/bin/python3"


def test_values_too_small_to_trace_with_warn_and_are_raised_to_the_smallest_that_works():
    settings, warnings = parse_settings({"fxlens": {"memoryLimitMB": 0.5, "timeoutSeconds": 0.005}})
    assert settings.memory_limit_mb == 256 and settings.timeout_seconds == 1.0
    assert len(warnings) == 2 and all("too small" in w for w in warnings)
    assert any(w.startswith("fxlens.memoryLimitMB: 0.5") for w in warnings)
    settings, warnings = parse_settings({"fxlens": {"memoryLimitMB": 256, "timeoutSeconds": 1}})
    assert (settings.memory_limit_mb, settings.timeout_seconds, warnings) == (256, 1.0, [])
