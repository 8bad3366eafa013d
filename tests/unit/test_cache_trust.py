"""Another local user cannot get code loaded from the disk cache: not through a folder or file
inside it, nor by swapping the cache (or a folder or link on the way to it)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cuforge import _config
from cuforge._compile import disk as _disk

pytestmark = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="planting files as another user (uid 65534) needs root"
)
OTHER = 65534  # nobody


def _write_as_other(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    os.chown(path, OTHER, OTHER)
    os.chmod(path, 0o666)


# ---------------------------------------------------------------- the way to the cache, in a fresh process


def _opens(cache: Path) -> bool:
    """Whether a fresh process would use the cache at ``cache``."""
    _disk._opened.clear()
    try:
        with _config.scope(cache_dir=str(cache)):
            return _disk.current() is not None
    finally:
        _disk._opened.clear()


def test_a_cache_under_a_folder_others_can_write_is_refused(tmp_path):
    team = tmp_path / "team"
    team.mkdir()
    os.chmod(team, 0o775)  # a group member could rename the cache and put another in its place
    with pytest.warns(_disk.CacheSecurityWarning, match=r"team, on the way to the cache, is writable by group or others "
                                                        r"\(mode 775\).*Fix: chmod go-w .*team, or set CUFORGE_CACHE_DIR"):  # fmt: skip
        assert not _opens(team / "cache")
    assert list(team.iterdir()) == []  # nothing made there


def test_a_cache_under_a_sticky_folder_is_used(tmp_path):
    """As /tmp: others can add names there, but not rename or remove the user's."""
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    assert _opens(shared / "cache")
    theirs = shared / "theirs"  # a name another user took first is theirs
    theirs.mkdir()
    os.chown(theirs, OTHER, OTHER)
    with pytest.warns(_disk.CacheSecurityWarning, match=r"theirs is owned by uid 65534, not by this user"):
        assert not _opens(theirs)


def test_a_link_to_the_cache_owned_by_another_user_is_refused(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(mine)
    assert _opens(link)  # the user's own link
    os.lchown(link, OTHER, OTHER)  # its owner could point it elsewhere
    with pytest.warns(_disk.CacheSecurityWarning, match=r"link is a symbolic link owned by uid 65534, who could point it at "
                                                        r"another folder.*Fix: replace the link"):  # fmt: skip
        assert not _opens(link)


def test_clearing_the_cache_removes_refused_folders_and_follows_no_link(tmp_path):
    """The fix the warning names (python -m cuforge cache clear) removes a refused folder, and a
    link in place of one, but nothing where the link points."""
    cache = tmp_path / "cache"
    entries = cache / _config.SCHEMA / "entries"
    with _config.scope(cache_dir=str(cache)):
        _disk._opened.clear()
        disk = _disk.current()
        disk.put_json("a", {"a": 1})
        theirs = tmp_path / "theirs"
        theirs.mkdir()
        (theirs / "kept").write_text("not the cache's")
        (entries / "zz").symlink_to(theirs)
        os.lchown(entries / "zz", OTHER, OTHER)
        (entries / "yy").mkdir(mode=0o777)
        _write_as_other(entries / "yy" / "planted", b"x")
        os.chown(entries / "yy", OTHER, OTHER)
        assert disk.info()["entries"] == 1  # (refused folders are not counted)
        disk.clear()
        assert list(entries.iterdir()) == [] and (theirs / "kept").read_text() == "not the cache's"
        assert disk.get_json("a") is None
    _disk._opened.clear()
