"""docs/operator.md's table of chart values says what deploy/helm/sparkplane/values.yaml says
(issue 27: the docs named another image than the chart)."""

from __future__ import annotations

from pathlib import Path

import yaml

from sparkplane.manifests.chart import CHART
from sparkplane.operator.deploy.manifests import DEFAULT_IMAGE

REPO = Path(__file__).resolve().parents[3]


def _row(doc: str, value: str) -> str:
    return next(line for line in doc.splitlines() if line.startswith(f"| `{value}`"))


def test_the_documented_image_and_selector_are_the_charts() -> None:
    values = yaml.safe_load((REPO / "deploy" / CHART / "values.yaml").read_text())
    doc = (REPO / "docs" / "operator.md").read_text()
    repository = values["image"]["repository"]
    assert f"`{repository}`" in _row(doc, "image.repository")
    assert DEFAULT_IMAGE.startswith(f"{repository}:")  # what `operator install` deploys
    assert values["spark"]["resourceSelector"] == ""
    assert "labelSelector" in _row(doc, "spark.resourceSelector")
