"""Network models: how long a schedule takes on a topology."""

from .analytical import (
    MODELS,
    CollectiveTiming,
    Deficiency,
    RoutedStep,
    deficiencies,
    normalize_model,
    route_schedule,
    route_step,
    time_schedule,
)

__all__ = ["MODELS", "CollectiveTiming", "Deficiency", "deficiencies", "normalize_model", "RoutedStep", "route_schedule", "route_step", "time_schedule"]
