"""The parts a PC is built from, with specs valid per ``world_app.specs``: CPUs, motherboards, GPUs, memory,
storage, power supplies, cases and coolers.
"""

from __future__ import annotations

import random

from world_app.generator.catalog.drafts import Draft, _price, _when

# --- CPUs -------------------------------------------------------------------------------------------

# (brand, line, socket, memory types, model base, launch, integrated graphics)
_CPU_FAMILIES = (
    ("Ardent", "Vireo", "AM4", ["DDR4"], 5000, _when(2021, 3), False),
    ("Ardent", "Vireo", "AM5", ["DDR5"], 7000, _when(2022, 10), True),
    ("Ardent", "Vireo", "AM5", ["DDR5"], 9000, _when(2024, 8), True),
    ("Corvex", "Strata", "LGA1700", ["DDR4", "DDR5"], 13000, _when(2022, 11), True),
    ("Corvex", "Strata", "LGA1700", ["DDR4", "DDR5"], 14000, _when(2023, 10), True),
    ("Corvex", "Strata Ultra", "LGA1851", ["DDR5"], 200, _when(2024, 11), True),
)
# (tier, cores, threads, base GHz, boost GHz, TDP W, price low, price high, cooler included)
_CPU_TIERS = (
    (3, 4, 8, 3.6, 4.6, 65, 89, 119, True),
    (5, 6, 12, 3.7, 5.0, 65, 149, 229, True),
    (7, 8, 16, 3.8, 5.3, 120, 289, 399, False),
    (9, 16, 32, 4.0, 5.7, 170, 479, 649, False),
)


