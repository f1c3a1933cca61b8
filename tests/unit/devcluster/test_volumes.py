from pathlib import Path

from sparkplane_devcluster import volumes


def test_volumes_are_classless_hostpaths_under_the_state_dir(tmp_path: Path) -> None:
    made = volumes.volumes(tmp_path)
    assert [v["metadata"]["name"] for v in made] == [
        f"sparkplane-dev-pv-{i}" for i in range(volumes.COUNT)
    ]
    for i, pv in enumerate(made):
        spec = pv["spec"]
        assert spec["storageClassName"] == ""  # binds claims that name no class
        assert spec["persistentVolumeReclaimPolicy"] == "Retain"
        assert Path(spec["hostPath"]["path"]) == tmp_path.resolve() / "volumes" / f"pv-{i}"
        assert spec["hostPath"]["type"] == "DirectoryOrCreate"


def test_released_volumes_are_made_anew() -> None:
    assert volumes.released({"status": {"phase": "Released"}})
    assert not volumes.released({"status": {"phase": "Bound"}})
    assert not volumes.released({"status": {"phase": "Available"}})
