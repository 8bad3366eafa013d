"""Every CUFORGE_* setting through its typed accessor; a value cuforge cannot use is a ConfigError."""

from __future__ import annotations

import os

import pytest

import cuforge as cf
from cuforge import _config


def test_typed_accessors_read_the_environment_and_scopes(monkeypatch):
    monkeypatch.setenv("CUFORGE_TEMPLATE_PATH", os.pathsep.join(["/a", "", "/b"]))
    monkeypatch.setenv("CUFORGE_LAUNCHER", " Bindings ")
    monkeypatch.setenv("CUFORGE_ARCH", " sm_90 ")
    assert _config.template_path() == ["/a", "/b"]
    assert _config.launcher() == "bindings" and _config.arch() == "sm_90"
    with _config.scope(cache_max_mb="1.5", cache_lock_s="2"):
        assert _config.cache_max_bytes() == int(1.5 * 2**20) and _config.cache_lock_seconds() == 2.0


def test_the_cpu_time_limit_is_read_from_the_environment_unless_overridden(monkeypatch):
    plugin = _config.overrides_of("cpu_timeout")  # (the pytest plugin's, put back after)
    monkeypatch.setenv("CUFORGE_CPU_TIMEOUT", "2.5")
    _config.restore_overrides(("cpu_timeout",), {})
    try:
        assert _config.cpu_timeout() == 2.5
        with _config.scope(cpu_timeout="0"):
            assert _config.cpu_timeout() == 0
    finally:
        _config.restore_overrides(("cpu_timeout",), plugin)


def test_the_checked_mode_limits_cpu_launches_unless_told(monkeypatch):
    """CUFORGE_CHECK=1 is a testing mode: a deadlocked kernel fails after 60 s, as under the
    pytest plugin, unless CUFORGE_CPU_TIMEOUT says otherwise."""
    plugin = _config.overrides_of("cpu_timeout")
    monkeypatch.delenv("CUFORGE_CPU_TIMEOUT", raising=False)
    _config.restore_overrides(("cpu_timeout",), {})
    try:
        with _config.scope(check="0"):
            assert _config.cpu_timeout() == 0
        with _config.scope(check="1"):
            assert _config.cpu_timeout() == _config.CHECKED_CPU_TIMEOUT == 60.0
            monkeypatch.setenv("CUFORGE_CPU_TIMEOUT", "0")
            assert _config.cpu_timeout() == 0
    finally:
        _config.restore_overrides(("cpu_timeout",), plugin)


@pytest.mark.parametrize(
    ("setting", "value", "read", "match"),
    [
        ("launcher", "cython", _config.launcher, r"CUFORGE_LAUNCHER expects auto, c or bindings, got 'cython'"),
        ("cache_max_mb", "lots", _config.cache_max_bytes, r"CUFORGE_CACHE_MAX_MB expects a number, got 'lots'"),
        ("cache_lock_s", "", _config.cache_lock_seconds, r"CUFORGE_CACHE_LOCK_S expects a number, got ''"),
        ("cpu_timeout", "soon", _config.cpu_timeout, r"CUFORGE_CPU_TIMEOUT expects a number, got 'soon'"),
        ("cpu_timeout", "-1", _config.cpu_timeout, r"CUFORGE_CPU_TIMEOUT expects seconds >= 0 \(0: no limit\), got '-1'"),
    ],
)
def test_unusable_values_are_config_errors(setting, value, read, match):
    with _config.scope(**{setting: value}), pytest.raises(cf.ConfigError, match=match) as info:
        read()
    assert isinstance(info.value, ValueError) and isinstance(info.value, cf.CuforgeError)


def test_unknown_launcher_setting_is_refused():
    from cuforge._runtime import cuda as _cuda

    with (
        _config.scope(launcher="cython"),
        pytest.raises(cf.ConfigError, match=r"CUFORGE_LAUNCHER expects auto, c or bindings, got 'cython'"),
    ):
        _cuda.state.bind_launcher()


@pytest.mark.parametrize(
    "environ",
    [{"XDG_CACHE_HOME": "/x/cache", "HOME": "/h"}, {"XDG_CACHE_HOME": "", "HOME": "/h/"}, {"XDG_CACHE_HOME": "rel", "HOME": "/h"},
     {"HOME": "/"}, {"XDG_CACHE_HOME": "/x//c/"}, {"HOME": "relative"}, {}],
)  # fmt: skip
def test_the_default_cache_folder_is_platformdirs_user_cache_dir(monkeypatch, environ):
    """Spelled without platformdirs where that is simple (its import costs a warm start more
    than the launch), the answer stays platformdirs'."""
    import platformdirs

    for name in ("CUFORGE_CACHE_DIR", "XDG_CACHE_HOME", "HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    with _config.scope(cache_dir=""):  # (the tests' own cache folder is set through _config)
        try:
            expected = os.path.join(platformdirs.user_cache_dir("cuforge"), _config.SCHEMA)
        except RuntimeError:  # (no home platformdirs can name: neither can cuforge)
            with pytest.raises(RuntimeError):
                _config.cache_path()
            return
        assert _config.cache_path() == expected
        assert cf.cache_dir() == type(cf.cache_dir())(expected)
