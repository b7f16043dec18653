"""The schema of a `fabricsim train` config: one config names the network, the system, the workload
and the strategy; this module validates it (`load_train_config`, `TrainConfig`) and `fabricsim.train`
runs it. The schema lives apart from the run so that a reader of the format finds it whole here, and
so that studies and sweeps that only write configs need not read the run.

```yaml
name: GPT-3 175B, MP(8)-DP(16)-PP(8)
network:
  topology: torus:8x8x16          # any topology spec of `fabricsim topologies`
  bandwidth: 400GB/s              # per link and direction; one value or one per dimension
  latency: 100ns
  model: analytical               # congestion-aware (= analytical), congestion-unaware, flow, flow-store-and-forward
  algorithms: {all-reduce: ring}  # per collective, NAME[,KEY=VALUE...] (default auto: NCCL's choice per size on a GPU cluster; ring, direct for all-to-all, elsewhere)
system:
  npu: {peak: 989TFLOP/s, memory_bandwidth: 3.35TB/s, efficiency: 0.5, unit_bandwidth: unlimited}
  endpoint: {policy: ideal}       # or {policy: npu, units: 0.1, memory: 0.3}, {policy: comp-opt},
                                  # {policy: comm-opt}, {policy: no-overlap},
                                  # {policy: ace, sram: 4MiB, alu_throughput: 1TB/s, dma_bandwidth: 500GB/s}
  scheduling: {policy: LIFO, priorities: [MP, CP, EP, PP, DP, IO, other], chunks: 1, chunks_in_flight: 1,
               comm_streams: one}
workload:
  model: gpt3-175b                # zoo: workload.models.MODELS (resnet50, gpt3-175b, dlrm, vgg16, ...)
  dtype: fp16
  batch: 1024                     # global minibatch (samples / sequences)
  iterations: 1
  parallelism: {mp: 8, dp: 16, pp: 8, microbatches: 8, schedule: 1f1b, zero: 0, dp_bucket: 0,
                placement: [mp, pp, dp], weight_streaming: false}
  input_loading: false            # inputs through the topology's I/O controllers (wafer:, fred:)
  # or instead of model: astra_text: path/to/Resnet50_DataParallel.txt  (compute in ns; mp: N for hybrids)
  # or: chakra: path/to/prefix    (rank r reads prefix.r.et; comm_groups: groups.json for pg_name)
output:
  dir: out/gpt3                   # summary.json, breakdown.csv, layers.csv, trace.json, breakdown.png
  trace: true
  trace_npus: 0-63                # NPUs in the Perfetto trace (default: the first 64)
  trace_format: json              # or json.gz (gzip-compressed trace.json.gz)
  plot: true
```
Paths in the file are relative to the file. Every field is checked when the file is loaded,
and each section builds its domain object (`NetworkSection.build`, `SystemSection.build`); an
error names the file and the field (`t.yaml: network.latency: ...`), also one found while the
topology or the workload graph is built (`fabricsim.train`). Numbers are not coerced
(`iterations: '2'`, `1.5` or `true` are refused), bandwidths, times and compute rates need their
units as on the command line, and fields that do not apply to the workload (`mp` beside a zoo
model) are refused. Iterations, chunks and the tasks of the graph (estimated before it is built)
are bounded by `fabricsim.limits`.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, PrivateAttr, StrictBool, StrictInt, ValidationInfo, field_validator, model_validator

from .config import read_yaml_mapping, validate
from .errors import ConfigError
from .sections import NetworkSection, SystemSection
from .workload_config import (  # noqa: F401  # the workload's sections: their home is workload_config
    DENSE_KEYS,
    WORKLOAD_FIELDS,
    JobSection,
    ParallelismSection,
    ShapeSection,
    WorkloadSection,
    _Strict,
)


class OutputSection(_Strict):
    """`output:` where and what the run writes.

    Parameters
    ----------
    dir : str, optional
        Folder for summary.json, breakdown.csv, layers.csv, the trace and breakdown.png, relative
        to the config file (default of `fabricsim train`: out/<config name>).
    trace : bool
        Write the Perfetto trace.
    trace_npus : str, optional
        NPUs in the trace as a group string (`0-63`; at most the `ranks` limit), or one NPU;
        default the first 64.
    trace_format : str
        `json` (trace.json) or `json.gz` (trace.json.gz, gzip-compressed).
    plot : bool
        Write the breakdown plot.
    """

    dir: str | None = None
    trace: StrictBool = True
    trace_npus: str | StrictInt | None = None
    trace_format: str = "json"
    plot: StrictBool = True

    @field_validator("trace_npus")
    @classmethod
    def _trace_npus(cls, v):
        from .collectives.api import parse_group

        if v is not None:
            parse_group(str(v), "trace_npus")  # syntax and the ranks limit, before any range is expanded
        return None if v is None else str(v)

    @field_validator("trace_format")
    @classmethod
    def _trace_format(cls, v):
        from .report.trace import trace_file_name

        trace_file_name(v, "trace_format")  # the one list of formats; ConfigError otherwise
        return v


class TrainConfig(_Strict):
    """A whole training config (module doc).

    Parameters
    ----------
    name : str, optional
        Title of the run (default: model and strategy).
    network : NetworkSection
        The topology, network model and algorithms.
    system : SystemSection
        The NPU, endpoint policy and scheduling.
    workload : WorkloadSection
        The model (or text workload, or Chakra traces) and its strategy.
    jobs : list of JobSection
        Instead of `workload`: several jobs, each a workload on its own NPUs of the one network
        (`fabricsim.multi_job`, docs/train.md "Several jobs on one fabric").
    output : OutputSection
        Where and what the run writes.

    The folder relative paths are resolved against (`base_dir`, the config file's) and the file
    errors name (`source`) are not fields a config can set: `load_train_config` sets them, and
    Python callers pass `context={"base_dir": ...}` to `model_validate` (default: `.`).
    """

    name: str | None = None
    network: NetworkSection
    system: SystemSection = Field(default_factory=SystemSection)
    workload: WorkloadSection | None = None  # exactly one of workload and jobs (`fabricsim.multi_job`)
    jobs: list[JobSection] | None = None
    output: OutputSection = Field(default_factory=OutputSection)
    _base_dir: str = PrivateAttr(".")
    _source: str | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _from_context(self, info: ValidationInfo):
        ctx = info.context or {}
        self._base_dir = str(ctx.get("base_dir", "."))
        self._source = ctx.get("source")
        if self.jobs is not None or self.workload is None:  # several jobs: their GPUs and strategies
            from .jobs_config import check_jobs

            check_jobs(self)
        self._fused_attention_priced()
        self._fp8_priced()
        return self

    def workloads(self) -> list[tuple[str, WorkloadSection]]:
        """(config path, section) of what runs: `workload`, or each of `jobs` (`jobs[i]`)."""
        if self.workload is not None:
            return [("workload", self.workload)]
        return [(f"jobs[{i}]", j) for i, j in enumerate(self.jobs or ())]

    def _fused_attention_priced(self) -> None:
        """Fused attention needs a GPU preset that carries measured rates (`GpuCompute.attention_rates`)."""
        for where, w in self.workloads():
            par = w.parallelism
            if par is None or par.attention != "fused":
                continue
            gpu = self.system.npu.gpu
            from .system.gpus import get_gpu

            if gpu is None or self.system.npu.compute == "roofline" or not get_gpu(gpu).attention_rates:
                raise ConfigError(f"{where}.parallelism.attention", "fused",
                                  f"needs a GPU preset with measured fused-attention rates (gpu: h100), not "
                                  f"{gpu or 'a roofline NPU'}; accepted: unfused")

    def _fp8_priced(self) -> None:
        """dtype fp8 needs a GPU preset with FP8 tensor cores (`GpuCompute.fp8_peak_flops`) pricing
        kernels: a roofline NPU has one peak and no kernels to run in FP8 (`workload.fp8`)."""
        from .system.gpus import GPUS, get_gpu

        for where, w in self.workloads():
            if getattr(w, "dtype", None) != "fp8":
                continue
            gpu, with_fp8 = self.system.npu.gpu, ", ".join(n for n, g in GPUS.items() if g.fp8_peak_flops)
            if gpu is None or self.system.npu.compute == "roofline":
                raise ConfigError(f"{where}.dtype", "fp8", f"needs a GPU preset with FP8 tensor cores ({with_fp8}) "
                                  f"priced by kernels, not {'compute: roofline' if gpu else 'a roofline NPU'}; "
                                  "accepted: fp16, bf16, fp32")
            if not get_gpu(gpu).fp8_peak_flops:
                raise ConfigError(f"{where}.dtype", "fp8", f"needs a GPU with FP8 tensor cores ({with_fp8}); "
                                  f"accepted with {gpu}: fp16, bf16, fp32")

    @property
    def base_dir(self) -> str:
        """Folder relative paths in the config are resolved against (the config file's, or `.`)."""
        return self._base_dir

    @property
    def source(self) -> str | None:
        """The file the config was read from (named first in errors), or None."""
        return self._source


def load_train_config(path: str | Path) -> TrainConfig:
    """Read and validate a training config file (module doc).

    Parameters
    ----------
    path : str or Path
        A YAML file; relative paths inside it are relative to it.

    Returns
    -------
    TrainConfig
        Every section checked; a one-line ConfigError names the file, the field, the value and
        what is accepted (also when the workload names none or several of model, astra_text,
        chakra).
    """
    data = read_yaml_mapping(path, "network, system, workload, output")
    return validate(TrainConfig, data, str(path), from_file=True,
                    context={"base_dir": str(Path(path).resolve().parent), "source": str(path)})


__all__ = ["JobSection", "OutputSection", "ParallelismSection", "ShapeSection", "TrainConfig", "WORKLOAD_FIELDS",
           "WorkloadSection", "load_train_config"]
