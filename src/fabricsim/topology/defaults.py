"""The link bandwidth and latency used when none is given: the CLI (`-B`, `-L`), YAML configs
(`network:`, traffic files), `parse_topology`, `build_topology`, `topology_from_config` and
`from_edges` all default to these (one answer, kept apart so the builders can import it)."""

from __future__ import annotations

DEFAULT_BANDWIDTH = "400Gbps"
"""Per link and direction (50e9 bytes/s)."""
DEFAULT_LATENCY = "100ns"
"""Per link."""
