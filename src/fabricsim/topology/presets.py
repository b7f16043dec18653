"""Presets: named machines, each an existing family's builder with parameters from datasheets.

    dgx-a100:nodes=32      DGX A100 nodes on a rail fat-tree (builders/dgx.py)
    dgx-h100:nodes=32      DGX H100 nodes, NVLink SHARP on
    tpu-v4:4x4x4           a TPU v4 3-D torus slice (builders/stack.py)

A dgx preset takes every dgx parameter and overrides the preset's value with it
(`dgx-h100:nodes=2,nics=4`); `nodes` defaults to 1. Each value's source is beside it in
`DGX_A100`, `DGX_H100` and `TPU_V4` (value, source).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, create_model, field_validator
from pydantic.fields import FieldInfo

from ..errors import ConfigError
from .builders.dgx import DgxParams, dgx_family, latency_field
from .builders.stack import stack
from .family import (
    GridParams,
    Int,
    LinkValues,
    TopologyFamily,
    bandwidth_field,
    grid_links,
    parse_flags,
    parse_shape,
)
from .graph import Topology

_GEN4_X16 = 16e9 * 16 * 128 / 130 / 8  # 16 GT/s x 16 lanes, 128b/130b encoding, bits -> bytes: 31.5 GB/s
_GEN5_X16 = 32e9 * 16 * 128 / 130 / 8  # 32 GT/s: 63.0 GB/s

DGX_A100: dict[str, tuple[Any, str]] = {
    "gpus": (8, "8 NVIDIA A100 SXM4 GPUs per node [NVIDIA DGX A100 datasheet]"),
    "nvlink": (300e9, "NVLink3: 12 links x 25 GB/s = 300 GB/s per direction [NVIDIA A100 datasheet: 600 GB/s "
                      "bidirectional GPU-to-GPU]"),
    "nvlink_eff": (0.8, "NCCL src/graph/topo.h: SM80_NVLINK_BW 20.0 GB/s per 25 GB/s NVLink3 link"),
    "nics": (8, "8 single-port ConnectX-6 HDR InfiniBand for the compute fabric [DGX A100 User Guide / datasheet]"),
    "nic": (25e9, "ConnectX-6 HDR: 200 Gb/s = 25 GB/s per direction [DGX A100 datasheet]"),
    "pcie": (_GEN4_X16, "PCIe Gen4 x16: 16 GT/s x 16 lanes x 128/130 / 8 = 31.5 GB/s per direction"),
    "sm": (80, "A100: compute capability 8.0 [NVIDIA CUDA GPUs compute capability table]"),
}
"""DGX A100: each parameter's value and source."""

DGX_H100: dict[str, tuple[Any, str]] = {
    "gpus": (8, "8 NVIDIA H100 SXM5 GPUs per node [NVIDIA DGX H100 datasheet]"),
    "nvlink": (450e9, "NVLink4: 18 links x 25 GB/s = 450 GB/s per direction [NVIDIA H100 datasheet: 900 GB/s "
                      "bidirectional]"),
    "nvlink_eff": (0.824, "NCCL src/graph/topo.h: SM90_NVLINK_BW 20.6 GB/s per 25 GB/s NVLink4 link"),
    "nics": (8, "8 ConnectX-7 for the compute fabric (in 4 OSFP ports) [DGX H100 datasheet]"),
    "nic": (50e9, "ConnectX-7 NDR: 400 Gb/s = 50 GB/s per direction [DGX H100 datasheet]"),
    "pcie": (_GEN5_X16, "PCIe Gen5 x16: 32 GT/s x 16 lanes x 128/130 / 8 = 63.0 GB/s per direction"),
    "sm": (90, "H100: compute capability 9.0 [NVIDIA CUDA GPUs compute capability table]"),
    "nvls": (True, "NVLink SHARP: third-generation NVSwitch reduces and multicasts in the switch [NVIDIA H100 "
                   "Tensor Core GPU Architecture whitepaper]"),
    "nvls_rate": (275e9, "INFERRED from ONE result (no NVSwitch reduction throughput is published): the 8-GPU NVLS "
                         "all-reduce reaches algbw ~275 GB/s (sjeaugey, NVIDIA/nccl-tests#212), below the 370.8 GB/s "
                         "effective NVLink, so the switch's reduction unit is taken to produce 275 GB/s of reduced "
                         "output; configs/clusters/nccl_tests.yaml predicts 5-7 GPUs and H200 with it"),
}
"""DGX H100: each parameter's value and source."""

