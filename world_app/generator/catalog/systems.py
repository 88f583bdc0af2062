"""Everything else the store sells: prebuilt PCs and workstations, monitors, keyboards, mice, headsets,
networking, cables and accessories.
"""

from __future__ import annotations

import math
import random
from datetime import timedelta

from world_app.generator.catalog.drafts import Draft, _price, _when

# --- Systems ----------------------------------------------------------------------------------------


def _system_drafts(rng, count, made, *, workstation: bool) -> list[Draft]:
    cpus = [d for d in made["cpu"] if d.specs["cores"] >= (12 if workstation else 6)] or made["cpu"]
    gpus = [d for d in made["gpu"] if d.specs["vram_gb"] >= (16 if workstation else 8)] or made["gpu"]
    drafts = []
    for i in range(count):
        cpu, gpu = cpus[(i * 5 + 1) % len(cpus)], gpus[(i * 7 + 2) % len(gpus)]
        memory = rng.choice((64, 128, 256)) if workstation else rng.choice((16, 32, 32, 64))
        storage = rng.choice((2000, 4000, 8000)) if workstation else rng.choice((1000, 1000, 2000))
        psu = max(650, math.ceil((gpu.specs["tdp_watts"] + cpu.specs["tdp_watts"] + 150) * 1.3 / 50) * 50)
        specs = {
            "cpu": cpu.name,
            "gpu": gpu.name,
            "memory_gb": memory,
            "storage_gb": storage,
            "operating_system": "Windows 11 Pro" if workstation else rng.choice(("Windows 11 Home", "Windows 11 Pro")),
            "psu_watts": min(psu, 1600),
        }
        brand = "Corecraft" if i % 3 else "Hyperion Systems"
        line = (
            ("Atelier W" if workstation else "Forge G")
            if brand == "Corecraft"
            else ("Studio" if workstation else "Nova")
        )
        name = f"{brand} {line}{i + 1:02d} ({cpu.name.split(' ', 1)[1]}, {gpu.specs['chipset'].split(' ', 1)[1]})"
        price = cpu.price_cents + gpu.price_cents + memory * 300 + storage * 6 + (900 if workstation else 350) * 100
        price = price // 10000 * 10000 - 1
        description = (
            f"{'Workstation' if workstation else 'Gaming PC'} assembled and tested by {brand}: {cpu.name}, "
            f"{gpu.name}, {memory} GB memory, {storage // 1000} TB storage, {specs['operating_system']}."
        )
        launch = max(cpu.first_sold, gpu.first_sold) + timedelta(days=30)
        drafts.append(Draft(name, brand, price, specs, 36 if workstation else 24, description, launch))
    return drafts


def _prebuilts(rng, count, made) -> list[Draft]:
    return _system_drafts(rng, count, made, workstation=False)


def _workstations(rng, count, made) -> list[Draft]:
    return _system_drafts(rng, count, made, workstation=True)


# --- Monitors and peripherals -----------------------------------------------------------------------

# (size in, resolution, refresh Hz, panel, price $)
_MONITORS = (
    (24.0, "1920x1080", 165, "IPS", 149),
    (27.0, "2560x1440", 170, "IPS", 249),
    (27.0, "2560x1440", 240, "OLED", 599),
    (32.0, "3840x2160", 144, "IPS", 549),
    (34.0, "3440x1440", 165, "VA", 399),
    (27.0, "3840x2160", 60, "IPS", 299),
    (24.5, "1920x1080", 360, "TN", 329),
    (32.0, "3840x2160", 240, "OLED", 999),
)
_MONITOR_BRANDS = (("Viewmark", "VM"), ("Lumora", "L"), ("Pixelline", "PX"))


