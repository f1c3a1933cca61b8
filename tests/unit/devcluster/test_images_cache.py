"""The image cache rebuilds exactly what changed: keys, build-then-rename, pruning, the builder."""

from __future__ import annotations

import json
import os
import tarfile
import time
from pathlib import Path

import pytest

from sparkplane_devcluster.images import builder, cache, debian, project, spark
from sparkplane_devcluster.images.builder import ImagePlan, LayerPlan
from sparkplane_devcluster.images.debian import BaseLayer
from sparkplane_devcluster.images.layers import data_file, write_layer


def test_content_key_is_stable_and_follows_the_recipe():
    recipe = {"packages": ["tini", "python3"], "suite": "bookworm"}
    assert cache.content_key(recipe) == cache.content_key(dict(reversed(recipe.items())))
    assert cache.content_key(recipe) != cache.content_key({**recipe, "suite": "trixie"})
    assert len(cache.content_key(recipe)) == cache.KEY_LENGTH


def test_tree_hash_follows_content_and_exec_bits_not_times(tmp_path: Path):
    (tmp_path / "pkg").mkdir()
    module = tmp_path / "pkg" / "mod.py"
    module.write_text("x = 1\n")
    first = cache.hash_tree(tmp_path)
    module.touch()
    assert cache.hash_tree(tmp_path) == first
    module.chmod(0o755)
    assert cache.hash_tree(tmp_path) != first
    module.chmod(0o644)
    module.write_text("x = 2\n")
    assert cache.hash_tree(tmp_path) != first


def test_ensure_dir_builds_once_prunes_old_keys_and_leaves_nothing_on_failure(tmp_path: Path):
    builds: list[Path] = []

    def build(temp: Path) -> None:
        builds.append(temp)
        (temp / "out").write_text("done")

    old = cache.entry_dir(tmp_path, "thing", "0" * 16)
    assert cache.ensure_dir(old, build) is True
    assert cache.ensure_dir(old, build) is False
    assert len(builds) == 1 and (old / "out").read_text() == "done"

    new = cache.entry_dir(tmp_path, "thing", "1" * 16)
    other = cache.entry_dir(tmp_path, "thing-else", "2" * 16)
    cache.ensure_dir(other, build)
    cache.ensure_dir(new, build)
    # the old key was used just now (another checkout may be importing it): kept
    assert new.is_dir() and old.is_dir() and other.is_dir()
    # unused for longer than PRUNE_AFTER: the next build of that name removes it
    stale = time.time() - cache.PRUNE_AFTER - 60
    os.utime(old, (stale, stale))
    newer = cache.entry_dir(tmp_path, "thing", "4" * 16)
    cache.ensure_dir(newer, build)
    assert newer.is_dir() and new.is_dir() and not old.exists() and other.is_dir()
    # a use touches the entry, so a long-running cluster's image is never pruned under it
    os.utime(new, (stale, stale))
    assert cache.ensure_dir(new, build) is False
    assert new.stat().st_mtime > stale + 60

    def broken(temp: Path) -> None:
        (temp / "half").write_text("")
        raise RuntimeError("boom")

    failed = cache.entry_dir(tmp_path, "thing", "3" * 16)
    with pytest.raises(RuntimeError):
        cache.ensure_dir(failed, broken)
    assert not failed.exists()
    assert [p.name for p in tmp_path.joinpath("images").iterdir() if "tmp" in p.name] == []


@pytest.fixture
def seeded_base(tmp_path: Path) -> Path:
    """A cache whose Debian base layer is already built (a tiny stand-in, no mmdebstrap)."""
    directory = debian.base_dir(tmp_path)
    directory.mkdir(parents=True)
    blob = write_layer([data_file("etc/os-release", b"ID=debian\n")], directory / "layer.tar.gz")
    cache.save_layer(directory, blob)
    (directory / "etc-passwd").write_text("root:x:0:0:root:/root:/bin/sh\n")
    (directory / "etc-group").write_text("root:x:0:\n")
    return tmp_path


