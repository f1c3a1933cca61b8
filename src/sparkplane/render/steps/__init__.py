"""One module per render feature step; see ``sparkplane.render.pipeline`` for their order."""