def _monitors(rng: random.Random, count: int, _made) -> list[Draft]:
    drafts = []
    for i in range(count):
        size, resolution, refresh, panel, price = _MONITORS[i % len(_MONITORS)]
        brand, code = _MONITOR_BRANDS[(i // len(_MONITORS) + i) % len(_MONITOR_BRANDS)]
        inputs = ["HDMI 2.1", "DisplayPort 1.4"] + (["USB-C"] if rng.random() < 0.4 else [])
        generation = i // len(_MONITORS)
        tag = {"1920x1080": "F", "2560x1440": "Q", "3440x1440": "W", "3840x2160": "U"}[resolution]
        model = f"{code}{int(size)}{tag}{panel[0]}{generation + 1 if generation else ''}"
        name = f'{brand} {model} {size:g}" {resolution} {panel} {refresh}Hz'
        specs = {"size_in": size, "resolution": resolution, "refresh_hz": refresh, "panel": panel, "inputs": inputs}
        description = f"{size:g}-inch {resolution} {panel} monitor at {refresh} Hz; inputs: {', '.join(inputs)}."
        warranty = 36 if panel != "TN" else 12
        drafts.append(
            Draft(
                name,
                brand,
                (price + rng.randint(0, 20)) * 100 - 1,
                specs,
                warranty,
                description,
                _when(2021 + i % 4, 3),
            )
        )
    return drafts


def _peripherals(rng, count, *, kind: str) -> list[Draft]:
    table = {
        "keyboard": (("Talon Gear", "Strikeline", "Keywright"), ("Vanta", "Ember", "Quill", "Forge"), (39, 199)),
        "mouse": (("Talon Gear", "Strikeline", "Keywright"), ("Glide", "Dart", "Viper Lite", "Arc"), (24, 149)),
        "headset": (("Echo Audio", "Strikeline", "Sonora"), ("Drift", "Halo", "Canyon", "Pulse"), (39, 249)),
    }
    brands, lines, (low, high) = table[kind]
    layouts = ("full-size ANSI", "TKL ANSI", "75% ANSI", "65% ANSI", "full-size ISO")
    drafts = []
    for i in range(count):
        brand, line = brands[i % len(brands)], lines[(i // len(brands)) % len(lines)]
        connection = rng.choice(("wired", "wired", "wireless", "wireless+bluetooth", "bluetooth"))
        color = rng.choice(("black", "white", "gray", "black"))
        specs = {
            "connection": connection,
            "color": color,
            "layout": layouts[i % len(layouts)] if kind == "keyboard" else None,
        }
        label = {"keyboard": "Keyboard", "mouse": "Mouse", "headset": "Headset"}[kind]
        generation = i // (len(brands) * len(lines))
        name = f"{brand} {line}{f' {generation + 1}' if generation else ''} "
        name += f"{'Wireless ' if 'wireless' in connection else ''}{label}"
        description = f"{connection.replace('+', ' and ').capitalize()} {kind} in {color}"
        description += f", {specs['layout']} layout." if specs["layout"] else "."
        warranty = 24 if rng.random() < 0.4 else 12
        drafts.append(Draft(name, brand, _price(rng, low, high), specs, warranty, description, _when(2021 + i % 4, 6)))
    return drafts


def _keyboards(rng, count, _made) -> list[Draft]:
    return _peripherals(rng, count, kind="keyboard")


def _mice(rng, count, _made) -> list[Draft]:
    return _peripherals(rng, count, kind="mouse")


def _headsets(rng, count, _made) -> list[Draft]:
    return _peripherals(rng, count, kind="headset")


# (kind, standard, max speed Mbps, label, price $)
_NETWORKING = (
    ("router", "Wi-Fi 6", 3000, "AX3000 Router", 99),
    ("router", "Wi-Fi 6E", 5400, "AXE5400 Router", 199),
    ("router", "Wi-Fi 7", 19000, "BE19000 Router", 449),
    ("wifi_adapter", "Wi-Fi 6E PCIe", 2400, "AXE2400 PCIe Adapter", 49),
    ("wifi_adapter", "Wi-Fi 6 USB", 1200, "AX1200 USB Adapter", 29),
    ("switch", "2.5GbE", 2500, "5-Port 2.5G Switch", 89),
    ("switch", "Gigabit Ethernet", 1000, "8-Port Gigabit Switch", 29),
    ("ethernet_card", "10GbE PCIe", 10000, "10G PCIe Network Card", 119),
)


def _networking(rng: random.Random, count: int, _made) -> list[Draft]:
    drafts = []
    for i in range(count):
        kind, standard, speed, label, price = _NETWORKING[i % len(_NETWORKING)]
        brand = ("Skyrelay", "Meshpoint")[(i // len(_NETWORKING) + i) % 2]
        specs = {"kind": kind, "standard": standard, "max_speed_mbps": speed}
        description = f"{standard} {kind.replace('_', ' ')}, up to {speed} Mbps."
        drafts.append(
            Draft(
                f"{brand} {label}",
                brand,
                (price + rng.randint(0, 10)) * 100 - 1,
                specs,
                12 if kind != "router" else 24,
                description,
                _when(2021 + i % 4, 2),
            )
        )
    return drafts


# (kind, length m, label, price $)
_CABLES = (
    ("hdmi", 2.0, "HDMI 2.1 Ultra High Speed Cable 2 m", 19),
    ("displayport", 1.5, "DisplayPort 1.4 Cable 1.5 m", 17),
    ("usb_c", 1.0, "USB-C 240 W Cable 1 m", 15),
    ("ethernet", 5.0, "Cat 6 Ethernet Cable 5 m", 12),
    ("power", 0.6, "12V-2x6 GPU Power Cable 0.6 m", 24),
    ("sata", 0.5, "SATA III Data Cable 0.5 m (2-pack)", 8),
    ("extension", 0.3, "PCIe 4.0 Riser Cable 0.3 m", 49),
    ("displayport", 2.0, "DisplayPort 2.1 Cable 2 m", 29),
)


def _cables(rng: random.Random, count: int, _made) -> list[Draft]:
    drafts = []
    for i in range(count):
        kind, length, label, price = _CABLES[i % len(_CABLES)]
        brand = ("Corecraft Essentials", "Linkwell")[(i // len(_CABLES) + i) % 2]
        specs = {"kind": kind, "length_m": length}
        drafts.append(
            Draft(
                f"{brand} {label}", brand, (price + rng.randint(0, 3)) * 100 - 1, specs, 12, f"{label}.", _when(2021, 1)
            )
        )
    return drafts


# (kind, compatible with, label, price $)
_ACCESSORIES = (
    ("thermal paste", [], "Thermal Compound 4 g", 9),
    ("case fan", ["case"], "120 mm PWM Case Fan 3-Pack", 29),
    ("gpu support bracket", ["gpu"], "Adjustable GPU Support Bracket", 14),
    ("psu adapter bracket", ["SFX"], "SFX-to-ATX PSU Bracket", 12),
    ("cooler mounting kit", ["LGA1851"], "LGA1851 Cooler Mounting Kit", 9),
    ("cooler mounting kit", ["AM5"], "AM5 Offset Mounting Kit", 9),
    ("anti-static strap", [], "Anti-Static Wrist Strap", 7),
    ("m.2 heatsink", ["M.2 2280"], "M.2 2280 SSD Heatsink", 15),
    ("cable combs", [], "Cable Comb Set (24 pcs)", 11),
    ("rgb controller", ["case"], "ARGB Fan and Light Hub", 24),
    ("vertical gpu mount", ["PCIe 4.0"], "Vertical GPU Mount with PCIe 4.0 Riser", 69),
    ("toolkit", [], "PC Builder Precision Screwdriver Kit", 29),
)


def _accessories(rng: random.Random, count: int, _made) -> list[Draft]:
    drafts = []
    for i in range(count):
        kind, compatible, label, price = _ACCESSORIES[i % len(_ACCESSORIES)]
        brand = ("Corecraft Essentials", "Borealis", "Linkwell")[(i // len(_ACCESSORIES) + i) % 3]
        specs = {"kind": kind, "compatible_with": list(compatible)}
        description = f"{label}." + (f" For {', '.join(compatible)}." if compatible else "")
        drafts.append(
            Draft(
                f"{brand} {label}", brand, (price + rng.randint(0, 3)) * 100 - 1, specs, 12, description, _when(2021, 1)
            )
        )
    return drafts
