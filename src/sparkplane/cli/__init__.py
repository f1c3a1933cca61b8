"""Command-line interface: commands only, no domain logic."""