def _cpus(rng: random.Random, count: int, _made) -> list[Draft]:
    drafts = []
    for i in range(count):
        brand, line, socket, memory, base, launch, igpu = _CPU_FAMILIES[i % len(_CPU_FAMILIES)]
        tier, cores, threads, base_clock, boost, tdp, low, high, cooler = _CPU_TIERS[(i // len(_CPU_FAMILIES)) % 4]
        variant = i // (len(_CPU_FAMILIES) * 4)
        if brand == "Ardent":
            suffix = rng.choice(("", "X", "X3D")) if tier >= 7 else rng.choice(("", "X"))
            model = base + tier * 100 + variant * 50
            name = f"{brand} {line} {tier} {model}{suffix}"
        else:
            suffix = rng.choice(("K", "KF", "F", "")) if tier >= 5 else ""
            model = base + tier * 100 + variant * 50 + (0 if base > 1000 else 45)
            name = f"{brand} {line} {tier} {model}{suffix}"
        graphics = igpu and "F" not in suffix
        extra = 0.1 * rng.randint(0, 3)
        specs = {
            "socket": socket,
            "cores": cores + (2 if variant % 2 and tier > 3 else 0),
            "threads": threads + (4 if variant % 2 and tier > 3 else 0),
            "base_clock_ghz": round(base_clock + extra, 1),
            "boost_clock_ghz": round(boost + extra, 1),
            "tdp_watts": tdp + (0 if "X" not in suffix and "K" not in suffix else 5 * rng.randint(0, 4)),
            "memory_types": list(memory),
            "integrated_graphics": graphics,
            "cooler_included": cooler and "X" not in suffix and "K" not in suffix,
        }
        description = (
            f"{specs['cores']}-core, {specs['threads']}-thread {socket} desktop processor, up to "
            f"{specs['boost_clock_ghz']} GHz, {specs['tdp_watts']} W. Supports {' and '.join(memory)}."
        )
        if specs["cooler_included"]:
            description += " Stock cooler in the box."
        drafts.append(Draft(name, brand, _price(rng, low, high), specs, 36, description, launch))
    return drafts


# --- Motherboards -----------------------------------------------------------------------------------

# (socket, chipset, memory type, PCIe, launch, high end)
_BOARD_PLATFORMS = (
    ("AM4", "V550", "DDR4", "4.0", _when(2021, 2), False),
    ("AM4", "V570", "DDR4", "4.0", _when(2021, 2), True),
    ("AM5", "V650", "DDR5", "4.0", _when(2022, 10), False),
    ("AM5", "V670E", "DDR5", "5.0", _when(2022, 10), True),
    ("LGA1700", "S760", "DDR4", "4.0", _when(2022, 11), False),
    ("LGA1700", "S760", "DDR5", "4.0", _when(2023, 1), False),
    ("LGA1700", "S790", "DDR5", "5.0", _when(2022, 11), True),
    ("LGA1851", "S860", "DDR5", "4.0", _when(2025, 1), False),
    ("LGA1851", "S890", "DDR5", "5.0", _when(2024, 11), True),
)
_BOARD_BRANDS = ("Northgate", "Tessaron", "Valkor", "Brightforge")
_BOARD_SERIES = ("Pro", "Gaming", "Elite", "Edge", "Creator", "Plus")


def _motherboards(rng: random.Random, count: int, _made) -> list[Draft]:
    drafts = []
    for i in range(count):
        socket, chipset, memory, pcie, launch, high = _BOARD_PLATFORMS[i % len(_BOARD_PLATFORMS)]
        brand = _BOARD_BRANDS[(i // len(_BOARD_PLATFORMS)) % len(_BOARD_BRANDS)]
        form = rng.choice(("E-ATX", "ATX", "ATX")) if high else rng.choice(("ATX", "ATX", "Micro-ATX", "Mini-ITX"))
        wifi = rng.random() < 0.6
        series = _BOARD_SERIES[(i * 7 + len(brand)) % len(_BOARD_SERIES)]
        size_tag = {"E-ATX": " Extreme", "ATX": "", "Micro-ATX": "M", "Mini-ITX": "-I"}[form]
        name = f"{brand} {chipset}{size_tag} {series}{' WiFi' if wifi else ''}{' D4' if memory == 'DDR4' else ''}"
        slots = 2 if form == "Mini-ITX" else 4
        max_memory = (64 if memory == "DDR4" else 96) if slots == 2 else (128 if memory == "DDR4" else 192)
        specs = {
            "socket": socket,
            "chipset": chipset,
            "form_factor": form,
            "memory_type": memory,
            "memory_slots": slots,
            "max_memory_gb": max_memory,
            "m2_slots": rng.randint(1, 2) if form == "Mini-ITX" else rng.randint(2, 5 if high else 3),
            "pcie_version": pcie,
            "wifi": wifi,
        }
        low, high_price = (259, 499) if high else (99, 219)
        description = (
            f"{form} {socket} motherboard on the {chipset} chipset: {slots} {memory} slots (up to {max_memory} GB), "
            f"{specs['m2_slots']} M.2 slots, PCIe {pcie}{', Wi-Fi' if wifi else ''}."
        )
        drafts.append(Draft(name, brand, _price(rng, low, high_price), specs, 36, description, launch))
    return drafts


# --- GPUs -------------------------------------------------------------------------------------------

# (chip, VRAM GB, TDP W, recommended PSU W, price, power connectors, launch)
_GPU_CHIPS = (
    ("Nyra NX 4060", 8, 115, 550, 299, "1x 8-pin", _when(2023, 6)),
    ("Nyra NX 4070", 12, 200, 650, 549, "1x 16-pin 12V-2x6", _when(2023, 4)),
    ("Nyra NX 4080", 16, 320, 750, 999, "1x 16-pin 12V-2x6", _when(2022, 11)),
    ("Nyra NX 4090", 24, 450, 850, 1599, "1x 16-pin 12V-2x6", _when(2022, 10)),
    ("Nyra NX 5060", 8, 145, 550, 329, "1x 8-pin", _when(2025, 5)),
    ("Nyra NX 5070", 12, 250, 650, 599, "1x 16-pin 12V-2x6", _when(2025, 3)),
    ("Nyra NX 5080", 16, 360, 850, 1049, "1x 16-pin 12V-2x6", _when(2025, 1)),
    ("Nyra NX 5090", 32, 575, 1000, 2099, "1x 16-pin 12V-2x6", _when(2025, 1)),
    ("Aurex AX 7600", 8, 165, 550, 279, "1x 8-pin", _when(2023, 5)),
    ("Aurex AX 7800 XT", 16, 263, 700, 499, "2x 8-pin", _when(2023, 9)),
    ("Aurex AX 7900 XTX", 24, 355, 800, 949, "3x 8-pin", _when(2022, 12)),
    ("Aurex AX 9070 XT", 16, 304, 750, 649, "2x 8-pin", _when(2025, 3)),
)
_GPU_PARTNERS = ("Kestrel", "Tessaron", "Zephyr Labs", "Valkor")
# (edition name, length range mm, slots, price premium $)
_GPU_EDITIONS = (
    ("Compact", (196, 252), 2.0, 0),
    ("Storm OC", (268, 305), 2.5, 30),
    ("Titan Frost", (322, 358), 3.5, 90),
)


def _gpus(rng: random.Random, count: int, _made) -> list[Draft]:
    drafts = []
    for i in range(count):
        chip, vram, tdp, psu, price, connectors, launch = _GPU_CHIPS[i % len(_GPU_CHIPS)]
        partner = _GPU_PARTNERS[(i // len(_GPU_CHIPS) + i) % len(_GPU_PARTNERS)]
        # Big chips never come as compact cards.
        edition_index = (i // len(_GPU_CHIPS) + i) % 3
        if tdp >= 300 and edition_index == 0:
            edition_index = 2
        edition, (short, long), slots, premium = _GPU_EDITIONS[edition_index]
        length = rng.randint(short, long)
        specs = {
            "chipset": chip,
            "vram_gb": vram,
            "length_mm": length,
            "slots": slots if tdp < 400 else max(slots, 3.0),
            "tdp_watts": tdp,
            "recommended_psu_watts": psu,
            "power_connectors": connectors,
        }
        warranty = 24 if partner == "Kestrel" else 36
        description = (
            f"{chip} graphics card with {vram} GB of memory. {length} mm long, {specs['slots']:g} slots; "
            f"{tdp} W board power, {psu} W PSU recommended; power: {connectors}."
        )
        name = f"{partner} {chip} {edition} {vram}GB"
        drafts.append(Draft(name, partner, (price + premium) * 100 - 1, specs, warranty, description, launch))
    return drafts


# --- Memory -----------------------------------------------------------------------------------------

# (type, total GB, modules, speed MT/s, CAS latency, price $, launch)
_MEMORY_KITS = (
    ("DDR4", 16, 2, 3200, 16, 39, _when(2021, 1)),
    ("DDR4", 32, 2, 3200, 16, 64, _when(2021, 1)),
    ("DDR4", 32, 2, 3600, 18, 69, _when(2021, 6)),
    ("DDR4", 64, 2, 3200, 16, 119, _when(2021, 6)),
    ("DDR4", 64, 4, 3600, 18, 139, _when(2022, 1)),
    ("DDR5", 32, 2, 5600, 36, 89, _when(2022, 10)),
    ("DDR5", 32, 2, 6000, 30, 109, _when(2023, 3)),
    ("DDR5", 48, 2, 6400, 32, 149, _when(2024, 2)),
    ("DDR5", 64, 2, 6000, 30, 189, _when(2023, 6)),
    ("DDR5", 96, 2, 5600, 40, 259, _when(2024, 4)),
    ("DDR5", 128, 4, 5600, 40, 379, _when(2024, 6)),
    ("DDR5", 16, 1, 5600, 46, 49, _when(2022, 12)),
)
_MEMORY_BRANDS = (("Helix", "Vector"), ("Onyx", "Pulse"), ("Kestrel", "Fury Line"))


def _memory(rng: random.Random, count: int, _made) -> list[Draft]:
    drafts = []
    for i in range(count):
        kind, total, modules, speed, cas, price, launch = _MEMORY_KITS[i % len(_MEMORY_KITS)]
        brand, line = _MEMORY_BRANDS[(i // len(_MEMORY_KITS) + i) % len(_MEMORY_BRANDS)]
        per_module = total // modules
        layout = f"{modules}x{per_module}GB" if modules > 1 else f"1x{per_module}GB"
        name = f"{brand} {line} {kind}-{speed} {total}GB ({layout}) CL{cas}"
        specs = {"type": kind, "capacity_gb": total, "modules": modules, "speed_mts": speed, "cas_latency": cas}
        description = f"{total} GB {kind} desktop memory kit ({layout}), {speed} MT/s at CL{cas}."
        drafts.append(Draft(name, brand, (price + rng.randint(0, 10)) * 100 - 1, specs, 120, description, launch))
    return drafts


# --- Storage ----------------------------------------------------------------------------------------

# (type, interface, form factor, capacities GB, read MB/s, $ per TB, launch, warranty months)
_STORAGE_LINES = (
    ("nvme", "PCIe 3.0 x4", "M.2 2280", (500, 1000, 2000), 3500, 55, _when(2021, 1), 60),
    ("nvme", "PCIe 4.0 x4", "M.2 2280", (1000, 2000, 4000), 7100, 75, _when(2022, 3), 60),
    ("nvme", "PCIe 5.0 x4", "M.2 2280", (2000, 4000), 12400, 120, _when(2024, 3), 60),
    ("sata_ssd", "SATA III", "2.5in", (500, 1000, 2000, 4000), 550, 60, _when(2021, 1), 36),
    ("hdd", "SATA III", "3.5in", (2000, 4000, 8000, 12000, 16000), 220, 18, _when(2021, 1), 24),
)
_STORAGE_BRANDS = (("Quillon", "Q"), ("Stratus", "S"), ("Meridian", "M"))


def _storage(rng: random.Random, count: int, _made) -> list[Draft]:
    drafts = []
    for i in range(count):
        kind, interface, form, capacities, read, per_tb, launch, warranty = _STORAGE_LINES[i % len(_STORAGE_LINES)]
        brand, letter = _STORAGE_BRANDS[(i // len(_STORAGE_LINES) + i) % len(_STORAGE_BRANDS)]
        capacity = capacities[(i // len(_STORAGE_LINES)) % len(capacities)]
        size = f"{capacity // 1000}TB" if capacity >= 1000 else f"{capacity}GB"
        model = {"nvme": f"{letter}{interface[5]}00 NVMe", "sata_ssd": f"{letter}870 SSD", "hdd": f"{letter}Vault HDD"}
        name = f"{brand} {model[kind]} {size}"
        price = max(35, round(per_tb * capacity / 1000 + 15)) * 100 - 1
        specs = {
            "type": kind,
            "capacity_gb": capacity,
            "interface": interface,
            "form_factor": form,
            "read_mbps": read + rng.randint(0, 4) * 50 if kind != "hdd" else read + rng.randint(-4, 6) * 10,
        }
        description = f"{size} {form} {'drive' if kind == 'hdd' else 'solid-state drive'}, {interface}, "
        description += f"up to {specs['read_mbps']} MB/s reads."
        drafts.append(Draft(name, brand, price, specs, warranty, description, launch))
    return drafts


# --- Power supplies ---------------------------------------------------------------------------------

# (watts, efficiency, modular, form factor, price $, warranty months)
_PSU_MODELS = (
    (450, "80+ Bronze", "none", "ATX", 49, 36),
    (550, "80+ Bronze", "semi", "ATX", 64, 36),
    (650, "80+ Gold", "semi", "ATX", 89, 84),
    (750, "80+ Gold", "full", "ATX", 109, 120),
    (850, "80+ Gold", "full", "ATX", 129, 120),
    (1000, "80+ Gold", "full", "ATX", 179, 120),
    (850, "80+ Platinum", "full", "ATX", 169, 120),
    (1200, "80+ Platinum", "full", "ATX", 279, 120),
    (1600, "80+ Titanium", "full", "ATX", 449, 144),
    (600, "80+ Gold", "full", "SFX", 119, 84),
    (750, "80+ Gold", "full", "SFX", 139, 84),
    (850, "80+ Platinum", "full", "SFX", 189, 120),
)
_PSU_BRANDS = (("Voltaris", "Current"), ("Ironpeak", "Anvil"), ("Gridline", "Flux"))


def _psus(rng: random.Random, count: int, _made) -> list[Draft]:
    drafts = []
    for i in range(count):
        watts, efficiency, modular, form, price, warranty = _PSU_MODELS[i % len(_PSU_MODELS)]
        brand, line = _PSU_BRANDS[(i // len(_PSU_MODELS) + i) % len(_PSU_BRANDS)]
        grade = efficiency.split()[-1]
        name = f"{brand} {line} {watts} {grade} {form}"
        specs = {"wattage": watts, "efficiency": efficiency, "modular": modular, "form_factor": form}
        description = f"{watts} W {form} power supply, {efficiency}, {modular}{'-modular' if modular != 'none' else ''}"
        description = description.replace("none", "non-modular") + " cabling."
        launch = _when(2021, 1) if watts < 1000 else _when(2022, 6)
        drafts.append(Draft(name, brand, (price + rng.randint(0, 8)) * 100 - 1, specs, warranty, description, launch))
    return drafts


# --- Cases ------------------------------------------------------------------------------------------

# (form factor, boards, GPU length range, cooler height range, radiators, PSU form factor, price range)
_CASE_SHAPES = (
    (
        "mid_tower",
        ["ATX", "Micro-ATX", "Mini-ITX"],
        (330, 420),
        (160, 180),
        [120, 140, 240, 280, 360],
        "ATX",
        (79, 169),
    ),
    ("mid_tower", ["ATX", "Micro-ATX", "Mini-ITX"], (305, 330), (155, 165), [120, 240, 280], "ATX", (59, 99)),
    (
        "full_tower",
        ["E-ATX", "ATX", "Micro-ATX", "Mini-ITX"],
        (420, 460),
        (180, 190),
        [120, 140, 240, 280, 360, 420],
        "ATX",
        (179, 249),
    ),
    ("mini_tower", ["Micro-ATX", "Mini-ITX"], (300, 340), (150, 165), [120, 240], "ATX", (59, 89)),
    ("small_form_factor", ["Mini-ITX"], (250, 335), (50, 70), [120, 240], "SFX", (99, 179)),
    ("small_form_factor", ["Mini-ITX"], (200, 260), (45, 60), [], "SFX", (79, 129)),
)
_CASE_BRANDS = (
    ("Arcwood", ("Grove", "Timber", "Canopy")),
    ("Monolith", ("Slab", "Obelisk", "Plinth")),
    ("Lumen Works", ("Prism", "Halo", "Beam")),
)


def _cases(rng: random.Random, count: int, _made) -> list[Draft]:
    drafts = []
    for i in range(count):
        form, boards, (gpu_low, gpu_high), (cool_low, cool_high), radiators, psu, (low, high) = _CASE_SHAPES[
            i % len(_CASE_SHAPES)
        ]
        brand, lines = _CASE_BRANDS[(i // len(_CASE_SHAPES) + i) % len(_CASE_BRANDS)]
        line = lines[(i // len(_CASE_SHAPES)) % len(lines)]
        size_word = {"mid_tower": "Mid", "full_tower": "XL", "mini_tower": "Mini", "small_form_factor": "ITX"}[form]
        color = rng.choice(("Black", "White", "Black", "Sand"))
        name = f"{brand} {line} {size_word} {i // len(_CASE_SHAPES) + 1}00 {color}"
        specs = {
            "form_factor": form,
            "supported_motherboards": list(boards),
            "max_gpu_length_mm": rng.randint(gpu_low, gpu_high),
            "max_cooler_height_mm": rng.randint(cool_low, cool_high),
            "radiator_support_mm": list(radiators),
            "psu_form_factor": psu,
            "included_fans": rng.randint(0, 2) if form == "small_form_factor" else rng.randint(1, 4),
        }
        description = (
            f"{form.replace('_', ' ').title()} case for {', '.join(boards)} boards. Fits GPUs up to "
            f"{specs['max_gpu_length_mm']} mm and CPU coolers up to {specs['max_cooler_height_mm']} mm; "
            f"{psu} power supply."
        )
        warranty = 24 if form != "mini_tower" else 12
        drafts.append(Draft(name, brand, _price(rng, low, high), specs, warranty, description, _when(2021, 4)))
    return drafts


# --- Cooling ----------------------------------------------------------------------------------------

_ALL_SOCKETS = ["AM4", "AM5", "LGA1700", "LGA1851"]
# (type, name, height range, radiator, TDP rating, sockets, price range, launch, warranty)
_COOLERS = (
    ("air", "Whisper LP", (47, 58), None, 95, _ALL_SOCKETS, (39, 59), _when(2022, 1), 24),
    ("air", "Summit 120", (152, 158), None, 180, ["AM4", "LGA1700"], (29, 39), _when(2021, 1), 24),
    ("air", "Summit 120 R2", (154, 158), None, 200, _ALL_SOCKETS, (34, 44), _when(2024, 2), 24),
    ("air", "Ridge Dual", (163, 168), None, 250, _ALL_SOCKETS, (79, 109), _when(2022, 9), 72),
    ("aio", "Cascade 240", (None, None), 240, 250, _ALL_SOCKETS, (89, 129), _when(2022, 3), 60),
    ("aio", "Cascade 280", (None, None), 280, 280, ["AM4", "AM5", "LGA1700"], (119, 149), _when(2021, 5), 60),
    ("aio", "Cascade 360", (None, None), 360, 320, _ALL_SOCKETS, (139, 189), _when(2022, 3), 60),
    ("aio", "Cascade 420", (None, None), 420, 350, _ALL_SOCKETS, (199, 249), _when(2023, 5), 60),
)
_COOLER_BRANDS = ("Frostline", "Borealis", "Glacier Peak")


def _coolers(rng: random.Random, count: int, _made) -> list[Draft]:
    drafts = []
    for i in range(count):
        kind, line, (h_low, h_high), radiator, rating, sockets, (low, high), launch, warranty = _COOLERS[
            i % len(_COOLERS)
        ]
        brand = _COOLER_BRANDS[(i // len(_COOLERS) + i) % len(_COOLER_BRANDS)]
        generation = i // len(_COOLERS)
        name = f"{brand} {line}" + (f" Mk{generation + 1}" if generation else "")
        specs = {
            "type": kind,
            "sockets": list(sockets),
            "height_mm": rng.randint(h_low, h_high) if h_low else None,
            "radiator_size_mm": radiator,
            "tdp_rating_watts": min(400, rating + 10 * (generation % 6)),
        }
        if kind == "air":
            description = f"Air CPU cooler, {specs['height_mm']} mm tall, rated for {specs['tdp_rating_watts']} W."
        else:
            description = f"{radiator} mm all-in-one liquid cooler, rated for {specs['tdp_rating_watts']} W."
        description += f" Sockets: {', '.join(sockets)}."
        drafts.append(Draft(name, brand, _price(rng, low, high), specs, warranty, description, launch))
    return drafts