TPU_V4: dict[str, tuple[Any, str]] = {
    "dims": ((4, 4, 4), "a 4x4x4 cube of 64 chips, the unit the optical circuit switches connect [Jouppi et al., "
                        "ISCA 2023; Cloud TPU v4 docs]"),
    "ici": (50e9, "ICI: 400 Gbit/s = 50 GB/s per link and direction, 6 links per chip in a 3-D torus (as summarized "
                  "from Jouppi et al. at glennklockwood.com/garden/processors/TPUv4; the paper's PDF was not at hand). "
                  "Cross-check: Cloud TPU v4 docs give 24 TB/s bisection per 4096-chip pod; a 16x16x16 torus cut in "
                  "half crosses 2 x 16 x 16 = 512 links, 24e12 / 512 = 47 GB/s"),
    "ici_eff": (0.9, "ICI's usable rate per link and direction: 4.5e10 bytes/s for TPU v4p in Google's JAX team's "
                      "'How to Scale Your Model' (jax-ml/scaling-book tpus.md, table 'ICI BW/link (one-way)', commit "
                      "0819a7d), of the 50 GB/s line rate: 0.9"),
    "ici_lat": (None, "ASSUMPTION: no per-hop ICI latency is published in the sources found; the network's latency "
                      "argument is used unless ici_lat is given"),
}
"""TPU v4: each parameter's value and source."""


def _preset_params(name: str, preset: dict[str, tuple[Any, str]]) -> type[DgxParams]:
    """`DgxParams` with the preset's values as defaults (each field keeps its type and bounds) and
    nodes defaulting to 1: one place turns a preset's table into its parameters."""
    fields: dict[str, Any] = {"nodes": (Int, Field(default=1, ge=1))}
    for key, (value, _source) in preset.items():
        base = DgxParams.model_fields[key]
        fields[key] = (base.annotation, FieldInfo.merge_field_infos(base, default=value))
    return create_model(name, __base__=DgxParams, __doc__=f"{name}'s parameters: `DgxParams` with its preset's "
                                                       "values as defaults and nodes 1.", **fields)


DgxA100Params = _preset_params("DgxA100Params", DGX_A100)
DgxH100Params = _preset_params("DgxH100Params", DGX_H100)


DGX_A100_FAMILY = dgx_family("dgx-a100", DgxA100Params, "dgx-a100:nodes=32",
                             "DGX A100 nodes (NVLink3, 8x HDR 200G) on a rail fat-tree")
DGX_H100_FAMILY = dgx_family("dgx-h100", DgxH100Params, "dgx-h100:nodes=32",
                             "DGX H100 nodes (NVLink4, NVLS, 8x NDR 400G), rail fat-tree")


# ---- tpu-v4 ---------------------------------------------------------------------------------------


class TpuV4Params(GridParams):
    """tpu-v4's parameters.

    Parameters
    ----------
    dims : tuple of int
        Chips per dimension of the 3-D torus slice (default 4x4x4), three sizes.
    ici : float or str
        ICI bandwidth per link and direction, bytes/s or with units (default 50 GB/s, `TPU_V4`).
    ici_eff : float
        Share of the line rate a link delivers, in (0, 1] (default 0.9, `TPU_V4`).
    ici_lat : float or str, optional
        Latency per ICI link, s or with units; default: the network's latency (`TPU_V4`: ASSUMPTION).
    """

    dims: tuple[Int, ...] = Field(default=TPU_V4["dims"][0], min_length=1)
    ici: float = TPU_V4["ici"][0]
    ici_eff: float = Field(default=TPU_V4["ici_eff"][0], gt=0, le=1)
    ici_lat: float | None = None

    _ici = field_validator("ici", mode="before")(bandwidth_field)
    _lat = field_validator("ici_lat", mode="before")(latency_field)

    @field_validator("dims")
    @classmethod
    def _three(cls, v):
        if len(v) != 3:
            raise ConfigError("dims", list(v), "accepted: three sizes (a 3-D torus slice), e.g. 4x4x4")
        return v


def _parse_tpu(spec: str, shape: str, opts: list[str]) -> dict:
    f = parse_flags(opts, {"ici", "ici_eff", "ici_lat"}, spec, valued=frozenset({"ici", "ici_eff", "ici_lat"}))
    out: dict[str, Any] = dict(f)
    if shape.strip():
        out["dims"] = parse_shape(shape, spec)
    return out


def _build_tpu(p: TpuV4Params, bandwidth: LinkValues, latency: LinkValues) -> Topology:
    lat = p.ici_lat if p.ici_lat is not None else latency.one()
    return stack(("ring",) * 3, p.dims, p.ici * p.ici_eff, lat, name="tpu-v4:" + "x".join(map(str, p.dims)))


TPU_V4_FAMILY = TopologyFamily("tpu-v4", "tpu-v4:4x4x4", "TPU v4 slice: 3-D torus of ICI links (50 GB/s/dir x 0.9)",
                               TpuV4Params, _parse_tpu, _build_tpu,
                               size=lambda p: grid_links(("ring",) * 3, p.dims))

FAMILIES = (DGX_A100_FAMILY, DGX_H100_FAMILY, TPU_V4_FAMILY)
"""The preset families, registered by `topology/spec.py`."""
