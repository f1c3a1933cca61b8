"""One module per render feature step; ``render.driver_steps.DRIVER_STEPS`` orders them."""
