"""Preset scan configurations (TOML), named by file stem: ``sibscan scan --config <stem>``."""
