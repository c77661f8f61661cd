"""Prometheus gauges, pushed to the gateway at the end of each run."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Gauge, push_to_gateway

_registry = CollectorRegistry()
_gauges: dict[str, Gauge] = {}


def gauge(name: str, value: float, **labels: str) -> None:
    if name not in _gauges:
        _gauges[name] = Gauge(name, name, list(labels), registry=_registry)
    target = _gauges[name].labels(**labels) if labels else _gauges[name]
    target.set(value)
    push_to_gateway("pushgateway:9091", job="inventory_sync", registry=_registry)
