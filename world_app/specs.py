"""Typed specifications per product category.

A product's ``specs`` JSON is validated by the category's Pydantic model at every edge (admin form, model
``clean``, the generator), so compatibility rules and tools can rely on the fields being there and typed.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

Socket = Literal["AM4", "AM5", "LGA1700", "LGA1851"]
MemoryType = Literal["DDR4", "DDR5"]
BoardFormFactor = Literal["E-ATX", "ATX", "Micro-ATX", "Mini-ITX"]


class Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CpuSpec(Spec):
    socket: Socket
    cores: int = Field(ge=1, le=128)
    threads: int = Field(ge=1, le=256)
    base_clock_ghz: float = Field(gt=0, le=7)
    boost_clock_ghz: float = Field(gt=0, le=7)
    tdp_watts: int = Field(ge=5, le=500)
    memory_types: list[MemoryType] = Field(min_length=1)
    integrated_graphics: bool
    cooler_included: bool


class MotherboardSpec(Spec):
    socket: Socket
    chipset: str = Field(min_length=2)
    form_factor: BoardFormFactor
    memory_type: MemoryType
    memory_slots: int = Field(ge=1, le=8)
    max_memory_gb: int = Field(ge=8, le=1024)
    m2_slots: int = Field(ge=0, le=8)
    pcie_version: Literal["4.0", "5.0"]
    wifi: bool


class GpuSpec(Spec):
    chipset: str = Field(min_length=2)
    vram_gb: int = Field(ge=2, le=96)
    length_mm: int = Field(ge=100, le=400)
    slots: float = Field(ge=1, le=4)
    tdp_watts: int = Field(ge=30, le=700)
    recommended_psu_watts: int = Field(ge=300, le=2000)
    power_connectors: str


class MemorySpec(Spec):
    type: MemoryType
    capacity_gb: int = Field(ge=4, le=512)
    modules: int = Field(ge=1, le=8)
    speed_mts: int = Field(ge=1600, le=10000)
    cas_latency: int = Field(ge=10, le=60)


class StorageSpec(Spec):
    type: Literal["nvme", "sata_ssd", "hdd"]
    capacity_gb: int = Field(ge=120, le=32000)
    interface: Literal["PCIe 3.0 x4", "PCIe 4.0 x4", "PCIe 5.0 x4", "SATA III"]
    form_factor: Literal["M.2 2280", "2.5in", "3.5in"]
    read_mbps: int = Field(ge=50, le=15000)


class PsuSpec(Spec):
    wattage: int = Field(ge=300, le=2000)
    efficiency: Literal["80+ Bronze", "80+ Gold", "80+ Platinum", "80+ Titanium"]
    modular: Literal["full", "semi", "none"]
    form_factor: Literal["ATX", "SFX"]


class CaseSpec(Spec):
    form_factor: Literal["full_tower", "mid_tower", "mini_tower", "small_form_factor"]
    supported_motherboards: list[BoardFormFactor] = Field(min_length=1)
    max_gpu_length_mm: int = Field(ge=150, le=500)
    max_cooler_height_mm: int = Field(ge=40, le=200)
    radiator_support_mm: list[Literal[120, 140, 240, 280, 360, 420]]
    psu_form_factor: Literal["ATX", "SFX"]
    included_fans: int = Field(ge=0, le=10)


class CoolingSpec(Spec):
    type: Literal["air", "aio"]
    sockets: list[Socket] = Field(min_length=1)
    height_mm: int | None = Field(default=None, ge=20, le=200)
    radiator_size_mm: Literal[120, 140, 240, 280, 360, 420] | None = None
    tdp_rating_watts: int = Field(ge=65, le=400)


class SystemSpec(Spec):
    """Prebuilt PCs and workstations."""

    cpu: str
    gpu: str
    memory_gb: int = Field(ge=8, le=2048)
    storage_gb: int = Field(ge=256, le=65536)
    operating_system: str
    psu_watts: int = Field(ge=300, le=2000)


class MonitorSpec(Spec):
    size_in: float = Field(ge=13, le=57)
    resolution: Literal["1920x1080", "2560x1440", "3440x1440", "3840x2160"]
    refresh_hz: int = Field(ge=60, le=540)
    panel: Literal["IPS", "VA", "TN", "OLED"]
    inputs: list[str] = Field(min_length=1)


class PeripheralSpec(Spec):
    """Keyboards, mice and headsets."""

    connection: Literal["wired", "wireless", "bluetooth", "wireless+bluetooth"]
    color: str
    layout: str | None = None


class NetworkingSpec(Spec):
    kind: Literal["router", "wifi_adapter", "switch", "ethernet_card"]
    standard: str
    max_speed_mbps: int = Field(ge=10, le=100000)


class CableSpec(Spec):
    kind: Literal["hdmi", "displayport", "usb_c", "ethernet", "power", "sata", "extension"]
    length_m: float = Field(gt=0, le=30)


class AccessorySpec(Spec):
    kind: str = Field(min_length=2)
    compatible_with: list[str] = Field(default_factory=list)


SPEC_BY_CATEGORY: dict[str, type[Spec]] = {
    "cpu": CpuSpec,
    "motherboard": MotherboardSpec,
    "gpu": GpuSpec,
    "memory": MemorySpec,
    "storage": StorageSpec,
    "psu": PsuSpec,
    "case": CaseSpec,
    "cooling": CoolingSpec,
    "prebuilt": SystemSpec,
    "workstation": SystemSpec,
    "monitor": MonitorSpec,
    "keyboard": PeripheralSpec,
    "mouse": PeripheralSpec,
    "headset": PeripheralSpec,
    "networking": NetworkingSpec,
    "cable": CableSpec,
    "accessory": AccessorySpec,
}

# Power each category draws, for the PSU headroom rule, when its specs carry no tdp_watts.
NOMINAL_DRAW_WATTS: dict[str, int] = {"motherboard": 50, "memory": 5, "storage": 8, "cooling": 10, "case": 10}


def validate_specs(category: str, specs: dict) -> dict:
    """The specs, normalised by the category's model; raises ``SpecError`` naming each bad field."""
    model = SPEC_BY_CATEGORY.get(category)
    if model is None:
        raise SpecError({"category": f"unknown product category {category!r}"})
    try:
        return model.model_validate(specs).model_dump(mode="json")
    except ValidationError as exc:
        raise SpecError({".".join(str(p) for p in err["loc"]) or "specs": err["msg"] for err in exc.errors()}) from None


class SpecError(ValueError):
    def __init__(self, errors: dict[str, str]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