def test_builder_rebuilds_only_changed_layers_and_shares_the_base(
    seeded_base: Path, monkeypatch: pytest.MonkeyPatch
):
    recipes = {"app": {"v": 1}, "tool": {"v": 1}}
    calls: list[str] = []

    def entries(name: str) -> list:  # type: ignore[type-arg]
        calls.append(name)
        return [data_file(f"opt/{name}", json.dumps(recipes[name]).encode())]

    def plans(cache_dir: Path, base: BaseLayer, progress: object = None) -> list[ImagePlan]:
        return [
            ImagePlan(name, f"example.test/{name}:1", [LayerPlan(name, dict(recipes[name]),
                      lambda n=name: entries(n))], {"entrypoint": [f"/opt/{name}"]})  # type: ignore[misc]
            for name in recipes
        ]  # fmt: skip

    monkeypatch.setattr(builder, "plans", plans)
    messages: list[str] = []
    first = builder.ensure_images(seeded_base, messages.append)
    assert sorted(calls) == ["app", "tool"]
    assert [a.ref for a in first] == ["example.test/app:1", "example.test/tool:1"]
    assert builder.cached_images(seeded_base) == first

    calls.clear()
    messages.clear()
    assert builder.ensure_images(seeded_base, messages.append) == first
    assert calls == [] and messages == []

    recipes["tool"] = {"v": 2}
    second = builder.ensure_images(seeded_base, messages.append)
    assert calls == ["tool"]
    assert second[0] == first[0]
    assert second[1].key != first[1].key and first[1].archive.exists()  # pruned only once unused
    assert builder.cached_images(seeded_base) == second

    base_digest = cache.load_layer(debian.base_dir(seeded_base)).digest  # type: ignore[union-attr]
    for image in second:
        with tarfile.open(image.archive) as tar:
            index = json.load(tar.extractfile("index.json"))  # type: ignore[arg-type]
            digest = index["manifests"][0]["digest"].removeprefix("sha256:")
            manifest = json.load(tar.extractfile(f"blobs/sha256/{digest}"))  # type: ignore[arg-type]
        assert manifest["layers"][0]["digest"] == base_digest


def test_sparkplane_source_key_follows_the_source_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    src = tmp_path / "sparkplane"
    src.mkdir()
    (src / "__init__.py").write_text("")
    monkeypatch.setattr(project, "source_dir", lambda: src)
    before = cache.content_key(project.source_recipe())
    (src / "__pycache__").mkdir()
    (src / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"byte code")
    assert cache.content_key(project.source_recipe()) == before
    (src / "cli.py").write_text("def main(): ...\n")
    assert cache.content_key(project.source_recipe()) != before


def test_cached_images_is_empty_before_any_build(tmp_path: Path):
    assert builder.cached_images(tmp_path) == []


def test_entrypoint_change_rekeys_only_the_spark_app_layer(monkeypatch: pytest.MonkeyPatch):
    passwd, group = "root:x:0:0::/root:/bin/sh\n", "root:x:0:\n"
    installed = spark.installed()
    dist = cache.content_key(spark.dist_recipe(installed))
    app = cache.content_key(spark.app_recipe(installed, passwd, group))
    assert cache.content_key(spark.app_recipe(installed, passwd, group)) == app
    original = spark.data

    def edited(name: str) -> bytes:
        return original(name) + (b"# edited\n" if name == "spark-entrypoint.sh" else b"")

    monkeypatch.setattr(spark, "data", edited)
    assert cache.content_key(spark.dist_recipe(installed)) == dist
    assert cache.content_key(spark.app_recipe(installed, passwd, group)) != app
    assert (
        cache.content_key(spark.app_recipe(installed, passwd + "x:x:1:1::/:/bin/sh\n", group))
        != app
    )
